/* unique.c -- np.unique: the glue of the unique ladder.
 *
 * The Python layer (cuatomic/_unique.py) has chosen the backend and the
 * rung, flattened the input to a C-contiguous native-order ndarray (host)
 * or a device pointer (int), and turned the return flags into
 * CUA_UNIQUE_* bits. A call runs in two steps, because the outputs' size is
 * the number of distinct values: the rung builds its table (and learns
 * that number), the glue makes the outputs, the backend's finish fills
 * them. Host input on the CUDA backend is staged on the device and the
 * outputs come back as ndarrays; device input gives DeviceBuffers. */
#include <string.h>

#include "call.h"

#define NPY_OF_(id, name, ctype, npy, pred) npy,
static const int npy_of_dtype[CUA_NDTYPES] = {CUA_DTYPES(NPY_OF_)};
#undef NPY_OF_

static int finish(int backend, const void *x, int64_t n, int dtype, cua_unique_tab *t, const cua_unique_out *out,
                  cua_launch *cfg)
{
#ifdef CUATOMIC_WITH_CUDA
    if (backend == BACKEND_CUDA) return cua_cuda_unique_finish(x, n, dtype, t, out, cfg);
#endif
    if (backend == BACKEND_CUDA) return CUA_EINTERNAL;
    return cua_cpu_unique_finish(x, n, dtype, t, out, cfg);
}

static void release(int backend, cua_unique_tab *t, void *stream)
{
#ifdef CUATOMIC_WITH_CUDA
    if (backend == BACKEND_CUDA) {
        cua_cuda_unique_free(t, stream);
        return;
    }
#endif
    (void)stream;
    if (backend == BACKEND_CPU) cua_cpu_unique_free(t);
}

/* One output of `count` elements of NumPy type `npy`: a DeviceBuffer when
 * the results stay on the device, else an ndarray -- with, on the CUDA
 * backend, device memory for the finish to write (*dev, copied back after).
 * *where is what the backend writes. NULL with an exception. */
static PyObject *make_out(int backend, int device_out, int64_t count, int npy, size_t size, void *stream,
                          void **where, void **dev)
{
    *dev = NULL;
    if (device_out) {
        CuaDeviceBuffer *buf = cua_buffer_new_on((Py_ssize_t)((size_t)count * size), stream, 0);
        if (!buf) return NULL;
        *where = buf->ptr;
        return (PyObject *)buf;
    }
    npy_intp dims[1] = {(npy_intp)count};
    PyObject *arr = PyArray_SimpleNew(1, dims, npy);
    if (!arr) return NULL;
    *where = PyArray_DATA((PyArrayObject *)arr);
    if (backend == BACKEND_CUDA) {
        int st;
        Py_BEGIN_ALLOW_THREADS
        st = cua_device_alloc(backend, dev, (size_t)count * size, stream);
        Py_END_ALLOW_THREADS
        if (st) {
            Py_DECREF(arr);
            return cua_raise(st, NULL);
        }
        *where = *dev;
    }
    return arr;
}

enum { OUT_VALUES, OUT_INDEX, OUT_COUNTS, OUT_INVERSE, NOUT };

