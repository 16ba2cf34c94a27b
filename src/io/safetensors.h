/* safetensors.h — read (mmap, fully validated) and write Hugging Face .safetensors files.
 *
 * Format: 8-byte little-endian header length N, N bytes of JSON {"name": {"dtype": "BF16",
 * "shape": [..], "data_offsets": [begin, end]}, ..., "__metadata__": {str: str}}, then the data
 * section; offsets are relative to the data section. Every header field is checked before use
 * (length bounds, JSON, dtype name, shape x dtype size == byte range, ranges inside the data
 * section and not overlapping); messages name the file, the tensor and the problem.
 * Only F32, F16 and BF16 tensors are accepted; other dtypes (I64, F8_E4M3, ...) are refused by
 * name. A checkpoint directory is either model.safetensors or model.safetensors.index.json
 * plus the shards its weight_map names (each opened once).
 *
 * Tensors point into the mapped files: valid until rl_safetensors_close. */
#ifndef RL_IO_SAFETENSORS_H
#define RL_IO_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"
#include "core/error.h"
#include "io/config.h"

#define RL_ST_MAX_DIMS 8

typedef struct rl_st_tensor {
    const char *name;
    rl_dtype dtype;
    int n_dims;
    int64_t shape[RL_ST_MAX_DIMS];
    const void *data; /* inside the mapping; not necessarily aligned to the element size */
    size_t n_bytes;
    const char *file; /* the file it came from (as opened) */
} rl_st_tensor;

typedef struct rl_safetensors rl_safetensors;

/* One file, memory-mapped. */
int rl_safetensors_open(rl_safetensors **out, const char *path, rl_err *err);
/* A file image already in memory (tests, fuzzing); data is not copied and must outlive *out. */
int rl_safetensors_open_mem(rl_safetensors **out, const void *data, size_t len, const char *what,
                            rl_err *err);
/* A model directory: model.safetensors (preferred when both exist, as in transformers), or
 * model.safetensors.index.json and its shards. */
int rl_safetensors_open_dir(rl_safetensors **out, const char *model_dir, rl_err *err);

int rl_safetensors_count(const rl_safetensors *st);
/* i in [0, count): tensors sorted by name. */
const rl_st_tensor *rl_safetensors_at(const rl_safetensors *st, int i);
/* NULL when absent. */
const rl_st_tensor *rl_safetensors_find(const rl_safetensors *st, const char *name);
/* Number of files opened (1, or the number of shards). */
int rl_safetensors_n_files(const rl_safetensors *st);
const char *rl_safetensors_file(const rl_safetensors *st, int i);

/* Every tensor of specs present with that shape, and no tensor that specs do not name. */
int rl_safetensors_check_specs(const rl_safetensors *st, const rl_tensor_spec *specs, int n,
                               rl_err *err);

/* Number of elements (product of the shape; 1 for a scalar). */
int64_t rl_st_tensor_numel(const rl_st_tensor *t);
/* Converts the whole tensor to fp32 (dst holds numel floats); handles unaligned data. */
void rl_safetensors_to_f32(const rl_st_tensor *t, float *dst);

void rl_safetensors_close(rl_safetensors *st);

typedef struct rl_st_write_tensor {
    const char *name;
    rl_dtype dtype; /* stored dtype */
    int n_dims;
    int64_t shape[RL_ST_MAX_DIMS];
    const float *data; /* fp32 host data, numel elements, converted on the way out */
} rl_st_write_tensor;

/* One file, header like the python library writes it (keys sorted, {"format":"pt"} metadata,
 * header padded with spaces to a multiple of 8 bytes), tensors in name order. Atomic. */
int rl_safetensors_write(const char *path, const rl_st_write_tensor *tensors, int n, rl_err *err);

/* dir/model.safetensors, or, when the data exceed max_shard_bytes (0 = never shard),
 * dir/model-0000i-of-0000n.safetensors + dir/model.safetensors.index.json. Creates dir. */
int rl_safetensors_write_dir(const char *dir, const rl_st_write_tensor *tensors, int n,
                             size_t max_shard_bytes, rl_err *err);

#endif
