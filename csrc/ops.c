/* ops.c -- the operations: convert arguments, look the rung up in the
 * backend's variant table, stage host data for the GPU, release the GIL,
 * run, and turn the status into a result or an exception.
 *
 * The Python layer (cuatomic/_ops.py) has already chosen the backend, the
 * method, the element and accumulator types, and normalized the input to a
 * C-contiguous native-order ndarray (host) or a device pointer (int). This
 * file re-checks what could crash the process if it were wrong. */
#include <string.h>

#include "glue.h"
#include "pipeline.h"

static const int npy_of_dtype[CUA_NDTYPES] = {NPY_BOOL,   NPY_INT8,   NPY_UINT8, NPY_INT16,   NPY_UINT16, NPY_INT32,
                                              NPY_UINT32, NPY_INT64,  NPY_UINT64, NPY_FLOAT32, NPY_FLOAT64};

static const cua_variant *table(int backend, int op, int *count)
{
    *count = 0;
    if (backend == BACKEND_CPU) return cua_cpu_variants(op, count);
#ifdef CUATOMIC_WITH_CUDA
    if (backend == BACKEND_CUDA) return cua_cuda_variants(op, count);
#endif
    return NULL;
}

static const cua_variant *find_variant(int backend, int op, const char *name)
{
    int count;
    const cua_variant *rows = table(backend, op, &count);
    if (!rows) {
        PyErr_Format(PyExc_ValueError, "backend %d (op %d) is not available in this build", backend, op);
        return NULL;
    }
    for (int i = 0; i < count; i++)
        if (strcmp(rows[i].name, name) == 0) return &rows[i];
    PyErr_Format(PyExc_ValueError, "unknown method '%s'", name);
    return NULL;
}

PyObject *cua_variants(PyObject *self, PyObject *args)
{
    (void)self;
    int backend, op, count;
    if (!PyArg_ParseTuple(args, "ii", &backend, &op)) return NULL;
    const cua_variant *rows = table(backend, op, &count);
    PyObject *list = PyList_New(0);
    if (!list) return NULL;
    for (int i = 0; rows && i < count; i++) {
        PyObject *row = Py_BuildValue("(sisI)", rows[i].name, rows[i].step, rows[i].summary, rows[i].flags);
        if (!row || PyList_Append(list, row) < 0) {
            Py_XDECREF(row);
            Py_DECREF(list);
            return NULL;
        }
        Py_DECREF(row);
    }
    return list;
}

/* ------------------------------------------------------------------ inputs */

/* Where a backend reads an input: a host array's data, a device pointer,
 * or (CUDA backend, host array) a device copy made while the GIL is off. */
typedef struct {
    const void *host;   /* host data to stage, or NULL */
    size_t nbytes;
    const void *ptr;    /* what the backend reads */
    void *staged;       /* owned device copy */
    void *stream;       /* the call's stream */
} input_t;

static int parse_input(int backend, PyObject *obj, int64_t n, int dtype, void *stream, input_t *in)
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
/* Without the GIL. */
/* A device copy of host input, from the stream-ordered pool: allocation,
 * copy and release are queued on the call's stream behind/after the kernel,
 * so nothing here waits for the device. */
static int stage(input_t *in)
{
    if (!in->host) return 0;
    int st = cua_cuda_malloc_async(&in->staged, in->nbytes, in->stream);
    if (st) return st;
    in->ptr = in->staged;
    return cua_cuda_memcpy_htod_async(in->staged, in->host, in->nbytes, in->stream);
}
static void unstage(input_t *in)
{
    if (in->staged) cua_cuda_free_async(in->staged, in->stream);
    in->staged = NULL;
}
/* Device memory for an output the caller reads on the host: NULL means
 * write straight into host memory (CPU backend). From the stream's pool. */
static int device_alloc(int backend, void **ptr, size_t nbytes, void *stream)
{
    *ptr = NULL;
    return backend == BACKEND_CUDA ? cua_cuda_malloc_async(ptr, nbytes, stream) : 0;
}
static void device_free(void *ptr, void *stream)
{
    if (ptr) cua_cuda_free_async(ptr, stream);
}
#else
static int stage(input_t *in) { return in->host ? CUA_EINTERNAL : 0; }
static void unstage(input_t *in) { (void)in; }
static int device_alloc(int backend, void **ptr, size_t nbytes, void *stream)
{
    (void)nbytes, (void)stream;
    *ptr = NULL;
    return backend == BACKEND_CUDA ? CUA_EINTERNAL : 0;
}
static void device_free(void *ptr, void *stream) { (void)ptr, (void)stream; }
#endif

