/* histogram.c -- histogram: bins from Python, counts back as an int64
 * ndarray (or a device buffer); a large host array for the GPU is streamed
 * in chunks and the counts added up. The weighted histogram the same way,
 * with float64 or int64 weights and sums. Also the min/max that sizes a
 * device array's range, and whether a rung can count a number of bins. */
#include <math.h>
#include <string.h>

#include "call.h"
#include "pipeline.h"

typedef struct {
    cua_hist_fn run;
    int dtype;
    const cua_bins *bins;
    uint64_t *dev_counts, *tmp, *counts;
} hist_ctx;

static int hist_chunk(const void *const *dev, int64_t m, cua_launch *cfg, void *vctx)
{
    hist_ctx *c = vctx;
    const size_t bytes = (size_t)c->bins->nbins * sizeof(uint64_t);
    int st = c->run(dev[0], m, c->dtype, c->bins, c->dev_counts, cfg);
    if (!st) st = cua_deliver(BACKEND_CUDA, c->dev_counts, bytes, c->tmp, cfg);
    for (int64_t b = 0; !st && b < c->bins->nbins; b++) c->counts[b] += c->tmp[b];
    return st;
}

/* The bins a rung is told of, from Python's KernelBins (cuatomic/_bins.py):
 * a tuple (edges, uniform, inv_width, integer, ilo, iwidth); -1 with an
 * exception. The edges as the backend reads them: integer edges only for
 * 64-bit integer data of the same signedness (by kind and size: long and
 * long long are both int64 on Linux). */
int cua_read_bins(PyObject *obj, int dtype, cua_bins *bins)
{
    PyObject *edges_obj;
    long long ilo, iwidth;
    memset(bins, 0, sizeof *bins);
    if (!PyTuple_Check(obj)) {
        PyErr_SetString(PyExc_SystemError, "cuatomic: bins must be a KernelBins tuple");
        return -1;
    }
    if (!PyArg_ParseTuple(obj, "OidiLL;cuatomic: bins must be (edges, uniform, inv_width, integer, ilo, iwidth)",
                          &edges_obj, &bins->uniform, &bins->inv_width, &bins->integer, &ilo, &iwidth))
        return -1;
    if (!PyArray_Check(edges_obj)) {
        PyErr_SetString(PyExc_SystemError, "cuatomic: edges must be an ndarray");
        return -1;
    }
    bins->ilo = ilo;
    bins->iwidth = iwidth;
    PyArrayObject *edges = (PyArrayObject *)edges_obj;
    const int et = PyArray_TYPE(edges);
    const int int_edges = PyArray_ITEMSIZE(edges) == 8 && ((PyArray_ISSIGNED(edges) && dtype == CUA_INT64) ||
                                                           (PyArray_ISUNSIGNED(edges) && dtype == CUA_UINT64));
    if (!PyArray_IS_C_CONTIGUOUS(edges) || !PyArray_ISNOTSWAPPED(edges) || PyArray_NDIM(edges) != 1 ||
        PyArray_SIZE(edges) < 2 || (et != NPY_FLOAT32 && et != NPY_FLOAT64 && !int_edges)) {
        PyErr_SetString(PyExc_SystemError,
                        "cuatomic: edges must be 1-D contiguous float32/float64 (or int64/uint64 for that "
                        "data), >= 2");
        return -1;
    }
    bins->nbins = PyArray_SIZE(edges) - 1;
    bins->edge_dtype = int_edges ? dtype : et == NPY_FLOAT32 ? CUA_FLOAT32 : CUA_FLOAT64;
    /* Searched and compared exactly; or, for bincount's bins of width one
     * (`integer`, which Python sets for 64-bit data only there), binned by
     * arithmetic. */
    if (int_edges) bins->uniform = 0;
    bins->edges = PyArray_DATA(edges);
    /* The rungs compute lo + width * k and (x - lo) / width in int64, and
     * the uniform guess (x - first) * inv_width in double, converted to an
     * integer: refuse values that would overflow or be NaN there (Python's
     * bins stay within 2^53; this guards the ABI). */
    if (bins->integer && (bins->iwidth < 1 || bins->ilo <= INT64_MIN + 1 ||
                          bins->iwidth > (INT64_MAX - (bins->ilo > 0 ? bins->ilo : 0)) / bins->nbins)) {
        PyErr_SetString(PyExc_SystemError,
                        "cuatomic: integer bins need a width >= 1 and lo + width * nbins within int64");
        return -1;
    }
    if (bins->uniform && !(isfinite(bins->inv_width) && bins->inv_width >= 0)) {
        PyErr_SetString(PyExc_SystemError, "cuatomic: uniform bins need a finite inv_width >= 0");
        return -1;
    }
    return 0;
}

