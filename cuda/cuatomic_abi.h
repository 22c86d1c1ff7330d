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

/* Element types, the one list of them: id, name (NumPy's), the C type the
 * kernels and loops read it as, NumPy's type number (a token only the
 * Python glue expands), and the member of cua_pred's union that holds a
 * bound of this type. NumPy's bool is passed as CUA_BOOL and read as bytes
 * 0/1. The enum, the names _C exports, cua_dtype_size, the CUDA dispatch
 * (common.cuh), the CPU loops (cpu/typed.h) and the NumPy types of results
 * (filter.c) all come from it.
 *
 * CUA_DTYPES_P(X, p) passes p first to every X (for a list made of
 * another macro's X); CUA_DTYPES(X) calls X(id, name, ctype, npy, pred).
 * The ids are written whole (CUA_INT8, not INT8 pasted later): forwarded
 * through __VA_ARGS__, a short name would be macro-expanded first. */
#define CUA_DTYPES_P(X, p)                              \
    X(p, CUA_BOOL, "bool", uint8_t, NPY_BOOL, u)        \
    X(p, CUA_INT8, "int8", int8_t, NPY_INT8, i)         \
    X(p, CUA_UINT8, "uint8", uint8_t, NPY_UINT8, u)     \
    X(p, CUA_INT16, "int16", int16_t, NPY_INT16, i)     \
    X(p, CUA_UINT16, "uint16", uint16_t, NPY_UINT16, u) \
    X(p, CUA_INT32, "int32", int32_t, NPY_INT32, i)     \
    X(p, CUA_UINT32, "uint32", uint32_t, NPY_UINT32, u) \
    X(p, CUA_INT64, "int64", int64_t, NPY_INT64, i)     \
    X(p, CUA_UINT64, "uint64", uint64_t, NPY_UINT64, u) \
    X(p, CUA_FLOAT32, "float32", float, NPY_FLOAT32, f) \
    X(p, CUA_FLOAT64, "float64", double, NPY_FLOAT64, d)
#define CUA_DTYPE_CALL_(X, ...) X(__VA_ARGS__)
#define CUA_DTYPES(X) CUA_DTYPES_P(CUA_DTYPE_CALL_, X)

#define CUA_DTYPE_ENUM_(id, ...) id,
enum cua_dtype { CUA_DTYPES(CUA_DTYPE_ENUM_) CUA_NDTYPES };

/* Accumulator kinds for sum and dot. Integers accumulate in 64 bits with
 * two's-complement wrap-around (the same bits serve int64 and uint64, and a
 * narrower result type is the low bits of the same sum). */
enum cua_acc { CUA_ACC_INT64 = 0, CUA_ACC_FLOAT32, CUA_ACC_FLOAT64 };

/* Operations: id, name (the Python function's), row type of its ladder.
 * The enum, the names _C exports and each backend's ladder index
 * (CUA_LADDER_INDEX) all come from this one list. */
#define CUA_OPS(X, p)                                \
    X(p, SUM, sum, cua_sum_row)                      \
    X(p, DOT, dot, cua_dot_row)                      \
    X(p, HISTOGRAM, histogram, cua_hist_row)         \
    X(p, FILTER, filter, cua_filter_row)             \
    X(p, MUTEX_ADD_ONE, mutex_add_one, cua_counter_row) \
    X(p, ADD_ONE, add_one, cua_counter_row)          \
    X(p, PROD, prod, cua_prod_row)                   \
    X(p, REDUCE, reduce, cua_reduce_row) \
    X(p, WEIGHTED_HISTOGRAM, weighted_histogram, cua_whist_row) \
    X(p, AT, at, cua_scatter_row)                    \
    X(p, ARGMIN, argmin, cua_arg_row)                \
    X(p, HISTOGRAMDD, histogramdd, cua_histdd_row)   \
    X(p, SEGMENTED, segmented, cua_segmented_row)    \
    X(p, UNIQUE, unique, cua_unique_row)

