// ThreadPool: see thread_pool.h.
#include "reference/base/thread_pool.h"

namespace oracle {

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads < 1 ? 1 : n_threads) {
  errors_.resize(n_threads_);
  for (int i = 1; i < n_threads_; i++) workers_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run_range(int index) {
  long n = job_n_;
  int begin = (int)(n * index / n_threads_), end = (int)(n * (index + 1) / n_threads_);
  try {
    if (begin < end) (*job_)(begin, end);
  } catch (...) {
    errors_[index] = std::current_exception();
  }
}

void ThreadPool::worker(int index) {
  long seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    run_range(index);
    std::lock_guard<std::mutex> lock(mutex_);
    if (--pending_ == 0) done_.notify_one();
  }
}

void ThreadPool::parallel_for(int n, const std::function<void(int begin, int end)>& fn) {
  if (n <= 0) return;
  if (n_threads_ == 1 || n == 1) {
    fn(0, n);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &fn;
    job_n_ = n;
    pending_ = n_threads_ - 1;
    for (auto& e : errors_) e = nullptr;
    generation_++;
  }
  wake_.notify_all();
  run_range(0);
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return pending_ == 0; });
  for (auto& e : errors_)
    if (e) std::rethrow_exception(e);
}

}  // namespace oracle
