// exact.cuh -- the launchers of the exact sums and dots (exact.cu), for the
// sum and dot tables (sum.cu steps 10-12, dot.cu steps 6-8).
//
// Each takes data of any NumPy dtype (an id outside enum cua_dtype is
// refused), ignores `acc` and cfg->result.pair, and writes the exact sum
// (dot: of the exact products) to the host cua_xacc at `result`, normalized
// (xacc.h): floats as their digits, integers and bools exactly at weight
// 2^0. With cfg->result.device (a call slot's mapped alias of `result`, room
// for the whole cua_xacc) a call of one piece publishes it there and waits
// on the slot's flag (route.cu). The caller rounds it once (an integer
// result: wraps it).
#pragma once

#include "cuatomic_abi.h"

int sum_exact_global(const void *x, int64_t n, int dtype, int acc, void *result, cua_launch *cfg);
int sum_exact_shared(const void *x, int64_t n, int dtype, int acc, void *result, cua_launch *cfg);
int sum_exact(const void *x, int64_t n, int dtype, int acc, void *result, cua_launch *cfg);

int dot_exact_global(const void *a, const void *b, int64_t n, int dtype, int acc, void *result, cua_launch *cfg);
int dot_exact_shared(const void *a, const void *b, int64_t n, int dtype, int acc, void *result, cua_launch *cfg);
int dot_exact(const void *a, const void *b, int64_t n, int dtype, int acc, void *result, cua_launch *cfg);
