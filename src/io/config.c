/* config.c — parse, validate and write config.json; RoPE frequencies; the tensor layout.
 *
 * Accepts both spellings transformers has used: v4 (rope_theta, rope_scaling, torch_dtype) and
 * v5 (rope_parameters {rope_theta, rope_type, ...}, dtype). Writes the v4 spelling, which both
 * versions load. Everything the model code does not implement is refused with the field name
 * (see reject_unsupported); defaults are transformers' own for the three model types, except
 * that Qwen3 must state head_dim (its transformers default is a model-size number). */
#include "io/config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/file.h"
#include "io/json.h"

/* Upper bounds that keep every size product far inside int64 and reject nonsense early. */
#define MAX_DIM (1 << 24)
#define MAX_LAYERS 4096
#define MAX_THETA 1e15
#define MAX_FACTOR 1e6

static const struct {
    rl_arch arch;
    const char *architecture, *model_type;
} arch_table[] = {
    {RL_ARCH_QWEN3, "Qwen3ForCausalLM", "qwen3"},
    {RL_ARCH_QWEN2, "Qwen2ForCausalLM", "qwen2"},
    {RL_ARCH_LLAMA, "LlamaForCausalLM", "llama"},
};
#define N_ARCH (int)(sizeof arch_table / sizeof arch_table[0])

const char *rl_arch_name(rl_arch arch)
{
    for (int i = 0; i < N_ARCH; i++)
        if (arch_table[i].arch == arch) return arch_table[i].architecture;
    return "?";
}

static int get_int(const cJSON *root, const char *key, int *out, int required, int lo, int hi,
                   const char *what, rl_err *err)
{
    int64_t v = *out;
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!required && (!item || cJSON_IsNull(item))) return 0; /* absent: keep the default */
    if (rl_json_int(root, key, &v, required, what, err)) return -1;
    if (v < lo || v > hi)
        return rl_err_set(err, "%s: field '%s' must be in [%d, %d], got %lld", what, key, lo, hi, (long long)v);
    *out = (int)v;
    return 0;
}

/* A number in [min, max], or (0, max] for min 0: the bounds keep every fp32 quantity derived
 * from it finite (a rope_theta below 1 makes the RoPE frequencies 1 / theta^(2i/d) grow, and
 * overflow fp32 for a tiny one). */
static int get_number(const cJSON *root, const char *key, double *out, int required, double min, double max,
                      const char *what, rl_err *err)
{
    if (rl_json_double(root, key, out, required, what, err)) return -1;
    if (!(*out > 0 && *out >= min && *out <= max)) {
        if (min > 0)
            return rl_err_set(err, "%s: field '%s' must be in [%g, %g], got %g", what, key, min, max, *out);
        return rl_err_set(err, "%s: field '%s' must be in (0, %g], got %g", what, key, max, *out);
    }
    return 0;
}

/* The head suffixes of architecture names: "Qwen3" + one of these (config.h, rl_head_kind). */
static const char *const head_suffix[] = {"ForCausalLM", "ForTokenClassification", "ForSequenceClassification"};

/* A value model's head has one label: num_labels 1, or an id2label with one entry (transformers
 * writes the latter; its default is two labels). */
static int parse_labels(const cJSON *root, const char *what, rl_err *err)
{
    const cJSON *id2label = cJSON_GetObjectItemCaseSensitive(root, "id2label");
    int labels = 2;
    if (id2label && cJSON_IsObject(id2label)) labels = cJSON_GetArraySize(id2label);
    if (get_int(root, "num_labels", &labels, 0, 0, 1 << 20, what, err)) return -1;
    if (labels != 1)
        return rl_err_set(err, "%s: a value model needs one label (num_labels 1 or an id2label of one entry), "
                          "got %d", what, labels);
    return 0;
}

