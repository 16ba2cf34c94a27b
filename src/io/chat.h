/* chat.h — conversations to text, exactly as transformers' apply_chat_template(...,
 * tokenize=False) renders them with the chat template the checkpoint ships.
 *
 * No Jinja at run time: the template (tokenizer_config.json's "chat_template", or
 * chat_template.jinja beside it) is recognised as one of the families below by its distinctive
 * text, and each family is rendered natively. An unknown template is refused by name, never
 * approximated. What each family renders (system prompts, tools, tool calls and responses,
 * reasoning of earlier turns, thinking on and off) is in docs/chat.md; tests/io/test_chat.c
 * checks every family byte for byte against transformers (tools/make_chat_fixtures.py).
 *
 * The text is encoded afterwards with rl_tok_encode, which turns the markers ("<|im_start|>",
 * "<|start_header_id|>", ...) into their special-token ids, as apply_chat_template(tokenize=True)
 * does (no BOS added: a template that wants one writes it). */
#ifndef RL_IO_CHAT_H
#define RL_IO_CHAT_H

#include <cjson/cJSON.h>

#include "core/error.h"

typedef enum {
    RL_CHAT_CHATML,   /* plain ChatML, no default system prompt (examples/demo) */
    RL_CHAT_QWEN2_5,  /* Qwen2.5 (-Instruct, -Coder, -Math): a default system prompt, tools */
    RL_CHAT_QWEN3,    /* Qwen3 (hybrid thinking): <think> blocks, enable_thinking, tools */
    RL_CHAT_LLAMA3,   /* Meta-Llama-3-Instruct: header tokens, no tools */
    RL_CHAT_LLAMA3_1, /* Llama-3.1 / 3.3-Instruct: dated system header, JSON tool calls */
    RL_CHAT_LLAMA3_2, /* Llama-3.2-Instruct (text): as 3.1, dated today unless date_string */
} rl_chat_family;

typedef struct rl_chat_template {
    rl_chat_family family;
    char bos_token[64];        /* tokenizer_config.json's bos_token ("" when none): Llama writes it */
    char default_system[512];  /* Qwen2.5: the system prompt when the conversation has none, read
                                * from the template ("You are Qwen, created by Alibaba Cloud. ...",
                                * Qwen2.5-Math's "Please reason step by step, ...") */
} rl_chat_template;

/* One message. content is never NULL (an assistant turn with only tool calls has ""). */
typedef struct rl_chat_message {
    const char *role;              /* system, user, assistant, tool */
    const char *content;
    const char *reasoning_content; /* assistant: the thinking of this turn, or NULL */
    const cJSON *tool_calls;       /* assistant: JSON list of {"type": "function", "function":
                                    * {"name", "arguments"}} (or {"name", "arguments"}), or NULL */
} rl_chat_message;

typedef struct rl_chat_options {
    int add_generation_prompt; /* end with the opening of an assistant turn */
    int enable_thinking;       /* 1 (the templates' default) or 0: Qwen3 then opens the reply
                                * with an empty <think></think> block */
    const cJSON *tools;        /* JSON list of tool schemas, or NULL (no tools) */
    const char *date_string;   /* Llama 3.1 / 3.2 "Today Date" (apply_chat_template's date_string);
                                * NULL: 3.1's fixed "26 Jul 2024", 3.2's today ("%d %b %Y", local
                                * time, as transformers' strftime_now) */
} rl_chat_options;

#define RL_CHAT_OPTIONS_DEFAULT ((rl_chat_options){.add_generation_prompt = 1, .enable_thinking = 1})

/* Recognises a template's text; bos_token may be NULL. `what` names the file in the message:
 * "model/tokenizer_config.json: chat_template is not one rlc renders (known: ...)". */
int rl_chat_template_identify(rl_chat_template *out, const char *text, const char *bos_token, const char *what,
                              rl_err *err);

/* The template of a checkpoint folder: dir/chat_template.jinja when there is one (it wins, as in
 * transformers), else dir/tokenizer_config.json's "chat_template" (a string, or a list of
 * {"name", "template"} from which "default" is taken). Errors name the file. */
int rl_chat_template_load(rl_chat_template *out, const char *dir, rl_err *err);

/* Renders n messages into malloc'd, NUL-terminated text. Fails (message names the message
 * index) where the template raises: no messages, Llama 3.1 with other than one tool call in a
 * turn or with tools and no user message; and on malformed tool calls. */
int rl_chat_render(const rl_chat_template *t, const rl_chat_message *msgs, int n, const rl_chat_options *opt,
                   char **text, rl_err *err);

/* What rendering msgs[0, n) with opt adds to the rendering of msgs[0, n_before) with before:
 * the text of the later turns (an SFT target after its prompt with the generation prompt; an
 * episode's observation turns and next generation prompt after the model's turn). *head (when
 * head is not NULL) gets the first rendering, *tail the addition (both malloc'd). Fails when
 * the first rendering is not a prefix of the second (the template renders the earlier turns
 * differently once more follow, e.g. Qwen3's empty think block of a final turn), naming the
 * byte where they part. */
int rl_chat_render_after(const rl_chat_template *t, const rl_chat_message *msgs, int n_before,
                         const rl_chat_options *before, int n, const rl_chat_options *opt, char **head, char **tail,
                         rl_err *err);

/* Parses a JSON list of messages ({"role", "content", "reasoning_content"?, "tool_calls"?}) into
 * a malloc'd array whose strings point into arr. `where` and `key` go into messages:
 * "data.jsonl:3: messages[1]: field 'content' must be a string". */
int rl_chat_messages_parse(const cJSON *arr, const char *key, rl_chat_message **out, int *n_out, const char *where,
                           rl_err *err);

/* Checks that tools is a JSON list of objects (a line's "tools" field). */
int rl_chat_tools_check(const cJSON *tools, const char *where, rl_err *err);

const char *rl_chat_family_name(rl_chat_family family);

/* The tokens that end a turn or a text in this family, first the end of a turn: ChatML
 * "<|im_end|>", "<|endoftext|>"; Llama "<|eot_id|>", "<|end_of_text|>", "<|eom_id|>". */
#define RL_CHAT_MAX_END_TOKENS 3
int rl_chat_end_tokens(rl_chat_family family, const char *names[RL_CHAT_MAX_END_TOKENS]);

#endif
