/* checkpoint.c — see checkpoint.h. */
#include "train/checkpoint.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/file.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "train/dp.h"

static const char *const tokenizer_files[] = {"tokenizer.json", "tokenizer_config.json",
                                              "special_tokens_map.json", "vocab.json",
                                              "merges.txt", "generation_config.json",
                                              "added_tokens.json", "chat_template.jinja"};

static int join(char *out, size_t size, const char *dir, const char *name, rl_err *err)
{
    if (rl_path_join(out, size, dir, name) != 0) return rl_err_set(err, "%s/%s: path too long", dir, name);
    return 0;
}

int rl_checkpoint_copy_tokenizer(const char *src_dir, const char *dst_dir, rl_err *err)
{
    for (size_t i = 0; i < sizeof tokenizer_files / sizeof tokenizer_files[0]; i++) {
        char src[4096], dst[4096];
        if (join(src, sizeof src, src_dir, tokenizer_files[i], err) ||
            join(dst, sizeof dst, dst_dir, tokenizer_files[i], err))
            return -1;
        if (!rl_file_exists(src)) continue;
        char *data;
        size_t len;
        if (rl_file_read_all(src, &data, &len, err) != 0) return -1;
        int rc = rl_file_write_atomic(dst, data, len, err);
        free(data);
        if (rc != 0) return -1;
    }
    return 0;
}

static void hex64(char *out, uint64_t v) { snprintf(out, 19, "0x%016" PRIx64, v); }

static cJSON *state_json(const rl_train_state *st, int optimizer_step, const cJSON *options)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "format", "rlc-trainer-state");
    cJSON_AddNumberToObject(j, "version", 1);
    cJSON_AddNumberToObject(j, "step", (double)st->step);
    cJSON_AddNumberToObject(j, "optimizer_step", optimizer_step);
    cJSON_AddNumberToObject(j, "epoch", (double)st->epoch);
    cJSON_AddNumberToObject(j, "data_pos", (double)st->data_pos);
    cJSON *rng = cJSON_AddObjectToObject(j, "rng");
    char hex[20];
    hex64(hex, st->rng.seed);
    cJSON_AddStringToObject(rng, "seed", hex);
    hex64(hex, st->rng.counter);
    cJSON_AddStringToObject(rng, "counter", hex);
    cJSON *buf = cJSON_AddArrayToObject(rng, "buf");
    for (int i = 0; i < 4; i++) cJSON_AddItemToArray(buf, cJSON_CreateNumber(st->rng.buf[i]));
    cJSON_AddNumberToObject(rng, "buf_used", st->rng.buf_used);
    if (options) cJSON_AddItemToObject(j, "options", cJSON_Duplicate(options, 1));
    return j;
}

/* Host copies of what the checkpoint holds: all master weights, and both moments (m then v)
 * when there is an optimizer. With a data-parallel optimizer every rank takes part and only
 * rank 0 gets the copies (the others get NULLs). */
static int fetch_state(const rl_model *m, const rl_optim *o, float **master, float **moments, rl_err *err)
{
    *master = *moments = NULL;
    if (o && o->cfg.dp) return rl_dp_gather(o->cfg.dp, o, master, moments, err);
    size_t n = m->n_elems;
    *master = malloc(n * sizeof(float));
    *moments = o ? malloc(2 * n * sizeof(float)) : NULL;
    if (!*master || (o && !*moments)) return rl_err_oom(err, "checkpoint staging", 3 * n * sizeof(float));
    if (rl_memcpy(m->ctx, *master, m->master, n * sizeof(float), RL_D2H) != 0) {
        rl_ctx_error(m->ctx, err);
        return rl_err_prefix(err, "model weights: ");
    }
    if (o && rl_memcpy(o->ctx, *moments, o->m, 2 * n * sizeof(float), RL_D2H) != 0) {
        rl_ctx_error(o->ctx, err);
        return rl_err_prefix(err, "optimizer state: ");
    }
    return 0;
}

