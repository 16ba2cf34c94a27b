/* tokenizer.h — byte-level BPE tokenizer read from a Hugging Face tokenizer.json.
 *
 * Gives the same token ids as the Rust `tokenizers` library (encode(text,
 * add_special_tokens=False)) for the files it accepts: model BPE (merges in "a b" or [a, b]
 * form, ignore_merges), normalizer NFC / none, pre_tokenizer Split (Isolated, PCRE2 regex) and
 * ByteLevel (last, inside a Sequence or alone), decoder ByteLevel, added tokens matched before
 * pre-tokenization. Any other type is rejected at load time by name, never half-run
 * (docs/tokenizer.md lists what loads).
 *
 * Invalid UTF-8 input to rl_tok_encode: each maximal invalid subsequence is replaced by U+FFFD
 * (the Unicode "maximal subpart" rule, the same as Python's bytes.decode(errors="replace")),
 * so bytes that are not UTF-8 encode as the ids `tokenizers` gives for the Python-decoded
 * string. rl_tok_decode applies the same rule to the bytes the tokens make (as tokenizers'
 * from_utf8_lossy does); rl_tok_token_bytes gives the raw bytes for streaming.
 *
 * A loaded tokenizer is read-only: encode/decode may run from many threads at once. */
#ifndef RL_IO_TOKENIZER_H
#define RL_IO_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "io/chat.h"

typedef struct rl_tokenizer rl_tokenizer;

/* Loads tokenizer.json at path. Errors name the file and the field ("tokenizer.json: model:
 * merges[12]: token 'xy' is not in the vocab"). */
int rl_tok_load(rl_tokenizer **out, const char *path, rl_err *err);
void rl_tok_free(rl_tokenizer *tok);

/* Encodes len bytes of text (need not be NUL-terminated) into a malloc'd array of ids (the
 * caller frees *ids; *ids may be NULL when *n_ids is 0). Added and special tokens in the text
 * are matched first, as tokenizers does with split_special_tokens=False. No BOS/EOS added. */
int rl_tok_encode(const rl_tokenizer *tok, const char *text, size_t len, int32_t **ids,
                  int *n_ids, rl_err *err);

/* Decodes ids (special tokens included as their text) into malloc'd, NUL-terminated UTF-8
 * (invalid byte sequences from partial tokens become U+FFFD). Fails on an id out of range. */
int rl_tok_decode(const rl_tokenizer *tok, const int32_t *ids, int n_ids, char **text,
                  size_t *len, rl_err *err);

/* Raw bytes one token decodes to (may be a partial UTF-8 character), for streaming output and
 * stop strings. *bytes points into tok. Returns -1 for an id that is not a token. */
int rl_tok_token_bytes(const rl_tokenizer *tok, int32_t id, const char **bytes, size_t *len);

/* Largest id + 1, added tokens included. */
int rl_tok_vocab_size(const rl_tokenizer *tok);

/* Id of the exact token string (vocab form, e.g. "<|im_end|>" or "Ġthe"); -1 if absent. */
int32_t rl_tok_token_id(const rl_tokenizer *tok, const char *token);

/* 1 if id is an added token marked special in tokenizer.json, else 0. */
int rl_tok_is_special(const rl_tokenizer *tok, int32_t id);

/* The tokenizer's chat template: the one beside its tokenizer.json (io/chat.h,
 * rl_chat_template_load), read when it is loaded. A tokenizer without one (or with one rlc does
 * not render) still loads; asking for its template then fails with the reason, naming the file. */
const rl_chat_template *rl_tok_chat_template(const rl_tokenizer *tok, rl_err *err);

/* Renders messages with the tokenizer's template (rl_chat_render): malloc'd, NUL-terminated. */
int rl_tok_chat_format(const rl_tokenizer *tok, const rl_chat_message *msgs, int n, const rl_chat_options *opt,
                       char **text, rl_err *err);

/* The tokens that end a text, of those the tokenizer has, into ids (at most RL_TOK_MAX_EOS);
 * returns how many. The first is the end of a chat turn of the template's family
 * (rl_chat_end_tokens: "<|im_end|>" for ChatML, "<|eot_id|>" for Llama 3; without a template,
 * ChatML's when the vocabulary has them, else Llama's): what an SFT completion ends with;
 * generation stops at any of them. */
#define RL_TOK_MAX_EOS RL_CHAT_MAX_END_TOKENS
int rl_tok_eos_ids(const rl_tokenizer *tok, int32_t ids[RL_TOK_MAX_EOS]);

#endif
