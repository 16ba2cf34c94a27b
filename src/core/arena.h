/* arena.h — one allocation, handed out in aligned pieces, freed as a whole.
 *
 * Activation memory is planned up front: run the same sequence of rl_arena_alloc calls on a
 * "measuring" arena (created with capacity 0: it counts but returns NULL) to learn the size,
 * then create the real arena with that capacity. Pieces are never freed one by one; reset()
 * makes the whole arena reusable. */
#ifndef RL_CORE_ARENA_H
#define RL_CORE_ARENA_H

#include <stddef.h>

typedef struct rl_arena {
    char *base;      /* NULL for a measuring arena */
    size_t capacity; /* bytes owned */
    size_t used;     /* bytes handed out, including alignment padding */
    size_t peak;     /* largest `used` seen */
} rl_arena;

/* capacity 0 makes a measuring arena. Returns -1 if the allocation fails. */
int rl_arena_create(rl_arena *arena, size_t capacity);
void rl_arena_free(rl_arena *arena);
/* Returns NULL when measuring, or (a bug) when the plan was exceeded. align: a power of two. */
void *rl_arena_alloc(rl_arena *arena, size_t bytes, size_t align);
void rl_arena_reset(rl_arena *arena);

#endif
