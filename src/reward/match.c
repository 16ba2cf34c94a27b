/* match.c — exact match, PCRE2 matching and the <think> format check (see match.h). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "reward/match.h"

#include <ctype.h>
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

struct rl_regex {
    pcre2_code *code;
};

int rl_match_exact(const char *completion, const char *answer, int normalise_ws)
{
    if (!normalise_ws) return strcmp(completion, answer) == 0;
    const char *a = completion, *b = answer;
    while (isspace((unsigned char)*a)) a++;
    while (isspace((unsigned char)*b)) b++;
    for (;;) {
        int sa = 0, sb = 0;
        while (isspace((unsigned char)*a)) a++, sa = 1;
        while (isspace((unsigned char)*b)) b++, sb = 1;
        if (!*a || !*b) return !*a && !*b; /* trailing whitespace is ignored */
        if (sa != sb || *a != *b) return 0;
        a++, b++;
    }
}

int rl_regex_compile(rl_regex **out, const char *pattern, rl_err *err)
{
    *out = NULL;
    int code;
    PCRE2_SIZE offset;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF, &code,
                                   &offset, NULL);
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(code, msg, sizeof msg);
        return rl_err_set(err, "regex '%s': at offset %zu: %s", pattern, (size_t)offset, (char *)msg);
    }
    rl_regex *r = malloc(sizeof *r);
    if (!r) {
        pcre2_code_free(re);
        return rl_err_oom(err, "regex", sizeof *r);
    }
    r->code = re;
    *out = r;
    return 0;
}

int rl_regex_match(const rl_regex *re, const char *text, rl_err *err)
{
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re->code, NULL);
    if (!md) return rl_err_oom(err, "regex match data", 0);
    int rc = pcre2_match(re->code, (PCRE2_SPTR)text, strlen(text), 0, 0, md, NULL);
    pcre2_match_data_free(md);
    if (rc >= 0) return 1;
    if (rc == PCRE2_ERROR_NOMATCH) return 0;
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(rc, msg, sizeof msg);
    return rl_err_set(err, "regex match failed: %s", (char *)msg);
}

void rl_regex_free(rl_regex *re)
{
    if (!re) return;
    pcre2_code_free(re->code);
    free(re);
}

int rl_match_think_format(const char *text)
{
    while (isspace((unsigned char)*text)) text++;
    if (strncmp(text, "<think>", 7)) return 0;
    const char *body = text + 7;
    const char *close = strstr(body, "</think>");
    if (!close) return 0;
    const char *nested = strstr(body, "<think>");
    if (nested && nested < close) return 0;
    const char *rest = close + 8;
    if (strstr(rest, "<think>") || strstr(rest, "</think>")) return 0;
    for (; *rest; rest++)
        if (!isspace((unsigned char)*rest)) return 1;
    return 0;
}
