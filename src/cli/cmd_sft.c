/* cmd_sft.c — `rlc sft`: supervised fine-tuning of a Hugging Face model on a JSONL file.
 * Writes OUT/model (checkpoint, HF layout) and OUT/metrics.jsonl; see train_common.h. */
#include "cli/commands.h"
#include "cli/device.h"
#include "cli/options.h"
#include "cli/train_common.h"
#include "train/runlog.h"
#include "train/sft.h"

static const char usage[] =
    "usage: rlc sft --model DIR --data FILE.jsonl --out DIR [options]\n\n"
    "Supervised fine-tuning: cross-entropy on completion tokens only, examples packed (no padding)\n"
    "into micro-batches of at most --max-tokens tokens. Data lines: {\"prompt\", \"completion\"} (text or\n"
    "chat messages) or {\"messages\": [...]} (learns the last assistant turn). Writes OUT/model (an HF\n"
    "model directory with the tokenizer, optimizer and trainer state) and OUT/metrics.jsonl.\n"
    "Ctrl-C saves a checkpoint after the current step; --resume OUT/model continues (bit-exact).\n\n";

typedef struct options {
    const char *model_dir, *data, *out, *resume, *tokenizer;
    int64_t steps;
    double epochs;
    int max_len, save_every, save, seed, schedule, log_samples;
    rl_cli_ranks ranks;
    rl_sft_config c;
} options;

static int run(options *o, const cJSON *saved_options, char **argv)
{
    rl_run_config c = {.kind = RL_RUN_SFT, .model_dir = o->model_dir, .resume = o->resume, .data = o->data,
                       .out = o->out, .tokenizer = o->tokenizer, .steps = o->steps, .epochs = o->epochs,
                       .max_len = o->max_len, .save_every = o->save_every, .sft = o->c, .options = saved_options,
                       .no_save = !o->save, .log_samples = o->log_samples};
    c.sft.seed = (uint64_t)o->seed;
    c.sft.optim.schedule.kind = (rl_lr_kind)o->schedule;
    return rl_cli_train("sft", &o->ranks, &c, argv);
}

int rl_cmd_sft(int argc, char **argv)
{
    options o = {.ranks = {.device = RL_DEVICE_AUTO, .gpus = 1}, .epochs = 1, .max_len = 2048, .save = 1, .seed = 1234,
                 .schedule = RL_LR_COSINE, .log_samples = RL_RUNLOG_DEFAULT_SAMPLES, .c = rl_sft_defaults()};
    rl_opt list[] = {
        RL_OPT_S("model", &o.model_dir, "DIR", "model directory to start from (HF layout)"),
        RL_OPT_S("data", &o.data, "FILE", "training data (JSON lines)", .flags = RL_OPT_REQUIRED),
        RL_OPT_S("out", &o.out, "DIR", "output directory", .flags = RL_OPT_REQUIRED),
        RL_OPT_S("resume", &o.resume, "DIR", "continue from a checkpoint (OUT/model of an earlier run)"),
        RL_OPT_S("tokenizer", &o.tokenizer, "FILE", "tokenizer.json (default: the model's)"),
        RL_OPT_L("steps", &o.steps, 0, 1e12, "optimizer steps (0: from --epochs)"),
        RL_OPT_D("epochs", &o.epochs, 0, 1e6, "passes over the data when --steps is 0", .range.above_lo = 1),
        RL_OPT_I("grad-accum", &o.c.grad_accum, 1, 1 << 20, "micro-batches per optimizer step"),
        RL_OPT_I("max-len", &o.max_len, 2, 1 << 30, "cut examples to this many tokens"),
        RL_OPT_LOG_SAMPLES(&o.log_samples),
        RL_OPTS_TRAINER(o, "seed of the data order"),
        RL_OPT_END,
    };
    rl_opts cli = {.cmd = "sft", .usage = usage, .list = list};
    int status = rl_cli_parse_resumable(&cli, argc, argv);
    if (status == RL_OPTS_CONTINUE && !o.model_dir && !o.resume)
        status = rl_opts_fail(&cli, "--model (or --resume) is required (see --help)");
    if (status == RL_OPTS_CONTINUE) {
        cJSON *saved = rl_opts_to_json(&cli);
        status = run(&o, saved, argv);
        cJSON_Delete(saved);
    }
    rl_opts_free(&cli);
    return status;
}
