/* backend_opt.h — the "--device cpu|cuda|auto" option every model-running command takes.
 *
 * rl_backend_opt_ctx turns the option's value into a created rl_ctx: "cpu" the CPU backend
 * (fp32), "cuda" CUDA device 0 (bf16 activations; fails with the backend's message when this
 * build has no CUDA or no device is visible), "auto" (also a NULL value, i.e. the option not
 * given) CUDA when rl_cuda_available(), else the CPU. Any other value is refused with a message
 * naming it.
 *
 * How a command uses it (cmd_logprobs.c and cmd_generate.c do exactly this):
 *   - hand-parsed argv:  `} else if (!strcmp(argv[i], "--device") && i + 1 < argc) {
 *                            device = argv[++i];`  and RL_BACKEND_OPT_HELP in the --help text;
 *   - rl_opts tables (cmd_sft, cmd_grpo):  add
 *         {"device", RL_OPT_STRING, &device, RL_BACKEND_OPT_HELP_SHORT}
 *     to the table with `const char *device = "auto";`, so --config files may set it too;
 *   - then, instead of rl_ctx_create(&ctx, RL_BACKEND_CPU, 0, &err):
 *         if (rl_backend_opt_ctx(&ctx, device, &err)) { print "rlc <cmd>: <err.msg>"; fail }
 *     and rl_ctx_free(&ctx) as before. Nothing else changes: every op, the model and the
 *     trainers take the ctx; on CUDA, pass rl_model_working_copy(m) to rl_adamw_step (the
 *     trainers already do) and size micro-batches by rl_acts_bytes against the GPU's memory.
 * rl_backend_opt_ctx prints nothing; the command reports the chosen backend if it wants to
 * (rl_backend_name). */
#ifndef RL_CLI_BACKEND_OPT_H
#define RL_CLI_BACKEND_OPT_H

#include "backend/ctx.h"
#include "core/error.h"

#define RL_BACKEND_OPT_HELP_SHORT "where the model runs: cpu, cuda or auto (cuda when a GPU is usable)"
#define RL_BACKEND_OPT_HELP "  --device D         " RL_BACKEND_OPT_HELP_SHORT " [auto]\n"

/* Creates *ctx for value ("cpu", "cuda", "auto" or NULL = "auto"). 0, or -1 with err filled. */
int rl_backend_opt_ctx(rl_ctx *ctx, const char *value, rl_err *err);

#endif