/* The output: an ndarray of nbins 8-byte values of NumPy type `type`
 * (int64 counts, float64 or int64 sums), or a device buffer (cuda only). */
static PyObject *new_bins_out(int backend, int device_out, int64_t nbins, int type, void *stream, void **counts)
{
    if (device_out) {
        if (backend != BACKEND_CUDA) {
            PyErr_SetString(PyExc_SystemError, "cuatomic: device output needs the cuda backend");
            return NULL;
        }
        CuaDeviceBuffer *buf = cua_buffer_new_on((Py_ssize_t)((size_t)nbins * sizeof(uint64_t)), stream, 0);
        if (!buf) return NULL;
        *counts = buf->ptr;
        return (PyObject *)buf;
    }
    npy_intp dims[1] = {(npy_intp)nbins};
    PyObject *out = PyArray_SimpleNew(1, dims, type);
    if (out) *counts = PyArray_DATA((PyArrayObject *)out);
    return out;
}

typedef struct {
    cua_whist_fn run;
    int dtype, wdtype;
    const cua_bins *bins;
    void *dev_sums, *tmp, *sums;
} whist_ctx;

/* One chunk's sums, added into the host sums: float64 adds, or int64 ones
 * wrapping as the backend's do. */
static int whist_chunk(const void *const *dev, int64_t m, cua_launch *cfg, void *vctx)
{
    whist_ctx *c = vctx;
    const int64_t nb = c->bins->nbins;
    int st = c->run(dev[0], dev[1], m, c->dtype, c->wdtype, c->bins, c->dev_sums, cfg);
    if (!st) st = cua_deliver(BACKEND_CUDA, c->dev_sums, (size_t)nb * 8, c->tmp, cfg);
    if (st) return st;
    if (c->wdtype == CUA_FLOAT64)
        for (int64_t b = 0; b < nb; b++) ((double *)c->sums)[b] += ((const double *)c->tmp)[b];
    else
        for (int64_t b = 0; b < nb; b++) ((uint64_t *)c->sums)[b] += ((const uint64_t *)c->tmp)[b];
    return 0;
}

/* The one body of histogram and weighted_histogram: w == NULL counts (int64),
 * else sums the weights w (wdtype FLOAT64 or INT64, where x is) per bin.
 * The output is an ndarray, or a DeviceBuffer when device_out. A large host
 * input is streamed in chunks through the pipeline and the chunks' results
 * added up; otherwise one staged run. Either way the rung writes device
 * memory (on CUDA) and the result route (cua_deliver) brings it back:
 * counts through a call slot when one is free. */
