/* test_report.c — `rlc report` end to end on two hand-made run directories: the page is one
 * self-contained file (no external resource), every text from the runs is HTML-escaped (a
 * completion holding "</script><b>" stays text), and a real headless browser (Chromium) renders
 * it without a script error: the page's script marks #report-status "ok: N plots" with N the
 * number of metrics, draws one line per run and metric, and a screenshot is taken. A page whose
 * data is broken must show the error (so the check can fail). Bad input: a missing directory, a
 * directory without metrics.jsonl, a garbage line (file:line), an empty run. Skipped, saying
 * so, only when no chromium is installed (scripts/install-deps.sh installs it for CI). */
#include <string.h>

#include "io/json.h"
#include "train_fixture.h"

static char run_a[200], run_b[200];

/* run a: SFT-like keys; run b (named with a '<'): RL keys, one shared ("loss"); 6 keys in all. */
static void write_runs(void)
{
    tf_setup();
    (void)count_lines;
    snprintf(run_a, sizeof run_a, "%s/run-a", tmp);
    snprintf(run_b, sizeof run_b, "%s/run<b>", tmp);
    rl_err err;
    cr_assert_eq(rl_mkdir_p(run_a, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_mkdir_p(run_b, &err), 0, "%s", err.msg);
    char path[300];
    snprintf(path, sizeof path, "%s/metrics.jsonl", run_a);
    FILE *f = fopen(path, "w");
    for (int s = 1; s <= 6; s++) fprintf(f, "{\"step\": %d, \"loss\": %g, \"lr\": 0.001, \"tokens_per_s\": %d}\n", s, 3.0 / s, 1000 + s);
    fclose(f);
    snprintf(path, sizeof path, "%s/metrics.jsonl", run_b);
    f = fopen(path, "w");
    for (int s = 1; s <= 4; s++)
        fprintf(f, "{\"step\": %d, \"loss\": %g, \"reward_mean\": %g, \"kl\": %g, \"completion_len\": 5, \"note\": \"x\"}\n",
                s, 0.1 * s, 0.2 * s, 0.01 * s);
    fprintf(f, "{\"step\": 5, \"loss\": 0.5, \"rew"); /* a last line cut short by a crash: skipped */
    fclose(f);
    snprintf(path, sizeof path, "%s/samples.jsonl", run_b);
    f = fopen(path, "w");
    fprintf(f, "{\"step\": 1, \"prompt\": \"1+1=\", \"completion\": \"</script><b>bold</b> & 'q'\", \"reward\": 1, "
               "\"advantage\": 0.5}\n");
    fclose(f);
}

static char *read_text(const char *path)
{
    char *text;
    size_t len;
    rl_err err;
    cr_assert_eq(rl_file_read_all(path, &text, &len, &err), 0, "%s", err.msg);
    return text;
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

TestSuite(cli_report, .init = write_runs, .fini = tf_teardown);

Test(cli_report, self_contained_and_escaped)
{
    char out[4096], page[300];
    snprintf(page, sizeof page, "%s/report.html", tmp);
    int rc = sh(out, sizeof out, "%s report %s '%s' -o %s", rlc, run_a, run_b, page);
    cr_assert_eq(rc, 0, "%s", out);
    char *html = read_text(page);
    cr_expect(!strstr(html, "<b>bold</b>") && strstr(html, "&lt;/script&gt;&lt;b&gt;bold&lt;/b&gt; &amp; &#39;q&#39;"),
              "the completion is not escaped");
    cr_expect(strstr(html, "run&lt;b&gt;") && strstr(html, "run\\u003cb>"), "the label is not escaped");
    cr_expect_eq(count(html, "</script>"), 2, "a text closed a script element");
    cr_expect(!strstr(html, " src=") && !strstr(html, "<link") && !strstr(html, "@import") && !strstr(html, "url("),
              "the page loads something from outside");
    free(html);
}

/* Chromium's binary, or NULL. */
static const char *chromium(void)
{
    static const char *names[] = {"chromium", "chromium-browser", NULL};
    char out[512];
    for (int i = 0; names[i]; i++)
        if (sh(out, sizeof out, "command -v %s", names[i]) == 0) return names[i];
    return NULL;
}

static int browse(const char *browser, const char *what, const char *page, char *out, size_t size)
{
    return sh(out, size, "(timeout 120 %s --headless --no-sandbox --disable-gpu --user-data-dir=%s/chromium "
              "--hide-scrollbars --window-size=1300,1600 %s file://%s 2>/dev/null)", browser, tmp, what, page);
}

Test(cli_report, renders_in_a_headless_browser)
{
    const char *browser = chromium();
    if (!browser) cr_skip_test("chromium is not installed: the page was not rendered (apt-get install chromium)");
    char out[4096], page[300], shot[300];
    snprintf(page, sizeof page, "%s/report.html", tmp);
    snprintf(shot, sizeof shot, "%s/report.png", tmp);
    cr_assert_eq(sh(out, sizeof out, "%s report %s '%s' -o %s", rlc, run_a, run_b, page), 0, "%s", out);
    static char dom[1 << 20];
    cr_assert_eq(browse(browser, "--dump-dom", page, dom, sizeof dom), 0, "%s", dom);
    cr_assert(strstr(dom, "id=\"report-errors\"></div>"), "script errors: %s", strstr(dom, "report-errors"));
    cr_assert(strstr(dom, "data-state=\"ok\">ok: 6 plots of 2 runs<"), "%.2000s", dom);
    /* a line per run and metric: loss in both, lr and tokens_per_s in a, reward_mean, kl and
     * completion_len in b; the cut last line added nothing */
    cr_expect_eq(count(dom, "class=\"series\""), 7);
    cr_expect(strstr(dom, "&lt;/script&gt;&lt;b&gt;bold&lt;/b&gt;") && !strstr(dom, "<b>bold"), "escaping lost in the DOM");
    char cmd[400];
    snprintf(cmd, sizeof cmd, "--screenshot=%s", shot);
    cr_assert_eq(browse(browser, cmd, page, out, sizeof out), 0, "%s", out);
    FILE *f = fopen(shot, "rb");
    cr_assert(f, "no screenshot %s", shot);
    unsigned char magic[8];
    size_t n = fread(magic, 1, 8, f);
    fseek(f, 0, SEEK_END);
    long bytes = ftell(f);
    fclose(f);
    cr_expect(n == 8 && !memcmp(magic, "\x89PNG\r\n\x1a\n", 8) && bytes > 20000, "screenshot: %ld bytes", bytes);

    /* broken data: the script's error must show (the check above can fail) */
    char broken[300];
    snprintf(broken, sizeof broken, "%s/broken.html", tmp);
    cr_assert_eq(sh(out, sizeof out, "sed 's/{\"runs\":/{\"runs\"::/' %s > %s", page, broken), 0, "%s", out);
    cr_assert_eq(browse(browser, "--dump-dom", broken, dom, sizeof dom), 0, "%s", dom);
    cr_expect(strstr(dom, "data-state=\"error\"") && strstr(dom, "script error: "), "%.3000s", dom);
}

Test(cli_report, bad_input)
{
    char out[4096], path[300];
    cr_assert_eq(sh(out, sizeof out, "%s report", rlc), 2);
    cr_expect(strstr(out, "rlc report: RUN_DIR is required"), "%s", out);
    cr_assert_eq(sh(out, sizeof out, "%s report %s/none -o %s/r.html", rlc, tmp, tmp), 1);
    cr_expect(strstr(out, "/none: no such run directory"), "%s", out);
    cr_assert_eq(sh(out, sizeof out, "%s report %s -o %s/r.html", rlc, tmp, tmp), 1);
    cr_expect(strstr(out, "no metrics.jsonl in it"), "%s", out);
    snprintf(path, sizeof path, "%s/run-a/metrics.jsonl", tmp);
    FILE *f = fopen(path, "a");
    fprintf(f, "[1, 2]\n{\"step\": 8}\n");
    fclose(f);
    cr_assert_eq(sh(out, sizeof out, "%s report %s/run-a -o %s/r.html", rlc, tmp, tmp), 1);
    cr_expect(strstr(out, "run-a/metrics.jsonl:7: not a JSON object: '[1, 2]'"), "%s", out);
    f = fopen(path, "w");
    fclose(f);
    cr_assert_eq(sh(out, sizeof out, "%s report %s/run-a -o %s/r.html", rlc, tmp, tmp), 1);
    cr_expect(strstr(out, "run-a/metrics.jsonl: no steps in it"), "%s", out);
    snprintf(path, sizeof path, "%s/r.html", tmp);
    cr_expect(!rl_file_exists(path), "a failed report left a page behind");
}

/* `rlc demo` (a tiny one) ends with its report: both phases' plots, samples of both. */
Test(cli_report, demo_writes_and_names_its_report)
{
    static char out[16384];
    char want[400], page[300];
    int rc = sh(out, sizeof out, "%s demo --out %s/demo --sft-steps 3 --grpo-steps 2 --hidden 32 --layers 1 --heads 2 "
                "--kv-heads 1 --head-dim 16 --ffn 64 --held-out 10 --device cpu", rlc, tmp);
    cr_assert_eq(rc, 0, "%s", out);
    snprintf(page, sizeof page, "%s/demo/report.html", tmp);
    snprintf(want, sizeof want, "report (plots and sample completions): %s\n", page);
    cr_assert(strstr(out, want), "%s", out);
    char *html = read_text(page);
    cr_expect(strstr(html, "<h3>sft</h3>") && strstr(html, "<h3>grpo</h3>") && strstr(html, "the last 12 of 12 samples") &&
              strstr(html, "the last 8 of 8 samples"), "samples of both phases missing");
    free(html);
    const char *browser = chromium();
    if (!browser) cr_skip_test("chromium is not installed: the demo's page was not rendered");
    static char dom[1 << 20];
    cr_assert_eq(browse(browser, "--dump-dom", page, dom, sizeof dom), 0, "%s", dom);
    cr_assert(strstr(dom, "data-state=\"ok\">ok: ") && strstr(dom, "id=\"report-errors\"></div>"), "%.2000s", dom);
}
