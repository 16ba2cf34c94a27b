/* test_safetensors.c — the safetensors reader on the transformers-made fixtures and on every
 * kind of broken file (built here, in memory or in a temporary directory), and the writer:
 * byte-identical to the python library, bit-exact round trips, sharded directories. */
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/dtype.h"
#include "core/file.h"
#include "io/config.h"
#include "io/safetensors.h"
#include "test_util.h"

#define MODELS "tests/fixtures/models/"

/* ---- helpers ---------------------------------------------------------------------------- */

/* A file image: 8-byte length of header, header, data_len bytes of 0x5a. */
static unsigned char image[1 << 16];

static size_t build_image(const char *header, size_t data_len)
{
    size_t n = strlen(header);
    cr_assert(8 + n + data_len <= sizeof image);
    for (int i = 0; i < 8; i++) image[i] = (unsigned char)((uint64_t)n >> (8 * i));
    memcpy(image + 8, header, n);
    memset(image + 8 + n, 0x5a, data_len);
    return 8 + n + data_len;
}

/* Opens the image built from header (+ data_len bytes) and expects failure with `want` in the
 * message (which must also name the file). */
static void expect_mem_error(const char *header, size_t data_len, const char *want)
{
    size_t len = build_image(header, data_len);
    rl_safetensors *st = NULL;
    rl_err err = {{0}};
    int rc = rl_safetensors_open_mem(&st, image, len, "bad.safetensors", &err);
    cr_assert_eq(rc, -1, "header %s: expected failure '%s'", header, want);
    cr_assert_null(st);
    cr_assert(strstr(err.msg, "bad.safetensors"), "message does not name the file: %s", err.msg);
    cr_assert(strstr(err.msg, want), "message '%s' lacks '%s'", err.msg, want);
}

static char tmp_root[64];

static const char *tmp_dir(void)
{
    snprintf(tmp_root, sizeof tmp_root, "/tmp/rlc-test-st-XXXXXX");
    cr_assert_not_null(mkdtemp(tmp_root));
    return tmp_root;
}

static void rm_tmp(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_root);
    cr_assert_eq(system(cmd), 0);
}

static void write_text(const char *dir, const char *name, const void *data, size_t len)
{
    char path[512];
    rl_err err;
    rl_path_join(path, sizeof path, dir, name);
    cr_assert_eq(rl_file_write_atomic(path, data, len, &err), 0, "%s", err.msg);
}

static void write_image(const char *dir, const char *name, const char *header, size_t data_len)
{
    size_t len = build_image(header, data_len);
    write_text(dir, name, image, len);
}

static void expect_dir_error(const char *dir, const char *want)
{
    rl_safetensors *st = NULL;
    rl_err err = {{0}};
    cr_assert_eq(rl_safetensors_open_dir(&st, dir, &err), -1, "expected failure '%s'", want);
    cr_assert_null(st);
    cr_assert(strstr(err.msg, want), "message '%s' lacks '%s'", err.msg, want);
}

static float formula(int64_t k) { return (float)(((k * 7) % 23) - 11) * 0.125f; }

/* ---- the transformers fixtures ---------------------------------------------------------- */

