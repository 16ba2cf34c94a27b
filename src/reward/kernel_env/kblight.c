/* kblight.c — see kblight.h. */
#include "reward/kernel_env/kblight.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/file.h"

static int names_extension_h(const char *source, size_t len)
{
    static const char needle[] = "torch/extension.h";
    size_t n = sizeof needle - 1;
    for (size_t i = 0; i + n <= len; i++)
        if (source[i] == 't' && !memcmp(source + i, needle, n)) return 1;
    return 0;
}

int rl_kblight_env(const rl_kenv_opts *o, const char *source, size_t len, char *env, size_t env_size, char *dir,
                   size_t dir_size)
{
    if (o->kb_no_light || !names_extension_h(source, len)) return 0;
    char kdir[PATH_MAX], header[PATH_MAX + 64], real[PATH_MAX];
    snprintf(kdir, sizeof kdir, "%s", o->kb_worker);
    char *slash = strrchr(kdir, '/');
    if (slash) *slash = 0;
    else snprintf(kdir, sizeof kdir, ".");
    snprintf(header, sizeof header, "%s/kb_light", kdir);
    if (!realpath(header, real) || strpbrk(real, " \t\n\"'\\")) return 0;
    snprintf(header, sizeof header, "%s/torch/extension.h", real);
    if (!rl_file_exists(header)) return 0;
    const char *old = getenv("NVCC_PREPEND_FLAGS");
    int n = snprintf(env, env_size, "NVCC_PREPEND_FLAGS=-I%s%s%s", real, old && *old ? " " : "", old && *old ? old : "");
    if (n < 0 || (size_t)n >= env_size) return 0;
    snprintf(dir, dir_size, "%s", real);
    return 1;
}
