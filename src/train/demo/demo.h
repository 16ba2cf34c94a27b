/* demo.h — the README's demo as one library call: a tiny Qwen3 model learns two-number
 * addition from scratch on a laptop CPU in a few minutes.
 *
 * 1. a Qwen3 model from the sizes below (random init, a few million parameters) with the demo
 *    tokenizer;
 * 2. the addition task (arith.h), split into held-out and training problems and written as
 *    out/heldout.jsonl and out/train.jsonl, lines {"prompt": [user message], "completion":
 *    answer, "answer": answer} (SFT and RL lines at once), read back through train/data.h like
 *    the data of `rlc sft` and `rlc grpo`;
 * 3. a short SFT run (deliberately short: the model half-learns the task);
 * 4. GRPO on the training prompts with the math reward;
 * 5. greedy accuracy on the held-out problems after SFT and after GRPO.
 * Both checkpoints (out/sft, out/grpo) are Hugging Face model directories with the tokenizer
 * files of the tokenizer's directory; metrics go to out/{sft,grpo}_metrics.jsonl, a few samples
 * per step to out/{sft,grpo}_samples.jsonl (train/runlog.h), and both phases' plots and samples
 * to out/report.html (train/report.h);
 * tools/check_demo.py re-scores the result with transformers. Progress and the one-line notes
 * (sizes, accuracy after each phase) go to the watcher. */
#ifndef RL_TRAIN_DEMO_DEMO_H
#define RL_TRAIN_DEMO_DEMO_H

#include "backend/ctx.h"
#include "core/error.h"
#include "train/loop.h"

typedef struct rl_demo_config {
    const char *out, *tokenizer;
    int seed;
    int lo, hi, held_out;                           /* operands in [lo, hi]; problems held out */
    int hidden, layers, heads, kv_heads, head_dim, ffn; /* the model */
    int sft_steps, sft_batch;                       /* SFT: steps, examples per step */
    int grpo_steps, prompts, group, max_new;        /* GRPO: steps, prompts x group per step */
    double sft_lr, grpo_lr, temperature;            /* peak rates (cosine, 5% warmup) */
} rl_demo_config;

/* The README's run: 30% -> 50% held-out accuracy with seed 1. */
rl_demo_config rl_demo_defaults(void);

typedef struct rl_demo_result {
    int n_train, n_held;
    int sft_correct, grpo_correct; /* held-out problems answered right after each phase */
    char example[48];              /* the first held-out prompt, "What is 23+58?" */
    char sft_dir[4096], grpo_dir[4096];
    char report[4096];             /* the HTML report, written at the end */
} rl_demo_result;

/* Runs the demo on ctx. Returns 0 when done, 1 when stopped through the watcher (after saving
 * the phase's checkpoint), -1 on error (err set). */
int rl_demo_run(const rl_demo_config *c, rl_ctx *ctx, const rl_loop_watch *watch, rl_demo_result *r, rl_err *err);

#endif