static int parse_arch(rl_model_config *cfg, const cJSON *root, const char *what, rl_err *err)
{
    const char *model_type = NULL, *architecture = NULL;
    if (rl_json_string(root, "model_type", &model_type, 1, what, err)) return -1;
    const cJSON *archs = cJSON_GetObjectItemCaseSensitive(root, "architectures");
    if (archs && !cJSON_IsNull(archs)) {
        if (!cJSON_IsArray(archs) || cJSON_GetArraySize(archs) != 1 || !cJSON_IsString(archs->child))
            return rl_err_set(err, "%s: field 'architectures' must be a list of one name", what);
        architecture = archs->child->valuestring;
    }
    int found = -1;
    cfg->head = RL_HEAD_LM;
    for (int i = 0; i < N_ARCH; i++) {
        if (!architecture) {
            if (!strcmp(model_type, arch_table[i].model_type)) found = i;
            continue;
        }
        /* "Qwen3" + a head suffix */
        size_t stem = strlen(arch_table[i].architecture) - strlen(head_suffix[0]);
        for (int h = 0; h < 3; h++)
            if (!strncmp(architecture, arch_table[i].architecture, stem) && !strcmp(architecture + stem, head_suffix[h]))
                found = i, cfg->head = (rl_head_kind)h;
    }
    if (found < 0)
        return rl_err_set(err, "%s: architecture '%.64s' is not supported (rlc runs Qwen3ForCausalLM, "
                          "Qwen2ForCausalLM, LlamaForCausalLM, and as value models their ForTokenClassification "
                          "and ForSequenceClassification with one label)", what, architecture ? architecture : model_type);
    if (strcmp(model_type, arch_table[found].model_type))
        return rl_err_set(err, "%s: model_type '%.32s' does not match architecture %s (expected '%s')", what,
                          model_type, arch_table[found].architecture, arch_table[found].model_type);
    if (cfg->head != RL_HEAD_LM && parse_labels(root, what, err)) return -1;
    cfg->arch = arch_table[found].arch;
    snprintf(cfg->architecture, sizeof cfg->architecture, "%s", architecture ? architecture : arch_table[found].architecture);
    snprintf(cfg->model_type, sizeof cfg->model_type, "%s", arch_table[found].model_type);
    return 0;
}

void rl_config_as_value(rl_model_config *cfg, rl_head_kind kind)
{
    if (cfg->head != RL_HEAD_LM) return;
    const char *name = rl_arch_name(cfg->arch);
    size_t stem = strlen(name) - strlen(head_suffix[0]);
    cfg->head = kind;
    snprintf(cfg->architecture, sizeof cfg->architecture, "%.*s%s", (int)stem, name, head_suffix[kind]);
}

/* Fields whose mere presence (with a value that switches a feature on) means a model rlc does
 * not run. Checked by name so that the message says what is missing. */
static int reject_unsupported(const rl_model_config *cfg, const cJSON *root, const char *what, rl_err *err)
{
    static const char *const moe_keys[] = {"num_experts", "num_local_experts", "n_routed_experts",
                                           "moe_intermediate_size", "num_experts_per_tok"};
    for (size_t i = 0; i < sizeof moe_keys / sizeof moe_keys[0]; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, moe_keys[i]);
        if (v && !cJSON_IsNull(v) && !(cJSON_IsNumber(v) && v->valuedouble == 0))
            return rl_err_set(err, "%s: mixture-of-experts field '%s' is not supported", what, moe_keys[i]);
    }
    const cJSON *q = cJSON_GetObjectItemCaseSensitive(root, "quantization_config");
    if (q && !cJSON_IsNull(q)) return rl_err_set(err, "%s: quantized checkpoints (quantization_config) are not supported", what);
    const char *act = "silu";
    if (rl_json_string(root, "hidden_act", &act, 0, what, err)) return -1;
    if (strcmp(act, "silu")) return rl_err_set(err, "%s: hidden_act '%.32s' is not supported (only silu)", what, act);
    int flag = 0;
    if (rl_json_bool(root, "use_sliding_window", &flag, 0, what, err)) return -1;
    if (flag) return rl_err_set(err, "%s: use_sliding_window true is not supported (full attention only)", what);
    flag = 0;
    if (rl_json_bool(root, "mlp_bias", &flag, 0, what, err)) return -1;
    if (flag) return rl_err_set(err, "%s: mlp_bias true is not supported", what);
    double partial = 1.0;
    if (rl_json_double(root, "partial_rotary_factor", &partial, 0, what, err)) return -1;
    if (partial != 1.0) return rl_err_set(err, "%s: partial_rotary_factor %g is not supported (only 1)", what, partial);
    const cJSON *types = cJSON_GetObjectItemCaseSensitive(root, "layer_types");
    if (types && !cJSON_IsNull(types)) {
        if (!cJSON_IsArray(types)) return rl_err_set(err, "%s: field 'layer_types' must be a list", what);
        if (cJSON_GetArraySize(types) != cfg->n_layers)
            return rl_err_set(err, "%s: layer_types has %d entries, num_hidden_layers is %d", what,
                              cJSON_GetArraySize(types), cfg->n_layers);
        int i = 0;
        for (const cJSON *t = types->child; t; t = t->next, i++)
            if (!cJSON_IsString(t) || strcmp(t->valuestring, "full_attention"))
                return rl_err_set(err, "%s: layer_types[%d] is not \"full_attention\" (sliding-window layers are not supported)",
                                  what, i);
    }
    return 0;
}

