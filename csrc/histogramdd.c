/* histogramdd.c -- histogramdd (and histogram2d): the cells of a sample of
 * points counted by a rung of the histogramdd ladder, and, for weights,
 * every point's cell. The Python layer (cuatomic/_histogramdd.py) has made
 * NumPy's edges, put the sample where the backend reads it (device memory
 * on cuda) and chosen the rung. */
#include <string.h>

#include "call.h"

/* The sample: a column address and element stride per dimension, the
 * dimensions' KernelBins (one edge type for all), the cells (their product,
 * within int64 and allocatable as float64). -1 with an exception. */
static int read_sample(PyObject *cols, PyObject *strides, PyObject *bins, int dtype, cua_sample *s, int64_t *cells)
{
    memset(s, 0, sizeof *s);
    const Py_ssize_t nd = PySequence_Size(cols);
    if (nd < 1 || nd > CUA_DD_MAX || PySequence_Size(strides) != nd || PySequence_Size(bins) != nd) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError, "histogramdd takes 1 to %d dimensions, a column, stride and bins each",
                         CUA_DD_MAX);
        return -1;
    }
    s->ndim = (int)nd;
    *cells = 1;
    for (Py_ssize_t d = 0; d < nd; d++) {
        PyObject *c = PySequence_GetItem(cols, d), *st = PySequence_GetItem(strides, d), *b = PySequence_GetItem(bins, d);
        int bad = !c || !st || !b || cua_as_ptr(c, (void **)&s->cols[d]) < 0;
        if (!bad) {
            s->strides[d] = PyLong_AsLongLong(st);
            bad = PyErr_Occurred() || cua_read_bins(b, dtype, &s->bins[d]) < 0;
        }
        Py_XDECREF(c);
        Py_XDECREF(st);
        Py_XDECREF(b);
        if (bad) return -1;
        if (s->bins[d].edge_dtype != s->bins[0].edge_dtype) {
            PyErr_SetString(PyExc_SystemError, "cuatomic: every dimension's edges must be of one type");
            return -1;
        }
        if (s->bins[d].nbins > ((int64_t)1 << 60) / 8 / *cells) {
            PyErr_SetString(PyExc_ValueError, "histogramdd: too many cells (the product of the bin counts)");
            return -1;
        }
        *cells *= s->bins[d].nbins;
    }
    return 0;
}

/* histogramdd(backend, rung, cols, strides, n, dtype, bins, blocks, threads,
 * device_out, stream) -> float64 counts of every cell (an ndarray, or a
 * DeviceBuffer when device_out) */
PyObject *cua_op_histogramdd(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *kwlist[] = {"backend", "rung", "cols", "strides", "n", "dtype", "bins", "blocks", "threads",
                             "device_out", "stream", NULL};
    int backend, rung, dtype, threads, device_out;
    long long n, blocks;
    PyObject *cols, *strides, *bins, *sobj;
    void *stream;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "iiOOLiOLipO", kwlist, &backend, &rung, &cols, &strides, &n, &dtype,
                                     &bins, &blocks, &threads, &device_out, &sobj) ||
        cua_as_ptr(sobj, &stream) < 0)
        return NULL;
    const cua_histdd_row *r = (const cua_histdd_row *)cua_find_rung(backend, CUA_OP_HISTOGRAMDD, rung);
    if (!r) return NULL;
    if (cua_dtype_size(dtype) == 0 || n < 0) {
        PyErr_SetString(PyExc_SystemError, "cuatomic: bad dtype id or size");
        return NULL;
    }
    cua_sample s;
    int64_t cells;
    cua_launch cfg;
    if (read_sample(cols, strides, bins, dtype, &s, &cells) < 0 || cua_launch_config(blocks, threads, stream, &cfg) < 0)
        return NULL;
    PyObject *out;
    double *hist;
    if (device_out) {
        if (backend != BACKEND_CUDA) {
            PyErr_SetString(PyExc_SystemError, "cuatomic: device output needs the cuda backend");
            return NULL;
        }
        CuaDeviceBuffer *buf = cua_buffer_new_on((Py_ssize_t)((size_t)cells * sizeof(double)), stream, 0);
        if (!buf) return NULL;
        out = (PyObject *)buf;
        hist = buf->ptr;
    } else {
        if (backend != BACKEND_CPU) {
            PyErr_SetString(PyExc_SystemError, "cuatomic: the cuda backend writes histogramdd to device memory");
            return NULL;
        }
        npy_intp dims[1] = {(npy_intp)cells};
        out = PyArray_SimpleNew(1, dims, NPY_FLOAT64);
        if (!out) return NULL;
        hist = PyArray_DATA((PyArrayObject *)out);
    }
    int st;
    Py_BEGIN_ALLOW_THREADS
    st = r->run(&s, n, dtype, hist, &cfg);
    Py_END_ALLOW_THREADS
    if (st) {
        Py_DECREF(out);
        return cua_raise(st, &cfg);
    }
    cua_record_launch(backend, CUA_OP_HISTOGRAMDD, &r->rung, &cfg);
    return out;
}