static int save_into(const char *dir, const rl_model *m, const float *master, const rl_optim *o,
                     const float *moments, const rl_train_state *st, const cJSON *options,
                     const char *tokenizer_dir, rl_err *err)
{
    char path[4096];
    if (rl_mkdir_p(dir, err) || rl_model_save_host(m, master, dir, RL_F32, err)) return -1;
    if (tokenizer_dir && rl_checkpoint_copy_tokenizer(tokenizer_dir, dir, err)) return -1;
    if (o) {
        rl_st_write_tensor t[2] = {{"exp_avg", RL_F32, 1, {(int64_t)o->n_elems}, moments},
                                   {"exp_avg_sq", RL_F32, 1, {(int64_t)o->n_elems}, moments + o->n_elems}};
        if (join(path, sizeof path, dir, "optimizer.safetensors", err) || rl_safetensors_write(path, t, 2, err))
            return -1;
    }
    cJSON *j = state_json(st, o ? o->step : 0, options);
    char *text = cJSON_Print(j);
    cJSON_Delete(j);
    if (!text) return rl_err_oom(err, "trainer_state.json", 0);
    int rc = join(path, sizeof path, dir, "trainer_state.json", err) ||
             rl_file_write_atomic(path, text, strlen(text), err);
    free(text);
    return rc ? -1 : 0;
}

/* Writes the checkpoint from host copies, atomically (see checkpoint.h). */
int rl_checkpoint_write(const char *dir, const rl_model *m, const float *master, const rl_optim *o,
                            const float *moments, const rl_train_state *st, const cJSON *options,
                            const char *tokenizer_dir, rl_err *err)
{
    char tmp[4096], old[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", dir, (long)getpid());
    snprintf(old, sizeof old, "%s.old.%ld", dir, (long)getpid());
    if (rl_remove_tree(tmp, err) != 0) return -1;
    if (save_into(tmp, m, master, o, moments, st, options, tokenizer_dir, err) != 0) {
        rl_err tmp_err;
        rl_remove_tree(tmp, &tmp_err);
        return rl_err_prefix(err, "checkpoint %s: ", dir);
    }
    int had_old = rl_file_exists(dir);
    if (had_old && rename(dir, old) != 0)
        return rl_err_set(err, "checkpoint %s: cannot move the previous one aside: %s", dir, strerror(errno));
    if (rename(tmp, dir) != 0) {
        int e = errno;
        if (had_old) rename(old, dir);
        return rl_err_set(err, "checkpoint %s: cannot rename %s into place: %s", dir, tmp, strerror(e));
    }
    return had_old ? rl_remove_tree(old, err) : 0;
}

int rl_checkpoint_save(const char *dir, const rl_model *m, const rl_optim *o,
                       const rl_train_state *st, const cJSON *options, const char *tokenizer_dir,
                       rl_err *err)
{
    rl_dp *dp = o ? o->cfg.dp : NULL;
    float *master, *moments;
    int rc = fetch_state(m, o, &master, &moments, err);
    if (rc == 0 && rl_dp_rank(dp) == 0)
        rc = rl_checkpoint_write(dir, m, master, o, moments, st, options, tokenizer_dir, err);
    free(master);
    free(moments);
    if (dp) { /* every rank learns whether the checkpoint was written */
        int any_failed;
        rl_err agree;
        if (rl_dp_any(dp, rc != 0, &any_failed, &agree) != 0) return rc ? rc : (*err = agree, -1);
        if (any_failed && rc == 0) return rl_err_set(err, "checkpoint %s: not written (see rank 0's message)", dir);
    }
    return rc;
}

static int read_hex64(const cJSON *obj, const char *key, uint64_t *out, const char *what, rl_err *err)
{
    const char *s;
    if (rl_json_string(obj, key, &s, 1, what, err) != 0) return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 16);
    if (errno || *end || end == s) return rl_err_set(err, "%s: rng.%s must be a hex number, got '%s'", what, key, s);
    *out = v;
    return 0;
}

