"""Exceptions raised by cuatomic."""


class CudaError(RuntimeError):
    """A CUDA runtime error, raised with the error's name.

    Parameters
    ----------
    message : str
        ``"<name>: <description>"``, plus a note when the error is sticky
        (the CUDA context is lost and the process must restart to use the GPU).
    code : int
        The ``cudaError_t`` value.
    name : str
        The error's name, e.g. ``"cudaErrorMemoryAllocation"``.
    """

    def __init__(self, message, code=0, name=""):
        super().__init__(message)
        self.code = int(code)
        self.name = str(name)

    def __reduce__(self):
        return (type(self), (str(self), self.code, self.name))
