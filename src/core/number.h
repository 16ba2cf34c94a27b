/* number.h — the one parser of numbers written as text (command-line options, --config values,
 * protocol overrides).
 *
 * The whole text must be one finite number (strtod's syntax, so "1e-4" and "2000" both read;
 * an integer may be written 1e3), inside a range; anything else is refused with one message
 * format: "<what> must be an integer in [1, 100], got 'x'". Integers are exact up to 2^53. */
#ifndef RL_CORE_NUMBER_H
#define RL_CORE_NUMBER_H

#include "core/error.h"

typedef struct rl_number_range {
    double lo, hi;
    int whole;     /* an integer */
    int above_lo;  /* lo itself excluded: (lo, hi] */
    int or_zero;   /* 0 accepted besides the range ("0 = off") */
} rl_number_range;

/* Parses text into *out; -1 with err naming `what` and the range when it is not a number in r. */
int rl_number_parse(const char *text, const rl_number_range *r, const char *what, double *out, rl_err *err);

/* The same check on a number already read (a JSON value): 0, or -1 with the same message. */
int rl_number_check(double x, const rl_number_range *r, const char *what, rl_err *err);

/* The range as words: "an integer in [1, 100]", "0 or a number in (0, 1]". */
void rl_number_range_text(const rl_number_range *r, char *out, size_t size);

#endif
