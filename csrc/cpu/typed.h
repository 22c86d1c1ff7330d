/* typed.h -- the element types the CPU backend's inner loops are expanded
 * for. The rung files hold each algorithm once; the loop files (chunks.c,
 * vector.c, folds.c, bins.c, predicate.c) expand their primitives for every
 * type with CUA_CPU_TYPES, so the loops the rungs spend their time in are
 * plain typed loops the compiler vectorizes. Included by those files only.
 */
#ifndef CUATOMIC_CPU_TYPED_H
#define CUATOMIC_CPU_TYPED_H

/* X(id, C type, member of cua_pred's union holding a bound of this type)
 * for each element type of CUA_DTYPES (cuatomic_abi.h), the one list. */
#define CUA_CPU_TYPE_(X, id, name, ctype, npy, pred) X(id, ctype, pred)
#define CUA_CPU_TYPES(X) CUA_DTYPES_P(CUA_CPU_TYPE_, X)

#endif
