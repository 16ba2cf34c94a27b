/* cmd_ppo.c — `rlc ppo`: PPO with a critic (train/ppo.h) on a JSONL file of prompts with a
 * reward. Writes OUT/model (the policy, HF layout), OUT/model/value (the value model, HF
 * Qwen3ForTokenClassification layout) and OUT/metrics.jsonl; see train_common.h. Option names
 * follow TRL's PPO trainer and OpenRLHF where they have one. */
#include "cli/commands.h"
#include "cli/device.h"
#include "cli/options.h"
#include "cli/train_common.h"
#include "train/ppo.h"
#include "train/runlog.h"

static const char usage[] =
    "usage: rlc ppo --model DIR --data FILE.jsonl --reward SPEC --out DIR [options]\n\n"
    "PPO with a value model: sample completions, score them (rewards as for rlc grpo), per-token\n"
    "rewards = the score at the last token - kl-coef x (logp - logp_ref) at every token, GAE\n"
    "advantages (--gamma, --lam), then --ppo-epochs passes of --num-mini-batches shuffled\n"
    "mini-batches with the clipped policy loss and the clipped value loss, each model with its own\n"
    "AdamW (--lr, --vf-lr). The value model: --value-model DIR (a Qwen3ForTokenClassification or\n"
    "...ForSequenceClassification with one label, or a causal LM given a new head), else --model's\n"
    "trunk with a new zero head. --critic shared: no value model, a value head on the policy's final\n"
    "hidden state trained with it (one backward; the value loss then shapes the policy's features).\n"
    "Writes OUT/model, OUT/model/value and OUT/metrics.jsonl; Ctrl-C\n"
    "saves after the current step; --resume OUT/model continues.\n"
    "--reward kernel: data lines {\"task\": DIR | PROBLEM.py}, prompts built each step from\n"
    "OUT/attempts.jsonl, as for rlc grpo (docs/kernel-env.md \"Training on the kernel reward\").\n"
    "Multi-turn episodes (--env) are GRPO's only: use rlc grpo --env.\n\n";

typedef struct options {
    const char *model_dir, *data, *out, *resume, *tokenizer, *reward, *value_model, *eval_data, *env;
    int64_t steps;
    int max_prompt, save_every, save, seed, schedule, eval_every, reward_errors, log_samples, thinking_off, critic;
    rl_cli_ranks ranks;
    double temperature, top_p, cliprange, cliprange_value, vf_coef, vf_lr, gamma, lam, reward_clip, eos_penalty,
        reward_timeout, entropy_coef;
    rl_opt_list stop;
    rl_kreward_opts kernel;
    rl_ppo_config c;
} options;

static void make_config(options *o)
{
    rl_ppo_config *c = &o->c;
    c->gen.sample.temperature = (float)o->temperature;
    c->gen.sample.top_p = (float)o->top_p;
    c->gen.stop = o->stop.n ? o->stop.items : NULL;
    c->gen.n_stop = o->stop.n;
    c->cliprange = (float)o->cliprange;
    c->cliprange_value = (float)o->cliprange_value;
    c->vf_coef = (float)o->vf_coef;
    c->critic = (rl_critic_kind)o->critic;
    c->entropy_coef = (float)o->entropy_coef;
    c->gamma = (float)o->gamma;
    c->lam = (float)o->lam;
    c->reward_clip = (float)o->reward_clip;
    c->missing_eos_penalty = (float)o->eos_penalty;
    c->seed = (uint64_t)o->seed;
    c->optim.schedule.kind = (rl_lr_kind)o->schedule;
    /* the value model's optimizer: the policy's settings with its own learning rate */
    c->value_optim = c->optim;
    c->value_optim.schedule.peak = o->vf_lr;
}

