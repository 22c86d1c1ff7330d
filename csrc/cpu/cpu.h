/* cpu.h -- the CPU backend: the same ladders with OpenMP threads and C11
 * atomics, under the same names as cuda/.
 *
 * A launch's blocks x threads are logical workers. The OpenMP team runs
 * them: logical block b is handled by one OpenMP thread, its logical
 * threads one after another, and each logical worker's share of the data is
 * one contiguous chunk (the CPU form of a grid-stride loop: the same
 * partition into blocks*threads shares, laid out for caches instead of for
 * coalescing). Atomics, locks, fences and barriers act between OpenMP
 * threads exactly as the CUDA rungs act between blocks.
 *
 * The rung files (sum.c, dot.c, histogram.c, weighted.c, filter.c, mutex.c,
 * custom.c, reduce.c) hold one ladder each; what they share is declared here,
 * grouped by the file that defines it.
 */
#ifndef CUATOMIC_CPU_H
#define CUATOMIC_CPU_H

#include <stdatomic.h>

#include "../../cuda/cuatomic_abi.h"

/* ---- variants.c: the index of the ladders ---- */

/* The ladder of one op, in tutorial order; NULL for an unknown op. */
const cua_ladder *cua_cpu_ladder(int op);

/* ---- team.c: the logical grid on the OpenMP team ---- */

/* Threads in the OpenMP team (omp_get_max_threads). */
int cua_cpu_threads(void);

/* Elements of work an OS thread must have before a launch wakes one more:
 * waking a teammate and joining it costs microseconds on an idle machine,
 * and a scheduler tick or more (4 ms on a 250 Hz kernel) when no core is
 * free: the teammate waits for one while libgomp's barrier spins. 2^16
 * elements take one thread 15 us on the cheapest rung (sum `vector`) and
 * 0.3 ms on the per-element atomics, so a second thread gains little below
 * 2^17 even on an idle machine. The counters count an increment as an
 * element. */
#define CUA_CPU_GRAIN ((int64_t)1 << 16)
/* The OS threads to run a launch with: at most the team (cua_cpu_threads),
 * at most `units` (the pieces a thread takes whole: logical blocks, chunks,
 * tiles), and at most one per CUA_CPU_GRAIN elements of `work`; at least
 * one. A rung run by one thread is still that rung: it makes the same
 * atomics, locks and barriers, nobody else contends. Recorded in
 * cfg->used_team (last_launch's cpu_threads); every parallel region of a
 * launch passes it as num_threads. */
int cua_cpu_team(cua_launch *cfg, int64_t work, int64_t units);

/* The lanes of a warp: the default block, and the groups of warp_lock. */
#define CUA_CPU_WARP 32
/* Logical threads per block by default: one warp. A block's threads run one
 * after another on one OpenMP thread, so a bigger block would only lengthen
 * its tree. */
#define CUA_CPU_BLOCK_THREADS CUA_CPU_WARP
/* Logical blocks per OpenMP thread by default: a few, as a GPU's default
 * grid has several blocks per SM, so that each thread runs the rungs'
 * per-block steps (the tree, the atomic add, the partial) more than once. */
#define CUA_CPU_BLOCKS_PER_THREAD 4
/* The most logical threads a block can have: the block tree keeps one lane
 * per thread on the stack. The glue refuses more (CUA_MAX_THREADS in
 * csrc/call.h, checked against this there). */
#define CUA_CPU_MAX_BLOCK_THREADS 1024

/* Elements a logical thread has at least, when the grid would give it
 * fewer: its unit of work, where a GPU thread's is one element (or one
 * 16-byte vector, cuda/common.cuh's cua_clamp_grid). One OS thread runs
 * logical threads one after another, and each costs it tens of nanoseconds
 * -- its share's bounds, the Ctrl-C check, its partial, its atomic -- which
 * 64 elements amortize. */
#define CUA_CPU_MIN_SHARE 64
/* Never more blocks than have work, as cua_clamp_grid on CUDA: at most one
 * per `per_block` elements of n (at least one block; per_block is threads *
 * CUA_CPU_MIN_SHARE, or a rung's own unit), written to used_blocks (what
 * last_launch reports). A grid of 2^31 - 1 blocks on 2^20 elements gave
 * every element a block of its own, each block paying its per-block step
 * (a tree, a private histogram, a superaccumulator). */
