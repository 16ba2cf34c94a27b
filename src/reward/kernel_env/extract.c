/* extract.c — the kernel source out of a model's answer (see extract.h for the rule).
 *
 * Three steps. (1) Reasoning is dropped: everything up to the last </think> (or </thinking>);
 * an answer that opens <think> and never closes it has no final answer. (2) Fenced blocks are
 * found line by line, CommonMark style: a line of at least three ` or ~ (up to three spaces of
 * indent) opens a block, the info word is its language, a line of at least as many of the same
 * character closes it; a block still open at the end runs to the end. (3) The last C-family
 * block that mentions the entry point and looks whole wins; with no fences at all the code is
 * cut out of the prose, from the first line that starts like C to the closing brace of the
 * entry point's body. "Looks whole" is lexical: the entry point is followed by a parameter list
 * and a body, and braces balance outside comments and literals. A picked block that launches
 * kernels it does not define gets the earlier kernel-defining blocks joined in front. Answers
 * holding NUL bytes are refused (the result is a C string). */
#include "reward/kernel_env/extract.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_BLOCKS 64

typedef struct block {
    size_t start, end; /* content, excluding the fence lines */
    int closed;
    char lang[16];
} block;

static const char *find_ci(const char *s, size_t len, const char *needle)
{
    size_t n = strlen(needle);
    for (size_t i = 0; i + n <= len; i++)
        if (!strncasecmp(s + i, needle, n)) return s + i;
    return NULL;
}

static const char *find_last_ci(const char *s, size_t len, const char *needle)
{
    size_t n = strlen(needle);
    for (size_t i = len >= n ? len - n + 1 : 0; i-- > 0;)
        if (!strncasecmp(s + i, needle, n)) return s + i;
    return NULL;
}

/* The answer after its reasoning: [*start, len). -1 when it ends inside a reasoning section. */
static int skip_reasoning(const char *s, size_t len, size_t *start)
{
    static const char *close_tags[] = {"</think>", "</thinking>"};
    static const char *open_tags[] = {"<think>", "<thinking>"};
    *start = 0;
    for (int t = 0; t < 2; t++) {
        const char *c = find_last_ci(s, len, close_tags[t]);
        if (c && (size_t)(c - s) + strlen(close_tags[t]) > *start) *start = (size_t)(c - s) + strlen(close_tags[t]);
    }
    for (int t = 0; t < 2; t++)
        if (find_ci(s + *start, len - *start, open_tags[t])) return -1;
    return 0;
}