static int copy_to_host(void *dst, const void *src, size_t nbytes, void *stream)
{
#ifdef CUATOMIC_WITH_CUDA
    return cua_cuda_memcpy_dtoh(dst, src, nbytes, stream);
#else
    (void)dst, (void)src, (void)nbytes, (void)stream;
    return CUA_EINTERNAL;
#endif
}

/* The launch configuration of a call, checked here because a backend
 * trusts it (the CPU's block tree keeps 1024 lanes on the stack): blocks in
 * [1, 2^31 - 1] and threads in [1, 1024], or -1 for the method's default.
 * -1 with a ValueError otherwise. */
#define CUA_MAX_BLOCKS 2147483647LL
#define CUA_MAX_THREADS 1024
static int launch_config(long long blocks, int threads, void *stream, cua_launch *cfg)
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

/* --------------------------------------------------------------- sum / dot */

/* ------------------------------------------------- chunked host input */

/* total = total + part (or * part) in the accumulator's own arithmetic. */
static void acc_combine(int acc, int mul, uint64_t *total, uint64_t part)
{
    if (acc == CUA_ACC_INT64) {
        *total = mul ? *total * part : *total + part; /* wraps mod 2^64, like the kernels */
    } else if (acc == CUA_ACC_FLOAT32) {
        float a, b;
        memcpy(&a, total, sizeof a);
        memcpy(&b, &part, sizeof b);
        a = mul ? a * b : a + b;
        memcpy(total, &a, sizeof a);
    } else {
        double a, b;
        memcpy(&a, total, sizeof a);
        memcpy(&b, &part, sizeof b);
        a = mul ? a * b : a + b;
        memcpy(total, &a, sizeof a);
    }
}

static uint64_t acc_identity(int acc, int mul)
{
    uint64_t bits = 0;
    if (!mul) return 0;
    if (acc == CUA_ACC_INT64) return 1;
    if (acc == CUA_ACC_FLOAT32) {
        float one = 1.0f;
        memcpy(&bits, &one, sizeof one);
    } else {
        double one = 1.0;
        memcpy(&bits, &one, sizeof one);
    }
    return bits;
}

typedef struct {
    cua_fn fn;
    int dtype, acc, mul;
    uint64_t total;
    cua_dd sum; /* float64 sums: the chunks added with compensation (cpu/cpu.h) */
    int pair;   /* the rung is CUA_F_WIDE: chunks come back as (value, error) pairs, unrounded */
} reduce_ctx;

static reduce_ctx reduce_start(const cua_variant *v, int dtype, int acc, int mul)
{
    reduce_ctx c = {v->fn, dtype, acc, mul, acc_identity(acc, mul), {0, 0}, 0};
    c.pair = (v->flags & CUA_F_WIDE) && acc == CUA_ACC_FLOAT64 && !mul;
    return c;
}

/* part[0] is the chunk's result; part[1] its error term when c->pair. */
static void chunk_combine(reduce_ctx *c, const uint64_t part[2])
{
    if (c->acc != CUA_ACC_FLOAT64 || c->mul) {
        acc_combine(c->acc, c->mul, &c->total, part[0]);
        return;
    }
    cua_dd chunk = {0, 0};
    memcpy(&chunk.s, &part[0], sizeof chunk.s);
    if (c->pair) memcpy(&chunk.c, &part[1], sizeof chunk.c);
    c->sum = cua_dd_add(c->sum, chunk);
}

/* The combined chunks' result bits. */
static uint64_t chunk_total(const reduce_ctx *c)
{
    if (c->acc != CUA_ACC_FLOAT64 || c->mul) return c->total;
    const double s = cua_dd_value(c->sum);
    uint64_t bits;
    memcpy(&bits, &s, sizeof bits);
    return bits;
}

