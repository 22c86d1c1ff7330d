/* call.c -- the steps every operation's glue shares (see call.h). */
#include <string.h>

#include "call.h"

_Static_assert(CUA_MAX_THREADS <= CUA_CPU_MAX_BLOCK_THREADS, "the CPU block tree has a lane per thread");

const cua_ladder *cua_ladder_of(int backend, int op)
{
    if (backend == BACKEND_CPU) return cua_cpu_ladder(op);
#ifdef CUATOMIC_WITH_CUDA
    if (backend == BACKEND_CUDA) return cua_cuda_ladder(op);
#endif
    return NULL;
}

const cua_rung *cua_find_rung(int backend, int op, int rung)
{
    const cua_ladder *ladder = cua_ladder_of(backend, op);
    if (!ladder) {
        PyErr_Format(PyExc_ValueError, "backend %d (op %d) is not available in this build", backend, op);
        return NULL;
    }
    if (rung < 0 || rung >= ladder->count) {
        PyErr_Format(PyExc_ValueError, "rung %d is outside op %d's ladder of %d", rung, op, ladder->count);
        return NULL;
    }
    return cua_ladder_rung(ladder, rung);
}

/* ------------------------------------------------------------------ inputs */

int cua_parse_input(int backend, PyObject *obj, int64_t n, int dtype, void *stream, cua_input *in)
{
    memset(in, 0, sizeof *in);
    in->stream = stream;
    size_t size = cua_dtype_size(dtype);
    if (size == 0 || n < 0) {
        PyErr_SetString(PyExc_SystemError, "cuatomic: bad dtype id or length");
        return -1;
    }
    in->nbytes = (size_t)n * size;
    if (PyArray_Check(obj)) {
        PyArrayObject *a = (PyArrayObject *)obj;
        if (!PyArray_IS_C_CONTIGUOUS(a) || !PyArray_ISNOTSWAPPED(a) || (size_t)PyArray_ITEMSIZE(a) != size ||
            PyArray_SIZE(a) < n) {
            PyErr_SetString(PyExc_SystemError, "cuatomic: input array is not normalized");
            return -1;
        }
        if (backend == BACKEND_CPU) in->ptr = PyArray_DATA(a);
        else in->host = PyArray_DATA(a);
        return 0;
    }
    if (backend == BACKEND_CPU) {
        PyErr_SetString(PyExc_TypeError, "the cpu backend cannot read device memory");
        return -1;
    }
    in->ptr = PyLong_AsVoidPtr(obj);
    if (!in->ptr && PyErr_Occurred()) return -1;
    if (!in->ptr && n > 0) {
        PyErr_SetString(PyExc_ValueError, "null device pointer");
        return -1;
    }
    return 0;
}

