/* test_config.c — config.json parsing (transformers v5 files from the fixtures, v4 spelling
 * written here), every refusal by name, save/load round trip, RoPE frequencies against the
 * values transformers' own rotary modules compute, the tensor layout and parameter count. */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "core/file.h"
#include "io/config.h"
#include "io/json.h"
#include "test_util.h"

#define MODELS "tests/fixtures/models/"

static rl_model_config load_ok(const char *path)
{
    rl_model_config cfg;
    rl_err err = {{0}};
    cr_assert_eq(rl_config_load(&cfg, path, &err), 0, "%s: %s", path, err.msg);
    return cfg;
}

Test(config, qwen3_fixtures)
{
    rl_model_config c = load_ok(MODELS "qwen3-tiny-tied/config.json");
    cr_assert_eq(c.arch, RL_ARCH_QWEN3);
    cr_assert_str_eq(c.architecture, "Qwen3ForCausalLM");
    cr_assert_str_eq(c.model_type, "qwen3");
    cr_assert_eq(c.vocab_size, 512);
    cr_assert_eq(c.hidden_size, 64);
    cr_assert_eq(c.intermediate_size, 128);
    cr_assert_eq(c.n_layers, 2);
    cr_assert_eq(c.n_heads, 4);
    cr_assert_eq(c.n_kv_heads, 2);
    cr_assert_eq(c.head_dim, 16);
    cr_assert_eq(c.max_position_embeddings, 1024);
    cr_assert_eq(c.rope_theta, 1000000.0);
    cr_assert_eq(c.rms_norm_eps, 1e-6);
    cr_assert_eq(c.tie_word_embeddings, 1);
    cr_assert_eq(c.qk_norm, 1);
    cr_assert_eq(c.attention_bias, 0);
    cr_assert_eq(c.rope_scaling.type, RL_ROPE_NONE);
    cr_assert_eq(c.bos_token_id, 1);
    cr_assert_eq(c.n_eos, 2);
    cr_assert_eq(c.eos_token_ids[0], 2);
    cr_assert_eq(c.eos_token_ids[1], 3);
    cr_assert_eq(c.torch_dtype, RL_F32);
    c = load_ok(MODELS "qwen3-tiny-untied/config.json");
    cr_assert_eq(c.tie_word_embeddings, 0);
    cr_assert_eq(c.head_dim, 32);
    cr_assert_eq(c.n_heads, 6);
    cr_assert_eq(c.torch_dtype, RL_BF16);
}

Test(config, qwen2_and_llama3_fixtures)
{
    rl_model_config c = load_ok(MODELS "qwen2-tiny/config.json");
    cr_assert_eq(c.arch, RL_ARCH_QWEN2);
    cr_assert_eq(c.attention_bias, 1);
    cr_assert_eq(c.qk_norm, 0);
    cr_assert_eq(c.head_dim, 16, "default head_dim = hidden / heads");
    c = load_ok(MODELS "llama3-tiny/config.json");
    cr_assert_eq(c.arch, RL_ARCH_LLAMA);
    cr_assert_eq(c.attention_bias, 0);
    cr_assert_eq(c.qk_norm, 0);
    cr_assert_eq(c.n_kv_heads, 1);
    cr_assert_eq(c.rope_scaling.type, RL_ROPE_LLAMA3);
    cr_assert_eq(c.rope_scaling.factor, 8.0);
    cr_assert_eq(c.rope_scaling.low_freq_factor, 1.0);
    cr_assert_eq(c.rope_scaling.high_freq_factor, 4.0);
    cr_assert_eq(c.rope_scaling.original_max_position_embeddings, 64);
    cr_assert_eq(c.rope_theta, 10000.0);
}