#define CUA_OP_ENUM_(p, id, name, row) CUA_OP_##id,
enum cua_op { CUA_OPS(CUA_OP_ENUM_, ~) CUA_NOPS };

/* The ufuncs `reduce` folds an array with: id, name (NumPy's). The enum and
 * the names _C exports (REDUCE_OPS) come from this one list. */
#define CUA_REDUCE_OPS(X)                   \
    X(ADD, "add")                           \
    X(MULTIPLY, "multiply")                 \
    X(MINIMUM, "minimum")                   \
    X(MAXIMUM, "maximum")                   \
    X(BITWISE_AND, "bitwise_and")           \
    X(BITWISE_OR, "bitwise_or")             \
    X(BITWISE_XOR, "bitwise_xor")

#define CUA_REDUCE_ENUM_(id, name) CUA_REDUCE_##id,
enum cua_reduce_op { CUA_REDUCE_OPS(CUA_REDUCE_ENUM_) CUA_NREDUCE_OPS };

/* The type of reduce's result for data of `dtype` folded with `op`: the
 * kernels decide it, from these two ids alone (the caller passes no
 * accumulator), and write the result as 8 bytes of it:
 *   add, multiply  CUA_UINT64 for integers and bool (wrapping modulo 2^64:
 *                  every narrower result type is its low bits, as NumPy's
 *                  wrap), CUA_FLOAT64 for floats (float32 widened);
 *   minimum, maximum, bitwise_*
 *                  the element's own value, widened exactly: CUA_INT64 for
 *                  signed integers, CUA_UINT64 for unsigned ones and bool
 *                  (0/1), CUA_FLOAT64 for floats.
 * -1 for an op id out of range or a bitwise op on floats (no such ufunc
 * loop in NumPy). Chunks of one call combine in this type too. */
static inline int cua_reduce_kind(int dtype, int op)
{
    const int is_float = dtype == CUA_FLOAT32 || dtype == CUA_FLOAT64;
    const int is_signed = dtype == CUA_INT8 || dtype == CUA_INT16 || dtype == CUA_INT32 || dtype == CUA_INT64;
    if (dtype < 0 || dtype >= CUA_NDTYPES || op < 0 || op >= CUA_NREDUCE_OPS) return -1;
    if (is_float) return op <= CUA_REDUCE_MAXIMUM ? CUA_FLOAT64 : -1;
    if (op == CUA_REDUCE_ADD || op == CUA_REDUCE_MULTIPLY) return CUA_UINT64;
    return is_signed ? CUA_INT64 : CUA_UINT64;
}

/* Status returned by every backend entry point: 0 is success, a positive
 * value is a cudaError_t, a negative value is one of these. */
enum cua_status {
    CUA_OK = 0,
    CUA_EINVAL = -1,   /* an argument the method cannot take; see cfg->msg */
    CUA_ENOMEM = -2,   /* host allocation failed */
    CUA_EINTERNAL = -3, /* a bug: an id outside its enum reached a backend */
    CUA_EINTR = -4      /* cua_launch.poll asked the call to stop (Ctrl-C) */
};

/* What a rung is, as flags of its table row. Tests and "auto" read these,
 * never a rung's name. */
enum cua_flags {
    CUA_F_ORDERED = 1u << 0,       /* filter: output keeps input order */
    CUA_F_RESIDENT = 1u << 1,      /* waits across blocks: all blocks must be resident */
    CUA_F_DETERMINISTIC = 1u << 2, /* the same input gives the same bits every call
                                    * (float sums: a fixed order of additions) */
    CUA_F_WIDE = 1u << 3,          /* sum/dot/prod: floats accumulated in float64
                                    * with compensation (the caller passes
                                    * CUA_ACC_FLOAT64 for every float result);
                                    * reduce: float add and multiply as accurate
                                    * as NumPy's or better */
    CUA_F_RACY = 1u << 4,          /* the lesson's race: loses updates on purpose,
                                    * so its result is not the answer ("auto"
                                    * never runs it) */
    CUA_F_EXACT = 1u << 5,         /* sum/dot of any dtype: the rung writes the
                                    * exact sum's state (a cua_xacc, xacc.h) to the
                                    * host `result`; the caller rounds it once to
                                    * a float result or wraps it to an integer one */
    CUA_F_ARRIVAL = 1u << 6        /* sum/dot: floats added one element or one
                                    * thread's partial at a time, in the order the
                                    * threads arrive, so no bound tighter than any
                                    * order's holds. Unflagged, inexact sum/dot
                                    * rungs combine shares in a tree or in block
                                    * order: an error that grows with log n */
};

