/* task: ew_chain
 * expect: incorrect (outputs_written)
 * reuse_reference.cu — CHEAT: writes nothing, relying on the reference having left its
 * output at the same address (a harness that runs the reference first into shared buffers). */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "rl_kernel.h"

extern "C" int rl_kernel(const rl_kernel_args *args)
{
    (void)args;
    return 0;
}
