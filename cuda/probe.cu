// probe.cu -- the device probe: whether kernels of this build can run on
// the current device, and what it is.
#include "common.cuh"

// A kernel that does nothing: launching it proves this binary carries code
// the current GPU can run.
__global__ void probe_kernel(int *p)
{
    if (p) *p = 1;
}

static void say(cua_cuda_device *info, const char *what, cudaError_t e)
{
    snprintf(info->reason, sizeof info->reason, "%s: %s (%s)", what, cudaGetErrorName(e), cudaGetErrorString(e));
}

extern "C" int cua_cuda_device_facts(int device, cua_cuda_device *info)
{
    memset(info, 0, sizeof *info);
    info->device = device;
    cudaDeviceProp prop;
    CUA_CHECK(cudaGetDeviceProperties(&prop, device));
    snprintf(info->name, sizeof info->name, "%s", prop.name);
    info->cc_major = prop.major;
    info->cc_minor = prop.minor;
    info->sm_count = prop.multiProcessorCount;
    info->total_memory = (int64_t)prop.totalGlobalMem;
    info->shared_per_block_optin = (int64_t)prop.sharedMemPerBlockOptin;
    info->l2_bytes = (int64_t)prop.l2CacheSize;
    // Facts a GPU may not report (an integrated one has no memory clock of
    // its own): 0, and the probe goes on.
    if (cudaDeviceGetAttribute(&info->cooperative_launch, cudaDevAttrCooperativeLaunch, device) != cudaSuccess)
        info->cooperative_launch = 0;
    if (cudaDeviceGetAttribute(&info->memory_clock_khz, cudaDevAttrMemoryClockRate, device) != cudaSuccess)
        info->memory_clock_khz = 0;
    if (cudaDeviceGetAttribute(&info->memory_bus_bits, cudaDevAttrGlobalMemoryBusWidth, device) != cudaSuccess)
        info->memory_bus_bits = 0;
    cudaGetLastError();
    return 0;
}

extern "C" int cua_cuda_probe(cua_cuda_device *info)
{
    memset(info, 0, sizeof *info);
    cudaRuntimeGetVersion(&info->runtime_version);
    cudaError_t e = cudaDriverGetVersion(&info->driver_version);
    if (e != cudaSuccess || info->driver_version == 0) {
        snprintf(info->reason, sizeof info->reason, "no NVIDIA driver found (libcuda.so could not be loaded)");
        return 0;
    }
    // Minor-version compatibility: any driver of the same major CUDA version
    // runs this runtime; an older major cannot.
    if (info->driver_version / 1000 < info->runtime_version / 1000) {
        snprintf(info->reason, sizeof info->reason,
                 "the NVIDIA driver supports CUDA %d.%d but cuatomic was built with CUDA %d.%d: update the driver",
                 info->driver_version / 1000, info->driver_version % 1000 / 10, info->runtime_version / 1000,
                 info->runtime_version % 1000 / 10);
        return 0;
    }
    int n = 0;
    e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        say(info, "no usable CUDA device", e);
        cudaGetLastError();
        return 0;
    }
    if (n == 0) {
        snprintf(info->reason, sizeof info->reason, "no CUDA device found");
        return 0;
    }
    e = cudaGetDevice(&info->device);
    cua_cuda_device facts;
    int st = e == cudaSuccess ? cua_cuda_device_facts(info->device, &facts) : (int)e;
    if (st != 0) {
        say(info, "cannot query the CUDA device", (cudaError_t)st);
        cudaGetLastError();
        return 0;
    }
    facts.driver_version = info->driver_version, facts.runtime_version = info->runtime_version;
    *info = facts;
    probe_kernel<<<1, 1>>>(NULL);
    e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        if (e == cudaErrorNoKernelImageForDevice || e == cudaErrorInvalidDeviceFunction)
            snprintf(info->reason, sizeof info->reason,
                     "this build has no kernel image for %s (compute capability %d.%d): rebuild with "
                     "CUATOMIC_CUDA_ARCHS including %d%d",
                     info->name, info->cc_major, info->cc_minor, info->cc_major, info->cc_minor);
        else say(info, "a test kernel failed to run", e);
        return 0;
    }
    cudaGetLastError();
    info->usable = 1;
    return 0;
}
