/* segmented.c -- reductions along axes: x seen as (outer, m, inner), each
 * of the outer * inner outputs folded by a rung of the segmented ladder
 * into 8 bytes of cua_reduce_kind (cuatomic/_axis.py makes NumPy's result
 * type, keepdims, out and initial of them). */
#include <string.h>

#include "call.h"

/* segmented(backend, rung, x, outer, m, inner, dtype, op, blocks, threads,
 * device_out, stream) -> the outputs' kind values: an ndarray of outer *
 * inner uint64 (their bits), or a DeviceBuffer when device_out. */
PyObject *cua_op_segmented(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *kwlist[] = {"backend", "rung",   "x",       "outer",      "m",      "inner", "dtype",
                             "op",      "blocks", "threads", "device_out", "stream", NULL};
    int backend, rung, dtype, op, threads, device_out;
    long long outer, m, inner, blocks;
    PyObject *x, *sobj;
    void *stream;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "iiOLLLiiLipO", kwlist, &backend, &rung, &x, &outer, &m, &inner,
                                     &dtype, &op, &blocks, &threads, &device_out, &sobj) ||
        cua_as_ptr(sobj, &stream) < 0)
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
    const int64_t outs = outer * inner, n = outs * m;
    cua_input in;
    cua_launch cfg;
    if (cua_parse_input(backend, x, n, dtype, stream, &in) < 0 || cua_launch_config(blocks, threads, stream, &cfg) < 0)
        return NULL;
    PyObject *out;
    void *dst;
    if (device_out) {
        if (backend != BACKEND_CUDA) {
            PyErr_SetString(PyExc_SystemError, "cuatomic: device output needs the cuda backend");
            return NULL;
        }
        CuaDeviceBuffer *buf = cua_buffer_new_on((Py_ssize_t)(outs * 8), stream, 0);
        if (!buf) return NULL;
        out = (PyObject *)buf;
        dst = buf->ptr;
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
    if (!st && !device_out) st = cua_device_alloc(backend, &dev, (size_t)outs * 8, stream);
    if (!st && outs > 0) st = r->run(in.ptr, outer, m, inner, dtype, op, dev ? dev : dst, &cfg); /* (no outputs: no run) */
    if (!st && dev) st = cua_copy_to_host(dst, dev, (size_t)outs * 8, stream);
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

/* segmented_finish(src, n, kind, divisor, out_dtype, dst, stream): the
 * kind values at device address src as the result type at dst (cuda
 * only); divisor < 0: no division. */
PyObject *cua_segmented_finish(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *srco, *dsto, *so;
    long long n;
    int kind, out_dtype;
    double divisor;
    if (!PyArg_ParseTuple(args, "OLidiOO", &srco, &n, &kind, &divisor, &out_dtype, &dsto, &so)) return NULL;
    void *src, *dst, *stream;
    if (cua_as_ptr(srco, &src) < 0 || cua_as_ptr(dsto, &dst) < 0 || cua_as_ptr(so, &stream) < 0) return NULL;
    if (n < 0 || cua_dtype_size(out_dtype) == 0 || (kind != CUA_FLOAT64 && kind != CUA_INT64 && kind != CUA_UINT64)) {
        PyErr_SetString(PyExc_SystemError, "cuatomic: bad segmented_finish arguments");
        return NULL;
    }
#ifdef CUATOMIC_WITH_CUDA
    int st;
    Py_BEGIN_ALLOW_THREADS
    st = cua_cuda_segmented_finish(src, n, kind, divisor, out_dtype, dst, stream);
    Py_END_ALLOW_THREADS
    if (st) return cua_raise(st, NULL);
    Py_RETURN_NONE;
#else
    (void)src, (void)dst, (void)stream, (void)divisor;
    return cua_no_cuda();
#endif
}