static int is_ident(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* Next occurrence of the identifier `name` as a whole word in [s, s + len), or NULL. */
static const char *find_word(const char *s, size_t len, const char *name, size_t from)
{
    size_t n = strlen(name);
    for (size_t i = from; i + n <= len; i++) {
        if (memcmp(s + i, name, n)) continue;
        if (i > 0 && is_ident(s[i - 1])) continue;
        if (i + n < len && is_ident(s[i + n])) continue;
        return s + i;
    }
    return NULL;
}

static int is_c_family(const char *lang)
{
    static const char *ok[] = {"", "cuda", "cu", "cuh", "c", "h", "cpp", "c++", "cxx", "cc", "hpp", "cplusplus"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (!strcasecmp(lang, ok[i])) return 1;
    return 0;
}

static size_t find_blocks(const char *s, size_t len, block *blocks, int *n_total)
{
    size_t n = 0, pos = 0;
    int open = 0;
    char fence_ch = 0;
    size_t fence_len = 0;
    *n_total = 0;
    while (pos < len) {
        size_t eol = pos;
        while (eol < len && s[eol] != '\n') eol++;
        size_t p = pos, indent = 0;
        while (p < eol && s[p] == ' ' && indent < 3) p++, indent++;
        size_t run = 0;
        char ch = p < eol ? s[p] : 0;
        if (ch == '`' || ch == '~')
            while (p + run < eol && s[p + run] == ch) run++;
        if (open) {
            size_t q = p + run;
            while (q < eol && isspace((unsigned char)s[q])) q++;
            if (ch == fence_ch && run >= fence_len && q == eol) {
                blocks[n - 1].end = pos;
                blocks[n - 1].closed = 1;
                open = 0;
            }
        } else if (run >= 3) {
            size_t q = p + run;
            while (q < eol && (isspace((unsigned char)s[q]) || s[q] == '{' || s[q] == '.')) q++;
            size_t w = 0;
            char lang[16] = "";
            while (q + w < eol && !isspace((unsigned char)s[q + w]) && s[q + w] != '}' && s[q + w] != '`') w++;
            if (w < sizeof lang) {
                memcpy(lang, s + q, w);
                lang[w] = 0;
            } else {
                snprintf(lang, sizeof lang, "?");
            }
            (*n_total)++;
            if (n < MAX_BLOCKS) {
                block *b = &blocks[n++];
                b->start = eol < len ? eol + 1 : len;
                b->end = len;
                b->closed = 0;
                snprintf(b->lang, sizeof b->lang, "%s", lang);
                open = 1;
                fence_ch = ch;
                fence_len = run;
            }
        }
        pos = eol < len ? eol + 1 : len;
    }
    return n;
}

/* Brace depth at the end of [s, s + len) counting outside comments and literals; *min_depth
 * gets the lowest depth reached (negative: a '}' without its '{'). */
static int brace_depth(const char *s, size_t len, int *min_depth)
{
    int depth = 0;
    *min_depth = 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c == '/' && i + 1 < len && s[i + 1] == '/') {
            while (i < len && s[i] != '\n') i++;
        } else if (c == '/' && i + 1 < len && s[i + 1] == '*') {
            i += 2;
            while (i + 1 < len && !(s[i] == '*' && s[i + 1] == '/')) i++;
            i++;
        } else if (c == '"' || c == '\'') {
            for (i++; i < len && s[i] != c && s[i] != '\n'; i++)
                if (s[i] == '\\') i++;
        } else if (c == '{') {
            depth++;
        } else if (c == '}') {
            depth--;
            if (depth < *min_depth) *min_depth = depth;
        }
    }
    return depth;
}

/* Offset just past the '{' of the entry point's body, or 0 when `entry` is only mentioned
 * (declared, called, named in a comment) and never defined. *name_at (if given) gets the
 * offset of the defining occurrence of the name. */
static size_t find_definition_at(const char *s, size_t len, const char *entry, size_t *name_at)
{
    size_t from = 0;
    const char *p;
    while ((p = find_word(s, len, entry, from))) {
        if (name_at) *name_at = (size_t)(p - s);
        size_t i = (size_t)(p - s) + strlen(entry);
        from = i;
        while (i < len && isspace((unsigned char)s[i])) i++;
        if (i >= len || s[i] != '(') continue;
        int paren = 0;
        for (; i < len; i++) {
            if (s[i] == '(') paren++;
            else if (s[i] == ')' && --paren == 0) break;
        }
        if (i >= len) continue;
        for (i++; i < len && isspace((unsigned char)s[i]); i++) {}
        if (i < len && s[i] == '{') return i + 1;
    }
    return 0;
}

static size_t find_definition(const char *s, size_t len, const char *entry)
{
    return find_definition_at(s, len, entry, NULL);
}

/* 0 when the code looks whole; else -1 with the reason. */
static int check_whole(const char *code, size_t len, const char *entry, const char *where, rl_err *err)
{
    if (!find_definition(code, len, entry))
        return rl_err_set(err, "%s mentions %s but does not define it (no body after its parameter list)", where, entry);
    int min_depth, depth = brace_depth(code, len, &min_depth);
    if (min_depth < 0) return rl_err_set(err, "%s has a '}' without a matching '{'", where);
    if (depth > 0) return rl_err_set(err, "the code is cut off: %s ends with %d unclosed brace%s", where, depth, depth > 1 ? "s" : "");
    return 0;
}