static PyObject *run_histogram(int backend, int rung, PyObject *x, long long n, int dtype, PyObject *w, int wdtype,
                               PyObject *bins_obj, long long blocks, int threads, int device_out, void *stream)
{
    const int weighted = w != NULL;
    const int op = weighted ? CUA_OP_WEIGHTED_HISTOGRAM : CUA_OP_HISTOGRAM;
    if (weighted && wdtype != CUA_FLOAT64 && wdtype != CUA_INT64) {
        PyErr_SetString(PyExc_SystemError, "cuatomic: weights cross as float64 or int64 only");
        return NULL;
    }
    const cua_rung *found = cua_find_rung(backend, op, rung);
    cua_bins bins;
    cua_input in, win;
    if (!found || cua_parse_input(backend, x, n, dtype, stream, &in) < 0 ||
        (weighted && cua_parse_input(backend, w, n, wdtype, stream, &win) < 0) || cua_read_bins(bins_obj, dtype, &bins) < 0)
        return NULL;
    if (weighted && !in.host != !win.host) {
        PyErr_SetString(PyExc_SystemError, "cuatomic: x and weights must both be host or both be device arrays");
        return NULL;
    }
    cua_hist_fn count = weighted ? NULL : ((const cua_hist_row *)found)->run;
    cua_whist_fn sum = weighted ? ((const cua_whist_row *)found)->run : NULL;
    cua_launch cfg;
    if (cua_launch_config(blocks, threads, stream, &cfg) < 0) return NULL;
    const size_t bytes = (size_t)bins.nbins * sizeof(uint64_t); /* 8-byte counts or sums */
    void *res;                                                /* where the backend writes */
    const int type = !weighted || wdtype == CUA_INT64 ? NPY_INT64 : NPY_FLOAT64;
    PyObject *out = new_bins_out(backend, device_out, bins.nbins, type, stream, &res);
    if (!out) return NULL;
    int st = 0;
    Py_BEGIN_ALLOW_THREADS
    void *dev = NULL;
    int chunked = 0;
    if (in.host && !device_out) {
        void *tmp = malloc(bytes);
        st = tmp ? cua_device_alloc(backend, &dev, bytes, stream) : CUA_ENOMEM;
        if (!st) {
            memset(res, 0, bytes); /* 0, or +0.0 */
            if (weighted) {
                whist_ctx wc = {sum, dtype, wdtype, &bins, dev, tmp, res};
                const void *hosts[2] = {in.host, win.host};
                const size_t sizes[2] = {cua_dtype_size(dtype), 8};
                st = cua_pipeline_run_sized(2, hosts, sizes, n, &cfg, whist_chunk, &wc, &chunked);
            } else {
                hist_ctx hc = {count, dtype, &bins, dev, tmp, res};
                st = cua_pipeline_run(1, &in.host, cua_dtype_size(dtype), n, &cfg, hist_chunk, &hc, &chunked);
            }
        }
        free(tmp);
        if (!chunked) { /* not worth it: back to one staged copy */
            cua_device_free(dev, stream);
            dev = NULL;
        }
    }
    if (!chunked && !st) {
        cua_slot sl = {-1, NULL, NULL};
        void *mapped = NULL;
        st = cua_stage(&in);
        if (!st && weighted) st = cua_stage(&win);
        if (!st && !device_out) {
            if (!weighted) {
                cua_slot_take(backend, &sl);
                mapped = cua_slot_output(&sl, bytes, &cfg, NULL);
            }
            st = cua_device_alloc(backend, &dev, bytes, stream); /* NULL on the CPU: res is the target */
        }
        void *target = dev ? dev : res;
        if (!st) st = weighted ? sum(in.ptr, win.ptr, n, dtype, wdtype, &bins, target, &cfg)
                               : count(in.ptr, n, dtype, &bins, (uint64_t *)target, &cfg);
        if (!st) st = cua_deliver(backend, target, bytes, dev && !mapped ? res : NULL, &cfg);
        if (!st && mapped) memcpy(res, mapped, bytes);
        cua_slot_give(&sl);
        if (weighted) cua_unstage(&win);
        cua_unstage(&in);
    }
    cua_device_free(dev, stream);
    Py_END_ALLOW_THREADS
    if (st) {
        Py_DECREF(out);
        return cua_raise(st, &cfg);
    }
    cua_record_launch(backend, op, found, &cfg);
    return out;
}

/* histogram(backend, rung, x, n, dtype, bins, blocks, threads, device_out,
 * stream) -> int64 counts. */
