// errors.cu -- CUDA error names, which errors are sticky, and a kernel that
// makes one on purpose (for the tests of error handling).
#include "common.cuh"

extern "C" const char *cua_cuda_error_name(int status) { return cudaGetErrorName((cudaError_t)status); }
extern "C" const char *cua_cuda_error_string(int status) { return cudaGetErrorString((cudaError_t)status); }

extern "C" int cua_cuda_error_is_sticky(int status)
{
    switch ((cudaError_t)status) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorMisalignedAddress:
    case cudaErrorIllegalInstruction:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout: return 1;
    default: return 0;
    }
}

__global__ void trap_kernel() { __trap(); }

extern "C" int cua_cuda_debug_trap(void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    trap_kernel<<<1, 1, 0, s>>>();
    CUA_CHECK_LAUNCH();
    CUA_CHECK(cudaStreamSynchronize(s));
    return 0;
}
