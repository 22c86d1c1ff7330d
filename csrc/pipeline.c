/* pipeline.c -- host arrays to the GPU at the speed of the bus.
 *
 * A large NumPy input is streamed in chunks through two page-locked staging
 * buffers and two streams: while the kernel runs on chunk k, the DMA engine
 * copies chunk k+1 to the device, and before that the CPU threads copied
 * chunk k+1 from the array into its staging buffer (while chunk k's DMA ran).
 * The op sees one device chunk at a time and combines the chunks' results.
 *
 * The staging buffers and streams are made once and kept (the streams made
 * again when a call runs on another GPU: a stream belongs to one); one call
 * uses them at a time (a second concurrent call falls back to a single
 * staged copy).
 * CUATOMIC_PIPELINE_CHUNK sets the staging size in bytes (default 64 MiB);
 * inputs of at most two chunks are not worth pipelining, and page-locked
 * inputs (cuatomic.pinned_empty) go to the device in one DMA instead.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "glue.h"
#include "pipeline.h"

#ifdef CUATOMIC_WITH_CUDA

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    size_t bytes; /* per staging buffer */
    int device;   /* the GPU the streams and events belong to */
    void *pinned[2], *stream[2], *event[2];
} P;

/* Page-locked bytes of the staging buffers, kept beside them (read without
 * the lock, which a streaming call holds for its whole length). */
static int64_t pinned_held;

static size_t wanted_chunk(void)
{
    const char *env = getenv("CUATOMIC_PIPELINE_CHUNK");
    long long v = env ? atoll(env) : 0;
    return v >= 4096 ? (size_t)v : (size_t)64 << 20;
}

/* The streams and events: they belong to the GPU they were made on. */
static void release_streams(void)
{
    for (int i = 0; i < 2; i++) {
        if (P.event[i]) cua_cuda_event_destroy(P.event[i]);
        if (P.stream[i]) cua_cuda_stream_destroy(P.stream[i]);
        P.event[i] = P.stream[i] = NULL;
    }
}

static void release(void)
{
    release_streams();
    for (int i = 0; i < 2; i++) {
        if (P.pinned[i]) cua_cuda_host_free(P.pinned[i]);
        P.pinned[i] = NULL;
    }
    P.bytes = 0;
    __atomic_store_n(&pinned_held, 0, __ATOMIC_RELAXED);
}

/* Staging buffers of `bytes` (page-locked for every GPU: kept when the GPU
 * changes) and streams and events on the current GPU (made again when it
 * does). */
static int ensure(size_t bytes)
{
    int device, st = cua_cuda_current_device(&device);
    if (st) return st;
    if (P.bytes != bytes) {
        release();
        for (int i = 0; i < 2 && !st; i++) st = cua_cuda_host_alloc(&P.pinned[i], bytes);
        if (st) {
            release();
            return st;
        }
        P.bytes = bytes;
        __atomic_store_n(&pinned_held, 2 * (int64_t)bytes, __ATOMIC_RELAXED);
    }
    if (P.stream[0] && P.device == device) return 0;
    release_streams();
    for (int i = 0; i < 2 && !st; i++) {
        st = cua_cuda_stream_create(&P.stream[i]);
        if (!st) st = cua_cuda_event_create(&P.event[i]);
    }
    if (st) release_streams();
    else P.device = device;
    return st;
}

/* Many threads copy one chunk into page-locked memory. */
static void parallel_copy(char *dst, const char *src, size_t bytes)
{
    const size_t piece = (size_t)1 << 20;
    const int64_t pieces = (int64_t)((bytes + piece - 1) / piece);
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < pieces; p++) {
        size_t off = (size_t)p * piece, len = bytes - off < piece ? bytes - off : piece;
        memcpy(dst + off, src + off, len);
    }
}

int64_t cua_pipeline_pinned_bytes(void) { return __atomic_load_n(&pinned_held, __ATOMIC_RELAXED); }

void cua_pipeline_release(void)
{
    /* A call streaming now keeps its buffers: they go at a later
     * free_memory(), when no call is streaming. */
    if (pthread_mutex_trylock(&lock) != 0) return;
    release();
    pthread_mutex_unlock(&lock);
}

int cua_pipeline_run(int ninputs, const void *const *host, size_t elem_size, int64_t n, cua_launch *cfg,
                     cua_chunk_fn fn, void *ctx, int *used)
{
    const size_t sizes[2] = {elem_size, elem_size};
    return cua_pipeline_run_sized(ninputs, host, sizes, n, cfg, fn, ctx, used);
}

