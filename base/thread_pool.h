#pragma once
// ============================================================================
// A small fixed-size thread pool. parallel_for hands each thread one fixed,
// contiguous range of independent outputs (rows, heads): which thread computes
// an output never changes how it is computed, so the thread count changes no
// bit (docs/numerics.md, "Threading"). Workers spin for a few microseconds
// after a job before sleeping, so back-to-back jobs hand off without a futex. No global pool: the owner (a caller's
// context object, or forward() for one call) creates and destroys it.
// ============================================================================
#include <atomic>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace oracle {

class ThreadPool {
 public:
  explicit ThreadPool(int n_threads);  // n_threads >= 1 (1: everything runs inline)
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }
  // Calls fn(begin, end) on disjoint ranges covering [0, n): thread t gets
  // [n*t/T, n*(t+1)/T). Returns when all ranges are done; rethrows the first
  // exception (lowest thread index) a range threw.
  void parallel_for(int n, const std::function<void(int begin, int end)>& fn);
  // Calls fn(begin, end) once for each chunk [i, min(i + chunk, n)), i = 0, chunk,
  // 2 * chunk, ...; the threads claim chunks in turn as they finish them, so a
  // thread that is slower or descheduled holds up no other. Which thread runs a
  // chunk varies from call to call: only for outputs that depend on their index
  // alone (prefill matmul rows, attention rows). Exceptions as parallel_for.
  void parallel_chunks(int n, int chunk, const std::function<void(int begin, int end)>& fn);

 private:
  void worker(int index);
  void run_range(int index);

  int n_threads_;
  std::vector<std::thread> workers_;              // (n_threads - 1)
  std::vector<std::exception_ptr> errors_;        // (n_threads)
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(int, int)>* job_ = nullptr;
  int job_n_ = 0;
  // Hand-off: a new job bumps generation_; each worker decrements pending_
  // when its range is done. Both sides spin briefly (a decode step issues
  // ~5 short jobs per layer) and then sleep on the condition variables, so
  // an idle pool costs no CPU. Synchronisation only: no result depends on it.
  std::atomic<long> generation_{0};
  std::atomic<int> pending_{0};
  bool stop_ = false;
};

}  // namespace oracle
