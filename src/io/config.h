/* config.h — a Hugging Face config.json for the decoder-only models rlc runs.
 *
 * One struct covers Qwen3 (q/k RMSNorm per head), Qwen2/2.5 (q,k,v biases) and Llama 3
 * (llama3 RoPE scaling); the model code branches on the flags, never on the architecture name.
 * Anything the model code does not implement (other architectures, other RoPE scalings,
 * sliding windows, MoE, activations other than silu, ...) is rejected by name when the file is
 * parsed: a config is either fully supported or refused, never half-supported.
 *
 * The tensor list (rl_config_tensor_specs) is the checkpoint layout transformers writes for
 * these architectures: HF tensor names, fixed order, shapes [out, in] for linear weights. */
#ifndef RL_IO_CONFIG_H
#define RL_IO_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"
#include "core/error.h"

typedef enum { RL_ARCH_QWEN3, RL_ARCH_QWEN2, RL_ARCH_LLAMA } rl_arch;

/* The head on the last hidden states. A value model (PPO's critic, or a reward model) is the
 * same decoder with a one-label score head instead of the lm_head, in transformers' layouts:
 *   RL_HEAD_TOKEN_CLS  <Arch>ForTokenClassification, num_labels 1: score.weight [1, hidden]
 *                      and score.bias [1]; transformers returns the score of every position
 *   RL_HEAD_SEQ_CLS    <Arch>ForSequenceClassification, num_labels 1: score.weight [1, hidden],
 *                      no bias (TRL's reward and value models); transformers returns the last
 *                      token's score, rlc every position's (as TRL's PPO reads it) */
typedef enum { RL_HEAD_LM, RL_HEAD_TOKEN_CLS, RL_HEAD_SEQ_CLS } rl_head_kind;

enum { RL_ROPE_NONE = 0, RL_ROPE_LLAMA3 = 1 };

#define RL_CONFIG_MAX_EOS 8

typedef struct rl_model_config {
    rl_arch arch;
    char architecture[64]; /* "Qwen3ForCausalLM" (or ...ForTokenClassification, see head) */
    rl_head_kind head;     /* RL_HEAD_LM unless a value model */
    char model_type[32];   /* "qwen3" */
    int vocab_size, hidden_size, intermediate_size, n_layers, n_heads, n_kv_heads, head_dim,
        max_position_embeddings;
    double rope_theta, rms_norm_eps;
    int tie_word_embeddings;
    int attention_bias; /* q, k, v projections have biases (Qwen2) */
    int qk_norm;        /* RMSNorm over each head of q and k before RoPE (Qwen3) */
    struct {
        int type; /* RL_ROPE_NONE, RL_ROPE_LLAMA3 */
        double factor, low_freq_factor, high_freq_factor;
        int original_max_position_embeddings;
    } rope_scaling;
    int bos_token_id; /* -1 when absent */
    int eos_token_ids[RL_CONFIG_MAX_EOS];
    int n_eos; /* eos_token_id may be an int or a list in config.json */
    rl_dtype torch_dtype;
} rl_model_config;

/* Reads and parses path (a config.json file). */
int rl_config_load(rl_model_config *cfg, const char *path, rl_err *err);

/* Parses len bytes of config.json text; `what` names the source in messages. */
int rl_config_parse(rl_model_config *cfg, const char *text, size_t len, const char *what,
                    rl_err *err);

/* Writes a config.json that transformers' AutoConfig / from_pretrained loads (model_type,
 * architectures, torch_dtype and every field above). Atomic. */
int rl_config_save(const rl_model_config *cfg, const char *path, rl_err *err);

/* Fills inv_freq[head_dim / 2] with the RoPE inverse frequencies exactly as transformers
 * computes them (rope_theta, and the llama3 frequency scaling when configured), in fp32. */
void rl_config_rope_inv_freq(const rl_model_config *cfg, float *inv_freq);

typedef struct rl_tensor_spec {
    char name[96]; /* HF name: "model.layers.3.self_attn.q_norm.weight" */
    int n_dims;
    int64_t shape[2];
} rl_tensor_spec;

/* The checkpoint's tensors in a fixed order: embed_tokens, then per layer (input_layernorm,
 * q/k/v/o projections with biases and q/k norms where configured, post_attention_layernorm,
 * gate/up/down), then model.norm, then lm_head unless tied (a value model: score.weight and,
 * RL_HEAD_TOKEN_CLS, score.bias; never an lm_head). *specs is malloc'd (caller frees). */
int rl_config_tensor_specs(const rl_model_config *cfg, rl_tensor_spec **specs, int *n,
                           rl_err *err);

/* Number of parameters (elements) in the checkpoint, tied embeddings counted once. */
int64_t rl_config_param_count(const rl_model_config *cfg);

/* "Qwen3ForCausalLM" etc. for an arch. */
const char *rl_arch_name(rl_arch arch);

/* The value-model config of a causal LM's (or of a value model's: unchanged): head and
 * architecture name set for kind (RL_HEAD_TOKEN_CLS or RL_HEAD_SEQ_CLS). */
void rl_config_as_value(rl_model_config *cfg, rl_head_kind kind);

#endif