/* rope_scaling (v4) or rope_parameters (v5): "default" or "llama3"; anything else by name. */
static int parse_rope(rl_model_config *cfg, const cJSON *root, const char *what, rl_err *err)
{
    cfg->rope_theta = 10000.0;
    if (get_number(root, "rope_theta", &cfg->rope_theta, 0, 1, MAX_THETA, what, err)) return -1;
    const char *keys[] = {"rope_scaling", "rope_parameters"};
    for (int k = 0; k < 2; k++) {
        const cJSON *rope = cJSON_GetObjectItemCaseSensitive(root, keys[k]);
        if (!rope || cJSON_IsNull(rope)) continue;
        char where[300];
        snprintf(where, sizeof where, "%s: %s", what, keys[k]);
        if (!cJSON_IsObject(rope)) return rl_err_set(err, "%s: field '%s' must be an object", what, keys[k]);
        if (get_number(rope, "rope_theta", &cfg->rope_theta, 0, 1, MAX_THETA, where, err)) return -1;
        const char *type = NULL;
        if (rl_json_string(rope, "rope_type", &type, 0, where, err)) return -1;
        if (!type && rl_json_string(rope, "type", &type, 0, where, err)) return -1;
        if (!type) return rl_err_set(err, "%s: missing field 'rope_type'", where);
        if (!strcmp(type, "default")) continue;
        if (strcmp(type, "llama3"))
            return rl_err_set(err, "%s: rope type '%.32s' is not supported (only default and llama3)", where, type);
        cfg->rope_scaling.type = RL_ROPE_LLAMA3;
        if (get_number(rope, "factor", &cfg->rope_scaling.factor, 1, 1, MAX_FACTOR, where, err) ||
            get_number(rope, "low_freq_factor", &cfg->rope_scaling.low_freq_factor, 1, 0, MAX_FACTOR, where, err) ||
            get_number(rope, "high_freq_factor", &cfg->rope_scaling.high_freq_factor, 1, 0, MAX_FACTOR, where, err) ||
            get_int(rope, "original_max_position_embeddings", &cfg->rope_scaling.original_max_position_embeddings, 1, 1,
                    1 << 30, where, err))
            return -1;
        if (!((float)cfg->rope_scaling.high_freq_factor - (float)cfg->rope_scaling.low_freq_factor >= 1e-3f))
            return rl_err_set(err, "%s: high_freq_factor (%g) must exceed low_freq_factor (%g) by at least 0.001", where,
                              cfg->rope_scaling.high_freq_factor, cfg->rope_scaling.low_freq_factor);
    }
    return 0;
}

static int parse_tokens(rl_model_config *cfg, const cJSON *root, const char *what, rl_err *err)
{
    cfg->bos_token_id = -1;
    if (get_int(root, "bos_token_id", &cfg->bos_token_id, 0, 0, 1 << 30, what, err)) return -1;
    cfg->n_eos = 0;
    const cJSON *eos = cJSON_GetObjectItemCaseSensitive(root, "eos_token_id");
    if (!eos || cJSON_IsNull(eos)) return 0;
    if (cJSON_IsNumber(eos)) return get_int(root, "eos_token_id", &cfg->eos_token_ids[cfg->n_eos++], 1, 0, 1 << 30, what, err);
    if (!cJSON_IsArray(eos)) return rl_err_set(err, "%s: field 'eos_token_id' must be an integer or a list of integers", what);
    if (cJSON_GetArraySize(eos) > RL_CONFIG_MAX_EOS)
        return rl_err_set(err, "%s: eos_token_id lists %d ids, at most %d supported", what, cJSON_GetArraySize(eos),
                          RL_CONFIG_MAX_EOS);
    for (const cJSON *e = eos->child; e; e = e->next) {
        if (!rl_json_is_integer(e) || e->valuedouble < 0 || e->valuedouble > (1 << 30))
            return rl_err_set(err, "%s: eos_token_id[%d] is not a token id", what, cfg->n_eos);
        cfg->eos_token_ids[cfg->n_eos++] = (int)e->valuedouble;
    }
    return 0;
}

