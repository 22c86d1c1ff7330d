/* typed.h -- the element types the CPU backend's inner loops are expanded
 * for. The rung files hold each algorithm once; the loop files (chunks.c,
 * vector.c, folds.c, bins.c, predicate.c) expand their primitives for every
 * type with CUA_CPU_TYPES, so the loops the rungs spend their time in are
 * plain typed loops the compiler vectorizes. Included by those files only.
 */
#ifndef CUATOMIC_CPU_TYPED_H
#define CUATOMIC_CPU_TYPED_H

/* id, C type, member of cua_pred's union holding a bound of this type */
#define CUA_CPU_TYPES(X)          \
    X(CUA_BOOL, uint8_t, u)       \
    X(CUA_INT8, int8_t, i)        \
    X(CUA_UINT8, uint8_t, u)      \
    X(CUA_INT16, int16_t, i)      \
    X(CUA_UINT16, uint16_t, u)    \
    X(CUA_INT32, int32_t, i)      \
    X(CUA_UINT32, uint32_t, u)    \
    X(CUA_INT64, int64_t, i)      \
    X(CUA_UINT64, uint64_t, u)    \
    X(CUA_FLOAT32, float, f)      \
    X(CUA_FLOAT64, double, d)

#endif