static int reduce_chunk(const void *const *dev, int64_t m, cua_launch *cfg, void *vctx)
{
    reduce_ctx *c = vctx;
    uint64_t part[2] = {0, 0};
    cfg->pair = c->pair;
    int st = ((cua_sum_fn)c->fn)(dev[0], m, c->dtype, c->acc, part, cfg);
    if (!st) chunk_combine(c, part);
    return st;
}

static int dot_chunk(const void *const *dev, int64_t m, cua_launch *cfg, void *vctx)
{
    reduce_ctx *c = vctx;
    uint64_t part[2] = {0, 0};
    cfg->pair = c->pair;
    int st = ((cua_dot_fn)c->fn)(dev[0], dev[1], m, c->dtype, c->acc, part, cfg);
    if (!st) chunk_combine(c, part);
    return st;
}

typedef struct {
    cua_fn fn;
    int dtype;
    const cua_bins *bins;
    uint64_t *dev_counts, *tmp, *counts;
} hist_ctx;

static int hist_chunk(const void *const *dev, int64_t m, cua_launch *cfg, void *vctx)
{
    hist_ctx *c = vctx;
    const size_t bytes = (size_t)c->bins->nbins * sizeof(uint64_t);
    int st = ((cua_hist_fn)c->fn)(dev[0], m, c->dtype, c->bins, c->dev_counts, cfg);
    if (!st) st = copy_to_host(c->tmp, c->dev_counts, bytes, cfg->stream);
    for (int64_t b = 0; !st && b < c->bins->nbins; b++) c->counts[b] += c->tmp[b];
    return st;
}

/* ------------------------------------------------------- call slots */

/* A small call on the GPU spends more time in copies than in its kernel. A
 * call slot (cua_cuda_slot_acquire) removes both: host inputs that fit are
 * copied into the page-locked slot and read by the kernel over the bus, and
 * the result comes back in the slot's last 64 bytes, written by the kernel
 * or copied there by the launcher. Without a free slot (or on the CPU), the
 * ordinary path runs. */
#define RESULT_OFFSET (64 << 10) - 64
typedef struct {
    int id;
    char *host, *device;
} slot_t;

static void slot_take(int backend, slot_t *sl)
{
    sl->id = -1;
#ifdef CUATOMIC_WITH_CUDA
    void *h, *d;
    if (backend == BACKEND_CUDA && (sl->id = cua_cuda_slot_acquire(&h, &d)) >= 0) {
        sl->host = h;
        sl->device = d;
    }
#else
    (void)backend;
#endif
}

/* Host inputs go into the slot if they all fit in front of the result. */
static void slot_inputs(slot_t *sl, input_t *a, input_t *b)
{
    if (sl->id < 0) return;
    size_t need = 0;
    input_t *ins[2] = {a, b};
    for (int i = 0; i < 2; i++)
        if (ins[i] && ins[i]->host) need += (ins[i]->nbytes + 255) / 256 * 256;
    if (need == 0 || need > RESULT_OFFSET) return;
    size_t off = 0;
    for (int i = 0; i < 2; i++) {
        if (!ins[i] || !ins[i]->host) continue;
        memcpy(sl->host + off, ins[i]->host, ins[i]->nbytes);
        ins[i]->ptr = sl->device + off;
        ins[i]->host = NULL;
        off += (ins[i]->nbytes + 255) / 256 * 256;
    }
}

/* Where the backend writes the result: the slot, else `fallback`. */
static void *slot_result(slot_t *sl, cua_launch *cfg, void *fallback)
{
    if (sl->id < 0) return fallback;
    cfg->result_device = sl->device + RESULT_OFFSET;
    return sl->host + RESULT_OFFSET;
}

static void slot_give(slot_t *sl)
{
#ifdef CUATOMIC_WITH_CUDA
    cua_cuda_slot_release(sl->id);
#endif
    sl->id = -1;
}

/* Without the GIL: one sum/prod (b == NULL) or dot rung on inputs held in
 * a call slot or staged on the device, its 8 result bytes into *result. */
static int run_reduction(int backend, const cua_variant *v, input_t *a, input_t *b, int64_t n, int dtype, int acc,
                         cua_launch *cfg, uint64_t *result)
{
    slot_t sl;
    slot_take(backend, &sl);
    slot_inputs(&sl, a, b);
    void *res = slot_result(&sl, cfg, result);
    int st = stage(a);
    if (!st && b) st = stage(b);
    if (!st)
        st = b ? ((cua_dot_fn)v->fn)(a->ptr, b->ptr, n, dtype, acc, res, cfg)
               : ((cua_sum_fn)v->fn)(a->ptr, n, dtype, acc, res, cfg);
    if (!st && res != result) memcpy(result, res, sizeof *result);
    unstage(a);
    if (b) unstage(b);
    slot_give(&sl);
    return st;
}

