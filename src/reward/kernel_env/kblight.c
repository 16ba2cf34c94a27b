/* kblight.c — see kblight.h. */
#include "reward/kernel_env/kblight.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/file.h"

/* Whether nvcc can see the light headers at all: the text includes torch/extension.h or uses
 * torch.utils.cpp_extension (load_inline puts torch/types.h before every CUDA source). */
static int names(const char *source, size_t len, const char *needle)
{
    size_t n = strlen(needle);
    for (size_t i = 0; i + n <= len; i++)
        if (source[i] == needle[0] && !memcmp(source + i, needle, n)) return 1;
    return 0;
}

int rl_kblight_env(const rl_kenv_opts *o, const char *source, size_t len, char *env, size_t env_size, char *dir,
                   size_t dir_size)
{
    if (o->kb_no_light || !(names(source, len, "torch/extension.h") || names(source, len, "cpp_extension"))) return 0;
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