static int starts_like_c(const char *s, size_t len)
{
    static const char *heads[] = {"#include", "#define", "#pragma", "__global__", "__device__", "__constant__",
                                  "extern", "static", "template", "typedef", "struct", "namespace", "using ",
                                  "constexpr", "/*", "//"};
    while (len && (*s == ' ' || *s == '\t')) s++, len--;
    for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++) {
        size_t n = strlen(heads[i]);
        if (len >= n && !memcmp(s, heads[i], n)) return 1;
    }
    return 0;
}

static int set_result(rl_kextract *out, const char *code, size_t len, rl_kextract_kind kind, const char *lang, rl_err *err)
{
    out->code = malloc(len + 1);
    if (!out->code) return rl_err_oom(err, "extracted code", len + 1);
    memcpy(out->code, code, len);
    out->code[len] = 0;
    out->len = len;
    out->kind = kind;
    out->n_parts = 1;
    snprintf(out->lang, sizeof out->lang, "%s", lang);
    return 0;
}

/* No fences: from the first C-looking line before the definition to the end of its body. */
static int extract_bare(const char *s, size_t len, const char *entry, rl_kextract *out, rl_err *err)
{
    size_t name_at = 0;
    size_t body = find_definition_at(s, len, entry, &name_at);
    if (!body) {
        if (find_word(s, len, entry, 0))
            return rl_err_set(err, "no code block, and the text mentions %s without defining it", entry);
        return rl_err_set(err, "no code found: no code block and no definition of %s", entry);
    }
    size_t def_line = name_at;
    while (def_line > 0 && s[def_line - 1] != '\n') def_line--;
    size_t start = def_line;
    for (size_t pos = 0; pos < def_line;) {
        size_t eol = pos;
        while (eol < len && s[eol] != '\n') eol++;
        if (starts_like_c(s + pos, eol - pos)) {
            start = pos;
            break;
        }
        pos = eol + 1;
    }
    int depth = 1;
    size_t end = body;
    int min_depth;
    while (end < len && depth > 0) {
        /* Walk the body with the same lexical rules as brace_depth. */
        size_t next = end + 1;
        if (s[end] == '/' && end + 1 < len && (s[end + 1] == '/' || s[end + 1] == '*')) {
            size_t j = end;
            if (s[end + 1] == '/') {
                while (j < len && s[j] != '\n') j++;
            } else {
                j += 2;
                while (j + 1 < len && !(s[j] == '*' && s[j + 1] == '/')) j++;
                j += 2;
            }
            next = j;
        } else if (s[end] == '"' || s[end] == '\'') {
            size_t j = end + 1;
            for (; j < len && s[j] != s[end] && s[j] != '\n'; j++)
                if (s[j] == '\\') j++;
            next = j + 1;
        } else if (s[end] == '{') {
            depth++;
        } else if (s[end] == '}') {
            depth--;
        }
        end = next < len ? next : len;
    }
    if (depth > 0) return rl_err_set(err, "the code is cut off: the body of %s never closes", entry);
    if (brace_depth(s + start, end - start, &min_depth) != 0 || min_depth < 0)
        return rl_err_set(err, "the code found in the prose has unbalanced braces");
    return set_result(out, s + start, end - start, RL_KEXTRACT_BARE, "", err);
}

static size_t trimmed_end(const char *s, const block *b)
{
    size_t end = b->end;
    while (end > b->start && (s[end - 1] == '\n' || s[end - 1] == '\r')) end--;
    return end;
}

static int contains(const char *s, size_t len, const char *needle)
{
    return memmem(s, len, needle, strlen(needle)) != NULL;
}

/* Answers sometimes split the file: kernels in one block, the entry point in the last. When
 * the picked block launches kernels (<<<) but defines none (__global__), the whole C-family
 * blocks before it that define kernels are put in front of it, in order, back to the previous
 * block that defines the entry point (an earlier version of the whole file). */