/* The 8 bytes of an accumulator as a NumPy scalar of type `typenum`:
 * integer results are the low bits of the 64-bit sum (NumPy's wrap-around),
 * bool is "any bit set", floats are converted from the accumulator. */
static PyObject *scalar_of(uint64_t bits, int acc, int typenum)
{
    union {
        npy_bool b;
        int8_t i8;
        int16_t i16;
        int32_t i32;
        int64_t i64;
        float f32;
        double f64;
        uint64_t raw;
    } v;
    v.raw = 0;
    float f;
    double d;
    memcpy(&f, &bits, sizeof f);
    memcpy(&d, &bits, sizeof d);
    int ok = 1;
    if (acc == CUA_ACC_INT64) {
        switch (typenum) {
        case NPY_BOOL: v.b = bits != 0; break;
        case NPY_BYTE: case NPY_UBYTE: v.i8 = (int8_t)bits; break;
        case NPY_SHORT: case NPY_USHORT: v.i16 = (int16_t)bits; break;
        case NPY_INT: case NPY_UINT: v.i32 = (int32_t)bits; break;
        case NPY_LONG: case NPY_ULONG:
            if (sizeof(long) == 8) v.raw = bits;
            else v.i32 = (int32_t)bits;
            break;
        case NPY_LONGLONG: case NPY_ULONGLONG: v.raw = bits; break;
        default: ok = 0;
        }
    } else if (typenum == NPY_FLOAT32) {
        v.f32 = acc == CUA_ACC_FLOAT32 ? f : (float)d;
    } else if (typenum == NPY_FLOAT64) {
        v.f64 = acc == CUA_ACC_FLOAT32 ? (double)f : d;
    } else {
        ok = 0;
    }
    PyArray_Descr *descr = ok ? PyArray_DescrFromType(typenum) : NULL;
    if (!descr) {
        if (!PyErr_Occurred()) PyErr_Format(PyExc_SystemError, "cuatomic: no scalar of type %d", typenum);
        return NULL;
    }
    PyObject *r = PyArray_Scalar(&v, descr, NULL);
    Py_DECREF(descr);
    return r;
}

/* sum and prod: one input, one accumulator. */
static PyObject *reduce(PyObject *args, int op)
{
    int backend, dtype, acc, threads, out_type;
    const char *method;
    PyObject *x, *sobj;
    long long n, blocks;
    void *stream;
    if (!PyArg_ParseTuple(args, "isOLiiLiOi", &backend, &method, &x, &n, &dtype, &acc, &blocks, &threads, &sobj,
                          &out_type) ||
        cua_as_ptr(sobj, &stream) < 0)
        return NULL;
    const cua_variant *v = find_variant(backend, op, method);
    input_t in;
    if (!v || parse_input(backend, x, n, dtype, stream, &in) < 0) return NULL;
    cua_launch cfg;
    if (launch_config(blocks, threads, stream, &cfg) < 0) return NULL;
    uint64_t result = 0;
    int st = 0;
    Py_BEGIN_ALLOW_THREADS
    int chunked = 0;
    if (in.host) { /* a host array for the GPU: streamed in chunks when large */
        reduce_ctx rc = reduce_start(v, dtype, acc, op == CUA_OP_PROD);
        st = cua_pipeline_run(1, &in.host, cua_dtype_size(dtype), n, &cfg, reduce_chunk, &rc, &chunked);
        result = chunk_total(&rc);
    }
    if (!chunked) st = run_reduction(backend, v, &in, NULL, n, dtype, acc, &cfg, &result);
    Py_END_ALLOW_THREADS
    if (st) return cua_raise(st, &cfg);
    return scalar_of(result, acc, out_type);
}

PyObject *cua_op_sum(PyObject *self, PyObject *args)
{
    (void)self;
    return reduce(args, CUA_OP_SUM);
}

PyObject *cua_op_prod(PyObject *self, PyObject *args)
{
    (void)self;
    return reduce(args, CUA_OP_PROD);
}

