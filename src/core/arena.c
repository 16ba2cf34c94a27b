/* arena.c — see arena.h. */
#include "core/arena.h"

#include <stdlib.h>

#include "core/error.h"

int rl_arena_create(rl_arena *arena, size_t capacity)
{
    arena->base = NULL;
    arena->capacity = capacity;
    arena->used = 0;
    arena->peak = 0;
    if (capacity == 0) return 0;
    arena->base = aligned_alloc(256, (capacity + 255) & ~(size_t)255);
    return arena->base ? 0 : -1;
}

void rl_arena_free(rl_arena *arena)
{
    free(arena->base);
    arena->base = NULL;
    arena->capacity = arena->used = arena->peak = 0;
}

void *rl_arena_alloc(rl_arena *arena, size_t bytes, size_t align)
{
    RL_ASSERT(align && !(align & (align - 1)));
    size_t start = (arena->used + align - 1) & ~(align - 1);
    arena->used = start + bytes;
    if (arena->used > arena->peak) arena->peak = arena->used;
    if (!arena->base) return NULL;
    RL_ASSERT(arena->used <= arena->capacity);
    return arena->base + start;
}

void rl_arena_reset(rl_arena *arena) { arena->used = 0; }
