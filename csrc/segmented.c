/* segmented.c -- reductions along axes: x seen as (outer, m, inner), each
 * of the outer * inner outputs folded by a rung of the segmented ladder
 * into 8 bytes of cua_reduce_kind (cuatomic/_axis.py makes NumPy's result
 * type, keepdims, out and initial of them). */
#include <string.h>

#include "call.h"

/* segmented(backend, rung, x, outer, m, inner, dtype, op, blocks, threads,
 * device_out, stream, finish_dtype=-1, finish_kind=-1, divisor=-1.0,
 * dst=None) -> the outputs' kind values: an ndarray of outer * inner
 * uint64 (their bits), or with device_out a DeviceBuffer of them -- or,
 * given finish_dtype (cuda, device_out), the values finished on the
 * device as NumPy's result of that dtype (read as finish_kind when it is
 * given -- a wrapping integer sum as the signed sum it is -- divided by
 * `divisor` first when it is >= 0, a mean) by the rung's last store or a
 * kernel queued after it (cua_seg_out), waited for once: at device address
 * dst (returns None), or without dst into a DeviceBuffer of outer * inner
 * results that the call allocates and returns (its allocation is queued
 * with the kernels and covered by the same wait: no wait of its own, as
 * DeviceBuffer(n) has). */
PyObject *cua_op_segmented(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *kwlist[] = {"backend", "rung",       "x",      "outer",        "m",       "inner",
                             "dtype",   "op",         "blocks", "threads",      "device_out", "stream",
                             "finish_dtype", "finish_kind", "divisor", "dst", NULL};
    int backend, rung, dtype, op, threads, device_out, finish_dtype = -1, finish_kind = -1;
    long long outer, m, inner, blocks;
    double divisor = -1.0;
    PyObject *x, *sobj, *dsto = Py_None;
    void *stream, *fdst = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "iiOLLLiiLipO|iidO", kwlist, &backend, &rung, &x, &outer, &m, &inner,
                                     &dtype, &op, &blocks, &threads, &device_out, &sobj, &finish_dtype,
                                     &finish_kind, &divisor, &dsto) ||
        cua_as_ptr(sobj, &stream) < 0 || (dsto != Py_None && cua_as_ptr(dsto, &fdst) < 0))
        return NULL;
    const cua_segmented_row *r = (const cua_segmented_row *)cua_find_rung(backend, CUA_OP_SEGMENTED, rung);
    if (!r) return NULL;
    /* outer * inner outputs of 8 bytes, each of m elements: each product within int64 (and the outputs' bytes
     * within Py_ssize_t) before any is formed */
    if (outer < 0 || m < 0 || inner < 0 || (inner && outer > INT64_MAX / 8 / inner) ||
        (m && outer * inner > INT64_MAX / m) || cua_reduce_kind(dtype, op) < 0) {
        PyErr_SetString(PyExc_SystemError, "cuatomic: bad segmented shape, dtype or op");
        return NULL;
    }
    const int finishing = finish_dtype >= 0;
    if ((device_out || finishing) && backend != BACKEND_CUDA) {
        PyErr_SetString(PyExc_SystemError, "cuatomic: device output needs the cuda backend");
        return NULL;
    }
    /* the kind the finish reads the values as: the rung's, or the signed reading of a wrapping integer sum */
    const int kind = finish_kind >= 0 ? finish_kind : cua_reduce_kind(dtype, op);
    if (finishing && (!device_out || cua_dtype_size(finish_dtype) == 0 ||
                      (kind != CUA_FLOAT64 && kind != CUA_INT64 && kind != CUA_UINT64) ||
                      (kind == CUA_FLOAT64) != (cua_reduce_kind(dtype, op) == CUA_FLOAT64))) {
        PyErr_SetString(PyExc_SystemError, "cuatomic: bad segmented finish arguments");
        return NULL;
    }
    const int64_t outs = outer * inner, n = outs * m;
    cua_input in;
    cua_launch cfg;
    if (cua_parse_input(backend, x, n, dtype, stream, &in) < 0 || cua_launch_config(blocks, threads, stream, &cfg) < 0)
        return NULL;
    PyObject *out = NULL;
    void *dst = NULL;
    if (finishing && fdst) {
        out = Py_None;
        Py_INCREF(out);
    } else if (finishing || device_out) {
        /* (outs * 8 bytes fit Py_ssize_t, checked above; a result of NumPy's dtype is at most as wide) */
        const Py_ssize_t width = finishing ? (Py_ssize_t)cua_dtype_size(finish_dtype) : 8;
        CuaDeviceBuffer *buf = cua_buffer_new_on((Py_ssize_t)outs * width, stream, 0);
        if (!buf) return NULL;
        out = (PyObject *)buf;
        if (finishing) fdst = buf->ptr;
        else dst = buf->ptr;
    } else {
        npy_intp dims[1] = {(npy_intp)outs};
        out = PyArray_SimpleNew(1, dims, NPY_UINT64);
        if (!out) return NULL;
        dst = PyArray_DATA((PyArrayObject *)out);
    }
    int st;
    Py_BEGIN_ALLOW_THREADS
    void *dev = NULL;
    st = cua_stage(&in);
    /* host results from the GPU: the kind values in device scratch memory, then copied */
    if (!st && !device_out && backend == BACKEND_CUDA) st = cua_device_alloc(backend, &dev, (size_t)outs * 8, stream);
    cua_seg_out dest = {dev ? dev : dst, finishing ? fdst : NULL, finish_dtype, kind, divisor};
    if (!st && outs > 0) st = r->run(in.ptr, outer, m, inner, dtype, op, &dest, &cfg); /* (queued on a GPU) */
    if (!st && dev) st = cua_copy_to_host(dst, dev, (size_t)outs * 8, stream);
    else if (!st && device_out) st = cua_stream_sync(backend, stream); /* the one wait */
    cua_device_free(dev, stream);
    cua_unstage(&in);
    Py_END_ALLOW_THREADS
    if (st) {
        Py_DECREF(out);
        return cua_raise(st, &cfg);
    }
    cua_record_launch(backend, CUA_OP_SEGMENTED, &r->rung, &cfg);
    return out;
}
