/* rng.c — Philox4x32-10; constants from the Random123 paper. */
#include "core/rng.h"

#include <math.h>

static void philox_round(uint32_t c[4], const uint32_t k[2])
{
    uint64_t p0 = (uint64_t)0xD2511F53u * c[0];
    uint64_t p1 = (uint64_t)0xCD9E8D57u * c[2];
    uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
    uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
    uint32_t n0 = hi1 ^ c[1] ^ k[0];
    uint32_t n2 = hi0 ^ c[3] ^ k[1];
    c[0] = n0;
    c[1] = lo1;
    c[2] = n2;
    c[3] = lo0;
}

void rl_philox4x32(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
{
    uint32_t c[4] = {ctr[0], ctr[1], ctr[2], ctr[3]};
    uint32_t k[2] = {key[0], key[1]};
    for (int round = 0; round < 10; round++) {
        philox_round(c, k);
        k[0] += 0x9E3779B9u;
        k[1] += 0xBB67AE85u;
    }
    for (int i = 0; i < 4; i++) out[i] = c[i];
}

void rl_rng_init(rl_rng *rng, uint64_t seed)
{
    rng->seed = seed;
    rng->counter = 0;
    rng->buf_used = 4;
}

uint32_t rl_rng_u32(rl_rng *rng)
{
    if (rng->buf_used == 4) {
        uint32_t ctr[4] = {(uint32_t)rng->counter, (uint32_t)(rng->counter >> 32), 0, 0};
        uint32_t key[2] = {(uint32_t)rng->seed, (uint32_t)(rng->seed >> 32)};
        rl_philox4x32(ctr, key, rng->buf);
        rng->counter++;
        rng->buf_used = 0;
    }
    return rng->buf[rng->buf_used++];
}

uint64_t rl_rng_u64(rl_rng *rng)
{
    uint64_t hi = rl_rng_u32(rng);
    return (hi << 32) | rl_rng_u32(rng);
}

float rl_rng_uniform(rl_rng *rng) { return (float)(rl_rng_u32(rng) >> 8) * (1.0f / 16777216.0f); }

double rl_rng_uniform_f64(rl_rng *rng)
{
    return (double)(rl_rng_u64(rng) >> 11) * (1.0 / 9007199254740992.0);
}

float rl_rng_normal(rl_rng *rng)
{
    double u1 = 1.0 - rl_rng_uniform_f64(rng); /* (0, 1]: log is finite */
    double u2 = rl_rng_uniform_f64(rng);
    return (float)(sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2));
}

uint32_t rl_rng_below(rl_rng *rng, uint32_t n)
{
    uint32_t limit = (uint32_t)(-n) % n; /* reject the low 2^32 mod n values */
    for (;;) {
        uint32_t x = rl_rng_u32(rng);
        if (x >= limit) return x % n;
    }
}