/* The transformers v4 spelling found in most hub checkpoints. */
static const char *v4_llama =
    "{\"architectures\":[\"LlamaForCausalLM\"],\"model_type\":\"llama\",\"hidden_size\":256,"
    "\"intermediate_size\":512,\"num_hidden_layers\":2,\"num_attention_heads\":8,\"num_key_value_heads\":2,"
    "\"vocab_size\":1000,\"max_position_embeddings\":4096,\"rope_theta\":500000.0,\"rms_norm_eps\":1e-05,"
    "\"rope_scaling\":{\"type\":\"llama3\",\"factor\":8.0,\"low_freq_factor\":1.0,\"high_freq_factor\":4.0,"
    "\"original_max_position_embeddings\":8192},\"torch_dtype\":\"bfloat16\",\"eos_token_id\":7,"
    "\"bos_token_id\":null,\"hidden_act\":\"silu\",\"tie_word_embeddings\":true,\"mlp_bias\":false,"
    "\"pretraining_tp\":1}";

Test(config, v4_spelling)
{
    rl_model_config c;
    rl_err err;
    cr_assert_eq(rl_config_parse(&c, v4_llama, strlen(v4_llama), "v4.json", &err), 0, "%s", err.msg);
    cr_assert_eq(c.rope_theta, 500000.0);
    cr_assert_eq(c.rms_norm_eps, 1e-5);
    cr_assert_eq(c.rope_scaling.type, RL_ROPE_LLAMA3);
    cr_assert_eq(c.rope_scaling.original_max_position_embeddings, 8192);
    cr_assert_eq(c.torch_dtype, RL_BF16);
    cr_assert_eq(c.n_eos, 1);
    cr_assert_eq(c.eos_token_ids[0], 7);
    cr_assert_eq(c.bos_token_id, -1);
    cr_assert_eq(c.head_dim, 32);
}

/* Replaces (or with value NULL removes, or adds) one top-level field of a fixture config and
 * expects rl_config_parse to fail with `want` in the message. */
static void expect_error(const char *fixture, const char *key, const char *value_json, const char *want)
{
    char path[256];
    snprintf(path, sizeof path, MODELS "%s/config.json", fixture);
    rl_err err = {{0}};
    cJSON *root = rl_json_parse_file(path, &err);
    cr_assert_not_null(root, "%s", err.msg);
    cJSON_DeleteItemFromObjectCaseSensitive(root, key);
    if (value_json) {
        cJSON *v = cJSON_Parse(value_json);
        cr_assert_not_null(v, "bad test value %s", value_json);
        cJSON_AddItemToObject(root, key, v);
    }
    char *text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    rl_model_config c;
    int rc = rl_config_parse(&c, text, strlen(text), "config.json", &err);
    free(text);
    cr_assert_eq(rc, -1, "%s: %s=%s accepted, wanted '%s'", fixture, key, value_json ? value_json : "(removed)", want);
    cr_assert(strstr(err.msg, "config.json: "), "message does not name the file: %s", err.msg);
    cr_assert(strstr(err.msg, want), "%s=%s: message '%s' lacks '%s'", key, value_json ? value_json : "(removed)",
              err.msg, want);
}

