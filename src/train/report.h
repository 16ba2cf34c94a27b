/* report.h — one self-contained HTML page that shows training runs: a plot of every numeric
 * metric of metrics.jsonl over the steps (grouped: reward, losses, KL and clipping, optimizer,
 * lengths, speed, memory, the rest), several runs overlaid with a legend, and a table of the
 * sample completions of samples.jsonl (train/runlog.h). What `rlc report` writes and `rlc demo`
 * ends with.
 *
 * The page needs no network when it is opened: the metrics are embedded as JSON (every '<'
 * written as \u003c, so no text closes the script), the plots are inline SVG drawn by an inline
 * script (report_page.c), and the samples are an HTML table written here with every text
 * escaped. The script marks the page when it has drawn everything (#report-status gets
 * data-state="ok" and "N plots"), and window.onerror writes any script error into
 * #report-errors, visibly: a headless browser's DOM dump shows both (tests/cli/test_report.c).
 *
 * Input checks, each a clear error naming the file: a run directory that does not exist or has
 * no metrics.jsonl, a metrics line that is not a JSON object (file:line; only a last line with no
 * newline, a write cut short by a crash, is skipped), a run with no step yet. Numbers are any
 * numeric key of a line; x is its "step" (the line number when absent). */
#ifndef RL_TRAIN_REPORT_H
#define RL_TRAIN_REPORT_H

#include "core/error.h"

#define RL_REPORT_SAMPLE_ROWS 60 /* sample rows shown per run: the last ones of samples.jsonl */

typedef struct rl_report_run {
    const char *label;   /* the legend's name */
    const char *metrics; /* its metrics.jsonl */
    const char *samples; /* its samples.jsonl; NULL or a missing file: no samples */
} rl_report_run;

/* Writes the page for runs[0 .. n) to out_path (atomically: a temporary file renamed). */
int rl_report_write(const rl_report_run *runs, int n, const char *out_path, rl_err *err);

/* The page for run directories (DIR/metrics.jsonl, DIR/samples.jsonl), each labelled by its
 * path. */
int rl_report_dirs(const char *const *dirs, int n, const char *out_path, rl_err *err);

/* The page's fixed parts (report_page.c): style, script. */
extern const char rl_report_css[];
extern const char rl_report_js[];

#endif