int cua_pipeline_run_sized(int ninputs, const void *const *host, const size_t *elem_size, int64_t n,
                           cua_launch *cfg, cua_chunk_fn fn, void *ctx, int *used)
{
    *used = 0;
    const size_t want = wanted_chunk();
    if (ninputs < 1 || ninputs > 2) return 0;
    size_t row = 0; /* bytes of one element of every input */
    for (int i = 0; i < ninputs; i++) row += elem_size[i];
    if ((size_t)n * row <= 2 * want * (size_t)ninputs) return 0; /* inputs of two chunks or less, on average */
    /* Page-locked input needs no staging: one DMA at the bus's speed. */
    int memory_type = 0, device = 0;
    for (int i = 0; i < ninputs; i++)
        if (cua_cuda_pointer_info(host[i], &memory_type, &device) == 0 && memory_type == 1) return 0;
    if (pthread_mutex_trylock(&lock) != 0) return 0; /* busy: the caller stages in one piece */
    int st = ensure(want);
    const int64_t per_chunk = (int64_t)(P.bytes / row);
    size_t slice[2], offset[2]; /* bytes of input i in one buffer, and where they start in it */
    for (int i = 0; i < ninputs; i++) {
        slice[i] = (size_t)per_chunk * elem_size[i];
        offset[i] = i ? offset[i - 1] + slice[i - 1] : 0;
    }
    void *dev[2][2] = {{NULL, NULL}, {NULL, NULL}};
    for (int s = 0; s < 2 && !st; s++)
        for (int i = 0; i < ninputs && !st; i++) st = cua_cuda_malloc_async(&dev[s][i], slice[i], P.stream[s]);
    const int64_t chunks = st ? 0 : (n + per_chunk - 1) / per_chunk;

    /* Stage chunk k in buffer k % 2 and queue its copy to the device. */
#define FILL(k)                                                                                              \
    do {                                                                                                     \
        int s_ = (int)((k) % 2);                                                                             \
        int64_t m_ = n - (k) * per_chunk < per_chunk ? n - (k) * per_chunk : per_chunk;                      \
        st = cua_cuda_event_synchronize(P.event[s_]); /* the buffer's previous copy has left it */            \
        for (int i_ = 0; i_ < ninputs && !st; i_++) {                                                        \
            char *stage_ = (char *)P.pinned[s_] + offset[i_];                                                \
            parallel_copy(stage_, (const char *)host[i_] + (size_t)(k) * slice[i_], (size_t)m_ * elem_size[i_]); \
            st = cua_cuda_memcpy_htod_async(dev[s_][i_], stage_, (size_t)m_ * elem_size[i_], P.stream[s_]);   \
        }                                                                                                    \
        if (!st) st = cua_cuda_event_record(P.event[s_], P.stream[s_]);                                      \
    } while (0)

    if (chunks > 0) FILL(0);
    for (int64_t k = 0; k < chunks && !st; k++) {
        if (k + 1 < chunks) FILL(k + 1); /* overlaps chunk k's copy, then its kernel */
        if (st) break;
        int64_t m = n - k * per_chunk < per_chunk ? n - k * per_chunk : per_chunk;
        cua_launch c = *cfg;
        c.stream = P.stream[k % 2];
        st = fn((const void *const *)dev[k % 2], m, &c, ctx);
        if (st) memcpy(cfg->msg, c.msg, sizeof cfg->msg);
        if (!st && cfg->poll && cfg->poll()) st = CUA_EINTR; /* Ctrl-C between chunks */
        cfg->used_blocks = c.used_blocks;
        cfg->used_threads = c.used_threads;
        cfg->chunks = k + 1;
    }
#undef FILL
    for (int s = 0; s < 2; s++) {
        for (int i = 0; i < ninputs; i++)
            if (dev[s][i]) cua_cuda_free_async(dev[s][i], P.stream[s]);
        if (P.stream[s]) {
            int e = cua_cuda_stream_synchronize(P.stream[s]);
            if (!st) st = e;
        }
    }
    pthread_mutex_unlock(&lock);
    *used = 1;
    return st;
}

#else

int64_t cua_pipeline_pinned_bytes(void) { return 0; }
void cua_pipeline_release(void) {}

int cua_pipeline_run(int ninputs, const void *const *host, size_t elem_size, int64_t n, cua_launch *cfg,
                     cua_chunk_fn fn, void *ctx, int *used)
{
    (void)ninputs, (void)host, (void)elem_size, (void)n, (void)cfg, (void)fn, (void)ctx;
    *used = 0;
    return 0;
}

int cua_pipeline_run_sized(int ninputs, const void *const *host, const size_t *elem_size, int64_t n,
                           cua_launch *cfg, cua_chunk_fn fn, void *ctx, int *used)
{
    (void)ninputs, (void)host, (void)elem_size, (void)n, (void)cfg, (void)fn, (void)ctx;
    *used = 0;
    return 0;
}

#endif