Test(config, bad_fields)
{
    const char *q = "qwen3-tiny-tied";
    expect_error(q, "hidden_size", NULL, "missing field 'hidden_size'");
    expect_error(q, "vocab_size", NULL, "missing field 'vocab_size'");
    expect_error(q, "num_hidden_layers", "0", "field 'num_hidden_layers' must be in [1, 4096], got 0");
    expect_error(q, "hidden_size", "-64", "field 'hidden_size' must be in");
    expect_error(q, "hidden_size", "64.5", "field 'hidden_size' must be an integer");
    expect_error(q, "hidden_size", "\"64\"", "field 'hidden_size' must be an integer");
    expect_error(q, "intermediate_size", "1e12", "field 'intermediate_size' must be in");
    expect_error(q, "num_key_value_heads", "3", "num_attention_heads (4) is not a multiple of num_key_value_heads (3)");
    expect_error(q, "head_dim", NULL, "missing field 'head_dim'");
    expect_error(q, "head_dim", "15", "head_dim 15 is odd");
    expect_error(q, "head_dim", "0", "field 'head_dim' must be in [1,");
    expect_error(q, "rms_norm_eps", "0", "field 'rms_norm_eps' must be in (0, 1], got 0");
    expect_error(q, "rope_theta", "1e300", "field 'rope_theta' must be in [1, 1e+15]");
    expect_error(q, "rope_theta", "5e-42", "field 'rope_theta' must be in [1, 1e+15], got 5e-42");
    expect_error(q, "rope_scaling",
                 "{\"type\":\"llama3\",\"factor\":1e-300,\"low_freq_factor\":1.0,\"high_freq_factor\":4.0,"
                 "\"original_max_position_embeddings\":64}",
                 "rope_scaling: field 'factor' must be in [1, 1e+06], got 1e-300");
    expect_error(q, "tie_word_embeddings", "1", "field 'tie_word_embeddings' must be true or false");
    expect_error(q, "eos_token_id", "[1,2,3,4,5,6,7,8,9]", "eos_token_id lists 9 ids, at most 8");
    expect_error(q, "eos_token_id", "[1,\"x\"]", "eos_token_id[1] is not a token id");
    expect_error(q, "eos_token_id", "\"2\"", "field 'eos_token_id' must be an integer or a list");
    expect_error(q, "bos_token_id", "-5", "field 'bos_token_id' must be in");
    expect_error(q, "dtype", "\"float64\"", "dtype 'float64' is not supported");
    expect_error(q, "model_type", "\"llama\"", "model_type 'llama' does not match architecture Qwen3ForCausalLM");
    expect_error(q, "model_type", NULL, "missing field 'model_type'");
    expect_error(q, "architectures", "[\"Qwen3ForCausalLM\",\"X\"]", "must be a list of one name");
    expect_error("qwen2-tiny", "hidden_size", "66", "hidden_size (66) is not a multiple of num_attention_heads (4)");
}

Test(config, unsupported_features_refused_by_name)
{
    const char *q = "qwen3-tiny-tied";
    expect_error(q, "architectures", "[\"MixtralForCausalLM\"]", "architecture 'MixtralForCausalLM' is not supported");
    expect_error(q, "architectures", "[\"Qwen3MoeForCausalLM\"]", "architecture 'Qwen3MoeForCausalLM' is not supported");
    expect_error(q, "rope_parameters", "{\"rope_type\":\"yarn\",\"factor\":4.0,\"rope_theta\":10000}",
                 "rope type 'yarn' is not supported");
    expect_error(q, "rope_scaling", "{\"type\":\"dynamic\",\"factor\":2.0}", "rope type 'dynamic' is not supported");
    expect_error(q, "rope_scaling", "{\"rope_type\":\"linear\",\"factor\":2.0}", "rope type 'linear' is not supported");
    expect_error(q, "rope_scaling", "{\"rope_type\":\"longrope\"}", "rope type 'longrope' is not supported");
    expect_error(q, "rope_scaling", "{\"factor\":2.0}", "rope_scaling: missing field 'rope_type'");
    expect_error(q, "use_sliding_window", "true", "use_sliding_window true is not supported");
    expect_error(q, "layer_types", "[\"full_attention\",\"sliding_attention\"]", "layer_types[1] is not \"full_attention\"");
    expect_error(q, "layer_types", "[\"full_attention\"]", "layer_types has 1 entries, num_hidden_layers is 2");
    expect_error(q, "hidden_act", "\"gelu\"", "hidden_act 'gelu' is not supported");
    expect_error(q, "num_experts", "8", "mixture-of-experts field 'num_experts' is not supported");
    expect_error(q, "num_experts_per_tok", "2", "mixture-of-experts field 'num_experts_per_tok'");
    expect_error(q, "quantization_config", "{\"quant_method\":\"gptq\"}", "quantized checkpoints");
    expect_error(q, "attention_bias", "true", "attention_bias true is not supported for Qwen3ForCausalLM");
    expect_error(q, "partial_rotary_factor", "0.5", "partial_rotary_factor 0.5 is not supported");
    expect_error("qwen2-tiny", "attention_bias", "false", "attention_bias false contradicts Qwen2ForCausalLM");
    expect_error("llama3-tiny", "mlp_bias", "true", "mlp_bias true is not supported");
    expect_error("llama3-tiny", "rope_parameters",
                 "{\"rope_type\":\"llama3\",\"low_freq_factor\":1.0,\"high_freq_factor\":4.0,"
                 "\"original_max_position_embeddings\":64}", "rope_parameters: missing field 'factor'");
    expect_error("llama3-tiny", "rope_parameters",
                 "{\"rope_type\":\"llama3\",\"factor\":1e50,\"low_freq_factor\":1.0,\"high_freq_factor\":4.0,"
                 "\"original_max_position_embeddings\":64}", "rope_parameters: field 'factor' must be in [1, 1e+06]");
    expect_error("llama3-tiny", "rope_parameters",
                 "{\"rope_type\":\"llama3\",\"factor\":8.0,\"low_freq_factor\":4.0,\"high_freq_factor\":4.0,"
                 "\"original_max_position_embeddings\":64}", "high_freq_factor (4) must exceed low_freq_factor (4)");
}

