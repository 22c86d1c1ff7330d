/* filter.c -- filter: the elements that pass an interval test, or their
 * indices (nonzero & co.), as a new ndarray (or device buffer) and their
 * count. */
#include <string.h>

#include "call.h"

#define NPY_OF_(id, name, ctype, npy, pred) npy,
static const int npy_of_dtype[CUA_NDTYPES] = {CUA_DTYPES(NPY_OF_)};
#undef NPY_OF_

static int read_bound(PyObject *bytes, void *dst)
{
    if (!PyBytes_Check(bytes) || PyBytes_GET_SIZE(bytes) != 8) {
        PyErr_SetString(PyExc_SystemError, "cuatomic: predicate bounds must be 8 bytes");
        return -1;
    }
    memcpy(dst, PyBytes_AS_STRING(bytes), 8);
    return 0;
}

/* The host output is made for every element to pass; give back what was
 * not used (realloc: the untouched pages were never resident, and now they
 * are not reserved either). -1 with an exception. */
static int shrink(PyObject *out, int64_t count)
{
    npy_intp dims[1] = {(npy_intp)count};
    PyArray_Dims shape = {dims, 1};
    PyObject *none = PyArray_Resize((PyArrayObject *)out, &shape, 0, NPY_CORDER);
    if (!none) return -1;
    Py_DECREF(none);
    return 0;
}

/* A device output is made for every element to pass. When at least 1/TRIM
 * of them do, the result keeps that buffer (never larger than the input): a
 * trimmed copy would cost up to a third of the call again. Fewer are copied
 * to a buffer of their own size (cheap), so a few elements do not hold a
 * capacity-n buffer alive. */
#define TRIM 8

/* *out (a DeviceBuffer) replaced by a new one holding its first nbytes,
 * copied on `stream` (and waited for) before the old one goes back to the
 * pool. -1 with an exception; *out is unchanged then. */
static int trim(PyObject **out, size_t nbytes, void *stream)
{
    CuaDeviceBuffer *big = (CuaDeviceBuffer *)*out;
    CuaDeviceBuffer *small = cua_buffer_new_on((Py_ssize_t)nbytes, stream, 0);
    if (!small) return -1;
    int st;
    Py_BEGIN_ALLOW_THREADS
    st = cua_copy_on_device(small->ptr, big->ptr, nbytes, stream);
    Py_END_ALLOW_THREADS
    if (st) {
        Py_DECREF(small);
        cua_raise(st, NULL);
        return -1;
    }
    Py_DECREF(big);
    *out = (PyObject *)small;
    return 0;
}