void cua_cpu_clamp_grid(cua_launch *cfg, int64_t n, int64_t per_block);
/* Fill in defaults -- CUA_CPU_BLOCK_THREADS threads and
 * CUA_CPU_BLOCKS_PER_THREAD blocks per OpenMP thread -- and clamp the grid
 * (cua_cpu_clamp_grid, CUA_CPU_MIN_SHARE elements per logical thread). */
void cua_cpu_default_config(cua_launch *cfg, int64_t n);
/* A launch's logical grid, defaults filled in (cua_cpu_default_config):
 * threads per block, logical threads in all, how many of those and of the
 * blocks have elements of n to work on (only those are run), and the OS
 * threads that run them. */
typedef struct {
    int64_t threads, workers, busy, busy_blocks;
    int team; /* OS threads to run it: cua_cpu_team(cfg, n, busy_blocks) */
} cua_grid;
cua_grid cua_cpu_grid(cua_launch *cfg, int64_t n);
/* Logical worker w's contiguous share [*lo, *hi) of n elements among W. */
void cua_cpu_share(int64_t n, int64_t W, int64_t w, int64_t *lo, int64_t *hi);
/* How many of W logical workers sharing n elements get any: the others have
 * empty shares and are never run, so a huge grid on a small input costs
 * nothing. */
int64_t cua_cpu_busy(int64_t n, int64_t W);
/* The elements [*lo, *hi) of OS thread t of nt when the `busy` blocks with
 * elements (of `blocks` sharing n) are handed out in consecutive runs, as a
 * static schedule does: consecutive blocks' shares are one contiguous
 * range. Empty when thread t gets no block. For the rungs whose per-block
 * step a thread need not repeat (a sum into the thread's own accumulator). */
void cua_cpu_thread_range(int64_t n, int64_t blocks, int64_t busy, int nt, int t, int64_t *lo, int64_t *hi);

/* Ctrl-C: nonzero once the call should stop. OpenMP thread 0 (the caller's
 * thread) asks cfg->poll at most every 20 ms; every worker calls this before
 * each piece of work and skips the rest once it says stop. The launcher then
 * returns CUA_EINTR. */
int cua_cpu_stop(cua_launch *cfg);
#define CUA_CPU_DONE(cfg) ((cfg)->interrupted ? CUA_EINTR : CUA_OK)
/* A worker's share walked in pieces of at most CUA_CPU_PIECE elements,
 * [a, b), asking cua_cpu_stop between pieces: a launch of one logical thread
 * over 2^31 elements still answers Ctrl-C within a piece's time. */
#define CUA_CPU_PIECE ((int64_t)1 << 22)
#define CUA_CPU_PIECES(cfg, lo, hi, a, b)                                                   \
    for (int64_t a = (lo), b = (lo) + CUA_CPU_PIECE < (hi) ? (lo) + CUA_CPU_PIECE : (hi); \
         a < (hi) && !cua_cpu_stop(cfg); a = b, b = b + CUA_CPU_PIECE < (hi) ? b + CUA_CPU_PIECE : (hi))

/* ---- cells.c: accumulators and the shared cell they are added into ---- */

typedef union {
    uint64_t i;
    float f;
    double d;
} cua_acc_t;

/* s += v (plain), and the two atomic forms on a 64-bit cell holding the
 * accumulator's bits: native fetch_add for integers (floats have no atomic
 * add on the CPU, so "native" is a CAS loop there too), and a CAS loop. */
void cua_acc_add(int acc, cua_acc_t *s, cua_acc_t v);
void cua_cpu_atomic_add(int acc, _Atomic uint64_t *cell, cua_acc_t v);
void cua_cpu_cas_add(int acc, _Atomic uint64_t *cell, cua_acc_t v);
/* Either of the two: how a rung adds into the cell is its idea. */
typedef void (*cua_cell_add)(int acc, _Atomic uint64_t *cell, cua_acc_t v);
void cua_cpu_cas_mul(int acc, _Atomic uint64_t *cell, cua_acc_t v);
/* The cell bits of an accumulator value, and back. */
uint64_t cua_cpu_cell_bits(int acc, cua_acc_t v);
cua_acc_t cua_cpu_cell_value(int acc, uint64_t bits);
void cua_cpu_store_result(int acc, cua_acc_t v, void *result);