/* histogramdd_fits(backend, rung, bins, dtype, blocks, threads) -> None if
 * the rung can count the cells of these bins (a KernelBins per dimension)
 * on the current device, else the reason (the ValueError a call raises). */
PyObject *cua_histogramdd_fits(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *kwlist[] = {"backend", "rung", "bins", "dtype", "blocks", "threads", NULL};
    int backend, rung, dtype, threads;
    long long blocks;
    PyObject *bins;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "iiOiLi", kwlist, &backend, &rung, &bins, &dtype, &blocks, &threads))
        return NULL;
    const cua_histdd_row *r = (const cua_histdd_row *)cua_find_rung(backend, CUA_OP_HISTOGRAMDD, rung);
    if (!r) return NULL;
    const Py_ssize_t nd = PySequence_Size(bins);
    if (nd < 0) return NULL;
    PyObject *cols = PyList_New(nd), *strides = PyList_New(nd);
    for (Py_ssize_t d = 0; cols && strides && d < nd; d++) {
        PyList_SET_ITEM(cols, d, PyLong_FromLong(0));
        PyList_SET_ITEM(strides, d, PyLong_FromLong(1));
    }
    cua_sample s;
    int64_t cells;
    cua_launch cfg;
    int bad = !cols || !strides || read_sample(cols, strides, bins, dtype, &s, &cells) < 0 ||
              cua_launch_config(blocks, threads, NULL, &cfg) < 0;
    Py_XDECREF(cols);
    Py_XDECREF(strides);
    if (bad) return NULL;
    int st;
    Py_BEGIN_ALLOW_THREADS
    st = r->fits(&s, dtype, &cfg);
    Py_END_ALLOW_THREADS
    if (st == CUA_EINVAL) return PyUnicode_FromString(cfg.msg);
    if (st) return cua_raise(st, &cfg);
    Py_RETURN_NONE;
}

/* histogramdd_cells(backend, cols, strides, n, dtype, bins, out, stream):
 * every point's cell into the n int64 at out (the number of cells for a
 * point that is dropped), in the backend's memory. */
PyObject *cua_histogramdd_cells(PyObject *self, PyObject *args)
{
    (void)self;
    int backend, dtype;
    long long n;
    PyObject *cols, *strides, *bins, *outo, *sobj;
    void *out, *stream;
    if (!PyArg_ParseTuple(args, "iOOLiOOO", &backend, &cols, &strides, &n, &dtype, &bins, &outo, &sobj) ||
        cua_as_ptr(outo, &out) < 0 || cua_as_ptr(sobj, &stream) < 0)
        return NULL;
    if (cua_dtype_size(dtype) == 0 || n < 0) {
        PyErr_SetString(PyExc_SystemError, "cuatomic: bad dtype id or size");
        return NULL;
    }
    cua_sample s;
    int64_t cells;
    if (read_sample(cols, strides, bins, dtype, &s, &cells) < 0) return NULL;
    int st;
    Py_BEGIN_ALLOW_THREADS
#ifdef CUATOMIC_WITH_CUDA
    if (backend == BACKEND_CUDA) st = cua_cuda_histdd_cells(&s, n, dtype, (int64_t *)out, stream);
    else
#endif
        st = backend == BACKEND_CPU ? cua_cpu_histdd_cells(&s, n, dtype, (int64_t *)out) : CUA_EINTERNAL;
    Py_END_ALLOW_THREADS
    if (st) return cua_raise(st, NULL);
    Py_RETURN_NONE;
}
