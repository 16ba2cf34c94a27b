/* prompt.h — the prompt for one kernel-writing attempt, CUDA-L1 style.
 *
 * From a task directory (prompt.md: the problem; reference.cu: the baseline) or a KernelBench
 * problem file (*.py: shown as the reference; the answer is a ModelNew in a ```python block) and
 * a store of earlier candidates with their measured results (JSONL, one {"task", "source",
 * "result": {"speedup", "correct" or "status"}} a line, or the attempt database's lines
 * (attempts.h) with "status" and "speedup" at the top), build a prompt that shows earlier correct
 * variants, each with its speedup, and asks first for a performance analysis, then for a new
 * kernel in one ```cuda block (what extract.h takes back out). Which variants: by default the
 * fastest and the ones most unlike them (token-set Jaccard distance of the sources); with
 * `buckets` (what the trainers use, the contrastive method) one drawn at random from each of
 * that many speed buckets, so the model sees fast and slow solutions side by side with their
 * measured speedups. */
#ifndef RL_REWARD_KENV_PROMPT_H
#define RL_REWARD_KENV_PROMPT_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

typedef struct rl_kprompt_opts {
    int n_best;            /* fastest earlier variants shown (default 1) */
    int n_diverse;         /* further variants, each the most different from those shown (default 2) */
    size_t max_source;     /* stored sources longer than this many bytes are skipped (default 16384) */
    int show_reference;    /* include reference.cu (default 1) */
    int buckets;           /* > 0: n_best + n_diverse variants drawn one per speed bucket (default 0) */
    uint64_t seed;         /* the draw within a bucket */
} rl_kprompt_opts;

void rl_kprompt_opts_default(rl_kprompt_opts *o);

/* Builds the prompt for the task in task_dir. store_path may be NULL (no earlier attempts);
 * entries whose "task" is neither the task directory nor its name are ignored, as are
 * incorrect ones. *out is malloc'd and NUL-terminated (caller frees); *len excludes the NUL. */
int rl_kprompt_build(const char *task_dir, const char *store_path, const rl_kprompt_opts *o, char **out,
                     size_t *len, rl_err *err);

/* 1 - |A & B| / |A | B| over the sets of identifier and number tokens of two sources: 0 for
 * the same vocabulary, 1 for nothing in common (and for two empty sources, 0). */
double rl_kprompt_distance(const char *a, size_t a_len, const char *b, size_t b_len);

#endif
