/* test_kb_worker.c — runs kb_worker_units.py: the pure-Python parts of kernelbench_worker.py
 * (fair numeric settings around reference calls, --require-kernel's kernel-name matching and
 * ELF reading) on the CPU, with a stub in place of torch. Needs python3 (scripts/install-deps.sh). */
#include <stdlib.h>

#include "test_util.h"

Test(kb_worker, python_units)
{
    int rc = system("PYTHONDONTWRITEBYTECODE=1 python3 tests/reward/kernel_env/kb_worker_units.py");
    cr_assert_eq(rc, 0, "tests/reward/kernel_env/kb_worker_units.py failed (exit status %d)", rc);
}
