/* math.c — final-answer extraction and exact rational comparison (see math.h).
 *
 * Numbers are read into a reduced fraction p/q of 128-bit integers (q > 0), so equality is
 * equality of (p, q). Anything that does not fit (more than ~36 digits) or does not read as a
 * number falls back to comparing the normalised text. */
#include "reward/math.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef __int128 i128;

typedef struct {
    i128 p, q;
} rational;

static void copy_span(char *out, size_t size, const char *s, size_t len)
{
    if (size == 0) return;
    if (len >= size) len = size - 1;
    memcpy(out, s, len);
    out[len] = '\0';
}

static void trim_span(const char **s, size_t *len)
{
    while (*len > 0 && isspace((unsigned char)**s)) (*s)++, (*len)--;
    while (*len > 0 && isspace((unsigned char)(*s)[*len - 1])) (*len)--;
}

/* The last complete \boxed{...}, in time linear in the text: one left-to-right pass gives the
 * brace depth before every position (an escaped character, the one after a backslash, does not
 * count), a right-to-left pass its suffix minimum. The '{' opening a \boxed at b is closed iff
 * the depth after it falls back to depth[b] somewhere later, i.e. sufmin[b + 1] <= depth[b];
 * only the last closed one is then scanned for its closing brace. (Matching each \boxed by its
 * own scan was quadratic: 16 kB of unclosed "\boxed{" took 21 ms.) steps, when not NULL,
 * receives the number of character visits. */
int rl_math_boxed_counted(const char *text, char *out, size_t size, size_t *steps)
{
    size_t n = strlen(text), visits = 0;
    int *depth = malloc((n + 2) * sizeof *depth), *sufmin = malloc((n + 2) * sizeof *sufmin);
    int found = 0;
    if (!depth || !sufmin) goto done;
    depth[0] = 0;
    for (size_t i = 0; i < n; i++, visits++) {
        int d = depth[i];
        if (text[i] == '\\' && i + 1 < n) {
            depth[i + 1] = d;
            depth[i + 2] = d; /* the escaped character changes nothing */
            i++;
            visits++;
            continue;
        }
        depth[i + 1] = d + (text[i] == '{') - (text[i] == '}');
    }
    sufmin[n] = depth[n];
    for (size_t i = n; i-- > 0; visits++) sufmin[i] = depth[i] < sufmin[i + 1] ? depth[i] : sufmin[i + 1];
    const char *open = NULL;
    for (const char *p = strstr(text, "\\boxed"); p; p = strstr(p + 1, "\\boxed")) {
        const char *b = p + strlen("\\boxed");
        while (*b == ' ') b++, visits++;
        visits += (size_t)(b - p);
        size_t at = (size_t)(b - text);
        if (*b == '{' && sufmin[at + 1] <= depth[at]) open = b; /* closed later on */
    }
    if (open) {
        size_t at = (size_t)(open - text), close = at + 1;
        while (!(depth[close + 1] == depth[at] && text[close] == '}')) close++, visits++;
        const char *span = open + 1;
        size_t len = close - at - 1;
        trim_span(&span, &len);
        copy_span(out, size, span, len);
        found = 1;
    }
done:
    free(depth);
    free(sufmin);
    if (steps) *steps = visits;
    return found;
}

int rl_math_boxed(const char *text, char *out, size_t size)
{
    return rl_math_boxed_counted(text, out, size, NULL);
}

/* The rest of the last line holding marker (case-insensitive), if not empty. */
static int extract_after_marker(const char *text, const char *marker, char *out, size_t size)
{
    size_t mlen = strlen(marker);
    const char *found = NULL;
    for (const char *p = text; *p; p++)
        if (!strncasecmp(p, marker, mlen)) found = p + mlen;
    if (!found) return 0;
    const char *eol = strchr(found, '\n');
    size_t len = eol ? (size_t)(eol - found) : strlen(found);
    trim_span(&found, &len);
    if (len == 0) return 0;
    copy_span(out, size, found, len);
    return 1;
}

/* Length of a number starting at s: digits with optional ",ddd" groups, optional ".digits",
 * optional "/digits". 0 if s does not start with a digit (or ".digit"). */