/* How the caller wants a scalar result (sum, dot, prod, reduce; filter's
 * count) written, beside the host `result` every launcher of those ops
 * fills: the result route's part that reaches a launcher. Every field is
 * optional for the launcher -- one that ignores `device` and `flag` is
 * correct, since the caller reads the host result after the launcher's
 * wait -- except `pair`, the format a CUA_F_WIDE rung must write. The glue
 * fills it (csrc/call.c: cua_slot_result, cua_slot_output). The histogram
 * launchers never read it: the result route after them does (cua_deliver,
 * cuda/route.cu). */
typedef struct {
    /* Non-NULL: a device-writable alias of the host `result` (a call slot's
     * page-locked, mapped memory). A launcher may write the result there
     * from its kernel and skip the copy back; it must still wait for the
     * stream, or for the flag below. */
    void *device;
    /* With `device`: a word of the same mapped memory, zeroed by the
     * caller, as the device writes it (`flag`) and as the host reads it
     * (`flag_host`). A launcher whose kernel writes the result into
     * `device` may also raise the flag after it (cua_raise_flag) and wait
     * for the flag instead of the stream (cua_wait_result): the host sees
     * the flag about a microsecond before the stream reports done. */
    unsigned *flag;
    volatile unsigned *flag_host;
    /* Nonzero: a CUA_F_WIDE rung with a CUA_ACC_FLOAT64 result writes its
     * compensated pair unrounded -- the value, then the summed rounding
     * errors: 16 bytes -- so that partial results (the chunks of a host
     * array streamed to the GPU) combine without losing what one rounding
     * would drop. */
    int pair;
} cua_result;

/* Launch configuration. blocks/threads <= 0 mean "the method's default".
 * On return the launcher has written what actually ran into used_*.
 * A launcher that refuses a configuration writes why into msg. */
typedef struct {
    int64_t blocks;
    int threads;
    void *stream;           /* cudaStream_t on CUDA; ignored on the CPU */
    int64_t used_blocks;
    int used_threads;
    /* The CPU backend: the OS threads (OpenMP team) that ran the launch,
     * sized to the work (cua_cpu_team in csrc/cpu). 0 on CUDA. */
    int used_team;
    int64_t chunks;         /* launches made for this call (host input streamed in pieces: one per piece) */
    char msg[256];
    /* Ctrl-C. A call that can run long asks poll() (may be NULL) now and
     * then, from the calling thread only; nonzero means stop: the backend
     * sets `interrupted`, winds down what it launched, and returns
     * CUA_EINTR. poll() itself records why (a pending Python exception). */
    int (*poll)(void);
    int interrupted;
    /* The scalar result's route (cua_result): zeroed by cua_launch_config,
     * filled by the glue where a call slot is free. */
    cua_result result;
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
    int integer;         /* integer data, integer edges lo + k*width: no float math.
                          * 64-bit data too (bincount's), for bins that lie
                          * within int64 (lo + width * nbins <= INT64_MAX) */
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
    int indices;  /* what a filter rung writes: 0 the kept elements (filter),
                   * 1 their int64 indices (nonzero, flatnonzero, argwhere,
                   * compress: the same rungs, returning indices) */
    int64_t capacity; /* indices: how many `out` holds (the CUDA rungs write
                       * no index past it; the count may still say more) */
} cua_pred;