#ifdef CUATOMIC_WITH_CUDA
int cua_stage(cua_input *in)
{
    if (!in->host) return 0;
    int st = cua_cuda_malloc_async(&in->staged, in->nbytes, in->stream);
    if (st) return st;
    in->ptr = in->staged;
    return cua_cuda_memcpy_htod_async(in->staged, in->host, in->nbytes, in->stream);
}
void cua_unstage(cua_input *in)
{
    if (in->staged) cua_cuda_free_async(in->staged, in->stream);
    in->staged = NULL;
}
int cua_device_alloc(int backend, void **ptr, size_t nbytes, void *stream)
{
    *ptr = NULL;
    return backend == BACKEND_CUDA ? cua_cuda_malloc_async(ptr, nbytes, stream) : 0;
}
void cua_device_free(void *ptr, void *stream)
{
    if (ptr) cua_cuda_free_async(ptr, stream);
}
int cua_copy_to_host(void *dst, const void *src, size_t nbytes, void *stream)
{
    return cua_cuda_memcpy_dtoh(dst, src, nbytes, stream);
}
int cua_copy_on_device(void *dst, const void *src, size_t nbytes, void *stream)
{
    return cua_cuda_memcpy_dtod(dst, src, nbytes, stream);
}
int cua_deliver(int backend, const void *dev, size_t nbytes, void *host, cua_launch *cfg)
{
    return backend == BACKEND_CUDA ? cua_cuda_deliver(dev, nbytes, host, cfg) : 0;
}
int cua_stream_sync(int backend, void *stream)
{
    if (backend != BACKEND_CUDA) return 0;
    int st = cua_cuda_stream_synchronize(stream);
    /* the launchers' scratch frees were only queued (cua_scratch::queued): after the wait, the pool settles
     * if they left it caching past its limit */
    return st ? st : cua_cuda_pool_settle_if_over();
}
#else
int cua_stage(cua_input *in) { return in->host ? CUA_EINTERNAL : 0; }
void cua_unstage(cua_input *in) { (void)in; }
int cua_device_alloc(int backend, void **ptr, size_t nbytes, void *stream)
{
    (void)nbytes, (void)stream;
    *ptr = NULL;
    return backend == BACKEND_CUDA ? CUA_EINTERNAL : 0;
}
void cua_device_free(void *ptr, void *stream) { (void)ptr, (void)stream; }
int cua_copy_to_host(void *dst, const void *src, size_t nbytes, void *stream)
{
    (void)dst, (void)src, (void)nbytes, (void)stream;
    return CUA_EINTERNAL;
}
int cua_copy_on_device(void *dst, const void *src, size_t nbytes, void *stream)
{
    (void)dst, (void)src, (void)nbytes, (void)stream;
    return CUA_EINTERNAL;
}
int cua_deliver(int backend, const void *dev, size_t nbytes, void *host, cua_launch *cfg)
{
    (void)dev, (void)nbytes, (void)host, (void)cfg;
    return backend == BACKEND_CUDA ? CUA_EINTERNAL : 0;
}
int cua_stream_sync(int backend, void *stream)
{
    (void)stream;
    return backend == BACKEND_CUDA ? CUA_EINTERNAL : 0;
}
#endif

int cua_launch_config(long long blocks, int threads, void *stream, cua_launch *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    if (blocks != -1 && (blocks < 1 || blocks > CUA_MAX_BLOCKS)) {
        PyErr_Format(PyExc_ValueError, "blocks must be between 1 and %lld (got %lld)", CUA_MAX_BLOCKS, blocks);
        return -1;
    }
    if (threads != -1 && (threads < 1 || threads > CUA_MAX_THREADS)) {
        PyErr_Format(PyExc_ValueError, "threads must be between 1 and %d (got %d)", CUA_MAX_THREADS, threads);
        return -1;
    }
    cfg->blocks = blocks;
    cfg->threads = threads;
    cfg->stream = stream;
    cfg->poll = cua_poll_signals;
    return 0;
}

/* ------------------------------------------------------------- call slots */

#ifdef CUATOMIC_WITH_CUDA
/* Inputs fill the slot from its start, each on a 256-byte boundary (the
 * alignment cudaMalloc gives, which the wide-load rungs rely on). The result
 * region's last word is the result flag. */
#define SLOT_ALIGN 256
#define SLOT_RESULT_OFFSET (CUA_SLOT_BYTES - CUA_SLOT_RESULT_BYTES)
#define SLOT_FLAG_OFFSET (CUA_SLOT_BYTES - sizeof(unsigned))
static size_t slot_round(size_t nbytes) { return (nbytes + SLOT_ALIGN - 1) / SLOT_ALIGN * SLOT_ALIGN; }

/* The slot's flag, lowered, as the kernel may raise it. */
static void slot_flag(cua_slot *sl, cua_launch *cfg)
{
    cfg->result.flag_host = (volatile unsigned *)(sl->host + SLOT_FLAG_OFFSET);
    cfg->result.flag = (unsigned *)(sl->device + SLOT_FLAG_OFFSET);
    *cfg->result.flag_host = 0;
}