static int parse_dtype(rl_model_config *cfg, const cJSON *root, const char *what, rl_err *err)
{
    cfg->torch_dtype = RL_F32;
    const char *name = NULL;
    if (rl_json_string(root, "dtype", &name, 0, what, err)) return -1;
    if (!name && rl_json_string(root, "torch_dtype", &name, 0, what, err)) return -1;
    if (!name) return 0;
    if (!strcmp(name, "bfloat16")) cfg->torch_dtype = RL_BF16;
    else if (!strcmp(name, "float16")) cfg->torch_dtype = RL_F16;
    else if (!strcmp(name, "float32")) cfg->torch_dtype = RL_F32;
    else return rl_err_set(err, "%s: dtype '%.32s' is not supported (bfloat16, float16, float32)", what, name);
    return 0;
}

static int parse_root(rl_model_config *cfg, const cJSON *root, const char *what, rl_err *err)
{
    if (!cJSON_IsObject(root)) return rl_err_set(err, "%s: not a JSON object", what);
    if (parse_arch(cfg, root, what, err)) return -1;
    if (get_int(root, "vocab_size", &cfg->vocab_size, 1, 1, MAX_DIM, what, err) ||
        get_int(root, "hidden_size", &cfg->hidden_size, 1, 1, MAX_DIM, what, err) ||
        get_int(root, "intermediate_size", &cfg->intermediate_size, 1, 1, MAX_DIM, what, err) ||
        get_int(root, "num_hidden_layers", &cfg->n_layers, 1, 1, MAX_LAYERS, what, err) ||
        get_int(root, "num_attention_heads", &cfg->n_heads, 1, 1, MAX_DIM, what, err) ||
        get_int(root, "max_position_embeddings", &cfg->max_position_embeddings, 1, 1, 1 << 30, what, err))
        return -1;
    cfg->n_kv_heads = cfg->n_heads;
    if (get_int(root, "num_key_value_heads", &cfg->n_kv_heads, 0, 1, MAX_DIM, what, err)) return -1;
    if (cfg->n_heads % cfg->n_kv_heads)
        return rl_err_set(err, "%s: num_attention_heads (%d) is not a multiple of num_key_value_heads (%d)", what,
                          cfg->n_heads, cfg->n_kv_heads);
    cfg->head_dim = 0;
    if (get_int(root, "head_dim", &cfg->head_dim, cfg->arch == RL_ARCH_QWEN3, 1, MAX_DIM, what, err)) return -1;
    if (cfg->head_dim == 0) {
        if (cfg->hidden_size % cfg->n_heads)
            return rl_err_set(err, "%s: hidden_size (%d) is not a multiple of num_attention_heads (%d)", what,
                              cfg->hidden_size, cfg->n_heads);
        cfg->head_dim = cfg->hidden_size / cfg->n_heads;
    }
    if (cfg->head_dim % 2) return rl_err_set(err, "%s: head_dim %d is odd (RoPE rotates pairs)", what, cfg->head_dim);
    if ((int64_t)cfg->n_heads * cfg->head_dim > MAX_DIM)
        return rl_err_set(err, "%s: num_attention_heads x head_dim is too large", what);
    cfg->rms_norm_eps = 1e-6;
    if (get_number(root, "rms_norm_eps", &cfg->rms_norm_eps, 0, 0, 1.0, what, err)) return -1;
    cfg->tie_word_embeddings = 0;
    if (rl_json_bool(root, "tie_word_embeddings", &cfg->tie_word_embeddings, 0, what, err)) return -1;
    int bias = 0;
    if (rl_json_bool(root, "attention_bias", &bias, 0, what, err)) return -1;
    cfg->qk_norm = cfg->arch == RL_ARCH_QWEN3;
    cfg->attention_bias = cfg->arch == RL_ARCH_QWEN2; /* Qwen2 always has q/k/v biases */
    const cJSON *bias_item = cJSON_GetObjectItemCaseSensitive(root, "attention_bias");
    if (cfg->arch == RL_ARCH_QWEN2 && bias_item && !cJSON_IsNull(bias_item) && !bias)
        return rl_err_set(err, "%s: attention_bias false contradicts Qwen2ForCausalLM (always has q/k/v biases)", what);
    if (cfg->arch != RL_ARCH_QWEN2 && bias)
        return rl_err_set(err, "%s: attention_bias true is not supported for %s", what, cfg->architecture);
    if (parse_rope(cfg, root, what, err) || parse_tokens(cfg, root, what, err) || parse_dtype(cfg, root, what, err))
        return -1;
    return reject_unsupported(cfg, root, what, err);
}

