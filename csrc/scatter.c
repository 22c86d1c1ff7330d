/* scatter.c -- np.<op>.at: the glue of the `at` ladder.
 *
 * The Python layer (cuatomic/_scatter.py) has resolved the op, flattened
 * the indices (one int32 or int64 array naming rows of `a`), cast the
 * values to a's dtype and described their broadcast as two strides, and
 * handed every array over as a C-contiguous native-order ndarray (host) or
 * a device pointer (int). Here: the checks that keep the backend inside its
 * arrays, the index check (an IndexError before anything is written), the
 * host arrays staged for the GPU, the rung, and a host `a` written back. */
#include <string.h>

#include "call.h"

/* The first bad index's position (-1: none), by the backend's check. */
static int check_indices(int backend, const void *idx, int idx_dtype, int64_t n, int64_t m, int64_t *bad,
                         cua_launch *cfg)
{
#ifdef CUATOMIC_WITH_CUDA
    if (backend == BACKEND_CUDA) return cua_cuda_scatter_check(idx, idx_dtype, n, m, bad, cfg);
#endif
    if (backend == BACKEND_CUDA) return CUA_EINTERNAL;
    return cua_cpu_scatter_check(idx, idx_dtype, n, m, bad, cfg);
}

/* The index at position k, read back from where the check read it. */
static int64_t index_at(int backend, const cua_input *in, int idx_dtype, int64_t k, void *stream)
{
    const size_t size = idx_dtype == CUA_INT64 ? 8 : 4;
    union {
        int64_t i64;
        int32_t i32;
    } v = {0};
    if (in->host || backend == BACKEND_CPU)
        memcpy(&v, (const char *)(in->host ? in->host : in->ptr) + (size_t)k * size, size);
    else if (cua_copy_to_host(&v, (const char *)in->ptr + (size_t)k * size, size, stream))
        return INT64_MIN;
    return size == 8 ? v.i64 : v.i32;
}

/* The call's description, checked: every count non-negative, the values'
 * strides inside the `nvals` elements given. -1 with an exception. */
static int describe(cua_scatter *s, long long m, long long row, long long n, long long vk, long long vj, int dtype,
                    int op, int idx_dtype, int negate, long long nvals)
{
    memset(s, 0, sizeof *s);
    if (cua_dtype_size(dtype) == 0 || op < 0 || op >= CUA_NREDUCE_OPS ||
        (idx_dtype != CUA_INT32 && idx_dtype != CUA_INT64)) {
        PyErr_SetString(PyExc_SystemError, "cuatomic: at: bad dtype, op or index dtype id");
        return -1;
    }
    if (cua_reduce_kind(dtype, op) < 0 || (negate && op != CUA_REDUCE_ADD)) {
        PyErr_SetString(PyExc_SystemError, "cuatomic: at: no such op for this dtype");
        return -1;
    }
    if (m < 0 || row < 0 || n < 0 || vk < 0 || vj < 0 || nvals < 0 || (m && row > INT64_MAX / m) ||
        (n && row > INT64_MAX / n)) {
        PyErr_SetString(PyExc_SystemError, "cuatomic: at: bad sizes");
        return -1;
    }
    if (n && row) {
        /* The last value read is at (n-1)*vk + (row-1)*vj: inside the array. */
        const long long last_k = n - 1, last_j = row - 1;
        if ((vk && last_k > (INT64_MAX / 2) / vk) || (vj && last_j > (INT64_MAX / 2) / vj) ||
            last_k * vk + last_j * vj >= nvals) {
            PyErr_SetString(PyExc_SystemError, "cuatomic: at: the values' strides reach past their array");
            return -1;
        }
    }
    s->m = m;
    s->row = row;
    s->n = n;
    s->vk = vk;
    s->vj = vj;
    s->dtype = dtype;
    s->op = op;
    s->idx_dtype = idx_dtype;
    s->negate = negate;
    return 0;
}