void cua_slot_take(int backend, cua_slot *sl)
{
    void *h, *d;
    sl->id = -1;
    sl->used = 0;
    if (backend == BACKEND_CUDA && (sl->id = cua_cuda_slot_acquire(&h, &d)) >= 0) {
        sl->host = h;
        sl->device = d;
    }
}

void cua_slot_inputs(cua_slot *sl, cua_input *a, cua_input *b)
{
    if (sl->id < 0) return;
    size_t need = 0;
    cua_input *ins[2] = {a, b};
    for (int i = 0; i < 2; i++)
        if (ins[i] && ins[i]->host) need += slot_round(ins[i]->nbytes);
    if (need == 0 || need > SLOT_RESULT_OFFSET) return;
    size_t off = 0;
    for (int i = 0; i < 2; i++) {
        if (!ins[i] || !ins[i]->host) continue;
        memcpy(sl->host + off, ins[i]->host, ins[i]->nbytes);
        ins[i]->ptr = sl->device + off;
        ins[i]->host = NULL;
        off += slot_round(ins[i]->nbytes);
    }
    sl->used = off;
}

void *cua_slot_result(cua_slot *sl, cua_launch *cfg, void *fallback)
{
    if (sl->id < 0) return fallback;
    cfg->result.device = sl->device + SLOT_RESULT_OFFSET;
    slot_flag(sl, cfg);
    return sl->host + SLOT_RESULT_OFFSET;
}

void *cua_slot_output(cua_slot *sl, size_t nbytes, cua_launch *cfg, void *fallback)
{
    if (sl->id < 0 || sl->used || nbytes > SLOT_RESULT_OFFSET) return fallback;
    cfg->result.device = sl->device;
    slot_flag(sl, cfg);
    return sl->host;
}

void cua_slot_give(cua_slot *sl)
{
    cua_cuda_slot_release(sl->id);
    sl->id = -1;
}
#else
void cua_slot_take(int backend, cua_slot *sl)
{
    (void)backend;
    sl->id = -1;
    sl->used = 0;
}
void cua_slot_inputs(cua_slot *sl, cua_input *a, cua_input *b) { (void)sl, (void)a, (void)b; }
void *cua_slot_result(cua_slot *sl, cua_launch *cfg, void *fallback)
{
    (void)sl, (void)cfg;
    return fallback;
}
void *cua_slot_output(cua_slot *sl, size_t nbytes, cua_launch *cfg, void *fallback)
{
    (void)sl, (void)nbytes, (void)cfg;
    return fallback;
}
void cua_slot_give(cua_slot *sl) { sl->id = -1; }
#endif

/* ------------------------------------------------------------ last launch */

static _Thread_local struct {
    int valid, backend, op;
    const char *rung;
    int64_t blocks, chunks;
    int threads, team;
} last;

void cua_record_launch(int backend, int op, const cua_rung *rung, const cua_launch *cfg)
{
    last.valid = 1;
    last.backend = backend;
    last.op = op;
    last.rung = rung->name;
    last.blocks = cfg->used_blocks;
    last.threads = cfg->used_threads;
    last.team = cfg->used_team;
    last.chunks = cfg->chunks > 0 ? cfg->chunks : 1;
}

PyObject *cua_last_launch(PyObject *self, PyObject *noargs)
{
    (void)self, (void)noargs;
    if (!last.valid) Py_RETURN_NONE;
    /* cpu_threads: the OS threads of a cpu launch; None on CUDA, which has none of its own. */
    PyObject *team = last.backend == BACKEND_CPU ? PyLong_FromLong(last.team) : Py_NewRef(Py_None);
    if (!team) return NULL;
    return Py_BuildValue("{s:i,s:i,s:s,s:L,s:i,s:L,s:N}", "backend", last.backend, "op", last.op, "method",
                         last.rung, "blocks", (long long)last.blocks, "threads", last.threads, "chunks",
                         (long long)last.chunks, "cpu_threads", team);
}