static void check_fixture(const char *name, int n_files, rl_dtype dtype)
{
    char dir[256], path[300];
    snprintf(dir, sizeof dir, MODELS "%s", name);
    snprintf(path, sizeof path, "%s/config.json", dir);
    rl_err err = {{0}};
    rl_model_config cfg;
    cr_assert_eq(rl_config_load(&cfg, path, &err), 0, "%s", err.msg);
    rl_safetensors *st;
    cr_assert_eq(rl_safetensors_open_dir(&st, dir, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_safetensors_n_files(st), n_files, "%s: %d files", name, rl_safetensors_n_files(st));
    rl_tensor_spec *specs;
    int n;
    cr_assert_eq(rl_config_tensor_specs(&cfg, &specs, &n, &err), 0);
    cr_assert_eq(rl_safetensors_check_specs(st, specs, n, &err), 0, "%s: %s", name, err.msg);
    cr_assert_eq(rl_safetensors_count(st), n);
    int64_t total = 0;
    for (int i = 0; i < rl_safetensors_count(st); i++) {
        const rl_st_tensor *t = rl_safetensors_at(st, i);
        cr_assert_eq(t->dtype, dtype, "%s: %s is %s", name, t->name, rl_dtype_name(t->dtype));
        cr_assert(i == 0 || strcmp(rl_safetensors_at(st, i - 1)->name, t->name) < 0, "not sorted");
        total += rl_st_tensor_numel(t);
    }
    cr_assert_eq(total, rl_config_param_count(&cfg), "%s: %lld elements, param_count %lld", name, (long long)total,
                 (long long)rl_config_param_count(&cfg));
    /* Norm weights were randomised around 1 by the fixture script: read one and look. */
    const rl_st_tensor *norm = rl_safetensors_find(st, "model.norm.weight");
    cr_assert_not_null(norm);
    float w[4096];
    cr_assert(rl_st_tensor_numel(norm) <= 4096);
    tu_poison(w, 4096);
    rl_safetensors_to_f32(norm, w);
    double mean = 0;
    for (int64_t i = 0; i < rl_st_tensor_numel(norm); i++) {
        cr_assert(isfinite(w[i]));
        mean += w[i];
    }
    mean /= (double)rl_st_tensor_numel(norm);
    cr_assert(fabs(mean - 1.0) < 0.2 && w[0] != 1.0f, "%s: model.norm.weight mean %f", name, mean);
    cr_assert_null(rl_safetensors_find(st, "model.nope"));
    free(specs);
    rl_safetensors_close(st);
}

Test(safetensors, fixtures_match_their_configs)
{
    check_fixture("qwen3-tiny-tied", 1, RL_F32);
    check_fixture("qwen3-tiny-untied", 1, RL_BF16);
    check_fixture("qwen3-tiny-sharded", 3, RL_BF16);
    check_fixture("qwen2-tiny", 1, RL_F32);
    check_fixture("llama3-tiny", 1, RL_F32);
}

Test(safetensors, reference_values_and_dtypes)
{
    rl_safetensors *st;
    rl_err err;
    cr_assert_eq(rl_safetensors_open(&st, "tests/fixtures/formats/reference.safetensors", &err), 0, "%s", err.msg);
    cr_assert_eq(rl_safetensors_count(st), 7);
    const char *names[] = {"a", "b", "z.weight", "\xc3\xa9", "scalar", "empty", "q\"uote\\d\n"};
    for (int i = 0; i < 7; i++) {
        const rl_st_tensor *t = rl_safetensors_find(st, names[i]);
        cr_assert_not_null(t, "tensor %d missing", i);
        int64_t numel = rl_st_tensor_numel(t);
        float v[64];
        tu_poison(v, 64);
        rl_safetensors_to_f32(t, v);
        for (int64_t k = 0; k < numel; k++)
            cr_assert_eq(v[k], formula(k), "%s[%lld] = %g, want %g", names[i], (long long)k, v[k], formula(k));
    }
    cr_assert_eq(rl_safetensors_find(st, "b")->dtype, RL_BF16);
    cr_assert_eq(rl_safetensors_find(st, "z.weight")->dtype, RL_F16);
    cr_assert_eq(rl_safetensors_find(st, "scalar")->n_dims, 0);
    cr_assert_eq(rl_safetensors_find(st, "empty")->n_bytes, 0);
    rl_safetensors_close(st);
}

/* ---- broken single files ---------------------------------------------------------------- */

Test(safetensors, broken_headers)
{
    rl_safetensors *st;
    rl_err err;
    cr_assert_eq(rl_safetensors_open_mem(&st, "\x10\0\0", 3, "bad.safetensors", &err), -1);
    cr_assert(strstr(err.msg, "bad.safetensors: file is 3 bytes, too short"), "%s", err.msg);

    unsigned char huge[16] = {0, 0, 0, 0, 0, 1, 0, 0, '{', '}'};
    cr_assert_eq(rl_safetensors_open_mem(&st, huge, sizeof huge, "bad.safetensors", &err), -1);
    cr_assert(strstr(err.msg, "header length 1099511627776 is larger than"), "%s", err.msg);

    unsigned char past[16] = {200, 0, 0, 0, 0, 0, 0, 0, '{', '}'};
    cr_assert_eq(rl_safetensors_open_mem(&st, past, sizeof past, "bad.safetensors", &err), -1);
    cr_assert(strstr(err.msg, "header length 200 runs past the end of the file (16 bytes)"), "%s", err.msg);

    expect_mem_error("[1,2]", 0, "does not start with '{'");
    expect_mem_error("{\"a\":{\"dtype\":\"F32\",", 0, "invalid JSON");
    expect_mem_error("{\"a\":1} x", 0, "invalid JSON");
}

Test(safetensors, nul_in_header)
{
    const char hdr[] = "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}   ";
    size_t len = build_image(hdr, 4);
    image[8 + sizeof hdr - 3] = '\0';
    rl_safetensors *st;
    rl_err err;
    cr_assert_eq(rl_safetensors_open_mem(&st, image, len, "bad.safetensors", &err), -1);
    cr_assert(strstr(err.msg, "NUL byte"), "%s", err.msg);
}

Test(safetensors, broken_entries)
{
    expect_mem_error("{\"w\":{\"dtype\":\"Q7\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "tensor 'w': unknown dtype 'Q7'");
    expect_mem_error("{\"w\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8,
                     "tensor 'w': dtype I64 is not supported");
    expect_mem_error("{\"w\":{\"dtype\":\"F8_E4M3\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1,
                     "dtype F8_E4M3 is not supported");
    expect_mem_error("{\"w\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,12]}}", 12,
                     "tensor 'w': shape [2, 2] of F32 needs 16 bytes, data_offsets give 12");
    expect_mem_error("{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[8,24]}}", 16,
                     "tensor 'w' ends at byte");
    expect_mem_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                     "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12,
                     "tensors 'a' [0, 8) and 'b' [4, 12) overlap");
    expect_mem_error("{\"w\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4, "tensor 'w': missing 'shape'");
    expect_mem_error("{\"w\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "tensor 'w': missing 'dtype'");
    expect_mem_error("{\"w\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, "'data_offsets' must be [begin, end]");
    expect_mem_error("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":1}}", 4,
                     "tensor 'w': unexpected field 'x'");
    expect_mem_error("{\"w\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4,
                     "shape[0] is not a non-negative integer");
    expect_mem_error("{\"w\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", 4,
                     "shape[0] is not a non-negative integer");
    expect_mem_error("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]}}", 4, "end before they begin");
    expect_mem_error("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,\"4\"]}}", 4,
                     "data_offsets are not non-negative integers");
    expect_mem_error("{\"w\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 4,
                     "9 dimensions");
    expect_mem_error("{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4294967296],\"data_offsets\":[0,4]}}", 4,
                     "needs more than");
    expect_mem_error("{\"w\":[1]}", 0, "tensor 'w': entry is not an object");
    expect_mem_error("{\"__metadata__\":{\"format\":1}}", 0, "'__metadata__' field 'format' is not a string");
    expect_mem_error("{\"__metadata__\":[]}", 0, "'__metadata__' must be an object");
    expect_mem_error("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                     "\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8,
                     "tensor 'w' appears twice");
    expect_mem_error("{\"w\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
                     "field 'dtype' given twice");
}

Test(safetensors, accepts_gaps_any_order_zero_size_and_metadata)
{
    /* The format allows any order and unused bytes; zero-size tensors share offsets. */
    const char *hdr = "{\"__metadata__\":{\"format\":\"pt\"},"
                      "\"b\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[12,16]},"
                      "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                      "\"e\":{\"dtype\":\"BF16\",\"shape\":[0],\"data_offsets\":[8,8]},"
                      "\"f\":{\"dtype\":\"BF16\",\"shape\":[3,0],\"data_offsets\":[8,8]}}";
    size_t len = build_image(hdr, 16);
    rl_safetensors *st;
    rl_err err;
    cr_assert_eq(rl_safetensors_open_mem(&st, image, len, "ok.safetensors", &err), 0, "%s", err.msg);
    cr_assert_eq(rl_safetensors_count(st), 4);
    cr_assert_str_eq(rl_safetensors_at(st, 0)->name, "a");
    cr_assert_eq((const unsigned char *)rl_safetensors_find(st, "b")->data, image + 8 + strlen(hdr) + 12);
    rl_safetensors_close(st);
}

Test(safetensors, truncated_real_file)
{
    char *data;
    size_t len;
    rl_err err;
    cr_assert_eq(rl_file_read_all(MODELS "qwen3-tiny-tied/model.safetensors", &data, &len, &err), 0, "%s", err.msg);
    const char *dir = tmp_dir();
    write_text(dir, "model.safetensors", data, len - 100);
    char path[300];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    rl_safetensors *st;
    cr_assert_eq(rl_safetensors_open(&st, path, &err), -1);
    char want[128];
    snprintf(want, sizeof want, "ends at byte %zu, file has %zu", len, len - 100);
    cr_assert(strstr(err.msg, path) && strstr(err.msg, want) && strstr(err.msg, "tensor '"), "%s", err.msg);
    write_text(dir, "model.safetensors", data, 6);
    cr_assert_eq(rl_safetensors_open(&st, path, &err), -1);
    cr_assert(strstr(err.msg, "too short"), "%s", err.msg);
    write_text(dir, "model.safetensors", "", 0);
    cr_assert_eq(rl_safetensors_open(&st, path, &err), -1);
    cr_assert(strstr(err.msg, "file is 0 bytes"), "%s", err.msg);
    free(data);
    snprintf(path, sizeof path, "%s/absent.safetensors", dir);
    cr_assert_eq(rl_safetensors_open(&st, path, &err), -1);
    cr_assert(strstr(err.msg, "cannot open"), "%s", err.msg);
    rm_tmp();
}

/* ---- sharded directories ---------------------------------------------------------------- */

#define T1 "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}"
#define T2 "{\"y\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}"
#define T12 "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"y\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}"

static void index_json(const char *dir, const char *map)
{
    char text[512];
    snprintf(text, sizeof text, "{\"metadata\":{\"total_size\":8},\"weight_map\":{%s}}", map);
    write_text(dir, "model.safetensors.index.json", text, strlen(text));
}

Test(safetensors, broken_sharded_dirs)
{
    const char *dir = tmp_dir();
    expect_dir_error(dir, "no model.safetensors or model.safetensors.index.json");
    write_image(dir, "s1.safetensors", T1, 4);
    write_image(dir, "s2.safetensors", T2, 4);
    write_image(dir, "s12.safetensors", T12, 8);

    index_json(dir, "\"x\":\"s1.safetensors\",\"y\":\"s2.safetensors\"");
    rl_safetensors *st;
    rl_err err;
    cr_assert_eq(rl_safetensors_open_dir(&st, dir, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_safetensors_n_files(st), 2);
    cr_assert_eq(rl_safetensors_count(st), 2);
    cr_assert(strstr(rl_safetensors_find(st, "y")->file, "s2.safetensors"));
    rl_safetensors_close(st);

    index_json(dir, "\"x\":\"s1.safetensors\",\"y\":\"missing.safetensors\"");
    expect_dir_error(dir, "shard 'missing.safetensors' named in the index does not exist");
    index_json(dir, "\"x\":\"s1.safetensors\",\"y\":\"s1.safetensors\"");
    expect_dir_error(dir, "tensor 'y' is listed in the index but missing from shard s1.safetensors");
    index_json(dir, "\"x\":\"s1.safetensors\",\"y\":\"s12.safetensors\"");
    expect_dir_error(dir, "tensor 'x' is in two shards");
    index_json(dir, "\"x\":\"s12.safetensors\"");
    expect_dir_error(dir, "s12.safetensors: tensor 'y' is not listed in");
    index_json(dir, "\"x\":\"s2.safetensors\",\"y\":\"s1.safetensors\"");
    expect_dir_error(dir, "tensor 'x' is listed in shard s2.safetensors but stored in s1.safetensors");
    index_json(dir, "\"x\":\"../s1.safetensors\"");
    expect_dir_error(dir, "'../s1.safetensors' is not a plain file name");
    index_json(dir, "\"x\":3");
    expect_dir_error(dir, "weight_map entry 'x' is not a file name");
    index_json(dir, "");
    expect_dir_error(dir, "weight_map is empty");
    write_text(dir, "model.safetensors.index.json", "{\"weight_map\":", 14);
    expect_dir_error(dir, "invalid JSON");
    write_text(dir, "model.safetensors.index.json", "{}", 2);
    expect_dir_error(dir, "missing object 'weight_map'");
    /* A broken shard reports the shard's own problem. */
    write_image(dir, "s2.safetensors", "{\"y\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4);
    index_json(dir, "\"x\":\"s1.safetensors\",\"y\":\"s2.safetensors\"");
    expect_dir_error(dir, "s2.safetensors: tensor 'y' ends at byte");
    rm_tmp();
}

Test(safetensors, check_specs_errors)
{
    rl_model_config cfg;
    rl_err err;
    cr_assert_eq(rl_config_load(&cfg, MODELS "qwen3-tiny-untied/config.json", &err), 0, "%s", err.msg);
    rl_safetensors *st;
    cr_assert_eq(rl_safetensors_open_dir(&st, MODELS "qwen3-tiny-tied", &err), 0, "%s", err.msg);
    rl_tensor_spec *specs;
    int n;
    cr_assert_eq(rl_config_tensor_specs(&cfg, &specs, &n, &err), 0);
    /* A tied checkpoint against an untied config: shapes differ first. */
    cr_assert_eq(rl_safetensors_check_specs(st, specs, n, &err), -1);
    cr_assert(strstr(err.msg, "tensor 'model.embed_tokens.weight' has shape [512, 64], config.json gives [384, 96]"),
              "%s", err.msg);
    cr_assert(strstr(err.msg, "qwen3-tiny-tied/model.safetensors"), "%s", err.msg);
    free(specs);
    /* Same shapes, lm_head missing (untied config, tied file). */
    cfg.vocab_size = 512, cfg.hidden_size = 64, cfg.intermediate_size = 128, cfg.n_layers = 2;
    cfg.n_heads = 4, cfg.head_dim = 16;
    cr_assert_eq(rl_config_tensor_specs(&cfg, &specs, &n, &err), 0);
    cr_assert_eq(rl_safetensors_check_specs(st, specs, n, &err), -1);
    cr_assert(strstr(err.msg, "missing tensor 'lm_head.weight' (shape [512, 64])"), "%s", err.msg);
    /* One layer fewer in the config: layer 1 is unexpected. */
    cfg.tie_word_embeddings = 1, cfg.n_layers = 1;
    free(specs);
    cr_assert_eq(rl_config_tensor_specs(&cfg, &specs, &n, &err), 0);
    cr_assert_eq(rl_safetensors_check_specs(st, specs, n, &err), -1);
    cr_assert(strstr(err.msg, "unexpected tensor 'model.layers.1."), "%s", err.msg);
    free(specs);
    rl_safetensors_close(st);
}

/* ---- the writer ------------------------------------------------------------------------- */

Test(safetensors, writer_matches_python_library_byte_for_byte)
{
    static float vals[7][64];
    int64_t shapes[7][3] = {{3, 5}, {2, 2}, {7}, {1}, {0}, {0, 4}, {2, 1, 3}};
    int dims[7] = {2, 2, 1, 1, 0, 2, 3};
    rl_dtype types[7] = {RL_BF16, RL_F32, RL_F16, RL_F32, RL_F32, RL_BF16, RL_BF16};
    const char *names[7] = {"b", "a", "z.weight", "\xc3\xa9", "scalar", "empty", "q\"uote\\d\n"};
    rl_st_write_tensor t[7];
    for (int i = 0; i < 7; i++) {
        for (int k = 0; k < 64; k++) vals[i][k] = formula(k);
        t[i] = (rl_st_write_tensor){.name = names[i], .dtype = types[i], .n_dims = dims[i], .data = vals[i]};
        memcpy(t[i].shape, shapes[i], sizeof shapes[i]);
    }
    const char *dir = tmp_dir();
    char path[300];
    snprintf(path, sizeof path, "%s/out.safetensors", dir);
    rl_err err;
    cr_assert_eq(rl_safetensors_write(path, t, 7, &err), 0, "%s", err.msg);
    char *ours, *ref;
    size_t n_ours, n_ref;
    cr_assert_eq(rl_file_read_all(path, &ours, &n_ours, &err), 0);
    cr_assert_eq(rl_file_read_all("tests/fixtures/formats/reference.safetensors", &ref, &n_ref, &err), 0);
    cr_assert_eq(n_ours, n_ref, "%zu bytes, python wrote %zu", n_ours, n_ref);
    size_t first = 0;
    while (first < n_ref && ours[first] == ref[first]) first++;
    cr_assert_eq(first, n_ref, "first difference at byte %zu:\nours   %.200s\npython %.200s", first, ours + 8, ref + 8);
    free(ours);
    free(ref);
    rm_tmp();
}

Test(safetensors, writer_round_trip_bit_exact)
{
    enum { ROWS = 37, COLS = 29 };
    static float src[ROWS * COLS], back[ROWS * COLS];
    tu_fill_uniform(src, ROWS * COLS, -3.0f, 3.0f, 77);
    src[0] = 1e-40f; /* subnormal */
    src[1] = -0.0f;
    src[2] = 65504.0f;
    rl_st_write_tensor t[3] = {
        {.name = "w.f32", .dtype = RL_F32, .n_dims = 2, .shape = {ROWS, COLS}, .data = src},
        {.name = "w.bf16", .dtype = RL_BF16, .n_dims = 2, .shape = {ROWS, COLS}, .data = src},
        {.name = "w.f16", .dtype = RL_F16, .n_dims = 1, .shape = {ROWS * COLS}, .data = src},
    };
    const char *dir = tmp_dir();
    char path[300];
    snprintf(path, sizeof path, "%s/rt.safetensors", dir);
    rl_err err;
    cr_assert_eq(rl_safetensors_write(path, t, 3, &err), 0, "%s", err.msg);
    rl_safetensors *st;
    cr_assert_eq(rl_safetensors_open(&st, path, &err), 0, "%s", err.msg);
    for (int k = 0; k < 3; k++) {
        const rl_st_tensor *r = rl_safetensors_find(st, t[k].name);
        cr_assert_not_null(r);
        cr_assert_eq(r->dtype, t[k].dtype);
        tu_poison(back, ROWS * COLS);
        rl_safetensors_to_f32(r, back);
        int bad = -1;
        for (int i = 0; i < ROWS * COLS && bad < 0; i++) {
            float want = src[i];
            if (t[k].dtype == RL_BF16) want = rl_bf16_to_f32(rl_f32_to_bf16(src[i]));
            if (t[k].dtype == RL_F16) want = rl_f16_to_f32(rl_f32_to_f16(src[i]));
            if (memcmp(&want, &back[i], 4)) bad = i;
        }
        cr_assert_eq(bad, -1, "%s: element %d differs", t[k].name, bad);
    }
    rl_safetensors_close(st);
    rm_tmp();
}

Test(safetensors, writer_refuses_duplicates_and_leaves_no_file)
{
    float x[2] = {1, 2};
    rl_st_write_tensor t[2] = {
        {.name = "w", .dtype = RL_F32, .n_dims = 1, .shape = {2}, .data = x},
        {.name = "w", .dtype = RL_BF16, .n_dims = 1, .shape = {2}, .data = x},
    };
    const char *dir = tmp_dir();
    char path[300];
    snprintf(path, sizeof path, "%s/dup.safetensors", dir);
    rl_err err;
    cr_assert_eq(rl_safetensors_write(path, t, 2, &err), -1);
    cr_assert(strstr(err.msg, "tensor 'w' given twice"), "%s", err.msg);
    cr_assert(!rl_file_exists(path));
    cr_assert_eq(rl_safetensors_write_dir(dir, t, 2, 0, &err), -1);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    cr_assert(!rl_file_exists(path));
    rm_tmp();
}

/* Loads a fixture, writes it back (bf16 sharded, and fp32 single) and checks that the result
 * opens, passes check_specs and holds the same values. */
Test(safetensors, write_dir_sharded_round_trip)
{
    rl_model_config cfg;
    rl_err err;
    cr_assert_eq(rl_config_load(&cfg, MODELS "qwen3-tiny-untied/config.json", &err), 0, "%s", err.msg);
    rl_safetensors *st;
    cr_assert_eq(rl_safetensors_open_dir(&st, MODELS "qwen3-tiny-untied", &err), 0, "%s", err.msg);
    rl_tensor_spec *specs;
    int n;
    cr_assert_eq(rl_config_tensor_specs(&cfg, &specs, &n, &err), 0);
    rl_st_write_tensor *w = calloc((size_t)n, sizeof *w);
    float **bufs = calloc((size_t)n, sizeof *bufs);
    for (int i = 0; i < n; i++) {
        const rl_st_tensor *t = rl_safetensors_find(st, specs[i].name);
        bufs[i] = malloc((size_t)rl_st_tensor_numel(t) * sizeof(float));
        rl_safetensors_to_f32(t, bufs[i]);
        w[i] = (rl_st_write_tensor){.name = specs[i].name, .dtype = RL_BF16, .n_dims = t->n_dims, .data = bufs[i]};
        memcpy(w[i].shape, t->shape, sizeof w[i].shape);
    }
    const char *dir = tmp_dir();
    cr_assert_eq(rl_safetensors_write_dir(dir, w, n, 60000, &err), 0, "%s", err.msg);
    rl_safetensors *back;
    cr_assert_eq(rl_safetensors_open_dir(&back, dir, &err), 0, "%s", err.msg);
    cr_assert(rl_safetensors_n_files(back) > 3, "%d shards", rl_safetensors_n_files(back));
    cr_assert_eq(rl_safetensors_check_specs(back, specs, n, &err), 0, "%s", err.msg);
    for (int i = 0; i < n; i++) {
        const rl_st_tensor *a = rl_safetensors_find(st, specs[i].name), *b = rl_safetensors_find(back, specs[i].name);
        cr_assert_eq(a->n_bytes, b->n_bytes);
        cr_assert_eq(memcmp(a->data, b->data, a->n_bytes), 0, "%s differs", specs[i].name);
    }
    rl_safetensors_close(back);
    /* Writing a single file into the same directory replaces the sharded checkpoint. */
    for (int i = 0; i < n; i++) w[i].dtype = RL_F32;
    cr_assert_eq(rl_safetensors_write_dir(dir, w, n, 0, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_safetensors_open_dir(&back, dir, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_safetensors_n_files(back), 1);
    cr_assert_eq(rl_safetensors_check_specs(back, specs, n, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_safetensors_find(back, "lm_head.weight")->dtype, RL_F32);
    rl_safetensors_close(back);
    for (int i = 0; i < n; i++) free(bufs[i]);
    free(bufs);
    free(w);
    free(specs);
    rl_safetensors_close(st);
    rm_tmp();
}

/* Re-writes every fixture with rl_safetensors_write_dir + rl_config_save into
 * build/hf_roundtrip/<name>/ (same stored dtype; the -sharded one sharded again) and checks the
 * copy here; tools/check_hf_roundtrip.py build/hf_roundtrip then loads each copy with
 * transformers and compares its logits with the original's. */
static void export_fixture(const char *name, size_t max_shard)
{
    char src[256], dst[256], path[300];
    snprintf(src, sizeof src, MODELS "%s", name);
    snprintf(dst, sizeof dst, "build/hf_roundtrip/%s", name);
    snprintf(path, sizeof path, "%s/config.json", src);
    rl_model_config cfg;
    rl_err err;
    cr_assert_eq(rl_config_load(&cfg, path, &err), 0, "%s", err.msg);
    rl_safetensors *st;
    cr_assert_eq(rl_safetensors_open_dir(&st, src, &err), 0, "%s", err.msg);
    rl_tensor_spec *specs;
    int n;
    cr_assert_eq(rl_config_tensor_specs(&cfg, &specs, &n, &err), 0);
    rl_st_write_tensor *w = calloc((size_t)n, sizeof *w);
    float **bufs = calloc((size_t)n, sizeof *bufs);
    for (int i = 0; i < n; i++) {
        const rl_st_tensor *t = rl_safetensors_find(st, specs[i].name);
        bufs[i] = malloc((size_t)rl_st_tensor_numel(t) * sizeof(float));
        rl_safetensors_to_f32(t, bufs[i]);
        w[i] = (rl_st_write_tensor){.name = specs[i].name, .dtype = t->dtype, .n_dims = t->n_dims, .data = bufs[i]};
        memcpy(w[i].shape, t->shape, sizeof w[i].shape);
    }
    cr_assert_eq(rl_safetensors_write_dir(dst, w, n, max_shard, &err), 0, "%s", err.msg);
    snprintf(path, sizeof path, "%s/config.json", dst);
    cr_assert_eq(rl_config_save(&cfg, path, &err), 0, "%s", err.msg);
    rl_safetensors *back;
    cr_assert_eq(rl_safetensors_open_dir(&back, dst, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_safetensors_n_files(back), rl_safetensors_n_files(st), "%s: shard count", name);
    cr_assert_eq(rl_safetensors_check_specs(back, specs, n, &err), 0, "%s", err.msg);
    for (int i = 0; i < n; i++) {
        const rl_st_tensor *a = rl_safetensors_find(st, specs[i].name), *b = rl_safetensors_find(back, specs[i].name);
        cr_assert(a->n_bytes == b->n_bytes && !memcmp(a->data, b->data, a->n_bytes), "%s: %s differs", name, a->name);
    }
    rl_safetensors_close(back);
    for (int i = 0; i < n; i++) free(bufs[i]);
    free(bufs);
    free(w);
    free(specs);
    rl_safetensors_close(st);
}

Test(safetensors, export_fixtures_for_transformers)
{
    export_fixture("qwen3-tiny-tied", 0);
    export_fixture("qwen3-tiny-untied", 0);
    export_fixture("qwen3-tiny-sharded", 100000);
    export_fixture("qwen2-tiny", 0);
    export_fixture("llama3-tiny", 0);
}

Test(safetensors, single_file_preferred_over_index)
{
    const char *dir = tmp_dir();
    write_image(dir, "s1.safetensors", T1, 4);
    index_json(dir, "\"x\":\"s1.safetensors\"");
    write_image(dir, "model.safetensors", T2, 4);
    rl_safetensors *st;
    rl_err err;
    cr_assert_eq(rl_safetensors_open_dir(&st, dir, &err), 0, "%s", err.msg);
    cr_assert_not_null(rl_safetensors_find(st, "y"), "transformers reads model.safetensors first");
    cr_assert_null(rl_safetensors_find(st, "x"));
    rl_safetensors_close(st);
    rm_tmp();
}

Test(safetensors, unaligned_data_converted)
{
    const char *hdr = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[1,9]},"
                      "\"b\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[9,13]},"
                      "\"c\":{\"dtype\":\"F16\",\"shape\":[1],\"data_offsets\":[13,15]}}";
    size_t len = build_image(hdr, 15);
    unsigned char *data = image + 8 + strlen(hdr);
    float a[2] = {3.25f, -1e-3f};
    uint16_t b[2] = {rl_f32_to_bf16(-7.5f), rl_f32_to_bf16(0.1f)}, c = rl_f32_to_f16(0.333f);
    memcpy(data + 1, a, 8);
    memcpy(data + 9, b, 4);
    memcpy(data + 13, &c, 2);
    rl_safetensors *st;
    rl_err err;
    cr_assert_eq(rl_safetensors_open_mem(&st, image, len, "odd.safetensors", &err), 0, "%s", err.msg);
    float out[2];
    tu_poison(out, 2);
    rl_safetensors_to_f32(rl_safetensors_find(st, "a"), out);
    cr_assert(out[0] == a[0] && out[1] == a[1]);
    tu_poison(out, 2);
    rl_safetensors_to_f32(rl_safetensors_find(st, "b"), out);
    cr_assert(out[0] == -7.5f && out[1] == rl_bf16_to_f32(b[1]), "%g %g", out[0], out[1]);
    tu_poison(out, 2);
    rl_safetensors_to_f32(rl_safetensors_find(st, "c"), out);
    cr_assert(out[0] == rl_f16_to_f32(c), "%g", out[0]);
    rl_safetensors_close(st);
}