/* histogramdd's sample and bins: point i has coordinate d at
 * cols[d][i * strides[d]] (elements of the call's dtype; a (N, D) array's
 * columns, or D separate arrays), binned in dimension d by bins[d] (one
 * edge_dtype for every dimension). The cell of a point is its bins' index
 * in C order over the dimensions' bin counts; a point outside any
 * dimension's edges (or NaN in any) is dropped, as np.histogramdd drops it. */
#define CUA_DD_MAX 16
typedef struct {
    int ndim;
    const void *cols[CUA_DD_MAX];
    int64_t strides[CUA_DD_MAX];
    cua_bins bins[CUA_DD_MAX];
} cua_sample;

/* nonzero's coordinates (unravel, on either backend): NumPy 2's most
 * dimensions. */
#define CUA_UNRAVEL_MAX_DIMS 64

/* Launcher signatures, one per operation. Pointers are device pointers on
 * CUDA and host pointers on the CPU, except `result`/`count` (always host)
 * and the bins' edges (always host). */
typedef int (*cua_sum_fn)(const void *x, int64_t n, int dtype, int acc,
                          void *result, cua_launch *cfg);
/* prod has the same shape as sum. */
typedef cua_sum_fn cua_prod_fn;
typedef int (*cua_dot_fn)(const void *a, const void *b, int64_t n, int dtype,
                          int acc, void *result, cua_launch *cfg);
/* histogram: nbins counts into `counts` (device memory on CUDA, host memory
 * on the CPU), which the launcher zeroes first. A CUDA launcher returns once
 * its work is queued on cua_stream(cfg), without waiting: the caller routes
 * the counts on (the result route, cua_cuda_deliver) and waits once. */
typedef int (*cua_hist_fn)(const void *x, int64_t n, int dtype,
                           const cua_bins *bins, uint64_t *counts,
                           cua_launch *cfg);
/* Weighted histogram: sums[b] = the sum of w[i] over the x[i] in bin b.
 * w and sums are float64 (wdtype CUA_FLOAT64) or int64 (CUA_INT64, summed
 * with two's-complement wrap-around: exact modulo 2^64); the Python layer
 * casts every other weight dtype to one of these. sums holds nbins values
 * and, like counts, is device memory on CUDA, written without a wait. */
typedef int (*cua_whist_fn)(const void *x, const void *w, int64_t n, int dtype, int wdtype,
                            const cua_bins *bins, void *sums, cua_launch *cfg);
/* filter: the kept elements (or, with pred->indices, their int64 indices)
 * into `out` (device memory on CUDA), in input order unless the rung is
 * unordered, and their number into *count (host memory; with
 * cfg->result.device, that is *count's device side). */
typedef int (*cua_filter_fn)(const void *x, int64_t n, int dtype,
                             const cua_pred *pred, void *out, int64_t *count,
                             cua_launch *cfg);
/* histogramdd: the count of every cell (the product of the dimensions' bin
 * counts, C order) into `hist` as float64 (np.histogramdd's type; exact
 * below 2^53), device memory on CUDA; the launcher waits for it. */
typedef int (*cua_histdd_fn)(const cua_sample *s, int64_t n, int dtype, double *hist, cua_launch *cfg);
typedef int (*cua_counter_fn)(int64_t *result, cua_launch *cfg);
/* reduce: x folded with `op` (enum cua_reduce_op); `result` (host) gets 8
 * bytes of cua_reduce_kind(dtype, op) -- or, with cfg->pair on a
 * CUA_F_WIDE rung's float add, 16: the compensated pair, unrounded. n == 0
 * gives the op's identity; minimum and maximum have none and refuse it. */
typedef int (*cua_reduce_fn)(const void *x, int64_t n, int dtype, int op, void *result /* 8 bytes, host */,
                             cua_launch *cfg);

