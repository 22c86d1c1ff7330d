/* cuatomic_cuda.h -- the one header csrc/ includes from cuda/.
 *
 * Plain C: variant tables, device probe, memory helpers. Every function
 * returns a status (0, a cudaError_t value, or a negative enum cua_status).
 */
#ifndef CUATOMIC_CUDA_H
#define CUATOMIC_CUDA_H

#include "cuatomic_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int usable;              /* 1 if kernels can run on the current device */
    char reason[256];        /* why not, when usable == 0 */
    char name[256];
    int device;              /* ordinal of the current device */
    int cc_major, cc_minor;
    int sm_count;
    int cooperative_launch;  /* cudaDevAttrCooperativeLaunch */
    int driver_version;      /* e.g. 13000, 0 without a driver */
    int runtime_version;
    int64_t total_memory;
    int64_t shared_per_block_optin;
    int64_t l2_bytes;        /* the L2 cache */
    int memory_clock_khz;    /* peak memory clock; with the bus width, the peak bandwidth */
    int memory_bus_bits;
} cua_cuda_device;

/* Probe the current device without failing: fills info, returns 0 (probe.cu). */
int cua_cuda_probe(cua_cuda_device *info);

/* What GPU `device` is -- name, compute capability, SMs, memory, shared
 * memory, L2, memory clock and bus -- without making it current or
 * launching anything: the facts auto's measured rules are matched by.
 * Fills those fields of info (the rest 0); a status (probe.cu). */
int cua_cuda_device_facts(int device, cua_cuda_device *info);

/* The ladder of one op, in tutorial order; NULL for an unknown op (ladders.cu). */
const cua_ladder *cua_cuda_ladder(int op);

/* The result route (route.cu): `nbytes` of results that a launcher queued
 * into device memory `dev`, delivered -- to the call slot when
 * cfg->result.device is set (nbytes a multiple of 8), else copied to `host`
 * (NULL: they stay on the device) -- after the call's one wait, which
 * answers Ctrl-C. */
int cua_cuda_deliver(const void *dev, size_t nbytes, void *host, cua_launch *cfg);

/* Memory (memory.cu). Copies are synchronous with respect to the host. */
int cua_cuda_malloc(void **ptr, size_t nbytes);
int cua_cuda_free(void *ptr);
int cua_cuda_memcpy_htod(void *dst, const void *src, size_t nbytes, void *stream);
int cua_cuda_memcpy_dtoh(void *dst, const void *src, size_t nbytes, void *stream);
int cua_cuda_memcpy_dtod(void *dst, const void *src, size_t nbytes, void *stream);
/* count elements of itemsize bytes, pitch bytes apart on the device, into
 * dst one after another, on the stream (waited for). */
int cua_cuda_sample_dtoh(void *dst, const void *src, size_t itemsize, size_t pitch, size_t count, void *stream);
/* Stream-ordered, from cuatomic's own pool of the current GPU (never the
 * device's default pool): queued on the stream, the host does not wait --
 * except that a free which leaves the pool caching more than its limit
 * settles it (cua_cuda_pool_settle). free_queued only queues the free and
 * says (*over) whether the pool now needs settling: a caller that holds
 * the GIL releases it first. */
int cua_cuda_malloc_async(void **ptr, size_t nbytes, void *stream);
int cua_cuda_free_async(void *ptr, void *stream);
int cua_cuda_free_queued(void *ptr, void *stream, int *over);
/* Synchronize the current GPU (as cudaFree does) and trim its pool to what
 * is in use plus the cache limit. */
int cua_cuda_pool_settle(void);
/* cua_cuda_pool_settle, only when the pool caches more than its limit (after
 * a wait, for frees that were only queued: cua_cuda_free_queued). */
int cua_cuda_pool_settle_if_over(void);
/* What cuatomic's pool of one GPU holds: bytes in use (allocated, not yet
 * freed), bytes cached (freed, kept for reuse) and the cache limit; all 0
 * before the pool's first use. */
typedef struct {
    int device;
    int64_t in_use, cached, limit;
} cua_pool_info;
int cua_cuda_pool_info(int device, cua_pool_info *info);
/* Give back everything the pool of `device` caches (the GPU is
 * synchronized first, so that every queued free is done). */
int cua_cuda_pool_release(int device);
int cua_cuda_memcpy_htod_async(void *dst, const void *src, size_t nbytes, void *stream);
/* Page-locked host memory. */
int cua_cuda_host_alloc(void **ptr, size_t nbytes);
int cua_cuda_host_free(void *ptr);

/* Call slots (memory.cu): small page-locked, device-mapped slots for one
 * call's result and small host input: the kernel reads the input over the
 * bus and writes the result straight into host memory, so a small call
 * needs no copy in either direction. acquire returns a slot number (>= 0)
 * with its host and device addresses, or -1 when none is free or the pool
 * cannot be made (the caller then takes the ordinary path). Each slot holds
 * CUA_SLOT_BYTES bytes: the inputs, then the result at its end. */
#define CUA_SLOT_BYTES (64 * 1024)
int cua_cuda_slot_acquire(void **host, void **device);
void cua_cuda_slot_release(int slot);

/* For tests of error handling: a kernel that executes a trap instruction,
 * which leaves the CUDA context unusable: a sticky error (errors.cu). */
int cua_cuda_debug_trap(void *stream);

/* Smallest and largest element of x (raw values of the element type, written
 * to host min_out/max_out) and whether any element is NaN. n must be > 0
 * (minmax.cu). */
int cua_cuda_minmax(const void *x, int64_t n, int dtype, void *min_out,
                    void *max_out, int *has_nan, void *stream);

/* The scatter's index check (scatter.cu): *bad = the first position k
 * whose index (n of idx_dtype, CUA_INT32 or CUA_INT64) is outside [-m, m),
 * or -1 when every one is in range; waits once. */