/* ---- chunks.c: typed reductions of one logical thread's chunk ---- */

/* Element i of x converted to the accumulator. */
cua_acc_t cua_cpu_load(const void *x, int dtype, int acc, int64_t i);
/* Sum of x[lo:hi] / of a[i]*b[i] over [lo, hi) / product of x[lo:hi], in
 * the accumulator. */
cua_acc_t cua_cpu_chunk_sum(const void *x, int dtype, int acc, int64_t lo, int64_t hi);
cua_acc_t cua_cpu_chunk_dot(const void *a, const void *b, int dtype, int acc, int64_t lo, int64_t hi);
cua_acc_t cua_cpu_chunk_prod(const void *x, int dtype, int acc, int64_t lo, int64_t hi);
/* The value of logical block `block`: each of its logical threads sums (b
 * == NULL) or dots its share, then the lanes combine in the shared-memory
 * tree of the CUDA rungs. */
cua_acc_t cua_cpu_block_value(const void *a, const void *b, int64_t n, int dtype, int acc, const cua_launch *cfg,
                              int64_t block);
/* Every logical block's value added into one cell by `add`, the cell's
 * value stored to result: sum's block_tree (b == NULL), dot's atomic and
 * cas. */
int cua_cpu_blocks_into_cell(cua_cell_add add, const void *a, const void *b, int64_t n, int dtype, int acc,
                             void *result, cua_launch *cfg);

/* ---- vector.c: the `vector` rung of sum and dot ---- */

/* A float64 value and the accumulated rounding errors of the additions that
 * made it: the compensated sums of the CUA_F_WIDE rungs. The value is s + c. */
typedef struct {
    double s, c;
} cua_dd;
/* a + b, the rounding error of adding the values kept in c. */
cua_dd cua_dd_add(cua_dd a, cua_dd b);
/* vector.c: float32/float64 x[lo:hi] summed in compensated float64 SIMD
 * lanes (sum's vector rung's chunk). */
cua_dd cua_cpu_float_sum_dd(const void *x, int dtype, int64_t lo, int64_t hi);
/* The value, rounded once. Once s is infinite or NaN the error terms are
 * NaN (inf - inf) and mean nothing: s alone is the answer, as in NumPy. */
static inline double cua_dd_value(cua_dd d) { return d.s - d.s == 0 ? d.s + d.c : d.s; }
/* The `vector` rungs of sum (b == NULL) and dot: one contiguous chunk per
 * logical block (default: one per OpenMP thread, one in all for small n),
 * integers in SIMD lanes of 64 bits, floats in float64 lanes with
 * compensation (TwoSum; for a float64 dot TwoProduct too: products of
 * float32 are exact in float64), chunk values added in chunk order:
 * deterministic for a given team size. */
int cua_cpu_vector_reduce(const void *a, const void *b, int64_t n, int dtype, int acc, void *result,
                          cua_launch *cfg);

/* exact.c: the exact rungs of sum and dot (b NULL for a sum); `result` is a
 * host cua_xacc, written normalized. */
int cua_cpu_exact_global(const void *a, const void *b, int64_t n, int dtype, void *result, cua_launch *cfg);
int cua_cpu_exact_shared(const void *a, const void *b, int64_t n, int dtype, void *result, cua_launch *cfg);
int cua_cpu_exact_fast(const void *a, const void *b, int64_t n, int dtype, void *result, cua_launch *cfg);

/* ---- folds.c: reduce's values, ops and typed folds ---- */

/* A reduce value is 8 bytes of cua_reduce_kind(dtype, op) in a cua_acc_t:
 * `i` holds int64 (as its bits) and uint64, `d` double. The op on two
 * values of a kind (float minimum/maximum in IEEE 754-2019's order: a NaN
 * wins, -0.0 < +0.0), its identity (for minimum/maximum, the extreme every
 * value is at most/at least), and element i widened to its kind. */
cua_acc_t cua_cpu_red_combine(int kind, int op, cua_acc_t a, cua_acc_t b);
/* reduce.c: a value combined into a shared 64-bit cell holding the kind's
 * bits: with the atomic C11 has for the op (integer add, and, or, xor),
 * else (and for every op in the _cas form) a compare-exchange loop. */
