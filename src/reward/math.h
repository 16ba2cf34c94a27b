/* math.h — the math answer check: pull the final answer out of a completion and compare it with
 * the reference answer by value.
 *
 * Extraction, first that applies: the content of the last \boxed{...} (nested braces allowed);
 * the rest of the last line that contains "Answer:"; the last number in the text.
 * Comparison: both sides are normalised (surrounding $, \text{...}, \left/\right, spaces,
 * a trailing period, thousands separators "1,234" removed). When both then read as numbers
 * (integers, decimals, a/b, \frac{a}{b}, \dfrac, \tfrac, \frac12, with signs), they are
 * compared as exact rationals (128-bit, reduced), so 0.5 == 1/2 == \frac{1}{2} and never by
 * float rounding. Otherwise the normalised strings must be equal. */
#ifndef RL_REWARD_MATH_H
#define RL_REWARD_MATH_H

#include <stddef.h>

/* Copies the extracted final answer of text into out (size bytes, truncated, NUL-terminated).
 * Returns 1 if something was found, 0 if not (out = ""). */
int rl_math_extract(const char *text, char *out, size_t size);

/* The content of the last complete \boxed{...} of text, trimmed, into out; 1 if found, else 0. */
int rl_math_boxed(const char *text, char *out, size_t size);
/* The same, reporting in *steps how many character visits it took (linear in the text; for
 * tests). */
int rl_math_boxed_counted(const char *text, char *out, size_t size, size_t *steps);

/* 1 if the two answers (already extracted) are equal by value or by normalised text. */
int rl_math_equal(const char *a, const char *b);

/* 1 if the final answer of completion equals the reference answer. The reference may itself
 * be a full solution: if it contains \boxed{} or "Answer:", its final answer is used. */
int rl_math_check(const char *completion, const char *answer);

#endif
