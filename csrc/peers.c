/* peers.c -- CUB's primitives on device pointers, for the benchmark's
 * comparison (see cuda/cub.cu). Raw pointers in, plain values out: the
 * benchmark owns the arrays. */
#include <string.h>

#include "glue.h"

#ifdef CUATOMIC_WITH_CUDA
/* A failed CUB call as an exception (returns NULL): CUA_EINVAL is a dtype
 * the peer was not built for. */
static PyObject *failed(int st, const char *what)
{
    if (st != CUA_EINVAL) return cua_raise(st, NULL);
    PyErr_Format(PyExc_TypeError, "cub %s is built for other dtypes only", what);
    return NULL;
}

PyObject *cua_cub_sum_py(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *ptr, *sobj;
    long long n;
    int dtype, st;
    if (!PyArg_ParseTuple(args, "OLiO", &ptr, &n, &dtype, &sobj)) return NULL;
    void *x = PyLong_AsVoidPtr(ptr), *stream;
    if (PyErr_Occurred() || cua_as_ptr(sobj, &stream) < 0) return NULL;
    uint64_t bits = 0;
    Py_BEGIN_ALLOW_THREADS
    st = cua_cub_sum(x, n, dtype, &bits, stream);
    Py_END_ALLOW_THREADS
    if (st) return failed(st, "sum");
    if (dtype == CUA_FLOAT32) {
        float f;
        memcpy(&f, &bits, sizeof f);
        return PyFloat_FromDouble(f);
    }
    if (dtype == CUA_FLOAT64) {
        double d;
        memcpy(&d, &bits, sizeof d);
        return PyFloat_FromDouble(d);
    }
    return PyLong_FromLongLong((long long)bits);
}

PyObject *cua_cub_reduce_py(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *ptr, *sobj;
    long long n;
    int dtype, st;
    char op;
    if (!PyArg_ParseTuple(args, "OLicO", &ptr, &n, &dtype, &op, &sobj)) return NULL;
    void *x = PyLong_AsVoidPtr(ptr), *stream;
    if (PyErr_Occurred() || cua_as_ptr(sobj, &stream) < 0) return NULL;
    union { int32_t i; float f; } v = {0};
    Py_BEGIN_ALLOW_THREADS
    st = cua_cub_reduce(x, n, dtype, op, &v, stream);
    Py_END_ALLOW_THREADS
    if (st) return failed(st, "reduce");
    return dtype == CUA_FLOAT32 ? PyFloat_FromDouble(v.f) : PyLong_FromLong(v.i);
}

PyObject *cua_cub_histogram_py(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *ptr, *sobj;
    long long n;
    int dtype, nbins, st;
    double lo, hi;
    if (!PyArg_ParseTuple(args, "OLiiddO", &ptr, &n, &dtype, &nbins, &lo, &hi, &sobj)) return NULL;
    void *x = PyLong_AsVoidPtr(ptr), *stream;
    if (PyErr_Occurred() || cua_as_ptr(sobj, &stream) < 0) return NULL;
    if (nbins < 1) {
        PyErr_SetString(PyExc_ValueError, "nbins must be >= 1");
        return NULL;
    }
    npy_intp dims[1] = {nbins};
    PyObject *out = PyArray_SimpleNew(1, dims, NPY_INT64);
    if (!out) return NULL;
    int64_t *counts = PyArray_DATA((PyArrayObject *)out);
    Py_BEGIN_ALLOW_THREADS
    st = cua_cub_histogram(x, n, dtype, nbins, lo, hi, counts, stream);
    Py_END_ALLOW_THREADS
    if (st) {
        Py_DECREF(out);
        return failed(st, "histogram");
    }
    return out;
}

