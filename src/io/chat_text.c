/* chat_text.c — the text operations the chat templates use, done as Python does them: str.strip
 * with and without a character set, and json.dumps as transformers' `tojson` filter calls it
 * (ensure_ascii=False, optional indent). See chat_internal.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/chat_internal.h"

void rl_chat_put(rl_chat_buf *b, const char *s, size_t n)
{
    if (b->oom || n == 0) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1) cap *= 2;
        char *s2 = realloc(b->s, cap);
        if (!s2) {
            b->oom = 1;
            return;
        }
        b->s = s2, b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

void rl_chat_puts(rl_chat_buf *b, const char *s) { rl_chat_put(b, s, strlen(s)); }

rl_chat_span rl_chat_span_of(const char *s) { return (rl_chat_span){s, strlen(s)}; }

rl_chat_span rl_chat_strip_chars(rl_chat_span s, const char *chars, int left, int right)
{
    while (left && s.n > 0 && strchr(chars, s.s[0])) s.s++, s.n--;
    while (right && s.n > 0 && strchr(chars, s.s[s.n - 1])) s.n--;
    return s;
}

/* Python's str.isspace() code points (Unicode White_Space plus the separators \x1c-\x1f). */
static int py_space(unsigned cp)
{
    return (cp >= 0x09 && cp <= 0x0d) || (cp >= 0x1c && cp <= 0x20) || cp == 0x85 || cp == 0xa0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 || cp == 0x202f || cp == 0x205f ||
           cp == 0x3000;
}

/* The code point of the UTF-8 sequence of length len at p (valid UTF-8 assumed: the dataset
 * checks it), or 0xFFFFFFFF when len bytes are not one sequence. */
static unsigned utf8_at(const unsigned char *p, size_t len)
{
    if (len == 1) return p[0] < 0x80 ? p[0] : 0xFFFFFFFFu;
    if (len == 2 && (p[0] & 0xe0) == 0xc0) return ((p[0] & 0x1fu) << 6) | (p[1] & 0x3fu);
    if (len == 3 && (p[0] & 0xf0) == 0xe0) return ((p[0] & 0x0fu) << 12) | ((p[1] & 0x3fu) << 6) | (p[2] & 0x3fu);
    return 0xFFFFFFFFu; /* four-byte sequences hold no white space */
}

static size_t seq_len(unsigned char c) { return c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : 4; }

rl_chat_span rl_chat_trim(rl_chat_span s)
{
    const unsigned char *p = (const unsigned char *)s.s;
    size_t lo = 0, hi = s.n;
    while (lo < hi) {
        size_t k = seq_len(p[lo]);
        if (lo + k > hi || !py_space(utf8_at(p + lo, k))) break;
        lo += k;
    }
    while (hi > lo) {
        size_t k = 1; /* back over continuation bytes to the start of the last character */
        while (k < 4 && hi - k > lo && (p[hi - k] & 0xc0) == 0x80) k++;
        if (!py_space(utf8_at(p + hi - k, k))) break;
        hi -= k;
    }
    return (rl_chat_span){s.s + lo, hi - lo};
}

/* A JSON string as json.dumps(ensure_ascii=False) writes it. */
static void json_string(rl_chat_buf *b, const char *s)
{
    rl_chat_put(b, "\"", 1);
    const char *run = s;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        const char *esc = NULL;
        char hex[8];
        switch (c) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        default:
            if (c < 0x20) snprintf(hex, sizeof hex, "\\u%04x", c), esc = hex;
        }
        if (!esc) continue;
        rl_chat_put(b, run, (size_t)(s - run));
        rl_chat_puts(b, esc);
        run = s + 1;
    }
    rl_chat_put(b, run, (size_t)(s - run));
    rl_chat_put(b, "\"", 1);
}

/* Python's repr of a float: the shortest digits that read back to x, in fixed notation for
 * exponents -4..15 (with ".0" when integral) and scientific ("1e-07", "1.5e+16") otherwise. */
static void python_float(rl_chat_buf *b, double x)
{
    char e[40];
    for (int prec = 0; prec < 17; prec++) {
        snprintf(e, sizeof e, "%.*e", prec, x);
        if (strtod(e, NULL) == x) break;
    }
    char digits[24];
    int nd = 0, neg = e[0] == '-';
    const char *p = e + neg;
    for (; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9') digits[nd++] = *p;
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    int exp10 = atoi(p + 1);
    char out[64];
    int at = 0;
    if (neg) out[at++] = '-';
    if (exp10 < -4 || exp10 >= 16) {
        out[at++] = digits[0];
        if (nd > 1) out[at++] = '.', memcpy(out + at, digits + 1, (size_t)nd - 1), at += nd - 1;
        at += snprintf(out + at, sizeof out - (size_t)at, "e%c%02d", exp10 < 0 ? '-' : '+', abs(exp10));
    } else if (exp10 < 0) {
        out[at++] = '0', out[at++] = '.';
        for (int i = 0; i < -exp10 - 1; i++) out[at++] = '0';
        memcpy(out + at, digits, (size_t)nd), at += nd;
    } else {
        for (int i = 0; i <= exp10; i++) out[at++] = i < nd ? digits[i] : '0';
        out[at++] = '.';
        if (nd > exp10 + 1) memcpy(out + at, digits + exp10 + 1, (size_t)(nd - exp10 - 1)), at += nd - exp10 - 1;
        else out[at++] = '0';
    }
    rl_chat_put(b, out, (size_t)at);
}

static void json_number(rl_chat_buf *b, double x)
{
    char s[32];
    if (x == floor(x) && fabs(x) < 9007199254740992.0) {
        snprintf(s, sizeof s, "%lld", (long long)x);
        rl_chat_puts(b, s);
    } else if (!isfinite(x)) {
        rl_chat_puts(b, isnan(x) ? "NaN" : x > 0 ? "Infinity" : "-Infinity");
    } else {
        python_float(b, x);
    }
}

static void newline(rl_chat_buf *b, int indent, int depth)
{
    rl_chat_put(b, "\n", 1);
    for (int i = 0; i < indent * depth; i++) rl_chat_put(b, " ", 1);
}

static void json_item(rl_chat_buf *b, const cJSON *item, int indent, int depth)
{
    if (cJSON_IsString(item)) json_string(b, item->valuestring);
    else if (cJSON_IsNumber(item)) json_number(b, item->valuedouble);
    else if (cJSON_IsTrue(item)) rl_chat_puts(b, "true");
    else if (cJSON_IsFalse(item)) rl_chat_puts(b, "false");
    else if (cJSON_IsArray(item) || cJSON_IsObject(item)) {
        int obj = cJSON_IsObject(item);
        rl_chat_put(b, obj ? "{" : "[", 1);
        for (const cJSON *c = item->child; c; c = c->next) {
            if (indent) newline(b, indent, depth + 1);
            if (obj) json_string(b, c->string), rl_chat_put(b, ": ", 2);
            json_item(b, c, indent, depth + 1);
            if (c->next) rl_chat_puts(b, indent ? "," : ", ");
        }
        if (indent && item->child) newline(b, indent, depth);
        rl_chat_put(b, obj ? "}" : "]", 1);
    } else rl_chat_puts(b, "null");
}

void rl_chat_json(rl_chat_buf *b, const cJSON *item, int indent) { json_item(b, item, indent, 0); }