PyObject *cua_op_at(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *kwlist[] = {"backend", "rung", "a", "m", "row", "indices", "idx_dtype", "n", "values", "nvals",
                             "vk", "vj", "dtype", "op", "negate", "blocks", "threads", "stream", NULL};
    int backend, rung, idx_dtype, dtype, op, negate, threads;
    long long m, row, n, nvals, vk, vj, blocks;
    PyObject *aobj, *iobj, *vobj, *sobj;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "iiOLLOiLOLLLiipLiO", kwlist, &backend, &rung, &aobj, &m, &row, &iobj,
                                     &idx_dtype, &n, &vobj, &nvals, &vk, &vj, &dtype, &op, &negate, &blocks,
                                     &threads, &sobj))
        return NULL;
    void *stream;
    cua_scatter s;
    if (cua_as_ptr(sobj, &stream) < 0 ||
        describe(&s, m, row, n, vk, vj, dtype, op, idx_dtype, negate, nvals) < 0)
        return NULL;
    const cua_scatter_row *r = (const cua_scatter_row *)cua_find_rung(backend, CUA_OP_AT, rung);
    cua_input out, idx, vals;
    if (!r || cua_parse_input(backend, aobj, m * row, dtype, stream, &out) < 0 ||
        cua_parse_input(backend, iobj, n, idx_dtype, stream, &idx) < 0 ||
        cua_parse_input(backend, vobj, n && row ? nvals : 0, dtype, stream, &vals) < 0)
        return NULL;
    if (PyArray_Check(aobj) && !PyArray_ISWRITEABLE((PyArrayObject *)aobj)) {
        PyErr_SetString(PyExc_ValueError, "output array is read-only (a is not writeable)");
        return NULL;
    }
    cua_launch cfg;
    if (cua_launch_config(blocks, threads, stream, &cfg) < 0) return NULL;
    int st = 0;
    int64_t bad = -1, bad_index = 0;
    /* The exact rungs check the indices in their own pass (cua_scatter.bad). */
    const int self_check = (r->rung.flags & CUA_F_EXACT) && n > 0 && row > 0;
    Py_BEGIN_ALLOW_THREADS
    st = cua_stage(&idx);
    if (!st && !self_check) st = check_indices(backend, idx.ptr, idx_dtype, n, m, &bad, &cfg);
    if (!st && bad < 0) {
        st = cua_stage(&vals);
        if (!st) st = cua_stage(&out);
        if (self_check) s.bad = &bad;
        if (!st) st = r->run((void *)out.ptr, idx.ptr, vals.ptr, &s, &cfg);
        /* A self-checking rung that failed before its pass (out of memory,
         * a limit, a CUDA error): a bad index is still the answer. */
        if (st && st != CUA_EINTR && self_check && bad < 0) {
            int64_t found = -1;
            if (!check_indices(backend, idx.ptr, idx_dtype, n, m, &found, &cfg) && found >= 0) {
                st = 0;
                bad = found;
            }
        }
        if (!st && out.host && bad < 0) st = cua_copy_to_host((void *)out.host, out.ptr, out.nbytes, stream);
    }
    if (!st && bad >= 0) bad_index = index_at(backend, &idx, idx_dtype, bad, stream);
    cua_unstage(&out);
    cua_unstage(&vals);
    cua_unstage(&idx);
    Py_END_ALLOW_THREADS
    if (st) return cua_raise(st, &cfg);
    if (bad >= 0) {
        if (bad_index == INT64_MIN)
            PyErr_Format(PyExc_IndexError, "index at position %lld is out of bounds for axis 0 with size %lld "
                         "(indices[%lld])", (long long)bad, m, (long long)bad);
        else
            PyErr_Format(PyExc_IndexError, "index %lld is out of bounds for axis 0 with size %lld (indices[%lld])",
                         (long long)bad_index, m, (long long)bad);
        return NULL;
    }
    cua_record_launch(backend, CUA_OP_AT, &r->rung, &cfg);
    Py_RETURN_NONE;
}

PyObject *cua_at_fits(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *kwlist[] = {"backend", "rung", "m", "row", "n", "dtype", "op", "negate", "blocks", "threads", NULL};
    int backend, rung, dtype, op, negate, threads;
    long long m, row, n, blocks;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "iiLLLiipLi", kwlist, &backend, &rung, &m, &row, &n, &dtype, &op,
                                     &negate, &blocks, &threads))
        return NULL;
    cua_scatter s;
    if (describe(&s, m, row, n, 0, 0, dtype, op, CUA_INT64, negate, 1) < 0) return NULL;
    const cua_scatter_row *r = (const cua_scatter_row *)cua_find_rung(backend, CUA_OP_AT, rung);
    cua_launch cfg;
    if (!r || cua_launch_config(blocks, threads, NULL, &cfg) < 0) return NULL;
    int st;
    Py_BEGIN_ALLOW_THREADS
    st = r->fits(&s, &cfg);
    Py_END_ALLOW_THREADS
    if (st == CUA_EINVAL) return PyUnicode_FromString(cfg.msg);
    if (st) return cua_raise(st, &cfg);
    Py_RETURN_NONE;
}
