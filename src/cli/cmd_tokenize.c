/* cmd_tokenize.c — `rlc tokenize`: text from stdin to token ids with a tokenizer.json.
 *
 * Plain mode encodes all of stdin as one text and prints the ids on one line, separated by
 * spaces (or as a JSON array with --json). --jsonl reads one {"text": ...} object per line and
 * writes one {"ids": [...], "decoded": ...} per line; a bad line gets {"error": ...} in its
 * place (so output lines stay aligned with input lines), is reported on stderr with its line
 * number, and makes the exit status 1. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "io/json.h"
#include "io/tokenizer.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: rlc tokenize --tokenizer FILE [--json | --jsonl] < input\n\n"
            "Encodes text with a Hugging Face tokenizer.json (byte-level BPE, as Qwen's), the same ids\n"
            "as tokenizers' encode(text, add_special_tokens=False); special tokens written in the text\n"
            "(\"<|im_end|>\") become their ids. Invalid UTF-8 is read as U+FFFD.\n\n"
            "  --tokenizer FILE  tokenizer.json to use (required)\n"
            "  (default)         all of stdin is one text; prints its ids on one line, space-separated\n"
            "  --json            the same, printed as a JSON array\n"
            "  --jsonl           one JSON object {\"text\": \"...\"} per input line; writes one\n"
            "                    {\"ids\": [...], \"decoded\": \"...\"} per line ({\"error\": \"...\"} for a bad\n"
            "                    line, reported on stderr with its line number; exit status 1)\n"
            "  --help            this text\n");
}

static char *read_stdin(size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    errno = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, stdin);
        if (n < cap) break;
        char *bigger = realloc(buf, cap *= 2);
        if (!bigger) free(buf);
        buf = bigger;
    }
    if (buf && ferror(stdin)) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

static void print_ids(const int32_t *ids, int n, int json)
{
    fputs(json ? "[" : "", stdout);
    for (int i = 0; i < n; i++) printf(i ? (json ? ", %d" : " %d") : "%d", (int)ids[i]);
    puts(json ? "]" : "");
}

static void print_object(const char *key, cJSON *value, const char *key2, cJSON *value2)
{
    cJSON *obj = cJSON_CreateObject();
    cJSON_AddItemToObject(obj, key, value);
    if (key2) cJSON_AddItemToObject(obj, key2, value2);
    char *s = cJSON_PrintUnformatted(obj);
    puts(s ? s : "{\"error\": \"out of memory\"}");
    free(s);
    cJSON_Delete(obj);
}

/* One JSONL line -> its output line; returns 0, or -1 with err set. */
static int jsonl_line(const rl_tokenizer *tok, const char *line, size_t len, rl_err *err)
{
    cJSON *in = rl_json_parse(line, len, "input", err);
    if (!in) return -1;
    const char *text = NULL;
    int32_t *ids = NULL;
    int n_ids = 0;
    char *decoded = NULL;
    size_t dec_len;
    int rc = -1;
    if (!cJSON_IsObject(in)) rl_err_set(err, "line must be a JSON object {\"text\": ...}");
    else if (!rl_json_string(in, "text", &text, 1, "input", err) &&
             !rl_tok_encode(tok, text, strlen(text), &ids, &n_ids, err) &&
             !rl_tok_decode(tok, ids, n_ids, &decoded, &dec_len, err)) {
        int *as_int = malloc((size_t)(n_ids ? n_ids : 1) * sizeof *as_int);
        if (as_int) {
            for (int i = 0; i < n_ids; i++) as_int[i] = ids[i];
            print_object("ids", cJSON_CreateIntArray(as_int, n_ids), "decoded", cJSON_CreateString(decoded));
            rc = 0;
        } else
            rl_err_oom(err, "ids", (size_t)n_ids * sizeof *as_int);
        free(as_int);
    }
    free(decoded);
    free(ids);
    cJSON_Delete(in);
    return rc;
}

static int run_jsonl(const rl_tokenizer *tok)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int status = 0;
    for (long no = 1; (len = getline(&line, &cap, stdin)) >= 0; no++) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) len--;
        if (len == 0) continue;
        rl_err err = {{0}};
        if (jsonl_line(tok, line, (size_t)len, &err)) {
            fprintf(stderr, "rlc tokenize: stdin line %ld: %s\n", no, err.msg);
            print_object("error", cJSON_CreateString(err.msg), NULL, NULL);
            status = 1;
        }
    }
    if (ferror(stdin)) {
        fprintf(stderr, "rlc tokenize: cannot read stdin: %s\n", strerror(errno));
        status = 1;
    }
    free(line);
    return status;
}

int rl_cmd_tokenize(int argc, char **argv)
{
    const char *path = NULL;
    int json = 0, jsonl = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--tokenizer") && i + 1 < argc) path = argv[++i];
        else if (!strcmp(argv[i], "--json")) json = 1;
        else if (!strcmp(argv[i], "--jsonl")) jsonl = 1;
        else {
            fprintf(stderr, "rlc tokenize: unknown or incomplete option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (json && jsonl) {
        fprintf(stderr, "rlc tokenize: --json and --jsonl exclude each other\n");
        return 2;
    }
    if (!path) {
        fprintf(stderr, "rlc tokenize: --tokenizer FILE is required\n");
        usage(stderr);
        return 2;
    }
    rl_err err = {{0}};
    rl_tokenizer *tok;
    if (rl_tok_load(&tok, path, &err)) {
        fprintf(stderr, "rlc tokenize: %s\n", err.msg);
        return 1;
    }
    int status = 0;
    if (jsonl) status = run_jsonl(tok);
    else {
        size_t len;
        char *text = read_stdin(&len);
        int32_t *ids = NULL;
        int n_ids;
        if (!text) {
            fprintf(stderr, "rlc tokenize: cannot read stdin: %s\n", errno ? strerror(errno) : "out of memory");
            status = 1;
        } else if (rl_tok_encode(tok, text, len, &ids, &n_ids, &err)) {
            fprintf(stderr, "rlc tokenize: %s\n", err.msg);
            status = 1;
        } else
            print_ids(ids, n_ids, json);
        free(ids);
        free(text);
    }
    rl_tok_free(tok);
    return status;
}
