/* rng.h — counter-based random numbers (Philox4x32-10, Salmon et al., SC'11).
 *
 * The whole state is (seed, counter): it is saved in checkpoints so a resumed run draws the
 * same numbers, and the CUDA sampler computes the same stream from the same pair. Each call to
 * the block function yields four 32-bit words; rl_rng buffers them. */
#ifndef RL_CORE_RNG_H
#define RL_CORE_RNG_H

#include <stdint.h>

typedef struct rl_rng {
    uint64_t seed;
    uint64_t counter; /* blocks drawn so far */
    uint32_t buf[4];
    int buf_used;     /* words of buf already returned; 4 = empty */
} rl_rng;

/* Philox4x32-10 of (counter, key): the pure function both backends share. */
void rl_philox4x32(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

void rl_rng_init(rl_rng *rng, uint64_t seed);
uint32_t rl_rng_u32(rl_rng *rng);
uint64_t rl_rng_u64(rl_rng *rng);
/* Uniform in [0, 1) with 24 bits. */
float rl_rng_uniform(rl_rng *rng);
/* Uniform in [0, 1) with 53 bits. */
double rl_rng_uniform_f64(rl_rng *rng);
/* Standard normal (Box-Muller). */
float rl_rng_normal(rl_rng *rng);
/* Uniform integer in [0, n), unbiased. n > 0. */
uint32_t rl_rng_below(rl_rng *rng, uint32_t n);

#endif