static size_t number_len(const char *s)
{
    size_t i = 0;
    if (!isdigit((unsigned char)s[0]) && !(s[0] == '.' && isdigit((unsigned char)s[1]))) return 0;
    while (isdigit((unsigned char)s[i])) i++;
    while (s[i] == ',' && isdigit((unsigned char)s[i + 1]) && isdigit((unsigned char)s[i + 2]) &&
           isdigit((unsigned char)s[i + 3]) && !isdigit((unsigned char)s[i + 4]))
        i += 4;
    if (s[i] == '.' && isdigit((unsigned char)s[i + 1])) {
        i++;
        while (isdigit((unsigned char)s[i])) i++;
    }
    if (s[i] == '/' && isdigit((unsigned char)s[i + 1])) {
        i++;
        while (isdigit((unsigned char)s[i])) i++;
    }
    return i;
}

static int extract_last_number(const char *text, char *out, size_t size)
{
    const char *found = NULL;
    size_t found_len = 0;
    for (size_t i = 0; text[i];) {
        size_t n = (i > 0 && (isalnum((unsigned char)text[i - 1]) || text[i - 1] == '.')) ? 0
                                                                                          : number_len(text + i);
        if (n == 0) {
            i++;
            continue;
        }
        /* a minus sign, not a subtraction: nothing alphanumeric right before it */
        int sign = i > 0 && text[i - 1] == '-' && (i == 1 || !isalnum((unsigned char)text[i - 2]));
        size_t start = sign ? i - 1 : i;
        found = text + start;
        found_len = i + n - start;
        i += n;
    }
    if (!found) return 0;
    copy_span(out, size, found, found_len);
    return 1;
}

int rl_math_extract(const char *text, char *out, size_t size)
{
    if (size > 0) out[0] = '\0';
    return rl_math_boxed(text, out, size) || extract_after_marker(text, "answer:", out, size) ||
           extract_after_marker(text, "####", out, size) || extract_last_number(text, out, size);
}

/* ---- normalisation ------------------------------------------------------------------------- */

static const char *const unwrap_cmds[] = {"\\text{", "\\textbf{", "\\mathrm{", "\\mathbf{", "\\mbox{"};
static const char *const drop_cmds[] = {"\\left", "\\right", "\\displaystyle", "\\!", "\\,",
                                        "\\;", "\\:", "\\ "};

/* Copies s to out without spaces, \left/\right and spacing commands, unwrapping \text{...}
 * and friends (their closing brace is dropped by tracking the depth it closes). */
static void strip_markup(const char *s, char *out, size_t size)
{
    size_t n = 0;
    int depth = 0;
    int drop_at[64];
    int n_drop = 0;
    while (*s && n + 1 < size) {
        int matched = 0;
        for (size_t k = 0; k < sizeof unwrap_cmds / sizeof unwrap_cmds[0] && !matched; k++) {
            size_t len = strlen(unwrap_cmds[k]);
            if (!strncmp(s, unwrap_cmds[k], len) && n_drop < 64) {
                drop_at[n_drop++] = ++depth;
                s += len;
                matched = 1;
            }
        }
        for (size_t k = 0; k < sizeof drop_cmds / sizeof drop_cmds[0] && !matched; k++) {
            size_t len = strlen(drop_cmds[k]);
            if (!strncmp(s, drop_cmds[k], len) && !isalpha((unsigned char)s[len])) {
                s += len;
                matched = 1;
            }
        }
        if (matched) continue;
        char c = *s++;
        if (isspace((unsigned char)c) || c == '~') continue;
        if (c == '{') depth++;
        if (c == '}') {
            if (n_drop > 0 && drop_at[n_drop - 1] == depth) {
                n_drop--;
                depth--;
                continue;
            }
            depth--;
        }
        out[n++] = c;
    }
    out[n] = '\0';
}

static int strip_pair(char *s, const char *open, const char *close)
{
    size_t n = strlen(s), lo = strlen(open), lc = strlen(close);
    if (n < lo + lc || strncmp(s, open, lo) || strcmp(s + n - lc, close)) return 0;
    memmove(s, s + lo, n - lo - lc);
    s[n - lo - lc] = '\0';
    return 1;
}

static void normalise(const char *in, char *out, size_t size)
{
    strip_markup(in, out, size);
    for (;;) {
        size_t n = strlen(out);
        if (n > 0 && out[n - 1] == '.') {
            out[n - 1] = '\0';
            continue;
        }
        if (strip_pair(out, "$", "$") || strip_pair(out, "\\(", "\\)") ||
            strip_pair(out, "\\[", "\\]"))
            continue;
        break;
    }
}

