/* dtype.h — element types rlc stores (fp32, fp16, bf16) and exact host conversions.
 *
 * bf16 is the top 16 bits of an IEEE fp32; conversion to bf16 rounds to nearest even and keeps
 * NaN a (quiet) NaN. fp16 conversion handles subnormals, infinities and NaN, round to nearest
 * even. These are the conversions torch uses, so tensors written here read back bit-exact. */
#ifndef RL_CORE_DTYPE_H
#define RL_CORE_DTYPE_H

#include <stddef.h>
#include <stdint.h>

typedef enum { RL_F32 = 0, RL_F16 = 1, RL_BF16 = 2 } rl_dtype;

size_t rl_dtype_size(rl_dtype dtype);
/* Safetensors / torch spelling: "F32", "F16", "BF16". */
const char *rl_dtype_name(rl_dtype dtype);
/* Parses a safetensors dtype name; returns -1 for anything else. */
int rl_dtype_parse(const char *name, rl_dtype *out);

static inline float rl_bf16_to_f32(uint16_t h)
{
    union { uint32_t u; float f; } v = {(uint32_t)h << 16};
    return v.f;
}

static inline uint16_t rl_f32_to_bf16(float f)
{
    union { float f; uint32_t u; } v = {f};
    if ((v.u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((v.u >> 16) | 0x40); /* quiet NaN */
    uint32_t rounding = 0x7fffu + ((v.u >> 16) & 1u);
    return (uint16_t)((v.u + rounding) >> 16);
}

float rl_f16_to_f32(uint16_t h);
uint16_t rl_f32_to_f16(float f);

/* Converts n elements of src (dtype) to fp32 / from fp32. */
void rl_convert_to_f32(float *dst, const void *src, rl_dtype dtype, size_t n);
void rl_convert_from_f32(void *dst, rl_dtype dtype, const float *src, size_t n);

#endif