int cua_cuda_scatter_check(const void *idx, int idx_dtype, int64_t n, int64_t m, int64_t *bad, cua_launch *cfg);

/* Events for timing on a stream, and a whole-device synchronization (events.cu). */
int cua_cuda_event_create(void **event);
int cua_cuda_event_destroy(void *event);
int cua_cuda_event_record(void *event, void *stream);
/* Waits for `stop`, then the milliseconds between the two events. */
int cua_cuda_event_elapsed(void *start, void *stop, float *ms);
int cua_cuda_synchronize(void);
int cua_cuda_event_synchronize(void *event);

/* Layout and streams (layout.cu). gather: dst[i] = the i-th element, in C
 * order, of an ndim-dimensional array at src with byte strides. */
int cua_cuda_gather(const void *src, void *dst, int64_t n, int itemsize, int ndim, const int64_t *shape,
                    const int64_t *strides, void *stream);
/* argkeys: the n = outer * m * inner elements of x as 8-byte words `out`
 * (device memory) in the mode CUA_ARGKEYS_* (best: the first pass's least
 * keys, for CUA_ARGKEYS_MATCH), waited for (argmin.cu). */
int cua_cuda_argkeys(const void *x, int64_t outer, int64_t m, int64_t inner, int dtype, int max, int mode,
                     const void *best, void *out, void *stream);
/* histdd_cells: every point of the sample's cell into out (n int64, device
 * memory; the number of cells for a point that is dropped), waited for
 * (histogramdd.cu). */
int cua_cuda_histdd_cells(const cua_sample *s, int64_t n, int dtype, int64_t *out, void *stream);
/* count_kept: how many of the n elements pass the filter's predicate (one
 * atomicAdd per block), waited for (filter.cu). */
int cua_cuda_count_kept(const void *x, int64_t n, int dtype, const cua_pred *pred, int64_t *count, void *stream);
/* unravel: the k flat C-order indices at flat as coordinates into `shape`
 * (ndim <= 16): coordinate d of index j into out[d][j * stride]. take:
 * np.take(src, idx, axis) for src seen as (outer, m, inner) and k indices
 * already in [0, m), into dst (outer, k, inner). Both wait for `stream`. */
int cua_cuda_unravel(const int64_t *flat, int64_t k, int ndim, const int64_t *shape, int64_t *const *out,
                     int64_t stride, void *stream);
int cua_cuda_take(const void *src, void *dst, int itemsize, int64_t outer, int64_t m, int64_t inner,
                  const int64_t *idx, int64_t k, void *stream);
/* memory_type: 0 unregistered host, 1 pinned host, 2 device, 3 managed. */
int cua_cuda_pointer_info(const void *ptr, int *memory_type, int *device);
int cua_cuda_current_device(int *device);
/* The devices the process sees. */
int cua_cuda_device_count(int *count);
/* Make `device` current on this host thread (nothing when it is), and say
 * which was: cua_cuda_use_device(previous, NULL) makes that one current again. */
int cua_cuda_use_device(int device, int *previous);
int cua_cuda_stream_create(void **stream);
int cua_cuda_stream_destroy(void *stream);
int cua_cuda_stream_synchronize(void *stream);
int cua_cuda_stream_wait(void *waiter, void *producer);

/* CUB's device-wide primitives on device data, for the benchmark's
 * comparison (cub.cu): sum (int32 -> int64 bits, float32), an even-binned
 * histogram (uint8, int32, float32 samples; counts to host memory), and a
 * selection of x >= value into `out` (int32, float32). CUA_EINVAL for a
 * dtype they are not built for. */
int cua_cub_sum(const void *x, int64_t n, int dtype, void *result, void *stream);
int cua_cub_reduce(const void *x, int64_t n, int dtype, char op, void *result, void *stream);
int cua_cub_histogram(const void *x, int64_t n, int dtype, int nbins, double lo, double hi, int64_t *counts,
                      void *stream);
int cua_cub_select_at_least(const void *x, int64_t n, int dtype, double value, void *out, int64_t *count,
                            void *stream);
/* nonzero: the indices of x's nonzero elements into `out` (int64), by
 * DeviceSelect::Flagged (int32). */
int cua_cub_nonzero(const void *x, int64_t n, int dtype, int64_t *out, int64_t *count, void *stream);
/* unique: SortKeys then RunLengthEncode::Encode of n <= 2^31 - 1 int32,
 * int64 or float32 keys: the distinct values and int64 counts into device
 * memory, their number into *count (host), waited for. */
int cua_cub_unique(const void *x, int64_t n, int dtype, void *values, int64_t *counts, int64_t *count,
                   void *stream);
/* rows x m contiguous float32, each row's sum ('+'), min ('m') or max ('M') into out (device memory), waited for. */
int cua_cub_segmented(const void *x, int64_t rows, int64_t m, int dtype, char op, void *out, void *stream);

/* unique (unique.cu): after a rung built the table, NumPy's outputs from
 * it (cua_unique_out, and the inverse unless the rung wrote it), waited
 * for; and the table's memory given back (queued on the stream). */
int cua_cuda_unique_finish(const void *x, int64_t n, int dtype, cua_unique_tab *t, const cua_unique_out *out,
                           cua_launch *cfg);
void cua_cuda_unique_free(cua_unique_tab *t, void *stream);

/* cudaGetErrorName / cudaGetErrorString of a positive status (errors.cu). */
const char *cua_cuda_error_name(int status);
const char *cua_cuda_error_string(int status);
/* 1 if the error leaves the CUDA context unusable (sticky). */
int cua_cuda_error_is_sticky(int status);

#ifdef __cplusplus
}
#endif

#endif /* CUATOMIC_CUDA_H */
