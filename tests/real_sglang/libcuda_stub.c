/*
 * TEST HARNESS ONLY: a stub libcuda.so.1 for sgtui's real-SGLang CPU test tier. NOT a supported SGLang setup.
 *
 * The package index's `sglang-kernel` wheel is CUDA-only: every one of its .so files links libcuda.so.1, so on
 * a machine without the NVIDIA driver `import sgl_kernel` fails ("Could not load any common_ops library")
 * and SGLang's CPU engine (SGLANG_USE_CPU_ENGINE=1 --device cpu) cannot start. This stub defines the driver
 * symbols those .so files import (read with `nm -D --undefined-only` on sglang_kernel 0.4.10) plus the ones a
 * loader probes first; each one answers CUDA_ERROR_NO_DEVICE (100), so nothing can use a GPU through it.
 * The tier builds it at test time (`gcc -shared -fPIC -o libcuda.so.1 libcuda_stub.c`) and puts it on
 * LD_LIBRARY_PATH of the server only.
 */
#include <stddef.h>

#define NO_DEVICE 100

typedef int CUresult;

static const char no_device_text[] = "CUDA_ERROR_NO_DEVICE (sgtui test harness stub libcuda.so.1)";
static const char no_device_name[] = "CUDA_ERROR_NO_DEVICE";

CUresult cuInit(unsigned int flags) { (void)flags; return NO_DEVICE; }
CUresult cuDriverGetVersion(int *version) { if (version) *version = 0; return NO_DEVICE; }
CUresult cuDeviceGetCount(int *count) { if (count) *count = 0; return NO_DEVICE; }
CUresult cuDeviceGet(int *device, int ordinal) { (void)device; (void)ordinal; return NO_DEVICE; }
CUresult cuGetErrorString(CUresult error, const char **text) { (void)error; if (text) *text = no_device_text; return 0; }
CUresult cuGetErrorName(CUresult error, const char **text) { (void)error; if (text) *text = no_device_name; return 0; }
CUresult cuGetProcAddress(const char *symbol, void **fn, int version, unsigned long long flags) {
    (void)symbol; (void)version; (void)flags; if (fn) *fn = NULL; return NO_DEVICE;
}
CUresult cuGetProcAddress_v2(const char *symbol, void **fn, int version, unsigned long long flags, void *status) {
    (void)symbol; (void)version; (void)flags; (void)status; if (fn) *fn = NULL; return NO_DEVICE;
}

/* The rest of what sglang_kernel 0.4.10's .so files import: never reached without a device. */
#define STUB(name) CUresult name(void) { return NO_DEVICE; }
STUB(cuCtxFromGreenCtx)
STUB(cuCtxPopCurrent_v2)
STUB(cuCtxPushCurrent_v2)
STUB(cuCtxGetCurrent)
STUB(cuCtxSetCurrent)
STUB(cuDevResourceGenerateDesc)
STUB(cuDevSmResourceSplitByCount)
STUB(cuDeviceGetDevResource)
STUB(cuDeviceGetAttribute)
STUB(cuGreenCtxCreate)
STUB(cuGreenCtxDestroy)
STUB(cuGreenCtxGetDevResource)
STUB(cuPointerGetAttribute)
STUB(cuStreamCreate)
STUB(cuLaunchKernel)
STUB(cuModuleLoadData)
STUB(cuModuleGetFunction)