void cua_cpu_cell_atomic(int kind, int op, _Atomic uint64_t *cell, cua_acc_t v);
void cua_cpu_cell_cas(int kind, int op, _Atomic uint64_t *cell, cua_acc_t v);
cua_acc_t cua_cpu_red_identity(int kind, int op);
cua_acc_t cua_cpu_red_load(const void *x, int dtype, int64_t i);
/* x[lo:hi] folded with op in CUA_CPU_FOLD_LANES SIMD lanes (float add and
 * multiply in plain float64 lanes, float minimum/maximum in integer key
 * lanes); the identity for an empty range. */
#define CUA_CPU_FOLD_LANES 32
cua_acc_t cua_cpu_red_fold(const void *x, int dtype, int op, int64_t lo, int64_t hi);
/* The product of float32/float64 x[lo:hi] as a double-double (s + c: every
 * multiplication's rounding error carried in c), two such products
 * multiplied, and the product's value, rounded once. */
cua_dd cua_cpu_red_product(const void *x, int dtype, int64_t lo, int64_t hi);
cua_dd cua_cpu_dd_mul(cua_dd a, cua_dd b);
double cua_cpu_dd_product_value(cua_dd p);
/* The folds of w <= CUA_CPU_RUN columns over `rows` rows (element (j, c)
 * at x + j * inner + c * cs elements: cs = 1 for neighbouring columns of a
 * strided axis, inner = 1 and cs = m for w short contiguous rows side by
 * side), the columns in SIMD lanes: each column's value into out[c] -- for
 * a float add its compensated sum, for a float multiply its double-double
 * product, into dd[c] instead. The segmented ladder's `vector` rung. */
#define CUA_CPU_RUN 2048
void cua_cpu_red_columns(const void *x, int dtype, int op, int64_t inner, int64_t cs, int64_t rows, int64_t w,
                         cua_acc_t *out, cua_dd *dd);

/* ---- bins.c: the bin rule and the histogram counting loops ---- */

/* Bin of element i (-1 if dropped), and a chunk counted into counts. */
int64_t cua_cpu_bin(const void *x, int dtype, const cua_bins *bins, int64_t i);
void cua_cpu_chunk_hist(const void *x, int dtype, const cua_bins *bins, int64_t lo, int64_t hi, uint64_t *counts);
/* The `fits` of a CPU histogram or weighted rung whose counts live in heap
 * memory: no bin count is too many (beyond what malloc refuses, reported as
 * MemoryError when it happens). */
static inline int cua_cpu_hist_fits_any(const cua_bins *bins, int dtype, cua_launch *cfg)
{
    (void)bins, (void)dtype, (void)cfg;
    return CUA_OK;
}

/* Count [lo, hi) into CUA_CPU_HIST_COPIES interleaved 32-bit copies:
 * counts[COPIES * bin + copy], values outside the bins into bin nbins
 * (counts holds COPIES * (nbins + 1)); fewer than 2^32 elements per call. */
#define CUA_CPU_HIST_COPIES 8
void cua_cpu_chunk_hist8(const void *x, int dtype, const cua_bins *bins, int64_t lo, int64_t hi, uint32_t *counts);
/* Sum the weights w[lo:hi] (float64 for wdtype CUA_FLOAT64, int64 for
 * CUA_INT64) into `copies` (1 or CUA_CPU_WSUM_COPIES) interleaved copies:
 * sums[copies * bin + i % copies], values outside the bins into bin nbins
 * (sums holds copies * (nbins + 1) sums of the weights' type). */
#define CUA_CPU_WSUM_COPIES 4
void cua_cpu_chunk_wsum(const void *x, int dtype, const void *w, int wdtype, const cua_bins *bins, int64_t lo,
                        int64_t hi, int copies, void *sums);

/* ---- predicate.c: the filter's test and its loops ---- */

/* Does element i pass; how many in [lo, hi) pass; copy those that pass to
 * out in order and return how many. */
int cua_cpu_keep(const void *x, int dtype, const cua_pred *pred, int64_t i);
/* What a keeper becomes in the output (its value, or with pred->indices its
 * int64 index): the bytes of one, and keeper i written as output `slot`. */
