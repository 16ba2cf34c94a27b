/* test_info.c — `rlc info` end to end (runs the built binary, $BUILD/rlc): the fixture
 * checkpoints are described correctly, broken directories give exit status 1 and a message
 * naming the file and the problem. */
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/file.h"
#include "test_util.h"

/* Runs `rlc info ARGS` with stderr joined to stdout; returns the exit status. */
static int run_info(const char *args, char *out, size_t size)
{
    /* tests/run.sh sets BUILD; run by hand, take whichever default build exists. */
    const char *build = getenv("BUILD");
    if (!build || !*build) build = access("build/rlc", X_OK) == 0 ? "build" : "build/cpu";
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s/rlc info %s 2>&1", build, args);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, size - 1, p);
    out[n] = '\0';
    int status = pclose(p);
    cr_assert(WIFEXITED(status), "%s did not exit normally", cmd);
    return WEXITSTATUS(status);
}

static char out[16384];

#define HAS(s) cr_assert(strstr(out, s), "output lacks '%s':\n%s", s, out)

Test(info, fixtures)
{
    cr_assert_eq(run_info("tests/fixtures/models/qwen3-tiny-sharded", out, sizeof out), 0, "%s", out);
    HAS("architecture   Qwen3ForCausalLM (model_type qwen3)");
    HAS("layers         2\n");
    HAS("4 query heads, 2 key/value heads, head_dim 16, q/k RMSNorm");
    HAS("vocab          512 (tied embeddings)");
    HAS("parameters     106880 (106.88 K)");
    HAS("cuda compute   fp32 (--precision auto: fp32 below 50M parameters, bf16 above");
    HAS("BF16         24 tensors, 213760 bytes");
    HAS("files          3\n");
    HAS("model-00003-of-00003.safetensors");
    HAS("weights in bf16: 208.75 KiB; training: 1.83 MiB"); /* 106880 x 2 and x 18 bytes */
    HAS("chat template  none: tests/fixtures/models/qwen3-tiny-sharded: no chat template");
    cr_assert_eq(run_info("tests/fixtures/models/llama3-tiny", out, sizeof out), 0, "%s", out);
    HAS("LlamaForCausalLM");
    HAS("llama3 scaling (factor 8, low 1, high 4, original 64)");
    HAS("F32          21 tensors");
    cr_assert_eq(run_info("tests/fixtures/models/qwen2-tiny", out, sizeof out), 0, "%s", out);
    HAS("q/k/v biases");
}

Test(info, usage)
{
    cr_assert_eq(run_info("--help", out, sizeof out), 0);
    HAS("usage: rlc info MODEL_DIR");
    cr_assert_eq(run_info("", out, sizeof out), 2);
    cr_assert_eq(run_info("a b", out, sizeof out), 2);
    HAS("rlc info: unexpected argument 'b'");
}

static void copy_file(const char *from, const char *to, size_t cut)
{
    char *data;
    size_t len;
    rl_err err;
    cr_assert_eq(rl_file_read_all(from, &data, &len, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_file_write_atomic(to, data, len - cut, &err), 0, "%s", err.msg);
    free(data);
}

Test(info, broken_dirs)
{
    char dir[] = "/tmp/rlc-test-info-XXXXXX", a[128], b[128];
    cr_assert_not_null(mkdtemp(dir));
    cr_assert_eq(run_info(dir, out, sizeof out), 1);
    HAS("rlc info: ");
    HAS("config.json: cannot open");
    snprintf(a, sizeof a, "%s/config.json", dir);
    snprintf(b, sizeof b, "%s/model.safetensors", dir);
    copy_file("tests/fixtures/models/qwen3-tiny-tied/config.json", a, 0);
    cr_assert_eq(run_info(dir, out, sizeof out), 1);
    HAS("no model.safetensors or model.safetensors.index.json");
    copy_file("tests/fixtures/models/qwen3-tiny-tied/model.safetensors", b, 64);
    cr_assert_eq(run_info(dir, out, sizeof out), 1);
    HAS("model.safetensors: tensor '");
    HAS("file has");
    copy_file("tests/fixtures/models/qwen3-tiny-untied/model.safetensors", b, 0);
    cr_assert_eq(run_info(dir, out, sizeof out), 1);
    HAS("tensor 'model.embed_tokens.weight' has shape [384, 96], config.json gives [512, 64]");
    copy_file("tests/fixtures/models/qwen3-tiny-untied/config.json", a, 10);
    cr_assert_eq(run_info(dir, out, sizeof out), 1);
    HAS("config.json: invalid JSON");
    unlink(a);
    unlink(b);
    rmdir(dir);
}