/* segmented (reductions along axes: sum, prod, min, max, reduce, mean with
 * axis=): x seen as (outer, m, inner) in C order; output k = o * inner + i
 * folds the m elements x[(o * m + j) * inner + i] with `op`. Float add is
 * compensated on the deterministic rungs. m == 0 gives the op's identity
 * (the Python layer refuses minimum and maximum of an empty axis without
 * `initial`, as NumPy).
 *
 * Where the outputs go (cua_seg_out): with `result` NULL, into values[k], 8
 * bytes of cua_reduce_kind(dtype, op) each (host memory on the CPU, device
 * memory on CUDA); with `result` (CUDA only: device memory), finished as
 * NumPy's result: read as `kind` (cua_reduce_kind, or CUA_INT64 for the
 * signed reading of a wrapping integer sum), divided by `divisor` when it
 * is >= 0 (a mean; 0 gives NaN), cast to `result_dtype` (integers keep
 * their low bits, bool is value != 0) -- by the rung's own last store or
 * by a finishing kernel queued after it (segmented.cu). A CUDA
 * launcher returns once its work is queued on cua_stream(cfg), without
 * waiting (as the histogram's): the glue waits once. */
typedef struct {
    void *values;
    void *result;
    int result_dtype, kind;
    double divisor;
} cua_seg_out;
typedef int (*cua_segmented_fn)(const void *x, int64_t outer, int64_t m, int64_t inner, int dtype, int op,
                                const cua_seg_out *out, cua_launch *cfg);

/* argmin/argmax: the index of the first smallest (max != 0: largest)
 * element of x, the first NaN before every number (np.argmin/np.argmax of
 * the flattened array), into *index (host); n >= 1 (the glue refuses an
 * empty array, as NumPy does). The launcher waits once (CUA_WAIT). */
typedef int (*cua_arg_fn)(const void *x, int64_t n, int dtype, int max, int64_t *index /* host */,
                          cua_launch *cfg);
/* argkeys (argmin/argmax along an axis: cuatomic/_argmin.py): x seen as
 * (outer, m, inner) in C order turned into 8-byte words for the segmented
 * ladder's minimum (cuda/argmin.cu tells the three modes). */
enum { CUA_ARGKEYS_PACKED = 0, CUA_ARGKEYS_KEY = 1, CUA_ARGKEYS_MATCH = 2 };
/* An argmin rung's limits: 0 if it can take n elements of dtype, else
 * CUA_EINVAL with the limit in cfg->msg (NULL in a row: no limit). */
typedef int (*cua_arg_fits_fn)(int64_t n, int dtype, cua_launch *cfg);
/* argmin's `packed` rung keeps an element's key (its size in bits) and its
 * index in one 64-bit word: the bits left for the index (0: none, an 8-byte
 * element), and the two refusals, one wording for both backends (the
 * element's size; the index bits, n, the index bits). */
static inline int cua_packed_index_bits(size_t elem_size) { return elem_size < 8 ? 64 - 8 * (int)elem_size : 0; }
#define CUA_PACKED_NO_INDEX_BITS                                                                    \
    "method 'packed' packs the value's key and the index into 64 bits: a %d-byte element leaves no " \
    "bits for the index (use 'cas', 'block_tree' or 'vector')"
#define CUA_PACKED_TOO_MANY                                                                         \
    "method 'packed' keeps the index in the %d bits below the key: n = %lld is more than 2^%d "      \
    "(use 'cas', 'block_tree' or 'vector')"

