/* dtype.c — dtype names and fp16 conversion; see dtype.h. */
#include "core/dtype.h"

#include <string.h>

size_t rl_dtype_size(rl_dtype dtype) { return dtype == RL_F32 ? 4 : 2; }

const char *rl_dtype_name(rl_dtype dtype)
{
    switch (dtype) {
    case RL_F32: return "F32";
    case RL_F16: return "F16";
    case RL_BF16: return "BF16";
    }
    return "?";
}

int rl_dtype_parse(const char *name, rl_dtype *out)
{
    if (!strcmp(name, "F32")) *out = RL_F32;
    else if (!strcmp(name, "F16")) *out = RL_F16;
    else if (!strcmp(name, "BF16")) *out = RL_BF16;
    else return -1;
    return 0;
}

float rl_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (mant << 13);
    } else if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else { /* subnormal: normalise */
            int e = -1;
            do { mant <<= 1; e++; } while (!(mant & 0x400u));
            bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
        }
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    union { uint32_t u; float f; } v = {bits};
    return v.f;
}

uint16_t rl_f32_to_f16(float f)
{
    union { float f; uint32_t u; } v = {f};
    uint32_t sign = (v.u >> 16) & 0x8000u;
    uint32_t abs = v.u & 0x7fffffffu;
    if (abs > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);        /* NaN */
    if (abs >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);       /* rounds to inf */
    if (abs < 0x38800000u) {                                          /* subnormal or zero */
        if (abs < 0x33000000u) return (uint16_t)sign;                 /* below half the min */
        uint32_t exp = abs >> 23;
        uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126 - exp; /* value = mant * 2^(exp-150) = (mant >> shift) * 2^-24 */
        uint32_t half = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1);
        uint32_t mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1u))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t rounded = abs + 0xfffu + ((abs >> 13) & 1u);
    return (uint16_t)(sign | ((rounded - 0x38000000u) >> 13));
}

void rl_convert_to_f32(float *dst, const void *src, rl_dtype dtype, size_t n)
{
    const uint16_t *h = src;
    switch (dtype) {
    case RL_F32: memcpy(dst, src, n * sizeof(float)); break;
    case RL_BF16: for (size_t i = 0; i < n; i++) dst[i] = rl_bf16_to_f32(h[i]); break;
    case RL_F16: for (size_t i = 0; i < n; i++) dst[i] = rl_f16_to_f32(h[i]); break;
    }
}

void rl_convert_from_f32(void *dst, rl_dtype dtype, const float *src, size_t n)
{
    uint16_t *h = dst;
    switch (dtype) {
    case RL_F32: memcpy(dst, src, n * sizeof(float)); break;
    case RL_BF16: for (size_t i = 0; i < n; i++) h[i] = rl_f32_to_bf16(src[i]); break;
    case RL_F16: for (size_t i = 0; i < n; i++) h[i] = rl_f32_to_f16(src[i]); break;
    }
}