static int join_kernel_blocks(const char *s, const block *blocks, size_t pick, const char *entry, rl_kextract *out,
                              rl_err *err)
{
    if (!contains(out->code, out->len, "<<<") || contains(out->code, out->len, "__global__")) return 0;
    size_t lo = 0, total = out->len;
    for (size_t k = pick; k-- > 0;)
        if (is_c_family(blocks[k].lang) && find_definition(s + blocks[k].start, blocks[k].end - blocks[k].start, entry)) {
            lo = k + 1;
            break;
        }
    int use[MAX_BLOCKS] = {0}, n_use = 0;
    for (size_t k = lo; k < pick; k++) {
        const block *b = &blocks[k];
        size_t len = trimmed_end(s, b) - b->start;
        int min_depth;
        if (!is_c_family(b->lang) || !contains(s + b->start, len, "__global__")) continue;
        if (brace_depth(s + b->start, len, &min_depth) != 0 || min_depth < 0) continue;
        use[k] = 1;
        n_use++;
        total += len + 2;
    }
    if (!n_use) return 0;
    char *code = malloc(total + 1);
    if (!code) return rl_err_oom(err, "extracted code", total + 1);
    size_t used = 0;
    for (size_t k = lo; k < pick; k++) {
        if (!use[k]) continue;
        size_t len = trimmed_end(s, &blocks[k]) - blocks[k].start;
        memcpy(code + used, s + blocks[k].start, len);
        used += len;
        memcpy(code + used, "\n\n", 2);
        used += 2;
    }
    memcpy(code + used, out->code, out->len);
    used += out->len;
    code[used] = 0;
    free(out->code);
    out->code = code;
    out->len = used;
    out->n_parts = 1 + n_use;
    return 0;
}

int rl_kextract_code(const char *answer, size_t len, const char *entry, rl_kextract *out, rl_err *err)
{
    memset(out, 0, sizeof *out);
    if (!answer || len == 0) return rl_err_set(err, "empty answer");
    if (memchr(answer, 0, len)) return rl_err_set(err, "the answer contains a NUL byte (binary, not text)");
    size_t start;
    if (skip_reasoning(answer, len, &start))
        return rl_err_set(err, "the answer ends inside a <think> section (no final answer)");
    const char *s = answer + start;
    len -= start;
    block blocks[MAX_BLOCKS];
    int n_total;
    size_t n = find_blocks(s, len, blocks, &n_total);
    if (n == 0) return extract_bare(s, len, entry, out, err);
    char langs[160] = "";
    size_t used = 0;
    int pick = -1, n_c = 0;
    rl_err first_reason = {{0}};
    for (size_t i = 0; i < n; i++) {
        if (used < sizeof langs)
            used += (size_t)snprintf(langs + used, sizeof langs - used, "%s%s", i ? ", " : "", blocks[i].lang[0] ? blocks[i].lang : "plain");
        if (is_c_family(blocks[i].lang)) n_c++;
    }
    out->n_blocks = n_c;
    for (size_t k = n; k-- > 0;) {
        block *b = &blocks[k];
        if (!is_c_family(b->lang) || !find_word(s + b->start, b->end - b->start, entry, 0)) continue;
        char where[64];
        snprintf(where, sizeof where, "code block %zu (%s)", k + 1, b->lang[0] ? b->lang : "plain");
        rl_err why;
        if (check_whole(s + b->start, b->end - b->start, entry, where, &why) == 0) {
            pick = (int)k;
            break;
        }
        if (!first_reason.msg[0]) first_reason = why;
    }
    if (pick < 0) {
        if (first_reason.msg[0]) return rl_err_set(err, "%s", first_reason.msg);
        return rl_err_set(err, "no code block defines %s (%d block%s: %s)", entry, n_total, n_total > 1 ? "s" : "", langs);
    }
    block *b = &blocks[pick];
    if (set_result(out, s + b->start, trimmed_end(s, b) - b->start, b->closed ? RL_KEXTRACT_FENCED : RL_KEXTRACT_UNCLOSED,
                   b->lang, err))
        return -1;
    return join_kernel_blocks(s, blocks, (size_t)pick, entry, out, err);
}

void rl_kextract_free(rl_kextract *x)
{
    if (!x) return;
    free(x->code);
    x->code = NULL;
    x->len = 0;
}
