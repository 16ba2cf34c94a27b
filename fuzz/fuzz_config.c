/* fuzz_config.c — libFuzzer target: any byte string as config.json text.
 *
 * Either refused with a message naming the file, or a config whose derived quantities (tensor
 * layout, parameter count, RoPE frequencies) are computed without overflow or bad memory
 * access, with the invariants the model code relies on. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/config.h"

static void check(int ok)
{
    if (!ok) __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rl_model_config cfg;
    rl_err err;
    if (rl_config_parse(&cfg, (const char *)data, size, "config.json", &err)) {
        check(strncmp(err.msg, "config.json", 11) == 0);
        return 0;
    }
    check(cfg.vocab_size > 0 && cfg.hidden_size > 0 && cfg.n_layers > 0 && cfg.head_dim > 0);
    check(cfg.n_kv_heads > 0 && cfg.n_heads % cfg.n_kv_heads == 0 && cfg.head_dim % 2 == 0);
    check(cfg.n_eos >= 0 && cfg.n_eos <= RL_CONFIG_MAX_EOS);
    check(rl_config_param_count(&cfg) > 0);
    rl_tensor_spec *specs;
    int n;
    check(rl_config_tensor_specs(&cfg, &specs, &n, &err) == 0);
    int64_t total = 0;
    for (int i = 0; i < n; i++) total += specs[i].shape[0] * (specs[i].n_dims == 2 ? specs[i].shape[1] : 1);
    check(total == rl_config_param_count(&cfg));
    free(specs);
    if (cfg.head_dim <= 4096) {
        float inv[2048];
        rl_config_rope_inv_freq(&cfg, inv);
        for (int i = 0; i < cfg.head_dim / 2; i++) check(isfinite(inv[i]) && inv[i] > 0);
    }
    return 0;
}