int rl_checkpoint_load_state(const char *dir, rl_train_state *st, cJSON **options, rl_err *err)
{
    char path[4096];
    if (join(path, sizeof path, dir, "trainer_state.json", err) != 0) return -1;
    cJSON *j = rl_json_parse_file(path, err);
    if (!j) return -1;
    memset(st, 0, sizeof *st);
    int64_t step = 0, epoch = 0, pos = 0, used = 0;
    const cJSON *rng = cJSON_GetObjectItemCaseSensitive(j, "rng");
    const cJSON *buf = rng ? cJSON_GetObjectItemCaseSensitive(rng, "buf") : NULL;
    int rc = -1;
    if (rl_json_int(j, "step", &step, 1, path, err) || rl_json_int(j, "epoch", &epoch, 1, path, err) ||
        rl_json_int(j, "data_pos", &pos, 1, path, err))
        goto done;
    if (!cJSON_IsObject(rng) || !cJSON_IsArray(buf) || cJSON_GetArraySize(buf) != 4) {
        rl_err_set(err, "%s: field 'rng' must be an object with a 4-element 'buf'", path);
        goto done;
    }
    if (read_hex64(rng, "seed", &st->rng.seed, path, err) || read_hex64(rng, "counter", &st->rng.counter, path, err) ||
        rl_json_int(rng, "buf_used", &used, 1, path, err))
        goto done;
    for (int i = 0; i < 4; i++) {
        const cJSON *w = cJSON_GetArrayItem(buf, i);
        if (!rl_json_is_integer(w) || w->valuedouble < 0 || w->valuedouble > 4294967295.0) {
            rl_err_set(err, "%s: rng.buf[%d] must be a 32-bit unsigned integer", path, i);
            goto done;
        }
        st->rng.buf[i] = (uint32_t)w->valuedouble;
    }
    if (step < 0 || epoch < 0 || pos < 0 || used < 0 || used > 4) {
        rl_err_set(err, "%s: step, epoch, data_pos must be >= 0 and rng.buf_used in [0, 4]", path);
        goto done;
    }
    st->step = step;
    st->epoch = epoch;
    st->data_pos = pos;
    st->rng.buf_used = (int)used;
    if (options) {
        const cJSON *opt = cJSON_GetObjectItemCaseSensitive(j, "options");
        *options = opt ? cJSON_Duplicate(opt, 1) : NULL;
    }
    rc = 0;
done:
    cJSON_Delete(j);
    return rc;
}

int rl_checkpoint_load_optim(const char *dir, rl_optim *o, rl_err *err)
{
    char path[4096];
    if (join(path, sizeof path, dir, "trainer_state.json", err) != 0) return -1;
    cJSON *j = rl_json_parse_file(path, err);
    if (!j) return -1;
    int64_t opt_step = 0;
    int rc = rl_json_int(j, "optimizer_step", &opt_step, 1, path, err);
    cJSON_Delete(j);
    if (rc != 0) return -1;
    if (join(path, sizeof path, dir, "optimizer.safetensors", err) != 0) return -1;
    rl_safetensors *st;
    if (rl_safetensors_open(&st, path, err) != 0) return -1;
    /* the moments of the elements [lo, hi) this optimizer holds (a shard under ZeRO) */
    const char *names[2] = {"exp_avg", "exp_avg_sq"};
    float *dst[2] = {o->m, o->v};
    size_t held = o->hi - o->lo;
    float *host = malloc((held ? held : 1) * sizeof(float));
    rc = host ? 0 : rl_err_oom(err, "optimizer state", held * sizeof(float));
    for (int k = 0; k < 2 && rc == 0; k++) {
        const rl_st_tensor *t = rl_safetensors_find(st, names[k]);
        if (!t || t->dtype != RL_F32 || rl_st_tensor_numel(t) != (int64_t)o->n_elems) {
            rc = rl_err_set(err, "%s: tensor '%s' must be F32 with %zu elements (the model's parameter count)",
                            path, names[k], o->n_elems);
            break;
        }
        memcpy(host, (const char *)t->data + o->lo * sizeof(float), held * sizeof(float));
        if (rl_memcpy(o->ctx, dst[k], host, held * sizeof(float), RL_H2D) != 0) {
            rl_ctx_error(o->ctx, err);
            rc = rl_err_prefix(err, "%s: ", path);
        }
    }
    free(host);
    rl_safetensors_close(st);
    if (rc == 0) o->step = o->begun = (int)opt_step;
    return rc;
}
