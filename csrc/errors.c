/* errors.c -- statuses become exceptions here, and only here. */
#include "glue.h"

static PyObject *cuda_error_class = NULL; /* cuatomic.CudaError, set at import */

PyObject *cua_set_cuda_error_class(PyObject *self, PyObject *cls)
{
    (void)self;
    if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, (PyTypeObject *)PyExc_Exception)) {
        PyErr_SetString(PyExc_TypeError, "expected an exception class");
        return NULL;
    }
    Py_XSETREF(cuda_error_class, Py_NewRef(cls));
    Py_RETURN_NONE;
}

PyObject *cua_raise(int status, const cua_launch *cfg)
{
    switch (status) {
    case CUA_OK:
        PyErr_SetString(PyExc_SystemError, "cuatomic: success reported as an error");
        return NULL;
    case CUA_EINVAL:
        PyErr_SetString(PyExc_ValueError, cfg && cfg->msg[0] ? cfg->msg : "invalid argument");
        return NULL;
    case CUA_ENOMEM:
        PyErr_SetString(PyExc_MemoryError, cfg && cfg->msg[0] ? cfg->msg
                                                              : "cuatomic: not enough host memory for this call's "
                                                                "buffers (fewer blocks or a smaller input need less)");
        return NULL;
    case CUA_EINTR:
        /* poll() left the exception its signal handler raised (usually
         * KeyboardInterrupt); keep it. */
        if (!PyErr_Occurred()) PyErr_SetNone(PyExc_KeyboardInterrupt);
        return NULL;
    case CUA_EINTERNAL:
        PyErr_SetString(PyExc_SystemError, "cuatomic: an unknown type or op id reached a backend (a bug)");
        return NULL;
    default:
        break;
    }
#ifdef CUATOMIC_WITH_CUDA
    if (status > 0) {
        const char *name = cua_cuda_error_name(status);
        PyObject *msg = PyUnicode_FromFormat(
            "%s: %s%s", name, cua_cuda_error_string(status),
            cua_cuda_error_is_sticky(status)
                ? " (this error is sticky: the CUDA context is lost and every later CUDA call in this "
                  "process will fail; restart the process)"
                : "");
        if (!msg) return NULL;
        PyObject *cls = cuda_error_class ? cuda_error_class : PyExc_RuntimeError;
        PyObject *exc = cuda_error_class ? PyObject_CallFunction(cls, "Ois", msg, status, name)
                                         : PyObject_CallOneArg(cls, msg);
        Py_DECREF(msg);
        if (!exc) return NULL;
        PyErr_SetObject(cls, exc);
        Py_DECREF(exc);
        return NULL;
    }
#endif
    PyErr_Format(PyExc_SystemError, "cuatomic: unknown status %d", status);
    return NULL;
}

PyObject *cua_no_cuda(void)
{
    PyErr_SetString(PyExc_RuntimeError, "cuatomic was built without CUDA");
    return NULL;
}

/* cua_launch.poll for calls made without the GIL: take the GIL back for a
 * moment and run Python's signal handlers. Only the main thread runs them
 * (PyErr_CheckSignals is a no-op elsewhere), and only the calling thread
 * polls, so a handler that raises (SIGINT -> KeyboardInterrupt) leaves its
 * exception on the thread that will return it. */
int cua_poll_signals(void)
{
    PyGILState_STATE g = PyGILState_Ensure();
    int stop = PyErr_CheckSignals() < 0;
    PyGILState_Release(g);
    return stop;
}
