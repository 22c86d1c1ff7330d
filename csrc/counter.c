/* counter.c -- add_one and mutex_add_one: every launched thread adds one
 * to a single counter; the count that survives comes back. */
#include "call.h"

PyObject *cua_op_counter(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *kwlist[] = {"backend", "op", "rung", "blocks", "threads", "stream", NULL};
    int backend, op, rung, threads;
    long long blocks;
    PyObject *sobj;
    void *stream;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "iiiLiO", kwlist, &backend, &op, &rung, &blocks, &threads, &sobj) ||
        cua_as_ptr(sobj, &stream) < 0)
        return NULL;
    if (op != CUA_OP_ADD_ONE && op != CUA_OP_MUTEX_ADD_ONE) {
        PyErr_SetString(PyExc_SystemError, "cuatomic: not a counter op");
        return NULL;
    }
    const cua_counter_row *row = (const cua_counter_row *)cua_find_rung(backend, op, rung);
    if (!row) return NULL;
    cua_launch cfg;
    if (cua_launch_config(blocks, threads, stream, &cfg) < 0) return NULL;
    int64_t result = 0;
    int st;
    Py_BEGIN_ALLOW_THREADS
    st = row->run(&result, &cfg);
    Py_END_ALLOW_THREADS
    if (st) return cua_raise(st, &cfg);
    cua_record_launch(backend, op, &row->rung, &cfg);
    return PyLong_FromLongLong(result);
}
