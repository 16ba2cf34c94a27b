/* bench_tokenizer.c — encode throughput of rlc's tokenizer on one large text, one thread.
 *
 * usage: bench_tokenizer TOKENIZER_JSON TEXT_FILE [REPEATS]
 * Encodes the whole file as one text, then each of its lines as its own text (a batch of
 * prompts), REPEATS times (default 3) after one warm-up run, and prints one line
 * "rlc bytes=.. tokens=.. best_s=.. mb_per_s=.. line_tokens=.. lines_best_s=.. lines_mb_per_s=.."
 * (best of the repeats; MB = 10^6 bytes).
 * bench/bench_tokenizer.py runs it beside the `tokenizers` library and prints the table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/file.h"
#include "core/timer.h"
#include "io/tokenizer.h"

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_tokenizer TOKENIZER_JSON TEXT_FILE [REPEATS]\n");
        return 2;
    }
    int repeats = argc > 3 ? atoi(argv[3]) : 3;
    rl_err err;
    rl_tokenizer *tok;
    char *text;
    size_t len;
    if (rl_tok_load(&tok, argv[1], &err) || rl_file_read_all(argv[2], &text, &len, &err)) {
        fprintf(stderr, "bench_tokenizer: %s\n", err.msg);
        return 1;
    }
    double best = 1e30, best_lines = 1e30;
    long n_ids = 0, n_line_ids = 0;
    for (int r = 0; r <= repeats; r++) {
        int32_t *ids;
        int n;
        double t0 = rl_time_now();
        if (rl_tok_encode(tok, text, len, &ids, &n, &err)) {
            fprintf(stderr, "bench_tokenizer: %s\n", err.msg);
            return 1;
        }
        double dt = rl_time_now() - t0;
        free(ids);
        n_ids = n;
        if (r > 0 && dt < best) best = dt;
        /* the same text as separate lines (without their newlines), as a batch of prompts */
        n_line_ids = 0;
        t0 = rl_time_now();
        for (char *p = text, *end = text + len; p < end;) {
            char *nl = memchr(p, '\n', (size_t)(end - p));
            if (!nl) nl = end;
            if (rl_tok_encode(tok, p, (size_t)(nl - p), &ids, &n, &err)) {
                fprintf(stderr, "bench_tokenizer: %s\n", err.msg);
                return 1;
            }
            free(ids);
            n_line_ids += n;
            p = nl + 1;
        }
        dt = rl_time_now() - t0;
        if (r > 0 && dt < best_lines) best_lines = dt;
    }
    printf("rlc bytes=%zu tokens=%ld best_s=%.4f mb_per_s=%.2f line_tokens=%ld lines_best_s=%.4f lines_mb_per_s=%.2f\n",
           len, n_ids, best, len / best / 1e6, n_line_ids, best_lines, len / best_lines / 1e6);
    free(text);
    rl_tok_free(tok);
    return 0;
}
