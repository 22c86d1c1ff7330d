/* chunks.c -- the typed reductions of one contiguous chunk (a logical
 * thread's share): sum, dot and product in the accumulator, and a logical
 * block's value from its threads' chunks through the tree of the CUDA rungs.
 */
#include "cpu.h"
#include "typed.h"

#define LOAD_CASE(ID, T, K)                              \
    case ID: {                                           \
        T v = ((const T *)x)[i];                         \
        if (acc == CUA_ACC_INT64) r.i = (uint64_t)v;     \
        else if (acc == CUA_ACC_FLOAT32) r.f = (float)v; \
        else r.d = (double)v;                            \
        break;                                           \
    }

cua_acc_t cua_cpu_load(const void *x, int dtype, int acc, int64_t i)
{
    cua_acc_t r = {0};
    switch (dtype) {
        CUA_CPU_TYPES(LOAD_CASE)
    default: break;
    }
    return r;
}

cua_acc_t cua_cpu_chunk_sum(const void *x, int dtype, int acc, int64_t lo, int64_t hi)
{
    cua_acc_t r = {0};
    switch (dtype) {
#define SUM_INTO_R(ID, T, K)                                                          \
    case ID: {                                                                        \
        const T *p = (const T *)x;                                                    \
        if (acc == CUA_ACC_INT64) {                                                   \
            uint64_t s = 0;                                                           \
            for (int64_t i = lo; i < hi; i++) s += (uint64_t)p[i];                    \
            r.i = s;                                                                  \
        } else if (acc == CUA_ACC_FLOAT32) {                                          \
            float s = 0;                                                              \
            for (int64_t i = lo; i < hi; i++) s += (float)p[i];                       \
            r.f = s;                                                                  \
        } else {                                                                      \
            double s = 0;                                                             \
            for (int64_t i = lo; i < hi; i++) s += (double)p[i];                      \
            r.d = s;                                                                  \
        }                                                                             \
        break;                                                                        \
    }
        CUA_CPU_TYPES(SUM_INTO_R)
    default: break;
    }
    return r;
}

cua_acc_t cua_cpu_chunk_prod(const void *x, int dtype, int acc, int64_t lo, int64_t hi)
{
    cua_acc_t r = {0};
    switch (dtype) {
#define PROD_INTO_R(ID, T, K)                                                         \
    case ID: {                                                                        \
        const T *p = (const T *)x;                                                    \
        if (acc == CUA_ACC_INT64) {                                                   \
            uint64_t s = 1;                                                           \
            for (int64_t i = lo; i < hi; i++) s *= (uint64_t)p[i];                    \
            r.i = s;                                                                  \
        } else if (acc == CUA_ACC_FLOAT32) {                                          \
            float s = 1;                                                              \
            for (int64_t i = lo; i < hi; i++) s *= (float)p[i];                       \
            r.f = s;                                                                  \
        } else {                                                                      \
            double s = 1;                                                             \
            for (int64_t i = lo; i < hi; i++) s *= (double)p[i];                      \
            r.d = s;                                                                  \
        }                                                                             \
        break;                                                                        \
    }
        CUA_CPU_TYPES(PROD_INTO_R)
    default: break;
    }
    return r;
}

cua_acc_t cua_cpu_chunk_dot(const void *a, const void *b, int dtype, int acc, int64_t lo, int64_t hi)
{
    cua_acc_t r = {0};
    switch (dtype) {
#define DOT_INTO_R(ID, T, K)                                                          \
    case ID: {                                                                        \
        const T *p = (const T *)a, *q = (const T *)b;                                 \
        if (acc == CUA_ACC_INT64) {                                                   \
            uint64_t s = 0;                                                           \
            for (int64_t i = lo; i < hi; i++) s += (uint64_t)p[i] * (uint64_t)q[i];   \
            r.i = s;                                                                  \
        } else if (acc == CUA_ACC_FLOAT32) {                                          \
            float s = 0;                                                              \
            for (int64_t i = lo; i < hi; i++) s += (float)p[i] * (float)q[i];         \
            r.f = s;                                                                  \
        } else {                                                                      \
            double s = 0;                                                             \
            for (int64_t i = lo; i < hi; i++) s += (double)p[i] * (double)q[i];       \
            r.d = s;                                                                  \
        }                                                                             \
        break;                                                                        \
    }
        CUA_CPU_TYPES(DOT_INTO_R)
    default: break;
    }
    return r;
}

cua_acc_t cua_cpu_block_value(const void *a, const void *b, int64_t n, int dtype, int acc, const cua_launch *cfg,
                              int64_t block)
{
    cua_acc_t lanes[CUA_CPU_MAX_BLOCK_THREADS];
    const int T = cfg->threads;
    const int64_t W = cfg->blocks * T;
    for (int t = 0; t < T; t++) {
        int64_t lo, hi;
        cua_cpu_share(n, W, block * T + t, &lo, &hi);
        lanes[t] = b ? cua_cpu_chunk_dot(a, b, dtype, acc, lo, hi) : cua_cpu_chunk_sum(a, dtype, acc, lo, hi);
    }
    /* The tree: halve the active lanes, each adding its partner's value. */
    int s = 1;
    while (s * 2 < T) s *= 2;
    for (; s > 0; s >>= 1)
        for (int t = 0; t < s && t + s < T; t++) cua_acc_add(acc, &lanes[t], lanes[t + s]);
    return lanes[0];
}

int cua_cpu_blocks_into_cell(cua_cell_add add, const void *a, const void *b, int64_t n, int dtype, int acc,
                             void *result, cua_launch *cfg)
{
    const cua_grid g = cua_cpu_grid(cfg, n);
    _Atomic uint64_t cell = 0;
#pragma omp parallel for schedule(static) num_threads(g.team)
    for (int64_t k = 0; k < g.busy_blocks; k++)
        if (!cua_cpu_stop(cfg)) add(acc, &cell, cua_cpu_block_value(a, b, n, dtype, acc, cfg, k));
    cua_cpu_store_result(acc, cua_cpu_cell_value(acc, atomic_load(&cell)), result);
    return CUA_CPU_DONE(cfg);
}