int rl_config_parse(rl_model_config *cfg, const char *text, size_t len, const char *what, rl_err *err)
{
    memset(cfg, 0, sizeof *cfg);
    cJSON *root = rl_json_parse(text, len, what, err);
    if (!root) return -1;
    int rc = parse_root(cfg, root, what, err);
    cJSON_Delete(root);
    if (rc) memset(cfg, 0, sizeof *cfg);
    return rc;
}

int rl_config_load(rl_model_config *cfg, const char *path, rl_err *err)
{
    char *text;
    size_t len;
    memset(cfg, 0, sizeof *cfg);
    if (rl_file_read_all(path, &text, &len, err)) return -1;
    int rc = rl_config_parse(cfg, text, len, path, err);
    free(text);
    return rc;
}

static const char *torch_dtype_name(rl_dtype d)
{
    return d == RL_BF16 ? "bfloat16" : d == RL_F16 ? "float16" : "float32";
}

/* Keys are added in sorted order, as transformers' to_json_string writes them. */
int rl_config_save(const rl_model_config *cfg, const char *path, rl_err *err)
{
    cJSON *root = cJSON_CreateObject(), *archs = cJSON_CreateArray(), *rope = NULL, *eos = NULL;
    if (root && archs) cJSON_AddItemToArray(archs, cJSON_CreateString(cfg->architecture));
    if (cfg->n_eos == 1) eos = cJSON_CreateNumber(cfg->eos_token_ids[0]);
    else if (cfg->n_eos > 1) eos = cJSON_CreateIntArray(cfg->eos_token_ids, cfg->n_eos);
    else eos = cJSON_CreateNull();
    if (cfg->rope_scaling.type == RL_ROPE_LLAMA3) {
        rope = cJSON_CreateObject();
        cJSON_AddNumberToObject(rope, "factor", cfg->rope_scaling.factor);
        cJSON_AddNumberToObject(rope, "high_freq_factor", cfg->rope_scaling.high_freq_factor);
        cJSON_AddNumberToObject(rope, "low_freq_factor", cfg->rope_scaling.low_freq_factor);
        cJSON_AddNumberToObject(rope, "original_max_position_embeddings", cfg->rope_scaling.original_max_position_embeddings);
        cJSON_AddStringToObject(rope, "rope_type", "llama3");
    } else {
        rope = cJSON_CreateNull();
    }
    cJSON_AddItemToObject(root, "architectures", archs);
    /* Qwen2's config has no attention_bias (its biases are always there) and no head_dim
     * unless it differs from hidden_size / num_attention_heads. */
    int qwen2 = cfg->arch == RL_ARCH_QWEN2;
    if (!qwen2) cJSON_AddBoolToObject(root, "attention_bias", cfg->attention_bias);
    if (cfg->bos_token_id >= 0) cJSON_AddNumberToObject(root, "bos_token_id", cfg->bos_token_id);
    else cJSON_AddNullToObject(root, "bos_token_id");
    cJSON_AddItemToObject(root, "eos_token_id", eos);
    if (!qwen2 || cfg->head_dim * cfg->n_heads != cfg->hidden_size) cJSON_AddNumberToObject(root, "head_dim", cfg->head_dim);
    cJSON_AddStringToObject(root, "hidden_act", "silu");
    cJSON_AddNumberToObject(root, "hidden_size", cfg->hidden_size);
    if (cfg->head != RL_HEAD_LM) { /* one label, as transformers writes num_labels = 1 */
        cJSON *id2label = cJSON_CreateObject();
        cJSON_AddStringToObject(id2label, "0", "LABEL_0");
        cJSON_AddItemToObject(root, "id2label", id2label);
    }
    cJSON_AddNumberToObject(root, "intermediate_size", cfg->intermediate_size);
    if (cfg->head != RL_HEAD_LM) {
        cJSON *label2id = cJSON_CreateObject();
        cJSON_AddNumberToObject(label2id, "LABEL_0", 0);
        cJSON_AddItemToObject(root, "label2id", label2id);
    }
    cJSON_AddNumberToObject(root, "max_position_embeddings", cfg->max_position_embeddings);
    cJSON_AddStringToObject(root, "model_type", cfg->model_type);
    cJSON_AddNumberToObject(root, "num_attention_heads", cfg->n_heads);
    cJSON_AddNumberToObject(root, "num_hidden_layers", cfg->n_layers);
    cJSON_AddNumberToObject(root, "num_key_value_heads", cfg->n_kv_heads);
    cJSON_AddNumberToObject(root, "rms_norm_eps", cfg->rms_norm_eps);
    cJSON_AddItemToObject(root, "rope_scaling", rope);
    cJSON_AddNumberToObject(root, "rope_theta", cfg->rope_theta);
    cJSON_AddBoolToObject(root, "tie_word_embeddings", cfg->tie_word_embeddings);
    cJSON_AddStringToObject(root, "torch_dtype", torch_dtype_name(cfg->torch_dtype));
    if (cfg->arch != RL_ARCH_LLAMA) cJSON_AddFalseToObject(root, "use_sliding_window");
    cJSON_AddNumberToObject(root, "vocab_size", cfg->vocab_size);
    char *text = root ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (!text) return rl_err_oom(err, path, 4096);
    size_t len = strlen(text);
    text[len] = '\n'; /* overwrites the NUL: the write below is by length */
    int rc = rl_file_write_atomic(path, text, len + 1, err);
    free(text);
    return rc;
}

