/* argmin.c -- argmin and argmax: the index of the first smallest (largest)
 * element, the first NaN before every number, streamed in chunks when a
 * large host array goes to the GPU; the chunks' answers are combined on the
 * host, which holds the values they name.
 *
 * The Python layer (cuatomic/_argmin.py) has chosen the backend and the
 * rung and normalized the input to a C-contiguous native-order ndarray
 * (host) or a device pointer (int). This file re-checks what could crash
 * the process. */
#include <string.h>

#include "call.h"
#include "pipeline.h"

/* The order every rung minimizes, on the host: cua_cpu_arg_key (cpu/argmin.c). */
typedef struct {
    cua_arg_fn run;
    int dtype, max;
    const void *host; /* the whole host array the chunks come from */
    int64_t offset;   /* the next chunk's first element */
    uint64_t key;     /* the best so far: its key and index */
    int64_t index;
} arg_ctx;

static int arg_chunk(const void *const *dev, int64_t m, cua_launch *cfg, void *vctx)
{
    arg_ctx *c = vctx;
    int64_t j = 0;
    const int st = c->run(dev[0], m, c->dtype, c->max, &j, cfg);
    if (st) return st;
    const int64_t i = c->offset + j;
    const uint64_t k = cua_cpu_arg_key(c->host, c->dtype, i, c->max);
    if (c->index < 0 || k < c->key) { /* chunks come in order: only a smaller key comes first */
        c->key = k;
        c->index = i;
    }
    c->offset += m;
    return 0;
}

/* Without the GIL: the rung on an input held in a call slot or staged on
 * the device. */
static int run_once(int backend, cua_arg_fn run, cua_input *in, int64_t n, int dtype, int max, cua_launch *cfg,
                    int64_t *index)
{
    cua_slot sl;
    cua_slot_take(backend, &sl);
    cua_slot_inputs(&sl, in, NULL);
    int st = cua_stage(in);
    if (!st) st = run(in->ptr, n, dtype, max, index, cfg);
    cua_unstage(in);
    cua_slot_give(&sl);
    return st;
}

PyObject *cua_op_argmin(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *kwlist[] = {"backend", "rung", "x", "n", "dtype", "max", "blocks", "threads", "stream", NULL};
    int backend, rung, dtype, max, threads;
    PyObject *x, *sobj;
    long long n, blocks;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "iiOLipLiO", kwlist, &backend, &rung, &x, &n, &dtype, &max, &blocks,
                                     &threads, &sobj))
        return NULL;
    void *stream;
    if (cua_as_ptr(sobj, &stream) < 0) return NULL;
    const cua_arg_row *r = (const cua_arg_row *)cua_find_rung(backend, CUA_OP_ARGMIN, rung);
    if (!r) return NULL;
    if (n <= 0) {
        PyErr_Format(PyExc_ValueError, "attempt to get %s of an empty sequence", max ? "argmax" : "argmin");
        return NULL;
    }
    cua_input in;
    if (cua_parse_input(backend, x, n, dtype, stream, &in) < 0) return NULL;
    cua_launch cfg;
    if (cua_launch_config(blocks, threads, stream, &cfg) < 0) return NULL;
    int st = r->fits ? r->fits(n, dtype, &cfg) : 0;
    if (st) return cua_raise(st, &cfg);
    int64_t index = -1;
    Py_BEGIN_ALLOW_THREADS
    int chunked = 0;
    if (in.host) { /* a host array for the GPU: streamed in chunks when large */
        arg_ctx c = {r->run, dtype, max, in.host, 0, 0, -1};
        const void *hosts[1] = {in.host};
        st = cua_pipeline_run(1, hosts, cua_dtype_size(dtype), n, &cfg, arg_chunk, &c, &chunked);
        index = c.index;
    }
    if (!chunked) st = run_once(backend, r->run, &in, n, dtype, max, &cfg, &index);
    Py_END_ALLOW_THREADS
    if (st) return cua_raise(st, &cfg);
    if (index < 0 || index >= n) {
        PyErr_Format(PyExc_SystemError, "cuatomic: argmin rung returned index %lld of %lld elements",
                     (long long)index, n);
        return NULL;
    }
    cua_record_launch(backend, CUA_OP_ARGMIN, &r->rung, &cfg);
    return PyLong_FromLongLong(index);
}

PyObject *cua_argmin_fits(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *kwlist[] = {"backend", "rung", "n", "dtype", NULL};
    int backend, rung, dtype;
    long long n;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "iiLi", kwlist, &backend, &rung, &n, &dtype)) return NULL;
    if (!cua_dtype_size(dtype)) {
        PyErr_Format(PyExc_ValueError, "unknown dtype id %d", dtype);
        return NULL;
    }
    const cua_arg_row *r = (const cua_arg_row *)cua_find_rung(backend, CUA_OP_ARGMIN, rung);
    cua_launch cfg;
    if (!r || cua_launch_config(-1, -1, NULL, &cfg) < 0) return NULL;
    const int st = r->fits ? r->fits(n, dtype, &cfg) : 0;
    if (st == CUA_EINVAL) return PyUnicode_FromString(cfg.msg);
    if (st) return cua_raise(st, &cfg);
    Py_RETURN_NONE;
}

/* argkeys(backend, x, outer, m, inner, dtype, max, mode, best, out, stream):
 * the outer * m * inner elements of x (memory of the backend) as argmin's
 * 8-byte words of mode CUA_ARGKEYS_* into out (same memory); best: the
 * first pass's least keys for CUA_ARGKEYS_MATCH, else None. Waited for. */
PyObject *cua_argkeys(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *xo, *besto, *outo, *so;
    int backend, dtype, max, mode;
    long long outer, m, inner;
    if (!PyArg_ParseTuple(args, "iOLLLiiiOOO", &backend, &xo, &outer, &m, &inner, &dtype, &max, &mode, &besto, &outo,
                          &so))
        return NULL;
    void *x, *best = NULL, *out, *stream;
    if (cua_as_ptr(xo, &x) < 0 || cua_as_ptr(outo, &out) < 0 || cua_as_ptr(so, &stream) < 0 ||
        (besto != Py_None && cua_as_ptr(besto, &best) < 0))
        return NULL;
    const size_t size = cua_dtype_size(dtype);
    if (outer < 0 || m < 0 || inner < 0 || size == 0 || mode < CUA_ARGKEYS_PACKED || mode > CUA_ARGKEYS_MATCH ||
        (m && inner && outer > INT64_MAX / m / inner) || (mode == CUA_ARGKEYS_PACKED && (size > 4 || m > (1LL << 32))) ||
        (mode == CUA_ARGKEYS_MATCH && !best)) {
        PyErr_SetString(PyExc_SystemError, "cuatomic: bad argkeys arguments");
        return NULL;
    }
    int st;
    Py_BEGIN_ALLOW_THREADS
#ifdef CUATOMIC_WITH_CUDA
    if (backend == BACKEND_CUDA) st = cua_cuda_argkeys(x, outer, m, inner, dtype, max, mode, best, out, stream);
    else
#endif
        st = backend == BACKEND_CPU
                 ? cua_cpu_argkeys(x, outer, m, inner, dtype, max, mode, (const uint64_t *)best, (uint64_t *)out)
                 : CUA_EINTERNAL;
    Py_END_ALLOW_THREADS
    if (st) return cua_raise(st, NULL);
    Py_RETURN_NONE;
}
