/* reduce_op.c -- reduce: one array folded with one of NumPy's ufuncs (add,
 * multiply, minimum, maximum, bitwise_and/or/xor), streamed in chunks when
 * a large host array goes to the GPU; the chunks' results combine with the
 * op itself.
 *
 * The Python layer (cuatomic/_reduce_op.py) has chosen the backend, the
 * rung and NumPy's result type, converted the input where NumPy would
 * convert it first, and normalized it to a C-contiguous native-order
 * ndarray (host) or a device pointer (int). The kernels' type comes from
 * the dtype and op alone (cua_reduce_kind): there is no accumulator to
 * pass. This file re-checks what could crash the process or reach a
 * backend that has no code for it. */
#include <string.h>

#include "call.h"
#include "pipeline.h"

/* One call: the rung's launcher and what its results combine with. */
typedef struct {
    cua_reduce_fn run;
    int dtype, op, kind;
    int pair;        /* a CUA_F_WIDE rung's float add: chunks come back as (value, error) pairs, unrounded */
    cua_acc_t total; /* the chunks combined so far */
    cua_dd sum;      /* with pair: the chunks added with compensation (cpu/cpu.h) */
} fold_ctx;

static int fold_chunk(const void *const *dev, int64_t m, cua_launch *cfg, void *vctx)
{
    fold_ctx *c = vctx;
    uint64_t part[2] = {0, 0};
    cfg->result.pair = c->pair;
    int st = c->run(dev[0], m, c->dtype, c->op, part, cfg);
    if (st) return st;
    if (c->pair) {
        cua_dd d;
        memcpy(&d.s, &part[0], sizeof d.s);
        memcpy(&d.c, &part[1], sizeof d.c);
        c->sum = cua_dd_add(c->sum, d);
    } else {
        const cua_acc_t v = {.i = part[0]};
        c->total = cua_cpu_red_combine(c->kind, c->op, c->total, v);
    }
    return 0;
}

/* The combined chunks' result bits. */
static uint64_t fold_total(const fold_ctx *c)
{
    if (!c->pair) return c->total.i;
    const double s = cua_dd_value(c->sum);
    uint64_t bits;
    memcpy(&bits, &s, sizeof bits);
    return bits;
}

/* Without the GIL: the rung on an input held in a call slot or staged on
 * the device, its 8 result bytes into *result. */
static int run_once(int backend, const fold_ctx *c, cua_input *in, int64_t n, cua_launch *cfg, uint64_t *result)
{
    cua_slot sl;
    cua_slot_take(backend, &sl);
    cua_slot_inputs(&sl, in, NULL);
    void *res = cua_slot_result(&sl, cfg, result);
    int st = cua_stage(in);
    if (!st) st = c->run(in->ptr, n, c->dtype, c->op, res, cfg);
    if (!st && res != result) memcpy(result, res, sizeof *result);
    cua_unstage(in);
    cua_slot_give(&sl);
    return st;
}

/* Bytes of a NumPy scalar of type `typenum` that a result of `kind` can
 * become (0: none): the low bytes of an integer result (NumPy's
 * wrap-around and the narrowing of a value that was widened), bool as "any
 * bit set", a double rounded to float32 or kept. */
static int out_size(int kind, int typenum)
{
    const int integer = kind == CUA_INT64 || kind == CUA_UINT64;
    switch (typenum) {
    case NPY_BOOL: return integer ? 1 : 0;
    case NPY_BYTE: case NPY_UBYTE: return integer ? 1 : 0;
    case NPY_SHORT: case NPY_USHORT: return integer ? 2 : 0;
    case NPY_INT: case NPY_UINT: return integer ? 4 : 0;
    case NPY_LONG: case NPY_ULONG: return integer ? (int)sizeof(long) : 0;
    case NPY_LONGLONG: case NPY_ULONGLONG: return integer ? 8 : 0;
    case NPY_FLOAT32: case NPY_FLOAT64: return kind == CUA_FLOAT64 ? (typenum == NPY_FLOAT32 ? 4 : 8) : 0;
    default: return 0;
    }
}

