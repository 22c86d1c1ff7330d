/* cuatomic_abi.h -- the plain-C boundary shared by both backends.
 *
 * Everything that crosses from the Python glue (csrc/) into a backend
 * (cuda/ or csrc/cpu/) is declared here: integer ids for element types and
 * operations, the launch configuration, the histogram bins and filter
 * predicate descriptors, the launcher signatures, and the variant-table row.
 * No CUDA, Python or NumPy header is included, so both nvcc and the C
 * compiler see the same definitions.
 */
#ifndef CUATOMIC_ABI_H
#define CUATOMIC_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Element types. NumPy's bool is passed as CUA_BOOL and read as bytes 0/1. */
enum cua_dtype {
    CUA_BOOL = 0,
    CUA_INT8,
    CUA_UINT8,
    CUA_INT16,
    CUA_UINT16,
    CUA_INT32,
    CUA_UINT32,
    CUA_INT64,
    CUA_UINT64,
    CUA_FLOAT32,
    CUA_FLOAT64,
    CUA_NDTYPES
};

/* Accumulator kinds for sum and dot. Integers accumulate in 64 bits with
 * two's-complement wrap-around (the same bits serve int64 and uint64, and a
 * narrower result type is the low bits of the same sum). */
enum cua_acc { CUA_ACC_INT64 = 0, CUA_ACC_FLOAT32, CUA_ACC_FLOAT64 };

enum cua_op {
    CUA_OP_SUM = 0,
    CUA_OP_DOT,
    CUA_OP_HISTOGRAM,
    CUA_OP_FILTER,
    CUA_OP_MUTEX_ADD_ONE,
    CUA_OP_ADD_ONE,
    CUA_OP_PROD,
    CUA_NOPS
};

/* Status returned by every backend entry point: 0 is success, a positive
 * value is a cudaError_t, a negative value is one of these. */
enum cua_status {
    CUA_OK = 0,
    CUA_EINVAL = -1,   /* an argument the method cannot take; see cfg->msg */
    CUA_ENOMEM = -2,   /* host allocation failed */
    CUA_EINTERNAL = -3, /* a bug: an id outside its enum reached a backend */
    CUA_EINTR = -4      /* cua_launch.poll asked the call to stop (Ctrl-C) */
};

/* Variant flags. */
enum cua_flags {
    CUA_F_ORDERED = 1u << 0,   /* filter: output keeps input order */
    CUA_F_RESIDENT = 1u << 1,  /* waits across blocks: all blocks must be resident */
    CUA_F_DEFAULT = 1u << 2,   /* the rung "auto" picks (per op, see docs) */
    CUA_F_WIDE = 1u << 3       /* sum/dot/prod: floats accumulated in float64
                                * with compensation (the caller passes
                                * CUA_ACC_FLOAT64 for every float result) */
};

/* Launch configuration. blocks/threads <= 0 mean "the method's default".
 * On return the launcher has written what actually ran into used_*.
 * A launcher that refuses a configuration writes why into msg. */
typedef struct {
    int64_t blocks;
    int threads;
    void *stream;           /* cudaStream_t on CUDA; ignored on the CPU */
    /* Non-NULL: a device-writable alias of the host `result` (page-locked,
     * mapped memory). A launcher may write the result there from its kernel
     * and skip the copy back; it must still synchronize the stream. */
    void *result_device;
    int64_t used_blocks;
    int used_threads;
    char msg[256];
    /* Ctrl-C. A call that can run long asks poll() (may be NULL) now and
     * then, from the calling thread only; nonzero means stop: the backend
     * sets `interrupted`, winds down what it launched, and returns
     * CUA_EINTR. poll() itself records why (a pending Python exception). */
    int (*poll)(void);
    int interrupted;
    /* Nonzero: a CUA_F_WIDE rung with a CUA_ACC_FLOAT64 result writes its
     * compensated pair unrounded -- the value, then the summed rounding
     * errors: 16 bytes -- so that partial results (the chunks of a host
     * array streamed to the GPU) combine without losing what one rounding
     * would drop. */
    int pair;
} cua_launch;

/* Histogram bins. The bin of x is the largest b in [0, nbins) with
 * edges[b] <= x (compared in the edge type), for edges[0] <= x <= edges[nbins];
 * other values (and NaN) are dropped. This is np.histogram's definition. */
typedef struct {
    int64_t nbins;
    int edge_dtype;      /* CUA_FLOAT32 or CUA_FLOAT64; CUA_INT64 / CUA_UINT64
                          * for data of that type (compared exactly, searched) */
    const void *edges;   /* nbins + 1 monotonic edges, host memory */
    int uniform;         /* evenly spaced: guess arithmetically, then correct */
    double inv_width;    /* nbins / (last - first), for the uniform guess */
    int integer;         /* integer data, integer edges lo + k*width: no float math */
    int64_t ilo;
    int64_t iwidth;
} cua_bins;

/* Filter predicate: keep x iff (lo <= x && x <= hi) != negate, compared in
 * the data's own type. The Python layer turns `x <op> value` into this form
 * with NumPy's comparison rules, so every op and every value type (out of
 * range, fractional, NaN) reduces to one interval test. lo > hi is the empty
 * interval. */
typedef struct {
    int negate;
    union { int64_t i; uint64_t u; double d; float f; } lo, hi;
} cua_pred;

/* Launcher signatures, one per operation. Pointers are device pointers on
 * CUDA and host pointers on the CPU, except `result`/`count` (always host)
 * and the bins' edges (always host). */
typedef int (*cua_sum_fn)(const void *x, int64_t n, int dtype, int acc,
                          void *result, cua_launch *cfg);
/* prod has the same shape as sum. */
typedef cua_sum_fn cua_prod_fn;
typedef int (*cua_dot_fn)(const void *a, const void *b, int64_t n, int dtype,
                          int acc, void *result, cua_launch *cfg);
typedef int (*cua_hist_fn)(const void *x, int64_t n, int dtype,
                           const cua_bins *bins, uint64_t *counts,
                           cua_launch *cfg);
typedef int (*cua_filter_fn)(const void *x, int64_t n, int dtype,
                             const cua_pred *pred, void *out, int64_t *count,
                             cua_launch *cfg);
typedef int (*cua_counter_fn)(int64_t *result, cua_launch *cfg);

typedef void (*cua_fn)(void);

/* One rung of a ladder: the only thing csrc/ sees of a kernel. */
typedef struct {
    const char *name;     /* the idea: "atomic", "block_tree", ... */
    int step;             /* position in the tutorial's order */
    const char *summary;  /* what this rung fixes, in one line */
    unsigned flags;       /* enum cua_flags */
    cua_fn fn;            /* cast to the op's cua_*_fn */
} cua_variant;

/* Size in bytes of one element of a cua_dtype, 0 for an unknown id. */
static inline size_t cua_dtype_size(int dtype)
{
    switch (dtype) {
    case CUA_BOOL: case CUA_INT8: case CUA_UINT8: return 1;
    case CUA_INT16: case CUA_UINT16: return 2;
    case CUA_INT32: case CUA_UINT32: case CUA_FLOAT32: return 4;
    case CUA_INT64: case CUA_UINT64: case CUA_FLOAT64: return 8;
    default: return 0;
    }
}

#ifdef __cplusplus
}
#endif

#endif /* CUATOMIC_ABI_H */
