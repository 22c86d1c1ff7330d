/* bins.c -- np.histogram's bin rule on the CPU, and the typed loops that
 * count a chunk of data into a histogram: one count per element into 64-bit
 * counters, or into eight interleaved 32-bit copies (thread_counters); and
 * the loop that sums a chunk's weights into its bins (weighted.c).
 */
#include <string.h>

#include "cpu.h"
#include "typed.h"

static inline int64_t bin_int(int64_t x, const cua_bins *b)
{
    int64_t d = x - b->ilo;
    if (d < 0 || d > b->iwidth * b->nbins) return -1;
    int64_t k = b->iwidth == 1 ? d : d / b->iwidth;
    return k < b->nbins ? k : b->nbins - 1; /* the last bin is closed */
}

/* Largest k with e[k] <= v, for e[0] <= v <= e[nbins]; see cuatomic_abi.h. */
#define DEFINE_BIN(NAME, E)                                                      \
    static inline int64_t NAME(E v, const cua_bins *b)                           \
    {                                                                            \
        const E *e = (const E *)b->edges;                                        \
        const int64_t nb = b->nbins;                                             \
        if (!(v >= e[0] && v <= e[nb])) return -1; /* outside, or NaN */        \
        int64_t k;                                                               \
        if (b->uniform) {                                                        \
            k = (int64_t)((double)(v - e[0]) * b->inv_width);                    \
            k = k < 0 ? 0 : (k > nb - 1 ? nb - 1 : k);                           \
            while (k > 0 && v < e[k]) --k;                                       \
            while (k < nb - 1 && v >= e[k + 1]) ++k;                             \
        } else {                                                                 \
            int64_t lo = 0, hi = nb - 1;                                         \
            while (lo < hi) {                                                    \
                int64_t mid = lo + (hi - lo + 1) / 2;                            \
                if (e[mid] <= v) lo = mid;                                       \
                else hi = mid - 1;                                               \
            }                                                                    \
            k = lo;                                                              \
        }                                                                        \
        return k;                                                                \
    }
DEFINE_BIN(bin_f32, float)
DEFINE_BIN(bin_f64, double)
DEFINE_BIN(bin_i64, int64_t) /* 64-bit integer data against integer edges: exact (never uniform) */
DEFINE_BIN(bin_u64, uint64_t)

/* 64-bit integer data in integer bins (bincount's): the bins lie within
 * int64, so uint64 values past INT64_MAX (past_int64) are outside, and the
 * offset from lo is taken in uint64, where it cannot overflow. */
static inline int64_t bin_int_wide(int64_t x, int past_int64, const cua_bins *b)
{
    if (past_int64 || x < b->ilo) return -1;
    const uint64_t d = (uint64_t)x - (uint64_t)b->ilo;
    if (d > (uint64_t)(b->iwidth * b->nbins)) return -1;
    const int64_t k = b->iwidth == 1 ? (int64_t)d : (int64_t)(d / (uint64_t)b->iwidth);
    return k < b->nbins ? k : b->nbins - 1; /* the last bin is closed */
}

/* Integer data of at most 32 bits converts to int64 exactly: the integer
 * path in int64 (np.histogram's integer bins, which the host sets for them
 * only); 64-bit data takes it only for bincount's bins, within int64. */
#define BIN_OF(T, v, b)                                                                      \
    ((b)->integer && sizeof(T) <= 4 && (T)0.5 == 0 ? bin_int((int64_t)(v), (b))              \
     : (b)->integer && (T)0.5 == 0                                                           \
         ? bin_int_wide((int64_t)(v), (T)-1 > 0 && (uint64_t)(v) > (uint64_t)INT64_MAX, (b)) \
     : (b)->edge_dtype == CUA_INT64              ? bin_i64((int64_t)(v), (b))                \
     : (b)->edge_dtype == CUA_UINT64             ? bin_u64((uint64_t)(v), (b))               \
     : (b)->edge_dtype == CUA_FLOAT32            ? bin_f32((float)(v), (b))                  \
                                                 : bin_f64((double)(v), (b)))

