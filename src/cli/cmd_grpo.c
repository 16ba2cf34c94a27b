/* cmd_grpo.c — `rlc grpo`: GRPO (and DAPO / Dr. GRPO) on a JSONL file of prompts with a
 * reward. Writes OUT/model (checkpoint, HF layout) and OUT/metrics.jsonl; see
 * train_common.h. --variant sets a family of defaults (rl_grpo_variant) that explicit options
 * override. */
#include "cli/commands.h"
#include "cli/device.h"
#include "cli/options.h"
#include "cli/train_common.h"
#include <string.h>

#include "train/grpo.h"
#include "train/runlog.h"

static const char usage[] =
    "usage: rlc grpo --model DIR --data FILE.jsonl --reward SPEC --out DIR [options]\n"
    "       rlc grpo --model DIR --data FILE.jsonl --env ENV --out DIR [options]\n\n"
    "GRPO: sample --group-size completions per prompt, score them, group-normalised advantages,\n"
    "clipped policy-gradient updates. Data lines: {\"prompt\": text or messages, \"answer\": ..., ...}.\n"
    "Rewards: math | exact | exact:strict | regex:PATTERN | format | format:boxed | cmd:\"COMMAND\" | kernel\n"
    "(cmd: a program reading one JSON object per completion on stdin and printing {\"reward\": x};\n"
    "kernel: data lines {\"task\": DIR | PROBLEM.py}, prompts built each step from OUT/attempts.jsonl,\n"
    "the answer's kernel evaluated on the GPU, docs/kernel-env.md \"Training on the kernel reward\").\n"
    "--variant dapo: clip-higher 0.28, token-level loss; dr_grpo: no std scaling, constant\n"
    "normaliser; rloo: leave-one-out baseline; reinforce_pp: REINFORCE++ (KL from --kl-beta in the\n"
    "rewards, returns normalised over the batch). metrics.jsonl has each step's train-vs-rollout log-prob mismatch (0 with\n"
    "--deterministic). Writes OUT/model and OUT/metrics.jsonl; Ctrl-C saves after the current step;\n"
    "--resume OUT/model continues.\n"
    "--env: multi-turn episodes instead of --reward (docs/episodes.md): ENV is a program speaking JSON\n"
    "lines (its observations go back to the model as tool messages, masked out of the loss; it ends an\n"
    "episode with a reward) or `kernel` (tools compile, check, profile, submit on kernel tasks).\n\n";

typedef struct options {
    const char *model_dir, *data, *out, *resume, *tokenizer, *reward, *env, *eval_data;
    int64_t steps;
    int max_prompt, save_every, save, seed, schedule, loss_norm, variant, reward_errors, log_samples, max_turns,
        max_episode_tokens, eval_every, thinking_off;
    rl_cli_ranks ranks;
    double temperature, top_p, clip_low, clip_high, kl_beta, reward_timeout, tis_cap, env_timeout, env_fail_reward;
    rl_opt_list stop;
    rl_kreward_opts kernel;
    rl_grpo_config c;
} options;

static int run(options *o, const cJSON *saved_options, char **argv)
{
    rl_run_config c = {.kind = RL_RUN_GRPO, .model_dir = o->model_dir, .resume = o->resume, .data = o->data,
                       .out = o->out, .tokenizer = o->tokenizer, .steps = o->steps, .max_len = o->max_prompt,
                       .thinking_off = o->thinking_off, .save_every = o->save_every, .reward = o->reward,
                       .reward_options = {.timeout_s = o->reward_timeout, .on_error = (rl_reward_errors)o->reward_errors, .kernel = o->kernel},
                       .env = o->env, .max_turns = o->max_turns, .max_episode_tokens = o->max_episode_tokens,
                       .env_timeout = o->env_timeout, .env_fail_reward = o->env_fail_reward,
                       .grpo = o->c, .options = saved_options, .eval_data = o->eval_data, .eval_every = o->eval_every,
                       .no_save = !o->save, .log_samples = o->log_samples};
    return rl_cli_train("grpo", &o->ranks, &c, argv);
}

