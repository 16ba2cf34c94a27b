/* chat_internal.h — what the chat renderers share (io/chat*.c only): a growing text buffer and
 * the few Python string and JSON operations the templates use, done as Python does them. */
#ifndef RL_IO_CHAT_INTERNAL_H
#define RL_IO_CHAT_INTERNAL_H

#include <stddef.h>

#include "io/chat.h"

typedef struct rl_chat_buf {
    char *s;
    size_t len, cap;
    int oom; /* an append failed: the text is incomplete */
} rl_chat_buf;

void rl_chat_put(rl_chat_buf *b, const char *s, size_t n);
void rl_chat_puts(rl_chat_buf *b, const char *s);

/* A piece of a string (Python slices of the message texts). */
typedef struct rl_chat_span {
    const char *s;
    size_t n;
} rl_chat_span;

rl_chat_span rl_chat_span_of(const char *s);
/* Python's s.strip(chars) / lstrip / rstrip for a set of ASCII chars. */
rl_chat_span rl_chat_strip_chars(rl_chat_span s, const char *chars, int left, int right);
/* Python's s.strip() with no argument (Jinja's trim): every Unicode white space at both ends. */
rl_chat_span rl_chat_trim(rl_chat_span s);

/* Python's json.dumps(item, ensure_ascii=False, indent=indent or None) as transformers' tojson
 * filter writes it: keys in their order, ", " and ": " separators (',' at line ends with an
 * indent). Numbers: integers as integers, others as Python's repr of the double. */
void rl_chat_json(rl_chat_buf *b, const cJSON *item, int indent);

/* Renderers (chat_qwen.c, chat_llama.c); msgs and n checked by rl_chat_render. */
int rl_chat_render_chatml(rl_chat_buf *b, const rl_chat_message *msgs, int n, const rl_chat_options *opt,
                          rl_err *err);
int rl_chat_render_qwen(rl_chat_buf *b, const rl_chat_template *t, const rl_chat_message *msgs, int n,
                        const rl_chat_options *opt, rl_err *err);
int rl_chat_render_llama3(rl_chat_buf *b, const rl_chat_template *t, const rl_chat_message *msgs, int n,
                          const rl_chat_options *opt, rl_err *err);
/* Llama 3.1 and 3.2 (t->family says which date it defaults to). */
int rl_chat_render_llama3_1(rl_chat_buf *b, const rl_chat_template *t, const rl_chat_message *msgs, int n,
                            const rl_chat_options *opt, rl_err *err);

#endif