#define BIN_CASE(ID, T, K)                 \
    case ID: {                             \
        T v = ((const T *)x)[i];           \
        return BIN_OF(T, v, bins);         \
    }

int64_t cua_cpu_bin(const void *x, int dtype, const cua_bins *bins, int64_t i)
{
    switch (dtype) {
        CUA_CPU_TYPES(BIN_CASE)
    default: return -1;
    }
}

#define HIST_CASE(ID, T, K)                                  \
    case ID: {                                               \
        const T *p = (const T *)x;                           \
        for (int64_t i = lo; i < hi; i++) {                  \
            int64_t k = BIN_OF(T, p[i], bins);               \
            if (k >= 0) counts[k]++;                         \
        }                                                    \
        break;                                               \
    }

void cua_cpu_chunk_hist(const void *x, int dtype, const cua_bins *bins, int64_t lo, int64_t hi, uint64_t *counts)
{
    switch (dtype) {
        CUA_CPU_TYPES(HIST_CASE)
    default: break;
    }
}

/* The counting loop of `thread_counters`: element i goes to copy i % COPIES
 * of COPIES interleaved 32-bit histograms (counts[COPIES * k + i % COPIES]),
 * so a run of equal values -- skewed text -- is COPIES independent chains
 * of increments instead of one chain of store-to-load dependencies. Values
 * outside the bins count into a spare bin nbins, so the loops have no
 * branch to mispredict on random data. Byte data reads a 64-bit word (8
 * elements) per load, byte k to copy k, and is counted by byte value; the
 * 256 values' counts then go to their bins by the same bin rule. counts
 * holds COPIES * (nbins + 1) counters; at most 2^32 - 1 elements per call. */
#define COPIES CUA_CPU_HIST_COPIES
_Static_assert((COPIES & (COPIES - 1)) == 0, "i % COPIES is a mask");
_Static_assert(COPIES == sizeof(uint64_t), "byte k of a word goes to copy k");

#define HIST8_CASE(ID, T, K)                                                         \
    case ID: {                                                                       \
        const T *p = (const T *)x;                                                   \
        for (int64_t i = lo; i < hi; i++) {                                          \
            int64_t k = BIN_OF(T, p[i], bins);                                       \
            counts[COPIES * (k >= 0 ? k : bins->nbins) + (i & (COPIES - 1))]++;      \
        }                                                                            \
        break;                                                                       \
    }

void cua_cpu_chunk_hist8(const void *x, int dtype, const cua_bins *bins, int64_t lo, int64_t hi, uint32_t *counts)
{
    if (cua_dtype_size(dtype) == 1) {
        /* Bytes are counted by value, not by bin: no table load between
         * the load of a byte and its increment. The 256 values' counts go
         * to their bins once, at the end, through the bin rule. */
        uint32_t by_value[(UINT8_MAX + 1) * COPIES] = {0};
        const uint8_t *p = (const uint8_t *)x;
        int64_t i = lo;
        for (; i + COPIES <= hi; i += COPIES) {
            uint64_t w;
            memcpy(&w, p + i, sizeof w);
            for (int k = 0; k < COPIES; k++) by_value[COPIES * ((w >> (8 * k)) & UINT8_MAX) + k]++;
        }
        for (; i < hi; i++) by_value[COPIES * p[i]]++;
        for (int v = 0; v <= UINT8_MAX; v++) {
            const uint8_t byte = (uint8_t)v;
            const int64_t k = cua_cpu_bin(&byte, dtype, bins, 0);
            uint32_t total = 0;
            for (int c = 0; c < COPIES; c++) total += by_value[COPIES * v + c];
            counts[COPIES * (k >= 0 ? k : bins->nbins)] += total;
        }
        return;
    }
    switch (dtype) {
        CUA_CPU_TYPES(HIST8_CASE)
    default: break;
    }
}