size_t cua_cpu_out_size(int dtype, const cua_pred *pred);
void cua_cpu_emit(void *out, int64_t slot, const void *x, int dtype, const cua_pred *pred, int64_t i);
/* histogramdd.c: every point's cell (the number of cells for one dropped). */
int cua_cpu_histdd_cells(const cua_sample *s, int64_t n, int dtype, int64_t *out);
/* filter.c: nonzero's flat indices as coordinates (cuda/layout.cu's unravel). */
int cua_cpu_unravel(const int64_t *flat, int64_t k, int ndim, const int64_t *shape, int64_t *const *out,
                    int64_t stride);
int64_t cua_cpu_chunk_count(const void *x, int dtype, const cua_pred *pred, int64_t lo, int64_t hi);
int64_t cua_cpu_chunk_compact(const void *x, int dtype, const cua_pred *pred, int64_t lo, int64_t hi, void *out);
/* The same into a private buffer of hi - lo elements, without branches. */
int64_t cua_cpu_chunk_stage(const void *x, int dtype, const cua_pred *pred, int64_t lo, int64_t hi, void *buf);

/* ---- scatter.c: the index check of np.<op>.at (as cua_cuda_scatter_check) ---- */

int cua_cpu_scatter_check(const void *idx, int idx_dtype, int64_t n, int64_t m, int64_t *bad, cua_launch *cfg);

/* ---- spin.c: spin waits and the spin lock ---- */

/* A CPU pause: the spin-wait hint, nothing more. */
static inline void cua_cpu_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* One step of a spin wait: a CPU pause; after a few microseconds a yield;
 * after a few more a short sleep (passive waiting), so that a spinning
 * thread never holds a core the thread it waits for needs -- when the team
 * has more threads than the machine has free cores, that thread may be
 * waiting for one. *spins starts at 0 and counts the steps. */
void cua_cpu_relax(unsigned *spins);

/* The CAS spin lock of the tutorial, on a C11 atomic int. */
void cua_cpu_lock(atomic_int *mutex);
void cua_cpu_unlock(atomic_int *mutex);
/* The same lock taken by test-and-test-and-set with backoff (as
 * cuda/mutex.cu's lock_ttas): a waiter only reads the lock word -- its cache
 * line stays shared, no write traffic -- and tries the CAS only when it
 * reads free, pausing longer after each lost race. Released by
 * cua_cpu_unlock. */
void cua_cpu_lock_ttas(atomic_int *mutex);

/* ---- argmin.c ---- */

/* The key argmin's rungs order element i of x by (smaller first; the
 * index breaks ties): argmax's when max != 0. The glue combines the GPU's
 * chunks with it. */
uint64_t cua_cpu_arg_key(const void *x, int dtype, int64_t i, int max);
/* argkeys on the CPU (cuda/argmin.cu's, mode CUA_ARGKEYS_*): x's
 * outer * m * inner elements as 8-byte words into out, in OpenMP threads. */
int cua_cpu_argkeys(const void *x, int64_t outer, int64_t m, int64_t inner, int dtype, int max, int mode,
                    const uint64_t *best, uint64_t *out);

/* ---- unique.c ---- */

/* unique's finish and the table's release on the CPU (cuda/unique.cu's
 * cua_cuda_unique_finish, cua_cuda_unique_free): NumPy's outputs from the
 * table a rung built, host memory. */
int cua_cpu_unique_finish(const void *x, int64_t n, int dtype, cua_unique_tab *t, const cua_unique_out *out,
                          cua_launch *cfg);
void cua_cpu_unique_free(cua_unique_tab *t);

/* ---- scratch.c: a bounded cache of large scratch blocks ---- */

/* At least `bytes` of host scratch (cache-line aligned; from 2 MiB on,
 * 2 MiB aligned and advised onto huge pages), its size in *got: a kept
 * block when one holds it, else fresh memory. NULL when out of memory. */
void *cua_cpu_scratch_take(size_t bytes, size_t *got);
/* A block from cua_cpu_scratch_take back (bytes: its *got): kept for the
 * next call up to the limit, else freed. NULL is ignored. */
void cua_cpu_scratch_give(void *p, size_t bytes);
/* Bytes kept now; the limit (CUATOMIC_HOST_CACHE_BYTES, else 1/32 of the
 * machine's memory up to 512 MiB). */
size_t cua_cpu_scratch_cached(void);
size_t cua_cpu_scratch_limit(void);
/* Every kept block freed: 0, or 1 when the cache stayed busy. */
int cua_cpu_scratch_release(void);

#endif
