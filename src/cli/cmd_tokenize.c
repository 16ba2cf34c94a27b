/* cmd_tokenize.c — `rlc tokenize`: text from stdin to token ids with a tokenizer.json.
 *
 * Plain mode encodes all of stdin as one text and prints the ids on one line, separated by
 * spaces (or as a JSON array with --json). --jsonl reads one {"text": ...} object per line and
 * writes one {"ids": [...], "decoded": ...} per line; a {"messages": [...]} line (with optional
 * "tools", "add_generation_prompt", "enable_thinking") is first rendered by the tokenizer's chat
 * template (io/chat.h) and its output line adds that "text"; a bad line gets {"error": ...} in its
 * place (so output lines stay aligned with input lines), is reported on stderr with its line
 * number, and makes the exit status 1. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "io/json.h"
#include "io/tokenizer.h"

static const char usage[] =
    "usage: rlc tokenize --tokenizer FILE [--json | --jsonl] < input\n\n"
    "Encodes text with a Hugging Face tokenizer.json (byte-level BPE, as Qwen's), the same ids\n"
    "as tokenizers' encode(text, add_special_tokens=False); special tokens written in the text\n"
    "(\"<|im_end|>\") become their ids. Invalid UTF-8 is read as U+FFFD. By default all of stdin is\n"
    "one text and its ids are printed on one line, space-separated. --jsonl reads {\"text\": ...}\n"
    "lines, or {\"messages\": [...], \"tools\": [...], \"add_generation_prompt\": bool,\n"
    "\"enable_thinking\": bool} lines rendered by the chat template beside the tokenizer (as\n"
    "transformers' apply_chat_template; the output adds that \"text\"). A bad line gets\n"
    "{\"error\": \"...\"}, is reported on stderr with its line number, and the exit status is 1.\n\n";

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

static void print_object(const char *key, cJSON *value, const char *key2, cJSON *value2, const char *text)
{
    cJSON *obj = cJSON_CreateObject();
    if (text) cJSON_AddStringToObject(obj, "text", text);
    cJSON_AddItemToObject(obj, key, value);
    if (key2) cJSON_AddItemToObject(obj, key2, value2);
    char *s = cJSON_PrintUnformatted(obj);
    puts(s ? s : "{\"error\": \"out of memory\"}");
    free(s);
    cJSON_Delete(obj);
}

/* A {"messages"} line rendered by the tokenizer's chat template into *text (malloc'd). */
static int chat_text(const rl_tokenizer *tok, const cJSON *in, char **text, rl_err *err)
{
    const cJSON *messages = cJSON_GetObjectItemCaseSensitive(in, "messages");
    const cJSON *tools = cJSON_GetObjectItemCaseSensitive(in, "tools");
    rl_chat_options opt = {.add_generation_prompt = 0, .enable_thinking = 1};
    if (!cJSON_IsArray(messages)) return rl_err_set(err, "input: field 'messages' must be a list of messages");
    if (tools && !cJSON_IsNull(tools)) {
        if (rl_chat_tools_check(tools, "input", err)) return -1;
        opt.tools = tools;
    }
    if (rl_json_bool(in, "add_generation_prompt", &opt.add_generation_prompt, 0, "input", err) ||
        rl_json_bool(in, "enable_thinking", &opt.enable_thinking, 0, "input", err))
        return -1;
    rl_chat_message *msgs;
    int n;
    if (rl_chat_messages_parse(messages, "messages", &msgs, &n, "input", err)) return -1;
    int rc = rl_tok_chat_format(tok, msgs, n, &opt, text, err);
    free(msgs);
    return rc;
}