/* As transformers' _compute_default_rope_parameters and _compute_llama3_parameters, op by op
 * in fp32: inv = 1 / theta^(2i/d) (the power correctly rounded to fp32; torch's vectorised
 * Sleef powf is within 1 ulp of it, so a few entries may differ from torch by 1 ulp); llama3
 * divides low frequencies (wavelength above orig/low_freq_factor) by factor, keeps high ones
 * (below orig/high_freq_factor) and blends linearly in between. torch evaluates
 * `scalar / tensor` as reciprocal(tensor) * scalar. */
void rl_config_rope_inv_freq(const rl_model_config *cfg, float *inv_freq)
{
    int half = cfg->head_dim / 2;
    for (int i = 0; i < half; i++) {
        float e = (float)(2 * i) / (float)cfg->head_dim;
        inv_freq[i] = 1.0f / (float)pow(cfg->rope_theta, (double)e);
    }
    if (cfg->rope_scaling.type != RL_ROPE_LLAMA3) return;
    const float factor = (float)cfg->rope_scaling.factor;
    const float low = (float)cfg->rope_scaling.low_freq_factor;
    const double old_len = cfg->rope_scaling.original_max_position_embeddings;
    const float low_wavelen = (float)(old_len / cfg->rope_scaling.low_freq_factor);
    const float high_wavelen = (float)(old_len / cfg->rope_scaling.high_freq_factor);
    const float span = (float)(cfg->rope_scaling.high_freq_factor - cfg->rope_scaling.low_freq_factor);
    for (int i = 0; i < half; i++) {
        float wavelen = (1.0f / inv_freq[i]) * (float)(2.0 * M_PI);
        float scaled = wavelen > low_wavelen ? inv_freq[i] / factor : inv_freq[i];
        if (wavelen < high_wavelen || wavelen > low_wavelen) {
            inv_freq[i] = scaled;
            continue;
        }
        float smooth = ((1.0f / wavelen) * (float)old_len - low) / span;
        inv_freq[i] = (1.0f - smooth) * scaled / factor + smooth * scaled;
    }
}

static void add_spec(rl_tensor_spec *specs, int *n, int64_t rows, int64_t cols, const char *fmt, int layer)
{
    rl_tensor_spec *s = &specs[(*n)++];
    snprintf(s->name, sizeof s->name, fmt, layer);
    s->n_dims = cols ? 2 : 1;
    s->shape[0] = rows;
    s->shape[1] = cols;
}

