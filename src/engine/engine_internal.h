/* engine_internal.h — the engine's state, shared by engine.c (creation, the pool and its size)
 * and generate.c (one call). Not part of the engine's interface. */
#ifndef RL_ENGINE_INTERNAL_H
#define RL_ENGINE_INTERNAL_H

#include "engine/block_manager.h"
#include "engine/generate.h"
#include "engine/kv_pool.h"
#include "engine/runner.h"

struct rl_engine {
    rl_model *model;
    const rl_tokenizer *tok;
    int32_t eos[RL_ENGINE_MAX_EOS];
    int n_eos;
    rl_engine_options opt; /* max_model_len resolved */
    int max_blocks;        /* block table length: max_model_len + the lookahead position */
    rl_runner *runner;     /* made by the first call */
    rl_kv_pool pool;       /* made by the first call; remade larger on the CPU when a call needs it */
    rl_block_manager bm;
    rl_engine_stats stats;
    int released_blocks;   /* the pool's blocks before rl_engine_release_pool freed it (stats) */
    size_t released_block_bytes;
};

/* Makes the runner and a pool of at least need_blocks blocks when the budget allows (CPU), or
 * the budget's pool (CUDA), or a trainer's pool (rl_engine_pool_blocks, within the budget, on
 * both), or opt.n_blocks. */
int rl_engine_prepare(rl_engine *e, long need_blocks, rl_err *err);

#endif