/* One JSONL line -> its output line; returns 0, or -1 with err set. */
static int jsonl_line(const rl_tokenizer *tok, const char *line, size_t len, rl_err *err)
{
    cJSON *in = rl_json_parse(line, len, "input", err);
    if (!in) return -1;
    const char *text = NULL;
    char *chat = NULL;
    int32_t *ids = NULL;
    int n_ids = 0;
    char *decoded = NULL;
    size_t dec_len;
    int rc = -1, ok = 0;
    if (!cJSON_IsObject(in)) rl_err_set(err, "line must be a JSON object {\"text\": ...} or {\"messages\": [...]}");
    else if (cJSON_GetObjectItemCaseSensitive(in, "messages")) ok = !chat_text(tok, in, &chat, err), text = chat;
    else ok = !rl_json_string(in, "text", &text, 1, "input", err);
    if (ok && !rl_tok_encode(tok, text, strlen(text), &ids, &n_ids, err) &&
        !rl_tok_decode(tok, ids, n_ids, &decoded, &dec_len, err)) {
        int *as_int = malloc((size_t)(n_ids ? n_ids : 1) * sizeof *as_int);
        if (as_int) {
            for (int i = 0; i < n_ids; i++) as_int[i] = ids[i];
            print_object("ids", cJSON_CreateIntArray(as_int, n_ids), "decoded", cJSON_CreateString(decoded), chat);
            rc = 0;
        } else
            rl_err_oom(err, "ids", (size_t)n_ids * sizeof *as_int);
        free(as_int);
    }
    free(decoded);
    free(ids);
    free(chat);
    cJSON_Delete(in);
    return rc;
}

static int run_jsonl(const rl_tokenizer *tok)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int status = RL_EXIT_OK;
    for (long no = 1; (len = getline(&line, &cap, stdin)) >= 0; no++) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) len--;
        if (len == 0) continue;
        rl_err err = {{0}};
        if (jsonl_line(tok, line, (size_t)len, &err)) {
            fprintf(stderr, "rlc tokenize: stdin line %ld: %s\n", no, err.msg);
            print_object("error", cJSON_CreateString(err.msg), NULL, NULL, NULL);
            status = RL_EXIT_FAILURE;
        }
    }
    if (ferror(stdin)) {
        fprintf(stderr, "rlc tokenize: cannot read stdin: %s\n", strerror(errno));
        status = RL_EXIT_FAILURE;
    }
    free(line);
    return status;
}

static int run(const char *path, int json, int jsonl)
{
    rl_err err = {{0}};
    rl_tokenizer *tok;
    if (rl_tok_load(&tok, path, &err)) {
        fprintf(stderr, "rlc tokenize: %s\n", err.msg);
        return RL_EXIT_FAILURE;
    }
    int status = RL_EXIT_OK;
    if (jsonl) status = run_jsonl(tok);
    else {
        size_t len;
        char *text = read_stdin(&len);
        int32_t *ids = NULL;
        int n_ids;
        if (!text) {
            fprintf(stderr, "rlc tokenize: cannot read stdin: %s\n", errno ? strerror(errno) : "out of memory");
            status = RL_EXIT_FAILURE;
        } else if (rl_tok_encode(tok, text, len, &ids, &n_ids, &err)) {
            fprintf(stderr, "rlc tokenize: %s\n", err.msg);
            status = RL_EXIT_FAILURE;
        } else
            print_ids(ids, n_ids, json);
        free(ids);
        free(text);
    }
    rl_tok_free(tok);
    return status;
}

int rl_cmd_tokenize(int argc, char **argv)
{
    const char *path = NULL;
    int json = 0, jsonl = 0;
    rl_opt list[] = {
        RL_OPT_S("tokenizer", &path, "FILE", "tokenizer.json to use", .flags = RL_OPT_REQUIRED),
        RL_OPT_F("json", &json, "print the ids as a JSON array"),
        RL_OPT_F("jsonl", &jsonl, "one {\"text\": ...} per input line; one {\"ids\", \"decoded\"} per output line"),
        RL_OPT_END,
    };
    rl_opts cli = {.cmd = "tokenize", .usage = usage, .list = list};
    int status = rl_opts_parse(&cli, argc, argv);
    if (status == RL_OPTS_CONTINUE && json && jsonl) status = rl_opts_fail(&cli, "--json and --jsonl exclude each other");
    if (status == RL_OPTS_CONTINUE) status = run(path, json, jsonl);
    rl_opts_free(&cli);
    return status;
}