PyObject *cua_op_filter(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *kwlist[] = {"backend", "rung",   "x",       "n",          "dtype",  "negate", "lo",
                             "hi",      "blocks", "threads", "device_out", "stream", "indices", "capacity", NULL};
    int backend, rung, dtype, threads, device_out, indices = 0;
    PyObject *x, *lo, *hi, *sobj;
    long long n, blocks, capacity = -1;
    void *stream;
    cua_pred pred;
    memset(&pred, 0, sizeof pred);
    if (!PyArg_ParseTupleAndKeywords(args, kw, "iiOLipOOLipO|pL", kwlist, &backend, &rung, &x, &n, &dtype,
                                     &pred.negate, &lo, &hi, &blocks, &threads, &device_out, &sobj, &indices,
                                     &capacity) ||
        cua_as_ptr(sobj, &stream) < 0)
        return NULL;
    const cua_filter_row *row = (const cua_filter_row *)cua_find_rung(backend, CUA_OP_FILTER, rung);
    cua_input in;
    if (!row || cua_parse_input(backend, x, n, dtype, stream, &in) < 0 || read_bound(lo, &pred.lo) < 0 ||
        read_bound(hi, &pred.hi) < 0)
        return NULL;
    cua_launch cfg;
    if (cua_launch_config(blocks, threads, stream, &cfg) < 0) return NULL;
    pred.indices = indices;
    const size_t size = cua_cpu_out_size(dtype, &pred);
    /* Outputs made: n (every element may pass), or the exact count when the
     * caller has counted device data (count_kept, on the same stream). The
     * CUDA rungs write no index past it; a count past it means the data
     * changed in between (another stream), and raises. The CPU rungs take
     * no capacity: they are always given n. */
    if (capacity < 0 || capacity > n || !indices || backend != BACKEND_CUDA) capacity = n;
    pred.capacity = capacity;
    PyObject *out;
    void *dst;
    if (device_out) {
        if (backend != BACKEND_CUDA) {
            PyErr_SetString(PyExc_SystemError, "cuatomic: device output needs the cuda backend");
            return NULL;
        }
        CuaDeviceBuffer *buf = cua_buffer_new_on((Py_ssize_t)(capacity * size), stream, 0);
        if (!buf) return NULL;
        out = (PyObject *)buf;
        dst = buf->ptr;
    } else {
        npy_intp dims[1] = {(npy_intp)capacity};
        out = PyArray_SimpleNew(1, dims, indices ? NPY_INT64 : npy_of_dtype[dtype]);
        if (!out) return NULL;
        dst = PyArray_DATA((PyArrayObject *)out);
    }
    int64_t count = 0;
    int st;
    Py_BEGIN_ALLOW_THREADS
    void *dev = NULL;
    /* The count comes back through a call slot when one is free: a kernel
     * may write it there itself (no copy after the kernel). */
    cua_slot sl;
    cua_slot_take(backend, &sl);
    int64_t *kept = (int64_t *)cua_slot_result(&sl, &cfg, &count);
    st = cua_stage(&in);
    if (!st && !device_out) st = cua_device_alloc(backend, &dev, (size_t)capacity * size, stream);
    if (!st) st = row->run(in.ptr, n, dtype, &pred, dev ? dev : dst, kept, &cfg);
    if (!st) count = *(volatile int64_t *)kept;
    cua_slot_give(&sl);
    if (!st && count > capacity) st = CUA_EINVAL;
    if (!st && dev) st = cua_copy_to_host(dst, dev, (size_t)count * size, stream);
    cua_device_free(dev, stream);
    cua_unstage(&in);
    Py_END_ALLOW_THREADS
    if (st) {
        Py_DECREF(out);
        if (st == CUA_EINVAL && count > capacity) {
            PyErr_Format(PyExc_RuntimeError, "nonzero: %lld elements were counted and %lld found: the array changed "
                         "while it was read (written on another stream?)", (long long)capacity, (long long)count);
            return NULL;
        }
        return cua_raise(st, &cfg);
    }
    if (device_out ? TRIM * count < capacity && trim(&out, (size_t)count * size, stream) < 0
                   : count < capacity && shrink(out, count) < 0) {
        Py_DECREF(out);
        return NULL;
    }
    cua_record_launch(backend, CUA_OP_FILTER, &row->rung, &cfg);
    return Py_BuildValue("(NL)", out, (long long)count);
}

/* filter_fits(backend, rung, x, dtype, blocks, threads) -> None if the rung
 * can filter dtype data at address x (0: memory the call allocates) with
 * that launch configuration on the current device, else the reason (the
 * ValueError a call would raise). */
PyObject *cua_filter_fits(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *kwlist[] = {"backend", "rung", "x", "dtype", "blocks", "threads", NULL};
    int backend, rung, dtype, threads;
    long long blocks;
    PyObject *xobj;
    void *x;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "iiOiLi", kwlist, &backend, &rung, &xobj, &dtype, &blocks, &threads) ||
        cua_as_ptr(xobj, &x) < 0)
        return NULL;
    if (cua_dtype_size(dtype) == 0) {
        PyErr_SetString(PyExc_SystemError, "cuatomic: bad dtype id");
        return NULL;
    }
    const cua_filter_row *row = (const cua_filter_row *)cua_find_rung(backend, CUA_OP_FILTER, rung);
    cua_launch cfg;
    if (!row || cua_launch_config(blocks, threads, NULL, &cfg) < 0) return NULL;
    int st;
    Py_BEGIN_ALLOW_THREADS
    st = row->fits(x, dtype, &cfg);
    Py_END_ALLOW_THREADS
    if (st == CUA_EINVAL) return PyUnicode_FromString(cfg.msg);
    if (st) return cua_raise(st, &cfg);
    Py_RETURN_NONE;
}