Test(config, not_json)
{
    rl_model_config c;
    rl_err err;
    cr_assert_eq(rl_config_parse(&c, "{\"a\":", 5, "config.json", &err), -1);
    cr_assert(strstr(err.msg, "config.json: invalid JSON at line 1"), "%s", err.msg);
    cr_assert_eq(rl_config_parse(&c, "[]", 2, "config.json", &err), -1);
    cr_assert(strstr(err.msg, "config.json: not a JSON object"), "%s", err.msg);
    cr_assert_eq(rl_config_load(&c, "tests/fixtures/models/none/config.json", &err), -1);
    cr_assert(strstr(err.msg, "none/config.json: cannot open"), "%s", err.msg);
}

Test(config, save_load_round_trip)
{
    const char *names[] = {"qwen3-tiny-tied", "qwen3-tiny-untied", "qwen2-tiny", "llama3-tiny"};
    char dir[] = "/tmp/rlc-test-cfg-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char out[128];
    snprintf(out, sizeof out, "%s/config.json", dir);
    for (int i = 0; i < 4; i++) {
        char path[256];
        snprintf(path, sizeof path, MODELS "%s/config.json", names[i]);
        rl_model_config a = load_ok(path), b;
        rl_err err;
        cr_assert_eq(rl_config_save(&a, out, &err), 0, "%s", err.msg);
        b = load_ok(out);
        cr_assert_eq(memcmp(&a, &b, sizeof a), 0, "%s: config differs after save + load", names[i]);
    }
    unlink(out);
    rmdir(dir);
}