PyObject *cua_cub_select_py(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *ptr, *optr, *sobj;
    long long n;
    int dtype, st;
    double value;
    if (!PyArg_ParseTuple(args, "OLidOO", &ptr, &n, &dtype, &value, &optr, &sobj)) return NULL;
    void *x = PyLong_AsVoidPtr(ptr), *out = PyLong_AsVoidPtr(optr), *stream;
    if (PyErr_Occurred() || cua_as_ptr(sobj, &stream) < 0) return NULL;
    int64_t count = 0;
    Py_BEGIN_ALLOW_THREADS
    st = cua_cub_select_at_least(x, n, dtype, value, out, &count, stream);
    Py_END_ALLOW_THREADS
    if (st) return failed(st, "select");
    return PyLong_FromLongLong(count);
}
PyObject *cua_cub_nonzero_py(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *ptr, *optr, *sobj;
    long long n;
    int dtype, st;
    if (!PyArg_ParseTuple(args, "OLiOO", &ptr, &n, &dtype, &optr, &sobj)) return NULL;
    void *x = PyLong_AsVoidPtr(ptr), *out = PyLong_AsVoidPtr(optr), *stream;
    if (PyErr_Occurred() || cua_as_ptr(sobj, &stream) < 0) return NULL;
    int64_t count = 0;
    Py_BEGIN_ALLOW_THREADS
    st = cua_cub_nonzero(x, n, dtype, (int64_t *)out, &count, stream);
    Py_END_ALLOW_THREADS
    if (st) return failed(st, "nonzero");
    return PyLong_FromLongLong(count);
}
PyObject *cua_cub_unique_py(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *ptr, *vptr, *cptr, *sobj;
    long long n;
    int dtype, st;
    if (!PyArg_ParseTuple(args, "OLiOOO", &ptr, &n, &dtype, &vptr, &cptr, &sobj)) return NULL;
    void *x = PyLong_AsVoidPtr(ptr), *values = PyLong_AsVoidPtr(vptr), *counts = PyLong_AsVoidPtr(cptr), *stream;
    if (PyErr_Occurred() || cua_as_ptr(sobj, &stream) < 0) return NULL;
    if (n < 0) {
        PyErr_SetString(PyExc_ValueError, "n must be >= 0");
        return NULL;
    }
    int64_t count = 0;
    Py_BEGIN_ALLOW_THREADS
    st = cua_cub_unique(x, n, dtype, values, (int64_t *)counts, &count, stream);
    Py_END_ALLOW_THREADS
    if (st) return failed(st, "unique");
    return PyLong_FromLongLong(count);
}
PyObject *cua_cub_segmented_py(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *ptr, *optr, *sobj;
    long long rows, m;
    int dtype, op, st;
    if (!PyArg_ParseTuple(args, "OLLiCOO", &ptr, &rows, &m, &dtype, &op, &optr, &sobj)) return NULL;
    void *x = PyLong_AsVoidPtr(ptr), *out = PyLong_AsVoidPtr(optr), *stream;
    if (PyErr_Occurred() || cua_as_ptr(sobj, &stream) < 0) return NULL;
    if (rows < 0 || m < 0) {
        PyErr_SetString(PyExc_ValueError, "cub segmented: rows and m must be >= 0");
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    st = cua_cub_segmented(x, rows, m, dtype, (char)op, out, stream);
    Py_END_ALLOW_THREADS
    if (st) return failed(st, "segmented");
    Py_RETURN_NONE;
}
#else
PyObject *cua_cub_nonzero_py(PyObject *self, PyObject *args) { (void)self, (void)args; return cua_no_cuda(); }
PyObject *cua_cub_segmented_py(PyObject *self, PyObject *args) { (void)self, (void)args; return cua_no_cuda(); }
PyObject *cua_cub_sum_py(PyObject *self, PyObject *args) { (void)self, (void)args; return cua_no_cuda(); }
PyObject *cua_cub_reduce_py(PyObject *self, PyObject *args) { (void)self, (void)args; return cua_no_cuda(); }
PyObject *cua_cub_histogram_py(PyObject *self, PyObject *args) { (void)self, (void)args; return cua_no_cuda(); }
PyObject *cua_cub_select_py(PyObject *self, PyObject *args) { (void)self, (void)args; return cua_no_cuda(); }
PyObject *cua_cub_unique_py(PyObject *self, PyObject *args) { (void)self, (void)args; return cua_no_cuda(); }
#endif
