/* test_core.c — rng (Random123 known answers), dtype conversions (against the compiler's
 * _Float16 and bit patterns), atomic file writes, arena planning, JSON field errors. */
#include <string.h>
#include <unistd.h>

#include "core/arena.h"
#include "core/dtype.h"
#include "core/file.h"
#include "core/rng.h"
#include "io/json.h"
#include "test_util.h"

Test(rng, philox_known_answers)
{
    /* Known-answer vectors of Philox4x32-10 published with Random123 (kat_vectors). */
    struct { uint32_t ctr[4], key[2], out[4]; } kat[] = {
        {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
        {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff},
         {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
        {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0},
         {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
    };
    for (size_t i = 0; i < sizeof kat / sizeof kat[0]; i++) {
        uint32_t out[4];
        rl_philox4x32(kat[i].ctr, kat[i].key, out);
        for (int j = 0; j < 4; j++)
            cr_assert_eq(out[j], kat[i].out[j], "vector %zu word %d: %08x != %08x", i, j, out[j], kat[i].out[j]);
    }
}

Test(rng, reproducible_and_resumable)
{
    rl_rng a, b;
    rl_rng_init(&a, 1234);
    rl_rng_init(&b, 1234);
    for (int i = 0; i < 7; i++) (void)rl_rng_u32(&a);
    rl_rng saved = a; /* the whole state is plain data: a copy resumes the stream */
    for (int i = 0; i < 7; i++) (void)rl_rng_u32(&b);
    for (int i = 0; i < 100; i++) cr_assert_eq(rl_rng_u32(&saved), rl_rng_u32(&b));
    double sum = 0;
    for (int i = 0; i < 100000; i++) {
        float u = rl_rng_uniform(&a);
        cr_assert(u >= 0.0f && u < 1.0f);
        sum += u;
    }
    cr_assert(fabs(sum / 100000 - 0.5) < 0.01, "mean %f", sum / 100000);
    uint32_t counts[3] = {0};
    for (int i = 0; i < 30000; i++) counts[rl_rng_below(&a, 3)]++;
    for (int i = 0; i < 3; i++) cr_assert(counts[i] > 9500 && counts[i] < 10500);
}

Test(dtype, bf16_rounding)
{
    cr_assert_eq(rl_f32_to_bf16(1.0f), 0x3f80);
    cr_assert_eq(rl_f32_to_bf16(-2.0f), 0xc000);
    /* 1 + 2^-8 is half-way between bf16 1.0 and 1.0078125: ties to even (1.0). */
    cr_assert_eq(rl_f32_to_bf16(1.00390625f), 0x3f80);
    cr_assert_eq(rl_f32_to_bf16(1.01171875f), 0x3f82); /* tie, rounds up to even */
    cr_assert(isnan(rl_bf16_to_f32(rl_f32_to_bf16(NAN))));
    cr_assert(isinf(rl_bf16_to_f32(rl_f32_to_bf16(INFINITY))));
    for (uint32_t h = 0; h < 65536; h++) {
        float f = rl_bf16_to_f32((uint16_t)h);
        if (!isnan(f)) cr_assert_eq(rl_f32_to_bf16(f), h);
    }
}

Test(dtype, f16_matches_compiler)
{
    for (uint32_t h = 0; h < 65536; h++) {
        uint16_t bits = (uint16_t)h;
        _Float16 ref;
        memcpy(&ref, &bits, 2);
        float f = rl_f16_to_f32(bits);
        if (isnan((float)ref)) {
            cr_assert(isnan(f));
            continue;
        }
        cr_assert_eq(f, (float)ref, "half %04x: %g != %g", h, f, (float)ref);
        cr_assert_eq(rl_f32_to_f16(f), bits, "round trip of %04x", h);
    }
    rl_rng rng;
    rl_rng_init(&rng, 7);
    for (int i = 0; i < 200000; i++) {
        uint32_t u = rl_rng_u32(&rng);
        float f;
        memcpy(&f, &u, 4);
        if (isnan(f)) continue;
        _Float16 ref = (_Float16)f;
        uint16_t want;
        memcpy(&want, &ref, 2);
        cr_assert_eq(rl_f32_to_f16(f), want, "f32 %08x -> %04x, want %04x", u, rl_f32_to_f16(f), want);
    }
}

Test(file, atomic_write_and_errors)
{
    char dir[] = "/tmp/rlc-test-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/a/b/c.txt", dir);
    rl_err err;
    char sub[256];
    snprintf(sub, sizeof sub, "%s/a/b", dir);
    cr_assert_eq(rl_mkdir_p(sub, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_file_write_atomic(path, "hello", 5, &err), 0, "%s", err.msg);
    char *data;
    size_t len;
    cr_assert_eq(rl_file_read_all(path, &data, &len, &err), 0);
    cr_assert_eq(len, 5);
    cr_assert_str_eq(data, "hello");
    free(data);
    snprintf(path, sizeof path, "%s/missing", dir);
    cr_assert_eq(rl_file_read_all(path, &data, &len, &err), -1);
    cr_assert(strstr(err.msg, path) && strstr(err.msg, "No such file"), "%s", err.msg);
    cr_assert_eq(rl_file_read_all(dir, &data, &len, &err), -1, "a directory is not a readable file");
    cr_assert(strstr(err.msg, "read error: Is a directory"), "%s", err.msg);
}

Test(arena, measure_then_allocate)
{
    rl_arena plan;
    rl_arena_create(&plan, 0);
    cr_assert_null(rl_arena_alloc(&plan, 10, 8));
    (void)rl_arena_alloc(&plan, 100, 64);
    rl_arena real;
    cr_assert_eq(rl_arena_create(&real, plan.peak), 0);
    char *a = rl_arena_alloc(&real, 10, 8);
    char *b = rl_arena_alloc(&real, 100, 64);
    cr_assert_eq(((uintptr_t)b) % 64, 0);
    cr_assert(b >= a + 10);
    cr_assert_eq(real.used, plan.peak);
    rl_arena_free(&real);
}

Test(json, typed_fields_name_the_file)
{
    rl_err err;
    const char *text = "{\"a\": 3, \"b\": 2.5, \"c\": \"x\", \"d\": true}";
    cJSON *root = rl_json_parse(text, strlen(text), "cfg.json", &err);
    cr_assert_not_null(root);
    int64_t i = 0;
    double d = 0;
    cr_assert_eq(rl_json_int(root, "a", &i, 1, "cfg.json", &err), 0);
    cr_assert_eq(i, 3);
    cr_assert_eq(rl_json_int(root, "b", &i, 1, "cfg.json", &err), -1);
    cr_assert(strstr(err.msg, "cfg.json") && strstr(err.msg, "'b'"), "%s", err.msg);
    cr_assert_eq(rl_json_double(root, "b", &d, 1, "cfg.json", &err), 0);
    cr_assert_eq(rl_json_int(root, "zz", &i, 1, "cfg.json", &err), -1);
    cr_assert(strstr(err.msg, "missing field 'zz'"), "%s", err.msg);
    cr_assert_eq(rl_json_int(root, "zz", &i, 0, "cfg.json", &err), 0);
    cJSON_Delete(root);
    const char *bad = "{\n  \"a\": 3,\n  oops\n}";
    cr_assert_null(rl_json_parse(bad, strlen(bad), "bad.json", &err));
    cr_assert(strstr(err.msg, "bad.json: invalid JSON at line 3"), "%s", err.msg);
    const char *trailing = "{} x";
    cr_assert_null(rl_json_parse(trailing, strlen(trailing), "t.json", &err));
}
