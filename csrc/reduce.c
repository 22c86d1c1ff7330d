/* reduce.c -- sum, prod and dot: one input (two for dot) reduced to one
 * accumulator, streamed in chunks when a large host array goes to the GPU.
 *
 * The Python layer (cuatomic/_reduce.py) has chosen the backend, the
 * rung, the element and accumulator types, and normalized the input to a
 * C-contiguous native-order ndarray (host) or a device pointer (int). This
 * file re-checks what could crash the process if it were wrong. */
#include <string.h>

#include "call.h"
#include "pipeline.h"

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

/* One reduction call: the rung's launcher (sum/prod: one input; dot: two). */
typedef struct {
    cua_sum_fn one;
    cua_dot_fn two;
    int dtype, acc, mul;
    uint64_t total;
    cua_dd sum; /* float64 sums: the chunks added with compensation (cpu/cpu.h) */
    int pair;   /* the rung is CUA_F_WIDE: chunks come back as (value, error) pairs, unrounded */
    cua_xacc *exact; /* the rung is CUA_F_EXACT: every launch writes a cua_xacc, merged here */
} reduce_ctx;

static reduce_ctx reduce_start(const cua_rung *rung, cua_sum_fn one, cua_dot_fn two, int dtype, int acc, int mul)
{
    reduce_ctx c = {one, two, dtype, acc, mul, acc_identity(acc, mul), {0, 0}, 0, NULL};
    c.pair = (rung->flags & CUA_F_WIDE) && acc == CUA_ACC_FLOAT64 && !mul;
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
    if (c->exact) { /* integer words: chunks merge exactly, in any order */
        cua_xacc part;
        int st = c->two ? c->two(dev[0], dev[1], m, c->dtype, c->acc, &part, cfg)
                        : c->one(dev[0], m, c->dtype, c->acc, &part, cfg);
        if (!st) cua_xacc_merge(c->exact, &part);
        return st;
    }
    uint64_t part[2] = {0, 0};
    cfg->result.pair = c->pair;
    int st = c->two ? c->two(dev[0], dev[1], m, c->dtype, c->acc, part, cfg)
                    : c->one(dev[0], m, c->dtype, c->acc, part, cfg);
    if (!st) chunk_combine(c, part);
    return st;
}

/* Without the GIL: one rung on inputs held in a call slot or staged on the
 * device, its 8 result bytes into *result (an exact rung's cua_xacc into
 * c->exact, host memory: through the slot, from its start, when no input
 * took the slot). */
