/* fuzz_safetensors.c — libFuzzer target: any byte string as a .safetensors file image.
 *
 * The reader must either refuse it with a message or give tensors whose byte ranges lie inside
 * the image and agree with shape x dtype size; every accepted tensor is converted to fp32 and
 * checked against a tiny model layout (check_specs), so the whole read path runs. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/safetensors.h"

static void check(int ok)
{
    if (!ok) __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rl_safetensors *st;
    rl_err err;
    if (rl_safetensors_open_mem(&st, data, size, "fuzz.safetensors", &err)) {
        check(strstr(err.msg, "fuzz.safetensors") != NULL);
        return 0;
    }
    for (int i = 0; i < rl_safetensors_count(st); i++) {
        const rl_st_tensor *t = rl_safetensors_at(st, i);
        const uint8_t *p = t->data;
        check(p >= data && p + t->n_bytes <= data + size);
        check((size_t)rl_st_tensor_numel(t) * rl_dtype_size(t->dtype) == t->n_bytes);
        check(rl_safetensors_find(st, t->name) == t);
        float *f = malloc((size_t)rl_st_tensor_numel(t) * sizeof(float) + 1);
        check(f != NULL);
        rl_safetensors_to_f32(t, f);
        free(f);
    }
    rl_tensor_spec specs[2] = {{"model.embed_tokens.weight", 2, {4, 2}}, {"model.norm.weight", 1, {2, 0}}};
    if (rl_safetensors_check_specs(st, specs, 2, &err) == 0) check(rl_safetensors_count(st) == 2);
    rl_safetensors_close(st);
    return 0;
}
