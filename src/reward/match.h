/* match.h — string rewards: exact match, PCRE2 regular expressions, format checks. */
#ifndef RL_REWARD_MATCH_H
#define RL_REWARD_MATCH_H

#include "core/error.h"

/* 1 if equal. normalise_ws: trim both ends and treat every run of whitespace as one space. */
int rl_match_exact(const char *completion, const char *answer, int normalise_ws);

typedef struct rl_regex rl_regex;

/* Compiles a PCRE2 pattern (UTF-8); the error names the offset and PCRE2's reason. */
int rl_regex_compile(rl_regex **out, const char *pattern, rl_err *err);
/* 1 if it matches somewhere in text, 0 if not, -1 on a matching error (e.g. the match limit). */
int rl_regex_match(const rl_regex *re, const char *text, rl_err *err);
void rl_regex_free(rl_regex *re);

/* 1 if text is "<think>...</think>" (optional leading whitespace) then a non-empty answer. */
int rl_match_think_format(const char *text);

#endif