/* The trainer's config from the options: the variant's presets where no option was given. */
static void make_config(options *o, rl_opts *cli)
{
    rl_grpo_config *c = &o->c;
    c->gen.sample.temperature = (float)o->temperature;
    c->gen.sample.top_p = (float)o->top_p;
    c->gen.stop = o->stop.n ? o->stop.items : NULL;
    c->gen.n_stop = o->stop.n;
    c->clip_low = (float)o->clip_low;
    c->clip_high = (float)o->clip_high;
    c->kl_beta = (float)o->kl_beta;
    c->tis_cap = (float)o->tis_cap;
    c->loss_norm = (rl_loss_norm)o->loss_norm;
    c->seed = (uint64_t)o->seed;
    c->optim.schedule.kind = (rl_lr_kind)o->schedule;
    c->optim.schedule.total_steps = (int)o->steps;
    unsigned keep = (rl_opts_find(cli, "clip-high")->set ? RL_GRPO_KEEP_CLIP_HIGH : 0) |
                    (rl_opts_find(cli, "loss-norm")->set ? RL_GRPO_KEEP_LOSS_NORM : 0) |
                    (rl_opts_find(cli, "std-scale")->set ? RL_GRPO_KEEP_SCALE_STD : 0);
    rl_grpo_variant(c, (rl_grpo_variant_kind)o->variant, keep);
    o->loss_norm = c->loss_norm; /* saved with the checkpoint as the run used them */
    o->clip_high = c->clip_high;
}