static PyObject *scalar_of(uint64_t bits, int kind, int typenum)
{
    union {
        npy_bool b;
        uint8_t u8;
        uint16_t u16;
        uint32_t u32;
        uint64_t u64;
        float f32;
        double f64;
    } v;
    v.u64 = 0;
    double d;
    memcpy(&d, &bits, sizeof d);
    const int size = out_size(kind, typenum);
    if (typenum == NPY_BOOL) v.b = bits != 0;
    else if (typenum == NPY_FLOAT32) v.f32 = (float)d;
    else if (typenum == NPY_FLOAT64) v.f64 = d;
    else if (size == 1) v.u8 = (uint8_t)bits;
    else if (size == 2) v.u16 = (uint16_t)bits;
    else if (size == 4) v.u32 = (uint32_t)bits;
    else v.u64 = bits;
    PyArray_Descr *descr = PyArray_DescrFromType(typenum);
    if (!descr) return NULL;
    PyObject *r = PyArray_Scalar(&v, descr, NULL);
    Py_DECREF(descr);
    return r;
}

static const char *const op_names[] = {
#define CUA_REDUCE_NAME_(id, name) name,
    CUA_REDUCE_OPS(CUA_REDUCE_NAME_)
#undef CUA_REDUCE_NAME_
};

PyObject *cua_op_reduce(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *kwlist[] = {"backend", "rung", "x", "n", "dtype", "op", "blocks", "threads", "stream",
                             "out_type", NULL};
    int backend, rung, dtype, op, threads, out_type;
    PyObject *x, *sobj;
    long long n, blocks;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "iiOLiiLiOi", kwlist, &backend, &rung, &x, &n, &dtype, &op, &blocks,
                                     &threads, &sobj, &out_type))
        return NULL;
    void *stream;
    if (cua_as_ptr(sobj, &stream) < 0) return NULL;
    const cua_rung *r = cua_find_rung(backend, CUA_OP_REDUCE, rung);
    if (!r) return NULL;
    if (op < 0 || op >= CUA_NREDUCE_OPS) {
        PyErr_Format(PyExc_ValueError, "reduce op id %d is outside 0..%d", op, CUA_NREDUCE_OPS - 1);
        return NULL;
    }
    cua_input in;
    if (cua_parse_input(backend, x, n, dtype, stream, &in) < 0) return NULL;
    const int kind = cua_reduce_kind(dtype, op);
    if (kind < 0) {
        PyErr_Format(PyExc_TypeError, "%s is not defined for floats (dtype id %d)", op_names[op], dtype);
        return NULL;
    }
    if (n == 0 && (op == CUA_REDUCE_MINIMUM || op == CUA_REDUCE_MAXIMUM)) {
        PyErr_Format(PyExc_ValueError, "zero-size array to reduction operation %s which has no identity",
                     op_names[op]);
        return NULL;
    }
    if (!out_size(kind, out_type)) {
        PyErr_Format(PyExc_SystemError, "cuatomic: reduce cannot give NumPy type %d from result kind %d", out_type,
                     kind);
        return NULL;
    }
    cua_launch cfg;
    if (cua_launch_config(blocks, threads, stream, &cfg) < 0) return NULL;
    fold_ctx c = {((const cua_reduce_row *)r)->run, dtype, op, kind, 0, cua_cpu_red_identity(kind, op), {0, 0}};
    c.pair = (r->flags & CUA_F_WIDE) && op == CUA_REDUCE_ADD && kind == CUA_FLOAT64;
    uint64_t result = 0;
    int st = 0;
    Py_BEGIN_ALLOW_THREADS
    int chunked = 0;
    if (in.host) { /* a host array for the GPU: streamed in chunks when large */
        const void *hosts[1] = {in.host};
        st = cua_pipeline_run(1, hosts, cua_dtype_size(dtype), n, &cfg, fold_chunk, &c, &chunked);
        result = fold_total(&c);
    }
    if (!chunked) st = run_once(backend, &c, &in, n, &cfg, &result);
    Py_END_ALLOW_THREADS
    if (st) return cua_raise(st, &cfg);
    cua_record_launch(backend, CUA_OP_REDUCE, r, &cfg);
    return scalar_of(result, kind, out_type);
}
