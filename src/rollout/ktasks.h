/* ktasks.h — the prompts of a kernel-writing run (`rlc grpo --reward kernel`): a data file of
 * tasks, and each step's prompt of a task built afresh from the run's attempt database, the
 * contrastive method (CUDA-L1): earlier correct kernels of that task drawn across speed
 * buckets, each shown with its measured speedup (reward/kernel_env/prompt.h).
 *
 * Data lines: {"task": "kernel_tasks/softmax"} (a task directory) or {"task":
 * "KernelBench/level1/23_Softmax.py"} (a KernelBench problem file), paths relative to the working
 * directory; other fields are kept (the reward sees the whole line). A line's own "prompt"
 * string is used as its prompt instead (no exemplars, no reference: e.g. the prompt a small
 * model was taught by SFT). Every task is checked when
 * the file is loaded: a missing task, a KernelBench file without Model / get_inputs, or a prompt
 * that cannot fit max_prompt tokens even without exemplars is an error naming the line.
 *
 * A prompt is the task text as one user message in the chat format with the generation prompt.
 * When the exemplars make it longer than max_prompt tokens, fewer are shown (down to none, then
 * without the reference source). */
#ifndef RL_ROLLOUT_KTASKS_H
#define RL_ROLLOUT_KTASKS_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "core/error.h"
#include "io/tokenizer.h"
#include "reward/kernel_env/prompt.h"

typedef struct rl_ktasks {
    int n;
    cJSON **lines;      /* the data lines (owned) */
    const char **task;  /* each line's "task" (points into lines) */
    const char **fixed; /* each line's own "prompt" (points into lines), or NULL */
    char **text;        /* the current prompt text of each task (chat-formatted) */
    int32_t **ids;      /* and its tokens */
    int *n_ids;
    int max_ids;        /* the longest prompt so far */
    const rl_tokenizer *tok;
    char *attempts;     /* the attempt database the prompts read (NULL: none) */
    rl_kprompt_opts popts;
    int max_prompt;
    const char *suffix; /* appended to every prompt (the episode tools), or NULL */
    int enable_thinking; /* the chat template's enable_thinking (io/chat.h) */
} rl_ktasks;

/* Loads the tasks of data (JSON lines) and builds their first prompts (no exemplars); suffix
 * (static text, e.g. the kernel environment's tools) is appended to each, or NULL; prompts are
 * rendered by the tokenizer's chat template with enable_thinking as given. */
int rl_ktasks_load(rl_ktasks *kt, const char *data, const rl_tokenizer *tok, const char *attempts, int max_prompt,
                   const char *suffix, int enable_thinking, rl_err *err);

/* Rebuilds the prompts of the tasks in which[0 .. n) (repeats allowed) from the attempts so far;
 * step seeds the draw within the speed buckets. */
int rl_ktasks_rebuild(rl_ktasks *kt, int64_t step, const int *which, int n, rl_err *err);

void rl_ktasks_free(rl_ktasks *kt);

#endif