PyObject *cua_op_dot(PyObject *self, PyObject *args)
{
    (void)self;
    int backend, dtype, acc, threads, out_type;
    const char *method;
    PyObject *a, *b, *sobj;
    long long n, blocks;
    void *stream;
    if (!PyArg_ParseTuple(args, "isOOLiiLiOi", &backend, &method, &a, &b, &n, &dtype, &acc, &blocks, &threads,
                          &sobj, &out_type) ||
        cua_as_ptr(sobj, &stream) < 0)
        return NULL;
    const cua_variant *v = find_variant(backend, CUA_OP_DOT, method);
    input_t ia, ib;
    if (!v || parse_input(backend, a, n, dtype, stream, &ia) < 0 || parse_input(backend, b, n, dtype, stream, &ib) < 0)
        return NULL;
    cua_launch cfg;
    if (launch_config(blocks, threads, stream, &cfg) < 0) return NULL;
    uint64_t result = 0;
    int st = 0;
    Py_BEGIN_ALLOW_THREADS
    int chunked = 0;
    if (ia.host && ib.host) {
        const void *hosts[2] = {ia.host, ib.host};
        reduce_ctx rc = reduce_start(v, dtype, acc, 0);
        st = cua_pipeline_run(2, hosts, cua_dtype_size(dtype), n, &cfg, dot_chunk, &rc, &chunked);
        result = chunk_total(&rc);
    }
    if (!chunked) st = run_reduction(backend, v, &ia, &ib, n, dtype, acc, &cfg, &result);
    Py_END_ALLOW_THREADS
    if (st) return cua_raise(st, &cfg);
    return scalar_of(result, acc, out_type);
}

/* --------------------------------------------------------------- histogram */