/* The summing loop of the weighted ladder: the weight of element i is added
 * to sums[copies * bin + (i & (copies - 1))], values outside the bins to a
 * spare bin nbins, so the loop has no branch to mispredict; copies > 1
 * interleaved copies turn a run of one value into that many independent
 * chains of adds instead of one chain through memory. sums holds copies *
 * (nbins + 1) float64 (wdtype CUA_FLOAT64) or int64 sums (CUA_INT64,
 * wrapping). Byte data finds its bins in a table of the 256 byte values
 * built with the same bin rule.
 *
 * One small function per element type, each loop compiled for a constant
 * number of copies: in one function for all types, or with `copies` a
 * variable, the loops' pointers were spilled to the stack and reloaded on
 * every element, which made them two to three times slower. */
#define WSUM_LOOP(S, COPIES, bin_expr)                                                         \
    do {                                                                                       \
        const S *wp = (const S *)w;                                                            \
        S *s = (S *)sums;                                                                      \
        for (int64_t i = lo; i < hi; i++) {                                                    \
            const int64_t k = (bin_expr);                                                      \
            s[(COPIES) * k + (i & ((COPIES) - 1))] += wp[i];                                   \
        }                                                                                      \
    } while (0)

/* The four loops of one bin expression: float64 or int64 weights, one copy
 * or CUA_CPU_WSUM_COPIES. */
#define WSUM_LOOPS(bin_expr)                                                                   \
    do {                                                                                       \
        if (copies == CUA_CPU_WSUM_COPIES) {                                                   \
            if (wdtype == CUA_FLOAT64) WSUM_LOOP(double, CUA_CPU_WSUM_COPIES, bin_expr);       \
            else WSUM_LOOP(uint64_t, CUA_CPU_WSUM_COPIES, bin_expr);                           \
        } else {                                                                               \
            if (wdtype == CUA_FLOAT64) WSUM_LOOP(double, 1, bin_expr);                         \
            else WSUM_LOOP(uint64_t, 1, bin_expr);                                             \
        }                                                                                      \
    } while (0)

static inline int64_t spare(int64_t k, int64_t nb) { return k >= 0 ? k : nb; }

#define WSUM_FN(ID, T, K)                                                                      \
    static void wsum_##ID(const void *x, const void *w, int wdtype, const cua_bins *bins, int64_t lo, \
                          int64_t hi, int copies, void *sums)                                  \
    {                                                                                          \
        const cua_bins b = *bins; /* a local copy: the sums' stores cannot alias it */         \
        const int64_t nb = b.nbins;                                                            \
        const T *p = (const T *)x;                                                             \
        WSUM_LOOPS(spare(BIN_OF(T, p[i], &b), nb));                                            \
    }
CUA_CPU_TYPES(WSUM_FN)

static void wsum_bytes(const uint8_t *p, const void *w, int wdtype, const int64_t *table, int64_t lo, int64_t hi,
                       int copies, void *sums)
{
    WSUM_LOOPS(table[p[i]]);
}

#define WSUM_CASE(ID, T, K) \
    case ID: wsum_##ID(x, w, wdtype, bins, lo, hi, copies, sums); break;

void cua_cpu_chunk_wsum(const void *x, int dtype, const void *w, int wdtype, const cua_bins *bins, int64_t lo,
                        int64_t hi, int copies, void *sums)
{
    if (cua_dtype_size(dtype) == 1) {
        int64_t table[UINT8_MAX + 1]; /* byte value -> bin, or the spare bin */
        for (int v = 0; v <= UINT8_MAX; v++) {
            const uint8_t byte = (uint8_t)v;
            table[v] = spare(cua_cpu_bin(&byte, dtype, bins, 0), bins->nbins);
        }
        wsum_bytes((const uint8_t *)x, w, wdtype, table, lo, hi, copies, sums);
        return;
    }
    switch (dtype) {
        CUA_CPU_TYPES(WSUM_CASE)
    default: break;
    }
}