/* ---- exact rationals ------------------------------------------------------------------------ */

static i128 gcd128(i128 a, i128 b)
{
    if (a < 0) a = -a;
    if (b < 0) b = -b;
    while (b) {
        i128 t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static int make_rational(i128 p, i128 q, rational *out)
{
    if (q == 0) return -1;
    if (q < 0) p = -p, q = -q;
    i128 g = gcd128(p, q);
    if (g > 1) p /= g, q /= g;
    out->p = p;
    out->q = q;
    return 0;
}

static int divide(rational a, rational b, rational *out)
{
    i128 p, q;
    if (b.p == 0) return -1;
    if (__builtin_mul_overflow(a.p, b.q, &p) || __builtin_mul_overflow(a.q, b.p, &q)) return -1;
    return make_rational(p, q, out);
}

/* Reads an unsigned decimal ("1,234.50", ".5") at *s; advances *s. */
static int parse_decimal(const char **s, rational *out)
{
    size_t len = number_len(*s);
    if (len == 0) return -1;
    i128 p = 0, q = 1;
    int digits = 0, frac = 0;
    for (size_t i = 0; i < len; i++) {
        char c = (*s)[i];
        if (c == '/') {
            len = i;
            break;
        }
        if (c == ',') continue;
        if (c == '.') {
            frac = 1;
            continue;
        }
        if (++digits > 36) return -1;
        p = p * 10 + (c - '0');
        if (frac) q *= 10;
    }
    *s += len;
    return make_rational(p, q, out);
}

static int parse_value(const char **s, rational *out);

/* {value} or a single digit (\frac12). */
static int parse_frac_arg(const char **s, rational *out)
{
    if (**s == '{') {
        (*s)++;
        if (parse_value(s, out) != 0 || **s != '}') return -1;
        (*s)++;
        return 0;
    }
    if (!isdigit((unsigned char)**s)) return -1;
    *out = (rational){**s - '0', 1};
    (*s)++;
    return 0;
}

/* [sign] (\frac{a}{b} | decimal) [/ decimal] */
static int parse_value(const char **s, rational *out)
{
    int neg = 0;
    while (**s == '-' || **s == '+') neg ^= (*(*s)++ == '-');
    rational v;
    static const char *const fracs[] = {"\\frac", "\\dfrac", "\\tfrac"};
    int is_frac = 0;
    for (size_t k = 0; k < 3 && !is_frac; k++) {
        size_t len = strlen(fracs[k]);
        if (!strncmp(*s, fracs[k], len)) {
            *s += len;
            is_frac = 1;
        }
    }
    if (is_frac) {
        rational num, den;
        if (parse_frac_arg(s, &num) || parse_frac_arg(s, &den) || divide(num, den, &v)) return -1;
    } else if (parse_decimal(s, &v) != 0) {
        return -1;
    }
    if (**s == '/') {
        (*s)++;
        rational den;
        int dneg = 0;
        while (**s == '-' || **s == '+') dneg ^= (*(*s)++ == '-');
        if (parse_decimal(s, &den) != 0 || divide(v, den, &v) != 0) return -1;
        neg ^= dneg;
    }
    if (neg) v.p = -v.p;
    *out = v;
    return 0;
}

static int parse_number(const char *s, rational *out)
{
    return parse_value(&s, out) == 0 && *s == '\0' ? 0 : -1;
}

int rl_math_equal(const char *a, const char *b)
{
    char na[1024], nb[1024];
    normalise(a, na, sizeof na);
    normalise(b, nb, sizeof nb);
    rational ra, rb;
    if (parse_number(na, &ra) == 0 && parse_number(nb, &rb) == 0)
        return ra.p == rb.p && ra.q == rb.q;
    return na[0] != '\0' && strcmp(na, nb) == 0;
}

int rl_math_check(const char *completion, const char *answer)
{
    char got[1024], want[1024];
    if (!rl_math_extract(completion, got, sizeof got)) return 0;
    if (strstr(answer, "\\boxed") || strcasestr(answer, "answer:") || strstr(answer, "####")) {
        if (!rl_math_extract(answer, want, sizeof want)) return 0;
    } else {
        copy_span(want, sizeof want, answer, strlen(answer));
    }
    return rl_math_equal(got, want);
}