/* Scatter (np.<op>.at): for every update k < n and every j < row, element
 * idx[k] * row + j of `out` (m rows of `row` elements of `dtype`, C order)
 * becomes out[e] OP v, v = vals[k * vk + j * vj] (strides in elements; 0
 * broadcasts), negated first when `negate` (subtract: a - v is a + (-v) in
 * IEEE arithmetic and in wrapping integers alike). op is an enum
 * cua_reduce_op (no bitwise op on floats). idx holds n indices of idx_dtype
 * (CUA_INT32 or CUA_INT64); a negative one counts from the end. With
 * `bad` NULL every one is in [-m, m): the caller checked them first
 * (cua_cuda_scatter_check / cua_cpu_scatter_check), so nothing is written
 * when one is not. Otherwise (the CUA_F_EXACT rungs, whose accumulators
 * take every update before anything is written to `out`, and n * row > 0)
 * the rung checks them in its own pass over the updates (no pass of its
 * own for the check) -- writes the first position of one outside [-m, m) to
 * *bad (-1: none) and then leaves `out` untouched. `out`, `idx` and `vals`
 * are device memory on CUDA. The launcher updates `out` in place and waits
 * once (CUA_WAIT) before it returns. */
typedef struct {
    int64_t m, row, n;
    int64_t vk, vj;
    int dtype, op, idx_dtype, negate;
    int64_t *bad; /* host memory */
} cua_scatter;
typedef int (*cua_scatter_fn)(void *out, const void *idx, const void *vals, const cua_scatter *s,
                              cua_launch *cfg);
/* A scatter rung's limits, as the histogram's: 0 if it can take this call
 * (dtype, op, shape; not the data) with the launch configuration asked for
 * on the current device, else CUA_EINVAL with the limit in cfg->msg. */
typedef int (*cua_scatter_fits_fn)(const cua_scatter *s, cua_launch *cfg);
/* The message of the exact rungs' limit, one for both backends (the
 * rung's name, the dtype, the op). */
#define CUA_EXACT_SCATTER_ONLY                                                                               \
    "method '%s' scatters float add and subtract (got %s %s): integer, minimum, maximum and bitwise "         \
    "results are exact with every method"

/* unique (np.unique of the flattened input): every rung builds a table of
 * the distinct values of n elements of `dtype` -- each value's count, and
 * with CUA_UNIQUE_FIRST the index of its first occurrence -- and the
 * backend's finish (cua_cuda_unique_finish / cua_cpu_unique_finish) writes
 * NumPy's outputs from it.
 *
 * Keys. A value is read as a word (uint32 for elements of up to 4 bytes,
 * uint64 for 8) that keeps its order: unsigned integers as they are, signed
 * ones sign-extended with the top bit flipped, floats with the sign bit
 * flipped (positive) or every bit flipped (negative), after -0.0 became 0.0
 * and every NaN the canonical quiet NaN (so the NaNs are one key, after
 * +inf, as np.unique's equal_nan=True has it; the glue splits them for
 * equal_nan=False). Sorting the words sorts the values.
 *
 * The hash tables (open addressing, linear probing) mark an empty slot
 * with the all-ones word, CUA_UNIQUE_EMPTY. A key equal to it (uint32's or
 * uint64's largest value, int32's or int64's: no float, no narrower type)
 * is never inserted: it is counted in a cell of its own beside the table
 * (`side`), and, being the largest word, comes last in sorted order.
 *
 * `keys`, `counts`, `first` (cap slots, device memory on CUDA) and `ctl`
 * (control words: CUA_UNIQUE_CTL_*) belong to the backend: the rung
 * allocates them, the backend's unique_free releases them. A rung whose
 * table is already compact and sorted (the sort rung) sets `compact`:
 * keys[0:distinct] in order, no empty slot, no side cell -- and, with
 * CUA_UNIQUE_INVERSE, writes `inverse` itself. Each backend gives
 * `compact` values of its own beyond 0 (a hash table) and 1 (that list):
 * the CUDA sort's runs leave `keys` empty and the sorted keys in `keep`. */
