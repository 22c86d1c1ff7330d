/* predicate.c -- the filter's interval test on the CPU, and the typed loops
 * over a chunk: count the keepers, copy them out in order, or stage them
 * branch-free into a private buffer.
 */
#include <string.h>

#include "cpu.h"
#include "typed.h"

#define KEEP(T, K, v) ((((T)pred->lo.K <= (v)) && ((v) <= (T)pred->hi.K)) != (pred->negate != 0))

#define KEEP_CASE(ID, T, K)              \
    case ID: {                           \
        T v = ((const T *)x)[i];         \
        return KEEP(T, K, v);            \
    }

int cua_cpu_keep(const void *x, int dtype, const cua_pred *pred, int64_t i)
{
    switch (dtype) {
        CUA_CPU_TYPES(KEEP_CASE)
    default: return 0;
    }
}

/* What a filter rung writes for each keeper: the element, or its index. */
size_t cua_cpu_out_size(int dtype, const cua_pred *pred)
{
    return pred->indices ? sizeof(int64_t) : cua_dtype_size(dtype);
}

/* Keeper i as output number `slot`. */
void cua_cpu_emit(void *out, int64_t slot, const void *x, int dtype, const cua_pred *pred, int64_t i)
{
    if (pred->indices) {
        ((int64_t *)out)[slot] = i;
    } else {
        const size_t size = cua_dtype_size(dtype);
        memcpy((char *)out + slot * size, (const char *)x + i * size, size);
    }
}

#define COUNT_CASE(ID, T, K)                                  \
    case ID: {                                                \
        const T *p = (const T *)x;                            \
        for (int64_t i = lo; i < hi; i++) c += KEEP(T, K, p[i]); \
        break;                                                \
    }

int64_t cua_cpu_chunk_count(const void *x, int dtype, const cua_pred *pred, int64_t lo, int64_t hi)
{
    int64_t c = 0;
    switch (dtype) {
        CUA_CPU_TYPES(COUNT_CASE)
    default: break;
    }
    return c;
}

/* The keepers' values, or with pred->indices their indices (int64). */
#define COMPACT_CASE(ID, T, K)                                     \
    case ID: {                                                     \
        const T *p = (const T *)x;                                 \
        if (pred->indices) {                                       \
            int64_t *o = (int64_t *)out;                           \
            for (int64_t i = lo; i < hi; i++)                      \
                if (KEEP(T, K, p[i])) o[c++] = i;                  \
        } else {                                                   \
            T *o = (T *)out;                                       \
            for (int64_t i = lo; i < hi; i++) {                    \
                T v = p[i];                                        \
                if (KEEP(T, K, v)) o[c++] = v;                     \
            }                                                      \
        }                                                          \
        break;                                                     \
    }

int64_t cua_cpu_chunk_compact(const void *x, int dtype, const cua_pred *pred, int64_t lo, int64_t hi, void *out)
{
    int64_t c = 0;
    switch (dtype) {
        CUA_CPU_TYPES(COMPACT_CASE)
    default: break;
    }
    return c;
}

/* Branch-free compaction into a private buffer of at least hi - lo
 * outputs (elements, or indices): every element is stored at the next free slot and the slot
 * advances only when it stays (no mispredicted branch per element at ~50%
 * selectivity). Writes one slot past the kept ones, so never into shared
 * output. */
#define STAGE_CASE(ID, T, K)                     \
    case ID: {                                   \
        const T *p = (const T *)x;               \
        if (pred->indices) {                     \
            int64_t *o = (int64_t *)buf;         \
            for (int64_t i = lo; i < hi; i++) {  \
                o[c] = i;                        \
                c += KEEP(T, K, p[i]);           \
            }                                    \
        } else {                                 \
            T *o = (T *)buf;                     \
            for (int64_t i = lo; i < hi; i++) {  \
                T v = p[i];                      \
                o[c] = v;                        \
                c += KEEP(T, K, v);              \
            }                                    \
        }                                        \
        break;                                   \
    }

int64_t cua_cpu_chunk_stage(const void *x, int dtype, const cua_pred *pred, int64_t lo, int64_t hi, void *buf)
{
    int64_t c = 0;
    switch (dtype) {
        CUA_CPU_TYPES(STAGE_CASE)
    default: break;
    }
    return c;
}