PyObject *cua_op_histogram(PyObject *self, PyObject *args)
{
    (void)self;
    int backend, dtype, threads, device_out;
    const char *method;
    PyObject *x, *edges_obj, *sobj;
    long long n, blocks;
    void *stream;
    cua_bins bins;
    memset(&bins, 0, sizeof bins);
    long long ilo, iwidth;
    if (!PyArg_ParseTuple(args, "isOLiOidiLLLipO", &backend, &method, &x, &n, &dtype, &edges_obj, &bins.uniform,
                          &bins.inv_width, &bins.integer, &ilo, &iwidth, &blocks, &threads, &device_out, &sobj) ||
        cua_as_ptr(sobj, &stream) < 0)
        return NULL;
    const cua_variant *v = find_variant(backend, CUA_OP_HISTOGRAM, method);
    input_t in;
    if (!v || parse_input(backend, x, n, dtype, stream, &in) < 0) return NULL;
    if (!PyArray_Check(edges_obj)) {
        PyErr_SetString(PyExc_SystemError, "cuatomic: edges must be an ndarray");
        return NULL;
    }
    PyArrayObject *edges = (PyArrayObject *)edges_obj;
    int et = PyArray_TYPE(edges);
    /* Integer edges only for 64-bit integer data of the same signedness
     * (by kind and size: long and long long are both int64 on Linux). */
    const int int_edges = PyArray_ITEMSIZE(edges) == 8 &&
                          ((PyArray_ISSIGNED(edges) && dtype == CUA_INT64) ||
                           (PyArray_ISUNSIGNED(edges) && dtype == CUA_UINT64));
    if (!PyArray_IS_C_CONTIGUOUS(edges) || !PyArray_ISNOTSWAPPED(edges) || PyArray_NDIM(edges) != 1 ||
        PyArray_SIZE(edges) < 2 || (et != NPY_FLOAT32 && et != NPY_FLOAT64 && !int_edges)) {
        PyErr_SetString(PyExc_SystemError,
                        "cuatomic: edges must be 1-D contiguous float32/float64 (or int64/uint64 for that "
                        "data), >= 2");
        return NULL;
    }
    bins.nbins = PyArray_SIZE(edges) - 1;
    bins.edge_dtype = int_edges ? dtype : et == NPY_FLOAT32 ? CUA_FLOAT32 : CUA_FLOAT64;
    if (int_edges) bins.uniform = bins.integer = 0; /* searched, compared exactly */
    bins.edges = PyArray_DATA(edges);
    bins.ilo = ilo;
    bins.iwidth = iwidth;
    if (bins.integer && iwidth < 1) {
        PyErr_SetString(PyExc_SystemError, "cuatomic: integer bins need a width >= 1");
        return NULL;
    }
    cua_launch cfg;
    if (launch_config(blocks, threads, stream, &cfg) < 0) return NULL;
    const size_t cbytes = (size_t)bins.nbins * sizeof(uint64_t);
    PyObject *out;
    void *counts; /* where the backend writes */
    if (device_out) {
        if (backend != BACKEND_CUDA) {
            PyErr_SetString(PyExc_SystemError, "cuatomic: device output needs the cuda backend");
            return NULL;
        }
        CuaDeviceBuffer *buf = cua_buffer_new_on((Py_ssize_t)cbytes, stream, 0);
        if (!buf) return NULL;
        out = (PyObject *)buf;
        counts = buf->ptr;
    } else {
        npy_intp dims[1] = {(npy_intp)bins.nbins};
        out = PyArray_SimpleNew(1, dims, NPY_INT64);
        if (!out) return NULL;
        counts = PyArray_DATA((PyArrayObject *)out);
    }
    int st;
    Py_BEGIN_ALLOW_THREADS
    void *dev = NULL;
    int chunked = 0;
    st = 0;
    if (in.host && !device_out) { /* a large host array: streamed in chunks, counts added up */
        uint64_t *tmp = malloc(cbytes);
        st = tmp ? device_alloc(backend, &dev, cbytes, stream) : CUA_ENOMEM;
        if (!st) {
            memset(counts, 0, cbytes);
            hist_ctx hc = {v->fn, dtype, &bins, dev, tmp, counts};
            st = cua_pipeline_run(1, &in.host, cua_dtype_size(dtype), n, &cfg, hist_chunk, &hc, &chunked);
        }
        free(tmp);
        if (!chunked) { /* not worth it: back to one staged copy */
            device_free(dev, stream);
            dev = NULL;
        }
    }
    if (!chunked && !st) {
        st = stage(&in);
        if (!st && !device_out) st = device_alloc(backend, &dev, cbytes, stream);
        if (!st) st = ((cua_hist_fn)v->fn)(in.ptr, n, dtype, &bins, (uint64_t *)(dev ? dev : counts), &cfg);
        if (!st && dev) st = copy_to_host(counts, dev, cbytes, stream);
        unstage(&in);
    }
    device_free(dev, stream);
    Py_END_ALLOW_THREADS
    if (st) {
        Py_DECREF(out);
        return cua_raise(st, &cfg);
    }
    return out;
}

/* ------------------------------------------------------------------ filter */

static int read_bound(PyObject *bytes, void *dst)
{
    if (!PyBytes_Check(bytes) || PyBytes_GET_SIZE(bytes) != 8) {
        PyErr_SetString(PyExc_SystemError, "cuatomic: predicate bounds must be 8 bytes");
        return -1;
    }
    memcpy(dst, PyBytes_AS_STRING(bytes), 8);
    return 0;
}