/* count_kept(x, n, dtype, negate, lo, hi, stream) -> how many of the n
 * elements at device address x pass the predicate (the cuda backend). */
PyObject *cua_count_kept(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *xo, *lo, *hi, *so;
    long long n;
    int dtype;
    cua_pred pred;
    memset(&pred, 0, sizeof pred);
    if (!PyArg_ParseTuple(args, "OLipOOO", &xo, &n, &dtype, &pred.negate, &lo, &hi, &so)) return NULL;
    void *x, *stream;
    if (cua_as_ptr(xo, &x) < 0 || cua_as_ptr(so, &stream) < 0 || read_bound(lo, &pred.lo) < 0 ||
        read_bound(hi, &pred.hi) < 0)
        return NULL;
    if (cua_dtype_size(dtype) == 0 || n < 0) {
        PyErr_SetString(PyExc_SystemError, "cuatomic: bad dtype id or size");
        return NULL;
    }
    int64_t count = 0;
    int st;
    Py_BEGIN_ALLOW_THREADS
#ifdef CUATOMIC_WITH_CUDA
    st = cua_cuda_count_kept(x, n, dtype, &pred, &count, stream);
#else
    st = CUA_EINTERNAL;
#endif
    Py_END_ALLOW_THREADS
    if (st) return cua_raise(st, NULL);
    return PyLong_FromLongLong(count);
}

/* unravel(backend, flat, k, shape, outs, stride, stream): coordinate d of
 * flat index j (int64, in memory of the backend) into outs[d] + j * stride
 * (int64 elements; outs a sequence of ndim addresses). */
PyObject *cua_unravel(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *flato, *shapeo, *outso, *so;
    int backend;
    long long k, stride;
    if (!PyArg_ParseTuple(args, "iOLOOLO", &backend, &flato, &k, &shapeo, &outso, &stride, &so)) return NULL;
    void *flat, *stream;
    if (cua_as_ptr(flato, &flat) < 0 || cua_as_ptr(so, &stream) < 0) return NULL;
    int64_t shape[CUA_UNRAVEL_MAX_DIMS];
    int64_t *outs[CUA_UNRAVEL_MAX_DIMS];
    Py_ssize_t nd = PySequence_Size(shapeo);
    if (nd < 1 || nd > CUA_UNRAVEL_MAX_DIMS || PySequence_Size(outso) != nd || k < 0 || stride < 1) {
        PyErr_Format(PyExc_ValueError, "unravel: 1 to %d dimensions, one output each, k >= 0, stride >= 1",
                     CUA_UNRAVEL_MAX_DIMS);
        return NULL;
    }
    for (Py_ssize_t d = 0; d < nd; d++) {
        PyObject *a = PySequence_GetItem(shapeo, d), *b = PySequence_GetItem(outso, d);
        shape[d] = a ? PyLong_AsLongLong(a) : -1;
        void *p = NULL;
        if (b && cua_as_ptr(b, &p) == 0) outs[d] = (int64_t *)p;
        Py_XDECREF(a);
        Py_XDECREF(b);
        if (PyErr_Occurred()) return NULL;
    }
    int st;
    Py_BEGIN_ALLOW_THREADS
#ifdef CUATOMIC_WITH_CUDA
    if (backend == BACKEND_CUDA) st = cua_cuda_unravel((const int64_t *)flat, k, (int)nd, shape, outs, stride, stream);
    else
#endif
        st = backend == BACKEND_CPU ? cua_cpu_unravel((const int64_t *)flat, k, (int)nd, shape, outs, stride)
                                    : CUA_EINTERNAL;
    Py_END_ALLOW_THREADS
    if (st) return cua_raise(st, NULL);
    Py_RETURN_NONE;
}
