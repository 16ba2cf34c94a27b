#include "rl_kernel.h"
// FAKE_INCORRECT
extern "C" int rl_kernel(const rl_kernel_args *a) { return 0; }