int rl_cmd_ppo(int argc, char **argv)
{
    rl_ppo_config c = rl_ppo_defaults();
    options o = {.ranks = {.device = RL_DEVICE_AUTO, .gpus = 1}, .save = 1, .steps = 100, .eval_every = 50,
                 .max_prompt = 1024,
                 .seed = 1234, .schedule = RL_LR_CONSTANT, .temperature = c.gen.sample.temperature,
                 .top_p = c.gen.sample.top_p, .cliprange = c.cliprange, .cliprange_value = c.cliprange_value,
                 .vf_coef = c.vf_coef, .vf_lr = c.value_optim.schedule.peak, .gamma = c.gamma, .lam = c.lam,
                 .reward_timeout = 60, .log_samples = RL_RUNLOG_DEFAULT_SAMPLES, .c = c};
    rl_opt list[] = {
        RL_OPT_S("model", &o.model_dir, "DIR", "policy to start from (and the KL reference)"),
        RL_OPT_S("value-model", &o.value_model, "DIR", "value model to start from (default: --model's trunk, new head)"),
        RL_OPT_S("data", &o.data, "FILE", "prompts (JSON lines)", .flags = RL_OPT_REQUIRED),
        RL_OPT_S("reward", &o.reward, "SPEC", "reward spec (as rlc grpo)", .flags = RL_OPT_REQUIRED),
        RL_OPT_S("env", &o.env, "ENV", "not supported (multi-turn episodes: rlc grpo --env)"),
        RL_OPT_REWARD_ERRORS(&o.reward_errors),
        RL_OPTS_KERNEL(o.kernel),
        RL_OPT_LOG_SAMPLES(&o.log_samples),
        RL_OPTS_RL_RUN(o),
        RL_OPT_L("steps", &o.steps, 1, 1e12, "rollout steps"),
        RL_OPT_I("prompts-per-step", &o.c.prompts_per_step, 1, 1 << 20, "prompts per rollout"),
        RL_OPT_I("n-samples-per-prompt", &o.c.samples_per_prompt, 1, 1 << 20, "completions per prompt"),
        RL_OPTS_SAMPLING(o),
        RL_OPT_D("kl-coef", &o.c.kl_coef, 0, 1e6, "KL penalty in the rewards (0 = off, no reference loaded)"),
        RL_OPT_D("target-kl", &o.c.target_kl, 0, 1e6, "adaptive KL controller's target per completion (0 = fixed)"),
        RL_OPT_D("kl-horizon", &o.c.kl_horizon, 1, 1e12, "adaptive KL controller's horizon (completions)"),
        RL_OPT_D("gamma", &o.gamma, 0, 1, "GAE discount", .range.above_lo = 1),
        RL_OPT_D("lam", &o.lam, 0, 1, "GAE lambda"),
        RL_OPT_I("ppo-epochs", &o.c.ppo_epochs, 1, 1 << 20, "passes over each rollout batch"),
        RL_OPT_I("num-mini-batches", &o.c.num_mini_batches, 1, 1 << 20, "updates per pass"),
        RL_OPT_D("cliprange", &o.cliprange, 0, 1, "policy ratio clipped to [1 - X, 1 + X]"),
        RL_OPT_D("cliprange-value", &o.cliprange_value, 0, 1e6, "values clipped to old +- X in the value loss"),
        RL_OPT_D("vf-coef", &o.vf_coef, 0, 1e6, "value-loss weight"),
        RL_OPT_D("entropy-coef", &o.entropy_coef, 0, 1e6, "entropy bonus: the policy loss minus X times its mean entropy"),
        RL_OPT_D("vf-lr", &o.vf_lr, 0, 10, "value model's learning rate"),
        RL_OPT_C("critic", &o.critic, rl_critic_names,
                 "separate: a value model of its own (default); shared: a value head on the policy's trunk"),
        RL_OPT_I("critic-warmup", &o.c.critic_warmup, 0, 1 << 30, "first steps that train the value model only"),
        RL_OPT_F("reward-norm", &o.c.reward_norm, "normalise scores by their running mean and std"),
        RL_OPT_D("reward-clip", &o.reward_clip, 0, 1e6, "clip scores to [-X, X] after normalisation (0 = off)"),
        RL_OPT_D("missing-eos-penalty", &o.eos_penalty, 0, 1e6,
                 "subtracted from the score of a completion that hits --max-new-tokens without an end of sequence"),
        RL_OPT_F("whiten-advantages", &o.c.whiten_advantages, "whiten advantages over the batch"),
        RL_OPT_F("recompute-old-logp", &o.c.recompute_old_logp, "old log-probs from a training forward, not the sampler"),
        RL_OPT_F("deterministic", &o.ranks.deterministic, "batch-invariant kernels (slower)"),
        RL_OPT_D("gpu-memory-utilization", &o.c.engine.gpu_memory_utilization, 0, 1,
                 "fraction of the free memory the generation KV cache takes", .range.above_lo = 1),
        RL_OPT_I("max-num-seqs", &o.c.engine.max_num_seqs, 1, 65536, "sequences the engine generates at once"),
        RL_OPTS_TRAINER(o, "seed of the data order, sampling and mini-batches"),
        RL_OPT_END,
    };
    rl_opts cli = {.cmd = "ppo", .usage = usage, .list = list};
    int status = rl_cli_parse_resumable(&cli, argc, argv);
    if (status == RL_OPTS_CONTINUE && !o.model_dir && !o.resume)
        status = rl_opts_fail(&cli, "--model (or --resume) is required (see --help)");
    if (status == RL_OPTS_CONTINUE && o.env) status = rl_opts_fail(&cli, "--env is not supported; use rlc grpo --env");
    if (status == RL_OPTS_CONTINUE && o.c.kl_coef > 0 && !o.model_dir)
        status = rl_opts_fail(&cli, "--kl-coef needs --model (the reference)");
    if (status == RL_OPTS_CONTINUE && o.c.num_mini_batches > o.c.prompts_per_step * o.c.samples_per_prompt)
        status = rl_opts_fail(&cli, "--num-mini-batches (%d) must be <= the completions per step (%d)",
                              o.c.num_mini_batches, o.c.prompts_per_step * o.c.samples_per_prompt);
    if (status == RL_OPTS_CONTINUE) {
        make_config(&o);
        cJSON *saved = rl_opts_to_json(&cli);
        rl_reward_options ro = {.timeout_s = o.reward_timeout, .on_error = (rl_reward_errors)o.reward_errors,
                                .kernel = o.kernel};
        rl_run_config rc = {.kind = RL_RUN_PPO, .model_dir = o.model_dir, .resume = o.resume, .data = o.data,
                            .out = o.out, .tokenizer = o.tokenizer, .steps = o.steps, .max_len = o.max_prompt,
                            .thinking_off = o.thinking_off, .save_every = o.save_every, .reward = o.reward,
                            .reward_options = ro, .ppo = o.c, .value_model = o.value_model, .options = saved,
                            .no_save = !o.save, .eval_data = o.eval_data, .eval_every = o.eval_every,
                            .log_samples = o.log_samples};
        status = rl_cli_train("ppo", &o.ranks, &rc, argv);
        cJSON_Delete(saved);
    }
    rl_opts_free(&cli);
    return status;
}
