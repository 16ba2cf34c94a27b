/* number.c — see number.h. */
#include "core/number.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

void rl_number_range_text(const rl_number_range *r, char *out, size_t size)
{
    snprintf(out, size, "%s%s in %c%.15g, %.15g]", r->or_zero ? "0 or " : "", r->whole ? "an integer" : "a number",
             r->above_lo ? '(' : '[', r->lo, r->hi);
}

static int in_range(double x, const rl_number_range *r)
{
    if (!isfinite(x) || (r->whole && x != floor(x))) return 0;
    return (x <= r->hi && (r->above_lo ? x > r->lo : x >= r->lo)) || (r->or_zero && x == 0);
}

int rl_number_parse(const char *text, const rl_number_range *r, const char *what, double *out, rl_err *err)
{
    char *end = NULL;
    double x = text ? strtod(text, &end) : NAN;
    if (text && *text && end != text && !*end && in_range(x, r)) {
        *out = x;
        return 0;
    }
    char range[160];
    rl_number_range_text(r, range, sizeof range);
    return rl_err_set(err, "%s must be %s, got '%s'", what, range, text ? text : "");
}

int rl_number_check(double x, const rl_number_range *r, const char *what, rl_err *err)
{
    if (in_range(x, r)) return 0;
    char range[160];
    rl_number_range_text(r, range, sizeof range);
    return rl_err_set(err, "%s must be %s, got %.17g", what, range, x);
}
