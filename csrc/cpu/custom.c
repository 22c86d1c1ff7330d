/* custom.c -- atomics built from compare-and-swap, on the CPU (see
 * cuda/custom.cu). prod/cas: each logical thread multiplies its share, then
 * multiplies it into the total with a compare-exchange loop. */
#include "cpu.h"

static int prod_cas(const void *x, int64_t n, int dtype, int acc, void *result, cua_launch *cfg)
{
    cua_cpu_default_config(cfg, n);
    const int64_t W = cfg->blocks * cfg->threads;
    cua_acc_t one;
    if (acc == CUA_ACC_INT64) one.i = 1;
    else if (acc == CUA_ACC_FLOAT32) one.f = 1;
    else one.d = 1;
    _Atomic uint64_t cell = cua_cpu_cell_bits(acc, one);
#pragma omp parallel for schedule(static)
    for (int64_t w = 0; w < W; w++) {
        int64_t lo, hi;
        cua_cpu_share(n, W, w, &lo, &hi);
        if (lo < hi) cua_cpu_cas_mul(acc, &cell, cua_cpu_chunk_prod(x, dtype, acc, lo, hi));
    }
    cua_cpu_store_result(acc, cua_cpu_cell_value(acc, atomic_load(&cell)), result);
    return CUA_OK;
}

const cua_variant cua_cpu_prod_variants[] = {
    {"cas", 1, "per-thread local product, multiplied into the total by a compare-exchange loop", CUA_F_DEFAULT,
     (cua_fn)prod_cas},
};
const int cua_cpu_prod_nvariants = sizeof cua_cpu_prod_variants / sizeof cua_cpu_prod_variants[0];
