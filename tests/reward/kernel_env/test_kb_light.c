/* test_kb_light.c — the light headers of KernelBench builds (kblight.h, kb_light/): runs
 * kb_light_units.py (kb_kernelcheck.py and the worker's --light-check on objects nvcc builds:
 * a build whose two passes made different kernels is caught and removed) and kb_device_pass.py
 * (every CUDA source of tests/fixtures/kernelbench/ compiles in nvcc's device pass against the
 * stand-in for torch/types.h; needs torch's headers, scripts/torch-headers.sh) and
 * kb_host_pass.py (each builds whole with the light host header and the operators
 * kb_hostops.py finds in its text, its kernels those of its host code; an operator hidden from
 * the scan fails to build; the macro sets of the two headers differ only as listed). Each script
 * exits 77 when what it needs is missing: skipped, saying why. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "test_util.h"

static void run_script(const char *cmd, const char *what)
{
    int rc = system(cmd);
    int code = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    if (code == 77) cr_skip_test("%s: skipped (its output says why)", what);
    cr_assert_eq(code, 0, "%s failed (exit status %d)", what, code);
}

Test(kb_light, kernel_check_catches_passes_that_differ)
{
    run_script("PYTHONDONTWRITEBYTECODE=1 python3 tests/reward/kernel_env/kb_light_units.py", "kb_light_units.py");
}

Test(kb_light, fixtures_compile_in_the_device_pass_against_the_stand_in, .timeout = 600)
{
    run_script("PYTHONDONTWRITEBYTECODE=1 python3 tests/reward/kernel_env/kb_device_pass.py --jobs 2",
               "kb_device_pass.py");
}

Test(kb_light, fixtures_build_with_the_light_host_header, .timeout = 600)
{
    run_script("PYTHONDONTWRITEBYTECODE=1 python3 tests/reward/kernel_env/kb_host_pass.py --jobs 2", "kb_host_pass.py");
}