#define CUA_UNIQUE_FIRST 1u    /* the first index of every value */
#define CUA_UNIQUE_INVERSE 2u  /* the inverse (int64, n of them, into `inverse`) */
#define CUA_UNIQUE_SORTED 4u   /* values in sorted order (else any order) */
enum {
    CUA_UNIQUE_CTL_FILLED = 0,   /* slots claimed */
    CUA_UNIQUE_CTL_OVERFLOW = 1, /* nonzero: the table passed its load limit; grow and build again */
    CUA_UNIQUE_CTL_SIDE_COUNT = 2,
    CUA_UNIQUE_CTL_SIDE_FIRST = 3,
    CUA_UNIQUE_CTL_WORDS = 4
};
typedef struct {
    unsigned want;     /* CUA_UNIQUE_* */
    int word;          /* key bytes: 4 or 8 */
    int64_t cap;       /* slots (a power of two for the hash tables) */
    void *keys;
    uint64_t *counts;
    uint64_t *first;   /* NULL without CUA_UNIQUE_FIRST */
    uint64_t *ctl;     /* CUA_UNIQUE_CTL_WORDS words */
    int compact;
    int64_t distinct;  /* set by the rung (after its wait): the values found, side cell included */
    int64_t *inverse;  /* CUA_UNIQUE_INVERSE: n int64 (the glue's; device memory on CUDA) */
    int64_t builds;    /* tables built: 1, or more where the table filled and grew */
    int64_t filled;    /* a hash table's claimed slots (CUDA: set with `distinct`, so the finish needs no read back) */
    void *keep;        /* what a build keeps for the finish, freed with the table: device memory on CUDA (the
                        * sorted keys); the CPU partition's lists in place */
} cua_unique_tab;
typedef int (*cua_unique_fn)(const void *x, int64_t n, int dtype, cua_unique_tab *t, cua_launch *cfg);
/* The outputs the finish writes, t->distinct of each (NULL: not wanted),
 * device memory on CUDA: the values (dtype), first indices and counts
 * (int64); and the inverse (n of them) unless the rung wrote it. */
typedef struct {
    void *values;
    int64_t *index;
    int64_t *counts;
} cua_unique_out;
#define CUA_UNIQUE_EMPTY32 0xFFFFFFFFu
#define CUA_UNIQUE_EMPTY64 0xFFFFFFFFFFFFFFFFull

/* A histogram rung's limits: 0 if it can count `dtype` data in these bins
 * (only nbins, integer, ilo and iwidth are read: the edges may be NULL)
 * with the launch configuration asked for (blocks/threads <= 0: its
 * defaults) on the current device; else CUA_EINVAL with the limit in
 * cfg->msg. The launcher applies the same test, so an explicitly requested
 * rung that cannot run raises, and "auto" asks first and picks another. */
typedef int (*cua_hist_fits_fn)(const cua_bins *bins, int dtype, cua_launch *cfg);

/* A filter rung's limits, the same way: 0 if it can filter `dtype` data at
 * address x (device memory; NULL: memory the call allocates, aligned to 256
 * bytes) with the launch configuration asked for on the current device. */
typedef int (*cua_filter_fits_fn)(const void *x, int dtype, cua_launch *cfg);

/* A histogramdd rung's limits, the same way: 0 if it can count this
 * sample's cells with the launch configuration asked for on this device. */
typedef int (*cua_histdd_fits_fn)(const cua_sample *s, int dtype, cua_launch *cfg);

/* What every row of every ladder starts with: the only part of a rung that
 * is not typed by its op. */
typedef struct {
    const char *name;     /* the idea: "atomic", "block_tree", ... */
    int step;             /* position in the tutorial's order (rows are in this order) */
    const char *summary;  /* what this rung fixes, in one line */
    unsigned flags;       /* enum cua_flags */
} cua_rung;

/* One row type per op: the rung, then its launcher with the op's own
 * signature (the compiler checks every row). */
typedef struct { cua_rung rung; cua_sum_fn run; } cua_sum_row;
typedef struct { cua_rung rung; cua_prod_fn run; } cua_prod_row;
typedef struct { cua_rung rung; cua_dot_fn run; } cua_dot_row;
typedef struct { cua_rung rung; cua_hist_fn run; cua_hist_fits_fn fits; } cua_hist_row;
/* The weighted ladder's limits have the histogram's shape (8-byte sums
 * whatever the weights' type). */