PyObject *cua_op_unique(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *kwlist[] = {"backend", "rung", "x", "n", "dtype", "want", "blocks", "threads", "device_out",
                             "stream", NULL};
    int backend, rung, dtype, threads, device_out;
    unsigned want;
    long long n, blocks;
    PyObject *x, *sobj;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "iiOLiILipO", kwlist, &backend, &rung, &x, &n, &dtype, &want, &blocks,
                                     &threads, &device_out, &sobj))
        return NULL;
    void *stream;
    if (cua_as_ptr(sobj, &stream) < 0) return NULL;
    if (want & ~(unsigned)(CUA_UNIQUE_FIRST | CUA_UNIQUE_INVERSE | CUA_UNIQUE_SORTED) || n < 1 ||
        (device_out && backend != BACKEND_CUDA)) {
        PyErr_SetString(PyExc_SystemError, "cuatomic: unique: bad flags, size or output place");
        return NULL;
    }
    const cua_unique_row *r = (const cua_unique_row *)cua_find_rung(backend, CUA_OP_UNIQUE, rung);
    cua_input in;
    if (!r || cua_parse_input(backend, x, n, dtype, stream, &in) < 0) return NULL;
    cua_launch cfg;
    if (cua_launch_config(blocks, threads, stream, &cfg) < 0) return NULL;
    const size_t size = cua_dtype_size(dtype);
    const int npy[NOUT] = {npy_of_dtype[dtype], NPY_INT64, NPY_INT64, NPY_INT64};
    const size_t sizes[NOUT] = {size, 8, 8, 8};
    PyObject *outs[NOUT] = {NULL, NULL, NULL, NULL};
    void *where[NOUT] = {NULL, NULL, NULL, NULL}, *dev[NOUT] = {NULL, NULL, NULL, NULL};
    cua_unique_tab t;
    memset(&t, 0, sizeof t);
    t.want = want;
    int st = 0;
    PyObject *result = NULL;
    /* The inverse is n long: made before the rung (the sort rung writes it). */
    if (want & CUA_UNIQUE_INVERSE) {
        outs[OUT_INVERSE] = make_out(backend, device_out, n, NPY_INT64, 8, stream, &where[OUT_INVERSE],
                                     &dev[OUT_INVERSE]);
        if (!outs[OUT_INVERSE]) goto fail;
        t.inverse = where[OUT_INVERSE];
    }
    if (backend == BACKEND_CPU) cua_cpu_scratch_limit(); /* CUATOMIC_HOST_CACHE_BYTES read here, with the GIL */
    Py_BEGIN_ALLOW_THREADS
    st = cua_stage(&in);
    if (!st) st = r->run(in.ptr, n, dtype, &t, &cfg);
    Py_END_ALLOW_THREADS
    if (st) goto fail_status;
    if (t.distinct < 1 || t.distinct > n) {
        PyErr_Format(PyExc_SystemError, "cuatomic: unique rung found %lld values in %lld elements",
                     (long long)t.distinct, n);
        goto fail;
    }
    for (int o = OUT_VALUES; o <= OUT_COUNTS; o++) {
        if (o == OUT_INDEX && !(want & CUA_UNIQUE_FIRST)) continue;
        outs[o] = make_out(backend, device_out, t.distinct, npy[o], sizes[o], stream, &where[o], &dev[o]);
        if (!outs[o]) goto fail;
    }
    const cua_unique_out out = {where[OUT_VALUES], where[OUT_INDEX], where[OUT_COUNTS]};
    Py_BEGIN_ALLOW_THREADS
    st = finish(backend, in.ptr, n, dtype, &t, &out, &cfg);
    for (int o = 0; o < NOUT && !st; o++)
        if (dev[o])
            st = cua_copy_to_host(PyArray_DATA((PyArrayObject *)outs[o]), dev[o],
                                  (size_t)(o == OUT_INVERSE ? n : t.distinct) * sizes[o], stream);
    Py_END_ALLOW_THREADS
    if (st) goto fail_status;
    cua_record_launch(backend, CUA_OP_UNIQUE, &r->rung, &cfg);
    result = Py_BuildValue("(OOOOL)", outs[OUT_VALUES], outs[OUT_INDEX] ? outs[OUT_INDEX] : Py_None,
                           outs[OUT_COUNTS], outs[OUT_INVERSE] ? outs[OUT_INVERSE] : Py_None, (long long)t.builds);
    goto done;
fail_status:
    cua_raise(st, &cfg);
fail:
done:
    Py_BEGIN_ALLOW_THREADS
    release(backend, &t, stream);
    for (int o = 0; o < NOUT; o++) cua_device_free(dev[o], stream);
    cua_unstage(&in);
    Py_END_ALLOW_THREADS
    for (int o = 0; o < NOUT; o++) Py_XDECREF(outs[o]);
    return result;
}
