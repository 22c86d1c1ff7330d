/* peers.c -- CUB's primitives on device pointers, for the benchmark's
 * comparison (see cuda/cub.cu). Raw pointers in, plain values out: the
 * benchmark owns the arrays. */
#include <string.h>

#include "glue.h"

#ifdef CUATOMIC_WITH_CUDA
static int unsupported(int st, const char *what)
{
    if (st == CUA_EINVAL) PyErr_Format(PyExc_TypeError, "cub %s is built for other dtypes only", what);
    return st;
}

PyObject *cua_cub_sum_py(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *ptr, *sobj;
    long long n;
    int dtype, st;
    if (!PyArg_ParseTuple(args, "OLiO", &ptr, &n, &dtype, &sobj)) return NULL;
    void *x = PyLong_AsVoidPtr(ptr), *stream = sobj == Py_None ? NULL : PyLong_AsVoidPtr(sobj);
    if (PyErr_Occurred()) return NULL;
    uint64_t bits = 0;
    Py_BEGIN_ALLOW_THREADS
    st = cua_cub_sum(x, n, dtype, &bits, stream);
    Py_END_ALLOW_THREADS
    if (st) return unsupported(st, "sum") == CUA_EINVAL ? NULL : cua_raise(st, NULL);
    if (dtype == CUA_FLOAT32) {
        float f;
        memcpy(&f, &bits, sizeof f);
        return PyFloat_FromDouble(f);
    }
    return PyLong_FromLongLong((long long)bits);
}

PyObject *cua_cub_histogram_py(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *ptr, *sobj;
    long long n;
    int dtype, nbins, st;
    double lo, hi;
    if (!PyArg_ParseTuple(args, "OLiiddO", &ptr, &n, &dtype, &nbins, &lo, &hi, &sobj)) return NULL;
    void *x = PyLong_AsVoidPtr(ptr), *stream = sobj == Py_None ? NULL : PyLong_AsVoidPtr(sobj);
    if (PyErr_Occurred()) return NULL;
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
        return unsupported(st, "histogram") == CUA_EINVAL ? NULL : cua_raise(st, NULL);
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
    void *x = PyLong_AsVoidPtr(ptr), *out = PyLong_AsVoidPtr(optr);
    void *stream = sobj == Py_None ? NULL : PyLong_AsVoidPtr(sobj);
    if (PyErr_Occurred()) return NULL;
    int64_t count = 0;
    Py_BEGIN_ALLOW_THREADS
    st = cua_cub_select_at_least(x, n, dtype, value, out, &count, stream);
    Py_END_ALLOW_THREADS
    if (st) return unsupported(st, "select") == CUA_EINVAL ? NULL : cua_raise(st, NULL);
    return PyLong_FromLongLong(count);
}
#else
static PyObject *no_cuda(void)
{
    PyErr_SetString(PyExc_RuntimeError, "cuatomic was built without CUDA: no CUB");
    return NULL;
}
PyObject *cua_cub_sum_py(PyObject *self, PyObject *args) { (void)self, (void)args; return no_cuda(); }
PyObject *cua_cub_histogram_py(PyObject *self, PyObject *args) { (void)self, (void)args; return no_cuda(); }
PyObject *cua_cub_select_py(PyObject *self, PyObject *args) { (void)self, (void)args; return no_cuda(); }
#endif
