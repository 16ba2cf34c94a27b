/* cmd_eval.c — `rlc eval`: greedy accuracy and mean reward of a model on a JSONL file of
 * prompts with answers (the data of `rlc grpo` / `rlc ppo`), scored by a reward spec: one
 * completion per prompt at temperature 0, through the engine (rl_grpo_evaluate). Prints one
 * line, or a JSON object with --json, for scripts that follow a run's held-out accuracy
 * (scripts/demo-ppo.sh). */
#include <stdio.h>

#include "cli/commands.h"
#include "cli/device.h"
#include "cli/options.h"
#include "core/file.h"
#include "engine/generate.h"
#include "train/data.h"
#include "train/grpo.h"

static const char usage[] =
    "usage: rlc eval --model DIR --data FILE.jsonl --reward SPEC [options]\n\n"
    "Greedy completion of every prompt of FILE (lines as for rlc grpo), scored by the reward: prints\n"
    "the count scoring >= 1, the accuracy and the mean reward.\n\n";

int rl_cmd_eval(int argc, char **argv)
{
    const char *model_dir = NULL, *data = NULL, *reward_spec = NULL, *tokenizer = NULL;
    int device = RL_DEVICE_AUTO, precision = RL_PRECISION_AUTO, threads = 0, max_new = 256, json = 0, thinking_off = 0;
    rl_opt list[] = {
        RL_OPT_S("model", &model_dir, "DIR", "model directory", .flags = RL_OPT_REQUIRED),
        RL_OPT_S("data", &data, "FILE", "prompts with answers (JSON lines)", .flags = RL_OPT_REQUIRED),
        RL_OPT_S("reward", &reward_spec, "SPEC", "reward spec (as rlc grpo)", .flags = RL_OPT_REQUIRED),
        RL_OPT_S("tokenizer", &tokenizer, "FILE", "tokenizer.json (default: the model's)"),
        RL_OPT_I("max-new-tokens", &max_new, 1, 1 << 30, "completion length limit"),
        RL_OPT_F("json", &json, "print {\"correct\", \"n\", \"accuracy\", \"reward_mean\"}"),
        RL_OPT_THINKING(&thinking_off),
        RL_OPT_DEVICE(&device),
        RL_OPT_PRECISION(&precision),
        RL_OPT_THREADS(&threads),
        RL_OPT_END,
    };
    rl_opts cli = {.cmd = "eval", .usage = usage, .list = list};
    int status = rl_opts_parse(&cli, argc, argv);
    if (status != RL_OPTS_CONTINUE) {
        rl_opts_free(&cli);
        return status;
    }
    char tok_path[4200];
    if (tokenizer) snprintf(tok_path, sizeof tok_path, "%s", tokenizer);
    else snprintf(tok_path, sizeof tok_path, "%s/tokenizer.json", model_dir);
    rl_ctx ctx;
    status = rl_device_ctx("eval", &ctx, device, precision, threads, 0);
    if (status) {
        rl_opts_free(&cli);
        return status;
    }
    rl_err err;
    rl_model m;
    rl_tokenizer *tok = NULL;
    rl_reward *reward = NULL;
    rl_train_data d = {0};
    rl_engine *e = NULL;
    int have_model = 0, correct = 0;
    double mean = 0;
    rl_gen_params g = rl_gen_params_default();
    g.sample.temperature = 0;
    g.max_new_tokens = max_new;
    int rc = rl_model_load(&m, &ctx, model_dir, &err);
    have_model = rc == 0;
    if (rc == 0) rc = rl_tok_load(&tok, tok_path, &err);
    if (rc == 0) rc = rl_train_data_rl_chat(&d, data, tok, 1 << 30, !thinking_off, &err);
    if (rc == 0) rc = rl_reward_create(&reward, reward_spec, NULL, &err);
    if (rc == 0) rc = rl_engine_create(&e, &m, tok, NULL, &err);
    if (rc == 0) rc = rl_grpo_evaluate(e, reward, d.prompts, d.n, &g, &mean, &correct, &err);
    if (rc == 0 && json)
        printf("{\"correct\": %d, \"n\": %d, \"accuracy\": %.6g, \"reward_mean\": %.6g}\n", correct, d.n,
               d.n ? (double)correct / d.n : 0, mean);
    else if (rc == 0)
        printf("%s: %d/%d correct (%.1f%%), mean reward %.4f\n", data, correct, d.n,
               d.n ? 100.0 * correct / d.n : 0, mean);
    else
        fprintf(stderr, "rlc eval: %s\n", err.msg);
    rl_engine_free(e);
    rl_reward_free(reward);
    rl_train_data_free(&d);
    rl_tok_free(tok);
    if (have_model) rl_model_free(&m);
    rl_ctx_free(&ctx);
    rl_opts_free(&cli);
    return rc ? RL_EXIT_FAILURE : RL_EXIT_OK;
}
