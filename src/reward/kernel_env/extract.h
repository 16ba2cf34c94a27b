/* extract.h — pick the kernel source out of a model's answer.
 *
 * Answers come in many shapes: several code blocks (a sketch, then the final file), fences
 * written ```cuda / ```cpp / ```c++ / ``` / ~~~, a closing fence lost to the token limit, no
 * fences at all with the code inline in prose, <think> sections that hold drafts. The rule:
 * drop reasoning sections, take the LAST C-family code block that mentions the entry point,
 * and check that the code looks whole (the entry point is defined, braces balance); when that
 * block launches kernels it does not define, the earlier blocks defining kernels are joined in
 * front of it. When
 * nothing usable is found the error says why, in one line a log or a reward table can show. */
#ifndef RL_REWARD_KENV_EXTRACT_H
#define RL_REWARD_KENV_EXTRACT_H

#include <stddef.h>

#include "core/error.h"

/* How the code was found. */
typedef enum {
    RL_KEXTRACT_FENCED = 0,   /* a closed fenced block */
    RL_KEXTRACT_UNCLOSED = 1, /* a fenced block whose closing fence is missing (runs to the end) */
    RL_KEXTRACT_BARE = 2      /* no fence: code found in the prose */
} rl_kextract_kind;

typedef struct rl_kextract {
    char *code;            /* malloc'd, NUL-terminated; free with rl_kextract_free */
    size_t len;
    rl_kextract_kind kind;
    char lang[16];         /* the fence's info word ("cuda", "cpp", "" when none) */
    int n_blocks;          /* C-family fenced blocks seen (outside reasoning) */
    int n_parts;           /* blocks joined into code: 1, or more when the entry point's block
                              launches kernels that earlier blocks define */
} rl_kextract;

/* Extracts the code defining `entry` (e.g. "rl_kernel") from answer (len bytes, need not be
 * NUL-terminated). Returns 0 and fills *out, or -1 with the reason in err ("no code block
 * defines rl_kernel (2 blocks: cuda, python)", "the code is cut off: 2 unclosed braces", ...). */
int rl_kextract_code(const char *answer, size_t len, const char *entry, rl_kextract *out, rl_err *err);

void rl_kextract_free(rl_kextract *x);

#endif