Test(config, rope_inv_freq_matches_transformers)
{
    rl_err err;
    cJSON *cases = rl_json_parse_file("tests/fixtures/formats/rope_inv_freq.json", &err);
    cr_assert_not_null(cases, "%s", err.msg);
    int n_cases = 0, n_scaled = 0, n_off = 0;
    for (const cJSON *c = cases->child; c; c = c->next, n_cases++) {
        const char *name = cJSON_GetObjectItem(c, "name")->valuestring;
        char *text = cJSON_PrintUnformatted(cJSON_GetObjectItem(c, "config"));
        rl_model_config cfg;
        cr_assert_eq(rl_config_parse(&cfg, text, strlen(text), name, &err), 0, "%s", err.msg);
        free(text);
        n_scaled += cfg.rope_scaling.type == RL_ROPE_LLAMA3;
        const cJSON *bits = cJSON_GetObjectItem(c, "inv_freq_bits");
        int half = cfg.head_dim / 2;
        cr_assert_eq(cJSON_GetArraySize(bits), half);
        float got[512];
        tu_poison(got, 512);
        rl_config_rope_inv_freq(&cfg, got);
        int i = 0, max_ulp = 0, worst = -1;
        for (const cJSON *b = bits->child; b; b = b->next, i++) {
            uint32_t want = (uint32_t)b->valuedouble, have;
            memcpy(&have, &got[i], 4);
            int ulp = abs((int)(have - want));
            if (ulp > max_ulp) max_ulp = ulp, worst = i;
        }
        /* torch raises theta with Sleef's powf (1 ulp); we round the exact power. On the
         * fixtures 1 of 200 entries differs, by 1 ulp. */
        cr_assert(max_ulp <= 1, "%s: inv_freq[%d] off by %d ulp", name, worst, max_ulp);
        n_off += max_ulp > 0;
    }
    cr_assert_eq(n_cases, 6);
    cr_assert_eq(n_scaled, 4);
    cr_assert(n_off <= 1, "%d configs have entries 1 ulp off", n_off);
    cJSON_Delete(cases);
}

Test(config, tensor_layout_and_param_count)
{
    rl_model_config c = load_ok(MODELS "qwen3-tiny-tied/config.json");
    rl_tensor_spec *s;
    int n;
    rl_err err;
    cr_assert_eq(rl_config_tensor_specs(&c, &s, &n, &err), 0);
    cr_assert_eq(n, 1 + 2 * 11 + 1);
    cr_assert_str_eq(s[0].name, "model.embed_tokens.weight");
    cr_assert_str_eq(s[1].name, "model.layers.0.input_layernorm.weight");
    cr_assert_str_eq(s[5].name, "model.layers.0.self_attn.q_norm.weight");
    cr_assert_eq(s[2].shape[0], 64);  /* q_proj: [heads*head_dim, hidden] */
    cr_assert_eq(s[2].shape[1], 64);
    cr_assert_eq(s[3].shape[0], 32);  /* k_proj: [kv_heads*head_dim, hidden] */
    cr_assert_eq(s[5].n_dims, 1);
    cr_assert_eq(s[5].shape[0], 16);
    cr_assert_str_eq(s[n - 1].name, "model.norm.weight");
    free(s);
    /* Qwen3-0.6B (from its published config): 596,049,920 parameters with tied embeddings. */
    const char *q06 = "{\"architectures\":[\"Qwen3ForCausalLM\"],\"model_type\":\"qwen3\",\"hidden_size\":1024,"
                      "\"intermediate_size\":3072,\"num_hidden_layers\":28,\"num_attention_heads\":16,"
                      "\"num_key_value_heads\":8,\"head_dim\":128,\"vocab_size\":151936,"
                      "\"max_position_embeddings\":40960,\"rope_theta\":1000000,\"tie_word_embeddings\":true,"
                      "\"torch_dtype\":\"bfloat16\",\"eos_token_id\":151645,\"bos_token_id\":151643,"
                      "\"use_sliding_window\":false,\"sliding_window\":null,\"max_window_layers\":28,"
                      "\"rope_scaling\":null,\"attention_bias\":false,\"attention_dropout\":0.0}";
    cr_assert_eq(rl_config_parse(&c, q06, strlen(q06), "qwen3-0.6b", &err), 0, "%s", err.msg);
    cr_assert_eq(rl_config_param_count(&c), 596049920LL, "%lld", (long long)rl_config_param_count(&c));
    c = load_ok(MODELS "qwen2-tiny/config.json");
    cr_assert_eq(rl_config_tensor_specs(&c, &s, &n, &err), 0);
    cr_assert_eq(n, 1 + 2 * 12 + 1);
    cr_assert_str_eq(s[3].name, "model.layers.0.self_attn.q_proj.bias");
    free(s);
}