PyObject *cua_op_filter(PyObject *self, PyObject *args)
{
    (void)self;
    int backend, dtype, threads, device_out;
    const char *method;
    PyObject *x, *lo, *hi, *sobj;
    long long n, blocks;
    void *stream;
    cua_pred pred;
    memset(&pred, 0, sizeof pred);
    if (!PyArg_ParseTuple(args, "isOLipOOLipO", &backend, &method, &x, &n, &dtype, &pred.negate, &lo, &hi, &blocks,
                          &threads, &device_out, &sobj) ||
        cua_as_ptr(sobj, &stream) < 0)
        return NULL;
    const cua_variant *v = find_variant(backend, CUA_OP_FILTER, method);
    input_t in;
    if (!v || parse_input(backend, x, n, dtype, stream, &in) < 0 || read_bound(lo, &pred.lo) < 0 ||
        read_bound(hi, &pred.hi) < 0)
        return NULL;
    cua_launch cfg;
    if (launch_config(blocks, threads, stream, &cfg) < 0) return NULL;
    const size_t size = cua_dtype_size(dtype);
    PyObject *out;
    void *dst;
    if (device_out) {
        if (backend != BACKEND_CUDA) {
            PyErr_SetString(PyExc_SystemError, "cuatomic: device output needs the cuda backend");
            return NULL;
        }
        CuaDeviceBuffer *buf = cua_buffer_new_on((Py_ssize_t)(n * size), stream, 0);
        if (!buf) return NULL;
        out = (PyObject *)buf;
        dst = buf->ptr;
    } else {
        npy_intp dims[1] = {(npy_intp)n};
        out = PyArray_SimpleNew(1, dims, npy_of_dtype[dtype]);
        if (!out) return NULL;
        dst = PyArray_DATA((PyArrayObject *)out);
    }
    int64_t count = 0;
    int st;
    Py_BEGIN_ALLOW_THREADS
    void *dev = NULL;
    st = stage(&in);
    if (!st && !device_out) st = device_alloc(backend, &dev, (size_t)n * size, stream);
    if (!st) st = ((cua_filter_fn)v->fn)(in.ptr, n, dtype, &pred, dev ? dev : dst, &count, &cfg);
    if (!st && dev) st = copy_to_host(dst, dev, (size_t)count * size, stream);
    device_free(dev, stream);
    unstage(&in);
    Py_END_ALLOW_THREADS
    if (st) {
        Py_DECREF(out);
        return cua_raise(st, &cfg);
    }
    if (!device_out && count < n) {
        /* The host output was made for every element to pass; give back
         * what was not used (realloc: the untouched pages were never
         * resident, and now they are not reserved either). */
        npy_intp dims[1] = {(npy_intp)count};
        PyArray_Dims shape = {dims, 1};
        PyObject *none = PyArray_Resize((PyArrayObject *)out, &shape, 0, NPY_CORDER);
        if (!none) {
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(none);
    }
    return Py_BuildValue("(NL)", out, (long long)count);
}

/* ---------------------------------------------------------------- counters */

PyObject *cua_op_counter(PyObject *self, PyObject *args)
{
    (void)self;
    int backend, op, threads;
    const char *method;
    long long blocks;
    PyObject *sobj;
    void *stream;
    if (!PyArg_ParseTuple(args, "iisLiO", &backend, &op, &method, &blocks, &threads, &sobj) ||
        cua_as_ptr(sobj, &stream) < 0)
        return NULL;
    if (op != CUA_OP_ADD_ONE && op != CUA_OP_MUTEX_ADD_ONE) {
        PyErr_SetString(PyExc_SystemError, "cuatomic: not a counter op");
        return NULL;
    }
    const cua_variant *v = find_variant(backend, op, method);
    if (!v) return NULL;
    cua_launch cfg;
    if (launch_config(blocks, threads, stream, &cfg) < 0) return NULL;
    int64_t result = 0;
    int st;
    Py_BEGIN_ALLOW_THREADS
    st = ((cua_counter_fn)v->fn)(&result, &cfg);
    Py_END_ALLOW_THREADS
    if (st) return cua_raise(st, &cfg);
    return PyLong_FromLongLong(result);
}

/* ------------------------------------------------------------------ minmax */

PyObject *cua_op_minmax(PyObject *self, PyObject *args)
{
    (void)self;
#ifdef CUATOMIC_WITH_CUDA
    PyObject *x, *sobj;
    long long n;
    int dtype;
    void *stream;
    if (!PyArg_ParseTuple(args, "OLiO", &x, &n, &dtype, &sobj) || cua_as_ptr(sobj, &stream) < 0) return NULL;
    input_t in;
    if (parse_input(BACKEND_CUDA, x, n, dtype, stream, &in) < 0) return NULL;
    if (n <= 0 || !in.ptr) {
        PyErr_SetString(PyExc_SystemError, "cuatomic: minmax needs a non-empty device array");
        return NULL;
    }
    uint64_t lo = 0, hi = 0;
    int nan = 0, st;
    Py_BEGIN_ALLOW_THREADS
    st = cua_cuda_minmax(in.ptr, n, dtype, &lo, &hi, &nan, stream);
    Py_END_ALLOW_THREADS
    if (st) return cua_raise(st, NULL);
    return Py_BuildValue("(y#y#O)", (const char *)&lo, (Py_ssize_t)8, (const char *)&hi, (Py_ssize_t)8,
                         nan ? Py_True : Py_False);
#else
    (void)args;
    return cua_no_cuda();
#endif
}