int rl_cmd_grpo(int argc, char **argv)
{
    rl_grpo_config c = rl_grpo_defaults();
    options o = {.ranks = {.device = RL_DEVICE_AUTO, .gpus = 1}, .save = 1, .steps = 100, .eval_every = 50, .max_prompt = 1024, .seed = 1234, .schedule = RL_LR_CONSTANT,
                 .loss_norm = c.loss_norm, .temperature = c.gen.sample.temperature, .top_p = c.gen.sample.top_p,
                 .clip_low = c.clip_low, .clip_high = c.clip_high, .kl_beta = c.kl_beta, .reward_timeout = 60,
                 .log_samples = RL_RUNLOG_DEFAULT_SAMPLES, .max_turns = 4, .env_timeout = 60, .c = c};
    rl_opt list[] = {
        RL_OPT_S("model", &o.model_dir, "DIR", "policy to start from (and the KL reference)"),
        RL_OPT_S("data", &o.data, "FILE", "prompts (JSON lines)", .flags = RL_OPT_REQUIRED),
        RL_OPT_S("reward", &o.reward, "SPEC", "reward spec (see above; or --env)"),
        RL_OPT_S("env", &o.env, "ENV", "multi-turn episodes with this environment: a command, or kernel"),
        RL_OPT_I("max-turns", &o.max_turns, 1, 1000, "--env: model turns per episode"),
        RL_OPT_I("max-episode-tokens", &o.max_episode_tokens, 0, 1 << 24,
                 "--env: tokens after the prompt, the model's and observations (0 = turns x (max-new-tokens + 256))"),
        RL_OPT_D("env-timeout", &o.env_timeout, 0, 1e6, "--env: a program's seconds per turn", .range.above_lo = 1),
        RL_OPT_D("env-fail-reward", &o.env_fail_reward, -1e6, 1e6,
                 "--env: reward of an episode the environment failed (crash, hang, garbage); kernel: -0.5"),
        RL_OPTS_RL_RUN(o),
        RL_OPT_C("variant", &o.variant, rl_grpo_variant_names, "presets (see above) under the options below"),
        RL_OPT_L("steps", &o.steps, 1, 1e12, "rollout steps"),
        RL_OPT_I("prompts-per-step", &o.c.prompts_per_step, 1, 1 << 20, "prompts per rollout"),
        RL_OPT_I("group-size", &o.c.group_size, 1, 1 << 20, "completions per prompt (G)"),
        RL_OPTS_SAMPLING(o),
        RL_OPT_REWARD_ERRORS(&o.reward_errors),
        RL_OPTS_KERNEL(o.kernel),
        RL_OPT_D("clip-low", &o.clip_low, 0, 1, "ratio clipped below at 1 - clip-low"),
        RL_OPT_D("clip-high", &o.clip_high, 0, 100, "ratio clipped above at 1 + clip-high"),
        RL_OPT_D("kl-beta", &o.kl_beta, 0, 1e6, "k3 KL penalty to --model (0 = off, no reference loaded)"),
        RL_OPT_C("loss-norm", &o.loss_norm, rl_loss_norm_names, "loss normalisation: sequence, token (DAPO), dr_grpo"),
        RL_OPT_F("std-scale", &o.c.scale_std, "divide advantages by the group std (--no-std-scale: Dr. GRPO)"),
        RL_OPT_I("mu", &o.c.mu, 1, 1 << 20, "optimizer updates per rollout"),
        RL_OPT_F("recompute-old-logp", &o.c.recompute_old_logp, "old log-probs from a training forward, not the sampler"),
        RL_OPT_F("share-prompts", &o.c.share_prompts,
                 "the update runs a group's prompt once per micro-batch (--no-share-prompts: every sample whole)"),
        RL_OPT_D("tis-cap", &o.tis_cap, 0, 1e6,
                 "truncated importance sampling: weight each token's loss by min(exp(trainer - sampler log-prob), X) "
                 "(0 = off)"),
        RL_OPT_F("deterministic", &o.ranks.deterministic,
                 "batch-invariant kernels: the sampler's log-probs equal the trainer's exactly (slower)"),
        RL_OPT_D("gpu-memory-utilization", &o.c.engine.gpu_memory_utilization, 0, 1,
                 "at most this fraction of the free memory for the generation KV cache (sized by what a step uses)", .range.above_lo = 1),
        RL_OPT_I("max-num-seqs", &o.c.engine.max_num_seqs, 1, 65536, "sequences the engine generates at once"),
        RL_OPT_I("max-num-batched-tokens", &o.c.engine.max_num_batched_tokens, 1, 1 << 24,
                 "tokens per engine step, >= --max-num-seqs"),
        RL_OPT_LOG_SAMPLES(&o.log_samples),
        RL_OPTS_TRAINER(o, "seed of the data order and sampling"),
        RL_OPT_END,
    };
    rl_opts cli = {.cmd = "grpo", .usage = usage, .list = list};
    int status = rl_cli_parse_resumable(&cli, argc, argv);
    if (status == RL_OPTS_CONTINUE && !o.model_dir && !o.resume)
        status = rl_opts_fail(&cli, "--model (or --resume) is required (see --help)");
    if (status == RL_OPTS_CONTINUE && !o.reward == !o.env)
        status = rl_opts_fail(&cli, o.env ? "--reward and --env exclude each other (an episode's reward comes from its environment)"
                                          : "--reward (or --env) is required (see --help)");
    if (status == RL_OPTS_CONTINUE && o.env && !strcmp(o.env, "kernel") && !rl_opts_find(&cli, "env-fail-reward")->set)
        o.env_fail_reward = -0.5; /* the kernel reward's failure value (kreward.h) */
    if (status == RL_OPTS_CONTINUE && o.kl_beta > 0 && !o.model_dir)
        status = rl_opts_fail(&cli, "--kl-beta needs --model (the reference)");
    if (status == RL_OPTS_CONTINUE && o.c.engine.max_num_batched_tokens < o.c.engine.max_num_seqs)
        status = rl_opts_fail(&cli, "--max-num-batched-tokens (%d) must be >= --max-num-seqs (%d)",
                              o.c.engine.max_num_batched_tokens, o.c.engine.max_num_seqs);
    if (status == RL_OPTS_CONTINUE) {
        make_config(&o, &cli);
        cJSON *saved = rl_opts_to_json(&cli);
        status = run(&o, saved, argv);
        cJSON_Delete(saved);
    }
    rl_opts_free(&cli);
    return status;
}