/* At most 13 tensors per layer (Qwen2 biases or Qwen3 norms, never both) plus 4 outside. */
#define MAX_PER_LAYER 13

int rl_config_tensor_specs(const rl_model_config *cfg, rl_tensor_spec **specs, int *n, rl_err *err)
{
    size_t cap = (size_t)cfg->n_layers * MAX_PER_LAYER + 4;
    rl_tensor_spec *s = calloc(cap, sizeof *s);
    *specs = s;
    *n = 0;
    if (!s) return rl_err_oom(err, "tensor specs", cap * sizeof *s);
    const int64_t hidden = cfg->hidden_size, q_dim = (int64_t)cfg->n_heads * cfg->head_dim;
    const int64_t kv_dim = (int64_t)cfg->n_kv_heads * cfg->head_dim, inter = cfg->intermediate_size;
    int k = 0;
    add_spec(s, &k, cfg->vocab_size, hidden, "model.embed_tokens.weight", 0);
    for (int l = 0; l < cfg->n_layers; l++) {
        add_spec(s, &k, hidden, 0, "model.layers.%d.input_layernorm.weight", l);
        add_spec(s, &k, q_dim, hidden, "model.layers.%d.self_attn.q_proj.weight", l);
        if (cfg->attention_bias) add_spec(s, &k, q_dim, 0, "model.layers.%d.self_attn.q_proj.bias", l);
        add_spec(s, &k, kv_dim, hidden, "model.layers.%d.self_attn.k_proj.weight", l);
        if (cfg->attention_bias) add_spec(s, &k, kv_dim, 0, "model.layers.%d.self_attn.k_proj.bias", l);
        add_spec(s, &k, kv_dim, hidden, "model.layers.%d.self_attn.v_proj.weight", l);
        if (cfg->attention_bias) add_spec(s, &k, kv_dim, 0, "model.layers.%d.self_attn.v_proj.bias", l);
        if (cfg->qk_norm) {
            add_spec(s, &k, cfg->head_dim, 0, "model.layers.%d.self_attn.q_norm.weight", l);
            add_spec(s, &k, cfg->head_dim, 0, "model.layers.%d.self_attn.k_norm.weight", l);
        }
        add_spec(s, &k, hidden, q_dim, "model.layers.%d.self_attn.o_proj.weight", l);
        add_spec(s, &k, hidden, 0, "model.layers.%d.post_attention_layernorm.weight", l);
        add_spec(s, &k, inter, hidden, "model.layers.%d.mlp.gate_proj.weight", l);
        add_spec(s, &k, inter, hidden, "model.layers.%d.mlp.up_proj.weight", l);
        add_spec(s, &k, hidden, inter, "model.layers.%d.mlp.down_proj.weight", l);
    }
    add_spec(s, &k, hidden, 0, "model.norm.weight", 0);
    if (cfg->head != RL_HEAD_LM) {
        add_spec(s, &k, 1, hidden, "score.weight", 0);
        if (cfg->head == RL_HEAD_TOKEN_CLS) add_spec(s, &k, 1, 0, "score.bias", 0);
    } else if (!cfg->tie_word_embeddings) {
        add_spec(s, &k, cfg->vocab_size, hidden, "lm_head.weight", 0);
    }
    RL_ASSERT((size_t)k <= cap);
    *n = k;
    return 0;
}

int64_t rl_config_param_count(const rl_model_config *cfg)
{
    const int64_t hidden = cfg->hidden_size, q_dim = (int64_t)cfg->n_heads * cfg->head_dim;
    const int64_t kv_dim = (int64_t)cfg->n_kv_heads * cfg->head_dim, inter = cfg->intermediate_size;
    int64_t layer = 2 * hidden + q_dim * hidden + 2 * kv_dim * hidden + hidden * q_dim + 3 * inter * hidden;
    if (cfg->attention_bias) layer += q_dim + 2 * kv_dim;
    if (cfg->qk_norm) layer += 2 * (int64_t)cfg->head_dim;
    int64_t embed = (int64_t)cfg->vocab_size * hidden;
    if (cfg->head != RL_HEAD_LM) return embed + hidden + layer * cfg->n_layers + hidden + (cfg->head == RL_HEAD_TOKEN_CLS);
    return embed * (cfg->tie_word_embeddings ? 1 : 2) + hidden + layer * cfg->n_layers;
}
