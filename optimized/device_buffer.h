#pragma once
// ============================================================================
// DeviceBuffer<T>: an owning device allocation (cudaMalloc; host memory in the
// emulated build). Errors throw std::runtime_error naming the operation.
// ============================================================================
#include <cstddef>
#include <vector>

#include "kernels/launch.h"

namespace oracle::optimized {

template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t n) { resize(n); }
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(o.p_), n_(o.n_) { o.p_ = nullptr, o.n_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      p_ = o.p_, n_ = o.n_;
      o.p_ = nullptr, o.n_ = 0;
    }
    return *this;
  }

  // Discards the contents; the new elements are zero.
  void resize(size_t n) {
    reset();
    kernels::check_cuda(cudaMalloc((void**)&p_, (n > 0 ? n : 1) * sizeof(T)), "cudaMalloc");
    n_ = n;
    kernels::check_cuda(cudaMemset(p_, 0, (n > 0 ? n : 1) * sizeof(T)), "cudaMemset");
  }
  // Grows (never shrinks) to at least n elements.
  void reserve(size_t n) {
    if (n > n_) resize(n);
  }
  void upload(const T* host, size_t n, size_t offset = 0) {
    kernels::check_cuda(cudaMemcpy(p_ + offset, host, n * sizeof(T), cudaMemcpyHostToDevice), "upload");
  }
  void upload(const std::vector<T>& host) {
    reserve(host.size());
    upload(host.data(), host.size());
  }
  void download(T* host, size_t n, size_t offset = 0) const {
    kernels::check_cuda(cudaMemcpy(host, p_ + offset, n * sizeof(T), cudaMemcpyDeviceToHost), "download");
  }
  T* get() const { return p_; }
  size_t size() const { return n_; }

 private:
  void reset() {
    if (p_) cudaFree(p_);
    p_ = nullptr;
    n_ = 0;
  }
  T* p_ = nullptr;
  size_t n_ = 0;
};

}  // namespace oracle::optimized
