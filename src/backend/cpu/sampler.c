/* sampler.c — one token per row of logits: temperature, top-k, top-p, min-p, then a draw, with
 * each row's own parameters (rl_sample_row).
 *
 * For row r with z = logits / temperature (temperature 0: greedy argmax, ties to the lowest id,
 * and logp under softmax(logits)), the filters run in the order ops.h gives:
 *  - top-k keeps the tokens whose z is >= the k-th largest z (ties at the k-th value are kept,
 *    as transformers' TopKLogitsWarper does);
 *  - top-p walks the survivors by decreasing z (ties by increasing id) and keeps the shortest
 *    prefix whose probability, renormalised over the survivors, reaches top_p (the token that
 *    crosses the threshold is kept, at least one token always is), as TopPLogitsWarper;
 *  - min-p drops tokens with p < min_p * p_max, i.e. exp(z - z_max) < min_p.
 * The draw: u = (w0 >> 8) / 2^24 from the first word w0 of Philox4x32-10 with key = seed
 * (low word first) and counter = (step, 0, row, 0); the kept tokens are walked in
 * increasing id order, summing e = exp(z - z_max), and the first token whose running sum
 * exceeds u * (sum of all kept e) is chosen. The CUDA sampler must use the same recipe to draw
 * the same token. logp = z[token] - logsumexp(z) over the whole vocabulary, before filtering.
 * The rows' values are backend memory, so backend/ops.c does not check them: this reference does,
 * as it reads them (rl_sample_row_check). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_internal.h"
#include "backend/cpu/cpu_ops.h"
#include "core/rng.h"

typedef struct cand {
    float z;
    int id;
} cand;

static int by_z_desc(const void *pa, const void *pb)
{
    const cand *a = pa, *b = pb;
    if (a->z != b->z) return a->z > b->z ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

static float philox_uniform(uint64_t seed, uint32_t step, uint32_t row)
{
    uint32_t ctr[4] = {step, 0, row, 0};
    uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    uint32_t w[4];
    rl_philox4x32(ctr, key, w);
    return (float)(w[0] >> 8) * (1.0f / 16777216.0f);
}

/* Returns the chosen token of one row; z is overwritten with logits / temperature. */
static int sample_row(float *z, int vocab, const rl_sample_row *p, float u, cand *cands,
                      unsigned char *keep, float *logp)
{
    float inv_t = p->temperature > 0.0f ? 1.0f / p->temperature : 1.0f;
    float zmax = -INFINITY;
    int argmax = 0;
    for (int i = 0; i < vocab; i++) {
        z[i] *= inv_t;
        if (z[i] > zmax) {
            zmax = z[i];
            argmax = i;
        }
    }
    double sum = 0;
    for (int i = 0; i < vocab; i++) sum += exp((double)z[i] - zmax);
    double lse = zmax + log(sum);
    if (p->temperature == 0.0f) {
        *logp = (float)(z[argmax] - lse);
        return argmax;
    }

    memset(keep, 1, (unsigned)vocab);
    int use_k = p->top_k > 0 && p->top_k < vocab;
    if (use_k || p->top_p < 1.0f) {
        for (int i = 0; i < vocab; i++) cands[i] = (cand){z[i], i};
        qsort(cands, (size_t)vocab, sizeof *cands, by_z_desc);
        int n_keep = vocab;
        if (use_k) {
            float kth = cands[p->top_k - 1].z;
            n_keep = p->top_k;
            while (n_keep < vocab && cands[n_keep].z >= kth) n_keep++;
        }
        if (p->top_p < 1.0f) {
            double total = 0, cum = 0;
            for (int i = 0; i < n_keep; i++) total += exp((double)cands[i].z - zmax);
            for (int i = 0; i < n_keep; i++) {
                if (i > 0 && cum >= (double)p->top_p * total) {
                    n_keep = i;
                    break;
                }
                cum += exp((double)cands[i].z - zmax);
            }
        }
        memset(keep, 0, (unsigned)vocab);
        for (int i = 0; i < n_keep; i++) keep[cands[i].id] = 1;
    }
    if (p->min_p > 0.0f)
        for (int i = 0; i < vocab; i++)
            if (exp((double)z[i] - zmax) < p->min_p) keep[i] = 0;

    double kept = 0;
    for (int i = 0; i < vocab; i++)
        if (keep[i]) kept += exp((double)z[i] - zmax);
    double target = u * kept, cum = 0;
    int token = argmax;
    for (int i = 0; i < vocab; i++) {
        if (!keep[i]) continue;
        token = i;
        cum += exp((double)z[i] - zmax);
        if (cum > target) break;
    }
    *logp = (float)(z[token] - lse);
    return token;
}

int rl_cpu_sample(rl_ctx *ctx, int32_t *tokens, float *logp, float *logits, int n_rows, int vocab,
                  const rl_sample_row *rows)
{
    if (n_rows == 0) return 0;
    for (int r = 0; r < n_rows; r++)
        if (rl_sample_row_check(&rows[r], &ctx->err)) return rl_err_prefix(&ctx->err, "rows[%d]: ", r);
    int n_threads = cpu_threads(ctx, 8.0 * n_rows * vocab);
    /* rounded up so that every thread's cand array stays aligned (vocab may be odd) */
    size_t align = _Alignof(cand), per_thread = ((size_t)vocab * (sizeof(cand) + 1) + align - 1) / align * align;
    char *scratch = malloc((size_t)n_threads * per_thread);
    if (!scratch) return rl_err_oom(&ctx->err, "scratch", (size_t)n_threads * per_thread);
#pragma omp parallel for num_threads(n_threads) schedule(dynamic, 1)
    for (int r = 0; r < n_rows; r++) {
        char *mine = scratch + (size_t)omp_get_thread_num() * per_thread;
        cand *cands = (cand *)mine;
        unsigned char *keep = (unsigned char *)(cands + vocab);
        tokens[r] = sample_row(logits + (size_t)r * vocab, vocab, &rows[r],
                               philox_uniform(rows[r].seed, rows[r].step, rows[r].row), cands, keep, &logp[r]);
    }
    free(scratch);
    return 0;
}