static int run_once(int backend, const reduce_ctx *c, cua_input *a, cua_input *b, int64_t n, cua_launch *cfg,
                    uint64_t *result)
{
    cua_slot sl;
    cua_slot_take(backend, &sl);
    cua_slot_inputs(&sl, a, b);
    void *res = c->exact ? cua_slot_output(&sl, sizeof *c->exact, cfg, c->exact) : cua_slot_result(&sl, cfg, result);
    int st = cua_stage(a);
    if (!st && b) st = cua_stage(b);
    if (!st)
        st = c->two ? c->two(a->ptr, b->ptr, n, c->dtype, c->acc, res, cfg)
                    : c->one(a->ptr, n, c->dtype, c->acc, res, cfg);
    if (!st && !c->exact && res != result) memcpy(result, res, sizeof *result);
    if (!st && c->exact && res != c->exact) memcpy(c->exact, res, sizeof *c->exact);
    cua_unstage(a);
    if (b) cua_unstage(b);
    cua_slot_give(&sl);
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

/* An exact rung's state as (words, special): the CUA_XACC_WORDS normalized
 * words as an int64 ndarray and the special bits; frees `exact`. The
 * Python side (cuatomic/_exact.py) rounds it once. */
static PyObject *xacc_state(cua_xacc *exact)
{
    npy_intp dims[1] = {CUA_XACC_WORDS};
    PyObject *words = PyArray_SimpleNew(1, dims, NPY_INT64);
    if (words) memcpy(PyArray_DATA((PyArrayObject *)words), exact->w, sizeof exact->w);
    const unsigned long long special = exact->special;
    PyMem_RawFree(exact);
    if (!words) return NULL;
    return Py_BuildValue("(NK)", words, special);
}

/* sum, prod (b == NULL) and dot, after their arguments are parsed. */
static PyObject *reduce(int backend, int op, int rung, PyObject *x, PyObject *y, long long n, int dtype, int acc,
                        long long blocks, int threads, PyObject *sobj, int out_type)
{
    void *stream;
    if (cua_as_ptr(sobj, &stream) < 0) return NULL;
    const cua_rung *r = cua_find_rung(backend, op, rung);
    if (!r) return NULL;
    cua_input ia, ib;
    if (cua_parse_input(backend, x, n, dtype, stream, &ia) < 0 ||
        (y && cua_parse_input(backend, y, n, dtype, stream, &ib) < 0))
        return NULL;
    if (acc < CUA_ACC_INT64 || acc > CUA_ACC_FLOAT64) {
        PyErr_Format(PyExc_SystemError, "cuatomic: accumulator id %d", acc);
        return NULL;
    }
    cua_launch cfg;
    if (cua_launch_config(blocks, threads, stream, &cfg) < 0) return NULL;
    reduce_ctx rc = reduce_start(r, op == CUA_OP_DOT ? NULL : ((const cua_sum_row *)r)->run,
                                 op == CUA_OP_DOT ? ((const cua_dot_row *)r)->run : NULL, dtype, acc,
                                 op == CUA_OP_PROD);
    cua_xacc *exact = NULL;
    if (r->flags & CUA_F_EXACT) {
        exact = PyMem_RawCalloc(1, sizeof *exact);
        if (!exact) return PyErr_NoMemory();
        rc.exact = exact;
    }
    uint64_t result = 0;
    int st = 0;
    Py_BEGIN_ALLOW_THREADS
    int chunked = 0;
    if (ia.host && (!y || ib.host)) { /* host arrays for the GPU: streamed in chunks when large */
        const void *hosts[2] = {ia.host, y ? ib.host : NULL};
        st = cua_pipeline_run(y ? 2 : 1, hosts, cua_dtype_size(dtype), n, &cfg, reduce_chunk, &rc, &chunked);
        result = chunk_total(&rc);
    }
    if (!chunked) st = run_once(backend, &rc, &ia, y ? &ib : NULL, n, &cfg, &result);
    Py_END_ALLOW_THREADS
    if (st) {
        PyMem_RawFree(exact);
        return cua_raise(st, &cfg);
    }
    cua_record_launch(backend, op, r, &cfg);
    if (exact) return xacc_state(exact);
    return scalar_of(result, acc, out_type);
}

static char *one_kw[] = {"backend", "rung", "x", "n", "dtype", "acc", "blocks", "threads", "stream", "out_type",
                         NULL};

static PyObject *reduce_one(PyObject *args, PyObject *kw, int op)
{
    int backend, rung, dtype, acc, threads, out_type;
    PyObject *x, *sobj;
    long long n, blocks;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "iiOLiiLiOi", one_kw, &backend, &rung, &x, &n, &dtype, &acc,
                                     &blocks, &threads, &sobj, &out_type))
        return NULL;
    return reduce(backend, op, rung, x, NULL, n, dtype, acc, blocks, threads, sobj, out_type);
}

PyObject *cua_op_sum(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    return reduce_one(args, kw, CUA_OP_SUM);
}

PyObject *cua_op_prod(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    return reduce_one(args, kw, CUA_OP_PROD);
}

PyObject *cua_op_dot(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *kwlist[] = {"backend", "rung", "a", "b", "n", "dtype", "acc", "blocks", "threads", "stream",
                             "out_type", NULL};
    int backend, rung, dtype, acc, threads, out_type;
    PyObject *a, *b, *sobj;
    long long n, blocks;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "iiOOLiiLiOi", kwlist, &backend, &rung, &a, &b, &n, &dtype, &acc,
                                     &blocks, &threads, &sobj, &out_type))
        return NULL;
    return reduce(backend, CUA_OP_DOT, rung, a, b, n, dtype, acc, blocks, threads, sobj, out_type);
}