typedef struct { cua_rung rung; cua_whist_fn run; cua_hist_fits_fn fits; } cua_whist_row;
typedef struct { cua_rung rung; cua_filter_fn run; cua_filter_fits_fn fits; } cua_filter_row;
typedef struct { cua_rung rung; cua_counter_fn run; } cua_counter_row;
typedef struct { cua_rung rung; cua_reduce_fn run; } cua_reduce_row;
typedef struct { cua_rung rung; cua_scatter_fn run; cua_scatter_fits_fn fits; } cua_scatter_row;
typedef struct { cua_rung rung; cua_arg_fn run; cua_arg_fits_fn fits; } cua_arg_row;
typedef struct { cua_rung rung; cua_histdd_fn run; cua_histdd_fits_fn fits; } cua_histdd_row;
typedef struct { cua_rung rung; cua_segmented_fn run; } cua_segmented_row;
typedef struct { cua_rung rung; cua_unique_fn run; } cua_unique_row;

/* One op's ladder as csrc/ indexes it: `rows` points at an array of the
 * op's row type (the cua_rung comes first in each), `stride` is that
 * type's size. */
typedef struct {
    const void *rows;
    size_t stride;
    int count;
} cua_ladder;

#define CUA_LADDER(table) {(table), sizeof((table)[0]), (int)(sizeof(table) / sizeof((table)[0]))}

static inline const cua_rung *cua_ladder_rung(const cua_ladder *ladder, int i)
{
    return (const cua_rung *)((const char *)ladder->rows + (size_t)i * ladder->stride);
}

/* Size in bytes of one element of a cua_dtype, 0 for an unknown id. */
static inline size_t cua_dtype_size(int dtype)
{
#define CUA_DTYPE_SIZE_(id, name, ctype, ...) case id: return sizeof(ctype);
    switch (dtype) {
    CUA_DTYPES(CUA_DTYPE_SIZE_)
    default: return 0;
    }
#undef CUA_DTYPE_SIZE_
}

/* The histogram's `bytes` rung counts only 1-byte data (int8, uint8, bool)
 * in integer bins of width one (edges lo, lo + 1, ..., lo + nbins), by the
 * byte's value. Both backends' `fits` and launchers refuse anything else
 * with one of these messages (CUA_BYTES_ONLY takes the data's item size). */
static inline int cua_byte_bins(const cua_bins *bins)
{
    return bins->integer && bins->iwidth == 1;
}
#define CUA_BYTES_ONLY_                                                                                     \
    "method 'bytes' counts 1-byte data (int8, uint8, bool) in bins of width one at integer edges, such as " \
    "bins=256, range=(0, 256) "
#define CUA_BYTES_ONLY CUA_BYTES_ONLY_ "(got %d-byte data); use method='warp_private'"
#define CUA_BYTE_BINS_ONLY CUA_BYTES_ONLY_ "(got other bins); use method='warp_private'"

/* A backend's index of its ladders: defines `const cua_ladder
 * *<prefix>_ladder(int op)` over the tables `<prefix>_<op>_ladder` that the
 * backend's op files define (NULL for an id outside enum cua_op). */
#define CUA_LADDER_DECL_(p, id, name, row) extern const cua_ladder p##_##name##_ladder;
#define CUA_LADDER_CASE_(p, id, name, row) case CUA_OP_##id: return &p##_##name##_ladder;
#define CUA_LADDER_INDEX(prefix)                    \
    CUA_OPS(CUA_LADDER_DECL_, prefix)               \
    const cua_ladder *prefix##_ladder(int op)       \
    {                                               \
        switch (op) {                               \
            CUA_OPS(CUA_LADDER_CASE_, prefix)       \
        default: return NULL;                       \
        }                                           \
    }

#ifdef __cplusplus
}
#endif

#include "xacc.h" /* the exact sums' state (CUA_F_EXACT) */

#endif /* CUATOMIC_ABI_H */