PyObject *cua_op_histogram(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *kwlist[] = {"backend", "rung",    "x",          "n",      "dtype", "bins",
                             "blocks",  "threads", "device_out", "stream", NULL};
    int backend, rung, dtype, threads, device_out;
    PyObject *x, *bins, *sobj;
    long long n, blocks;
    void *stream;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "iiOLiOLipO", kwlist, &backend, &rung, &x, &n, &dtype, &bins, &blocks,
                                     &threads, &device_out, &sobj) ||
        cua_as_ptr(sobj, &stream) < 0)
        return NULL;
    return run_histogram(backend, rung, x, n, dtype, NULL, -1, bins, blocks, threads, device_out, stream);
}

/* weighted_histogram(backend, rung, x, n, dtype, w, wdtype, bins, blocks,
 * threads, device_out, stream) -> the weights' sums per bin, float64 or
 * int64. */
PyObject *cua_op_weighted_histogram(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *kwlist[] = {"backend", "rung",   "x",       "n",          "dtype",  "w", "wdtype",
                             "bins",    "blocks", "threads", "device_out", "stream", NULL};
    int backend, rung, dtype, wdtype, threads, device_out;
    PyObject *x, *w, *bins, *sobj;
    long long n, blocks;
    void *stream;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "iiOLiOiOLipO", kwlist, &backend, &rung, &x, &n, &dtype, &w, &wdtype,
                                     &bins, &blocks, &threads, &device_out, &sobj) ||
        cua_as_ptr(sobj, &stream) < 0)
        return NULL;
    return run_histogram(backend, rung, x, n, dtype, w, wdtype, bins, blocks, threads, device_out, stream);
}

/* histogram_fits(backend, rung, bins, dtype, blocks, threads, op=histogram)
 * -> None if the rung of op's ladder (histogram or weighted_histogram) can
 * count dtype data in these bins (a KernelBins tuple) with that launch
 * configuration, else the reason (the ValueError a call would raise). */
PyObject *cua_histogram_fits(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *kwlist[] = {"backend", "rung", "bins", "dtype", "blocks", "threads", "op", NULL};
    int backend, rung, dtype, threads, op = CUA_OP_HISTOGRAM;
    long long blocks;
    PyObject *bins_obj;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "iiOiLi|i", kwlist, &backend, &rung, &bins_obj, &dtype, &blocks,
                                     &threads, &op))
        return NULL;
    if (op != CUA_OP_HISTOGRAM && op != CUA_OP_WEIGHTED_HISTOGRAM) {
        PyErr_SetString(PyExc_SystemError, "cuatomic: histogram_fits is for the histogram ladders");
        return NULL;
    }
    if (cua_dtype_size(dtype) == 0) {
        PyErr_SetString(PyExc_SystemError, "cuatomic: bad dtype id");
        return NULL;
    }
    const cua_rung *r = cua_find_rung(backend, op, rung);
    cua_launch cfg;
    cua_bins bins;
    if (!r || cua_read_bins(bins_obj, dtype, &bins) < 0 || cua_launch_config(blocks, threads, NULL, &cfg) < 0)
        return NULL;
    cua_hist_fits_fn fits = op == CUA_OP_HISTOGRAM ? ((const cua_hist_row *)r)->fits : ((const cua_whist_row *)r)->fits;
    int st;
    Py_BEGIN_ALLOW_THREADS
    st = fits(&bins, dtype, &cfg);
    Py_END_ALLOW_THREADS
    if (st == CUA_EINVAL) return PyUnicode_FromString(cfg.msg);
    if (st) return cua_raise(st, &cfg);
    Py_RETURN_NONE;
}

/* minmax(x, n, dtype, stream) -> (min bytes, max bytes, has_nan) of a
 * non-empty device array: the range of histogram(bins=k) without a copy. */
PyObject *cua_op_minmax(PyObject *self, PyObject *args)
{
    (void)self;
#ifdef CUATOMIC_WITH_CUDA
    PyObject *x, *sobj;
    long long n;
    int dtype;
    void *stream;
    if (!PyArg_ParseTuple(args, "OLiO", &x, &n, &dtype, &sobj) || cua_as_ptr(sobj, &stream) < 0) return NULL;
    cua_input in;
    if (cua_parse_input(BACKEND_CUDA, x, n, dtype, stream, &in) < 0) return NULL;
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
