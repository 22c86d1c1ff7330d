/* events.c -- CUDA events and device synchronization for cuatomic.Timer and
 * cuatomic.benchmark. Handles cross into Python as ints. */
#include "glue.h"

#ifdef CUATOMIC_WITH_CUDA
PyObject *cua_event_create(PyObject *self, PyObject *noargs)
{
    (void)self, (void)noargs;
    void *ev = NULL;
    CUA_CALL(cua_cuda_event_create(&ev));
    return PyLong_FromVoidPtr(ev);
}

PyObject *cua_event_destroy(PyObject *self, PyObject *arg)
{
    (void)self;
    void *ev = PyLong_AsVoidPtr(arg);
    if (!ev && PyErr_Occurred()) return NULL;
    CUA_CALL(cua_cuda_event_destroy(ev));
    Py_RETURN_NONE;
}

PyObject *cua_event_record(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *evobj, *sobj;
    if (!PyArg_ParseTuple(args, "OO", &evobj, &sobj)) return NULL;
    void *ev = PyLong_AsVoidPtr(evobj), *stream = PyLong_AsVoidPtr(sobj);
    if (PyErr_Occurred()) return NULL;
    CUA_CALL(cua_cuda_event_record(ev, stream));
    Py_RETURN_NONE;
}

PyObject *cua_event_elapsed(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *a, *b;
    if (!PyArg_ParseTuple(args, "OO", &a, &b)) return NULL;
    void *start = PyLong_AsVoidPtr(a), *stop = PyLong_AsVoidPtr(b);
    if (PyErr_Occurred()) return NULL;
    float ms = 0;
    CUA_CALL(cua_cuda_event_elapsed(start, stop, &ms));
    return PyFloat_FromDouble(ms);
}

PyObject *cua_synchronize(PyObject *self, PyObject *noargs)
{
    (void)self, (void)noargs;
    CUA_CALL(cua_cuda_synchronize());
    Py_RETURN_NONE;
}

#else

PyObject *cua_event_create(PyObject *self, PyObject *noargs) { (void)self, (void)noargs; return cua_no_cuda(); }
PyObject *cua_event_destroy(PyObject *self, PyObject *arg) { (void)self, (void)arg; return cua_no_cuda(); }
PyObject *cua_event_record(PyObject *self, PyObject *args) { (void)self, (void)args; return cua_no_cuda(); }
PyObject *cua_event_elapsed(PyObject *self, PyObject *args) { (void)self, (void)args; return cua_no_cuda(); }
PyObject *cua_synchronize(PyObject *self, PyObject *noargs) { (void)self, (void)noargs; return cua_no_cuda(); }

#endif
