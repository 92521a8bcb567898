// Fast-mode GEMM — see kernels/gemm_fast.cuh.
#include "kernels/gemm_fast.cuh"

#if !defined(ORACLE_CUDA_EMULATION)
#include <cublas_v2.h>
#include <dlfcn.h>

#include <string>
#endif

#include <cmath>

#include "faults/fault.h"

namespace oracle::kernels {

#if defined(ORACLE_CUDA_EMULATION)
namespace {
constexpr int kThreads = 256;

// Host stand-in: one thread per output, fmaf chain over increasing k.
__global__ void gemm_standin_kernel(const float* W, const float* x, float* out, int N, int K, int T, int bits) {
  const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= (long long)N * T) return;
  const long long i = idx % N, t = idx / N;
  float acc = 0.0f;
  const int end = fault::active(fault::Fault::FAST_GEMM_DROPS_LAST_K) ? K - 1 : K;  // FAULT: drops the last term
  for (int k = 0; k < end; k++) acc = std::fma(round_mantissa(W[i * K + k], bits), round_mantissa(x[t * K + k], bits), acc);
  out[idx] = acc;
}
}  // namespace

struct FastGemm::Impl {};
FastGemm::FastGemm() : impl_(std::make_unique<Impl>()) {}
FastGemm::~FastGemm() = default;

void FastGemm::run(float* out, const float* x, const float* W, int T, int K, int N, FastPrecision precision,
                   cudaStream_t stream) {
  if ((long long)N * T <= 0) return;
  const int bits = precision == FastPrecision::TF32 ? 10 : precision == FastPrecision::BF16 ? 7 : 23;
  LaunchConfig cfg;
  cfg.grid = dim3(blocks_for((long long)N * T, kThreads));
  cfg.block = dim3(kThreads);
  cfg.stream = stream;
  launch(cfg, gemm_standin_kernel, W, x, out, N, K, T, bits);
}

#else  // real GPU: cuBLAS

// cuBLAS is opened (dlopen) by the first FastGemm, i.e. only in fast mode:
// linked into the binary, libcublasLt alone cost every oracle process about
// 146 MB of resident memory at start-up (62 MB of text paged in by its
// initialisers + 84 MB of zero-initialised data they touch), deterministic
// mode and the CPU reference included. Each FastGemm holds its own reference
// to the library (dlopen counts them) and its own function table: no global.
using CublasCreateFn = cublasStatus_t (*)(cublasHandle_t*);
using CublasDestroyFn = cublasStatus_t (*)(cublasHandle_t);
using CublasSetStreamFn = cublasStatus_t (*)(cublasHandle_t, cudaStream_t);
using CublasSetWorkspaceFn = cublasStatus_t (*)(cublasHandle_t, void*, size_t);
using CublasGemmExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                          const void*, const void*, cudaDataType, int, const void*, cudaDataType,
                                          int, const void*, void*, cudaDataType, int, cublasComputeType_t,
                                          cublasGemmAlgo_t);

// The handle's own workspace (32 MiB, NVIDIA's figure for Hopper), set once, so a cuBLAS
// call captured into a CUDA graph (optimized/device_graph.h) never allocates.
struct FastGemm::Impl {
  void* library = nullptr;
  CublasCreateFn create = nullptr;
  CublasDestroyFn destroy = nullptr;
  CublasSetStreamFn set_stream = nullptr;
  CublasSetWorkspaceFn set_workspace = nullptr;
  CublasGemmExFn gemm_ex = nullptr;
  cublasHandle_t handle = nullptr;
  void* workspace = nullptr;
};
constexpr size_t kCublasWorkspaceBytes = 32u << 20;

namespace {
void check_cublas(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string("cuBLAS error in ") + what + ": " + std::to_string((int)s));
}

template <class Fn>
Fn cublas_symbol(void* library, const char* name) {
  void* p = dlsym(library, name);
  if (!p) throw std::runtime_error(std::string("cuBLAS: symbol ") + name + " not found");
  return reinterpret_cast<Fn>(p);
}

// libcublas.so.<major of the headers compiled against>, else the unversioned name.
void open_cublas(FastGemm::Impl& c) {
  const std::string versioned = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
  c.library = dlopen(versioned.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!c.library) c.library = dlopen("libcublas.so", RTLD_NOW | RTLD_LOCAL);
  if (!c.library)
    throw std::runtime_error("fast mode needs cuBLAS: cannot open " + versioned + " (" + dlerror() + ")");
  c.create = cublas_symbol<CublasCreateFn>(c.library, "cublasCreate_v2");
  c.destroy = cublas_symbol<CublasDestroyFn>(c.library, "cublasDestroy_v2");
  c.set_stream = cublas_symbol<CublasSetStreamFn>(c.library, "cublasSetStream_v2");
  c.set_workspace = cublas_symbol<CublasSetWorkspaceFn>(c.library, "cublasSetWorkspace_v2");
  c.gemm_ex = cublas_symbol<CublasGemmExFn>(c.library, "cublasGemmEx");
}
}  // namespace

FastGemm::FastGemm() : impl_(std::make_unique<Impl>()) {
  open_cublas(*impl_);
  check_cublas(impl_->create(&impl_->handle), "cublasCreate");
  check_cuda(cudaMalloc(&impl_->workspace, kCublasWorkspaceBytes), "cuBLAS workspace");
  check_cublas(impl_->set_workspace(impl_->handle, impl_->workspace, kCublasWorkspaceBytes), "cublasSetWorkspace");
}
FastGemm::~FastGemm() {
  if (impl_ && impl_->handle) impl_->destroy(impl_->handle);
  if (impl_ && impl_->workspace) cudaFree(impl_->workspace);
  if (impl_ && impl_->library) dlclose(impl_->library);
}

void FastGemm::run(float* out, const float* x, const float* W, int T, int K, int N, FastPrecision precision,
                   cudaStream_t stream) {
  if ((long long)N * T <= 0) return;
  check_cublas(impl_->set_stream(impl_->handle, stream), "cublasSetStream");
  const float alpha = 1.0f, beta = 0.0f;
  const cublasComputeType_t compute = precision == FastPrecision::TF32   ? CUBLAS_COMPUTE_32F_FAST_TF32
                                      : precision == FastPrecision::BF16 ? CUBLAS_COMPUTE_32F_FAST_16BF
                                                                         : CUBLAS_COMPUTE_32F;
  // Row-major out (T, N) is column-major (N, T): out^T = op_T(W as (K, N)) * (x as (K, T)).
  check_cublas(impl_->gemm_ex(impl_->handle, CUBLAS_OP_T, CUBLAS_OP_N, N, T, K, &alpha, W, CUDA_R_32F, K, x,
                            CUDA_R_32F, K, &beta, out, CUDA_R_32F, N, compute, CUBLAS_GEMM_DEFAULT),
               "cublasGemmEx");
}

#endif

}  // namespace oracle::kernels
