// ThreadPool: see thread_pool.h.
#include "base/thread_pool.h"

#include <algorithm>
#include <system_error>

#include "base/errors.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define ORACLE_CPU_RELAX() _mm_pause()
#else
#define ORACLE_CPU_RELAX() std::this_thread::yield()
#endif

namespace oracle {

namespace {
constexpr int kSpins = 1 << 13;  // ~20-60 us of pause instructions before sleeping

// Spins until done() or the budget runs out; true when done() became true.
template <class Pred>
bool spin_until(Pred done) {
  for (int i = 0; i < kSpins; i++) {
    if (done()) return true;
    ORACLE_CPU_RELAX();
  }
  return done();
}
}  // namespace

// A thread the system refuses (ulimit -u, ulimit -v, cgroup pids) is reported,
// never left to deadlock or std::terminate: the started workers are stopped
// (stop_ and a new generation, which is what they wait on) and joined, then
// InputError names the option to lower.
ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads < 1 ? 1 : n_threads) {
  errors_.resize(n_threads_);
  try {
    for (int i = 1; i < n_threads_; i++) workers_.emplace_back([this, i] { worker(i); });
  } catch (const std::system_error& e) {
    const size_t started = workers_.size();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();  // joinable threads must not reach ~thread (std::terminate)
    throw InputError("--threads", "threads",
                     "cannot start thread " + std::to_string(started + 2) + " of " + std::to_string(n_threads_) +
                         ": " + e.what() + " (lower --threads)");
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    generation_.fetch_add(1, std::memory_order_release);
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
    if (!spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; })) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
    }
    seen = generation_.load(std::memory_order_acquire);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stop_) return;
    }
    run_range(index);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(mutex_);  // pairs with the waiter's predicate check
      done_.notify_one();
    }
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
    pending_.store(n_threads_ - 1, std::memory_order_relaxed);
    for (auto& e : errors_) e = nullptr;
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  run_range(0);
  if (!spin_until([&] { return pending_.load(std::memory_order_acquire) == 0; })) {
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return pending_.load(std::memory_order_acquire) == 0; });
  }
  for (auto& e : errors_)
    if (e) std::rethrow_exception(e);
}

void ThreadPool::parallel_chunks(int n, int chunk, const std::function<void(int begin, int end)>& fn) {
  if (n <= 0) return;
  if (chunk < 1) chunk = 1;
  const int n_chunks = (int)(((long)n + chunk - 1) / chunk);
  if (n_threads_ == 1 || n_chunks == 1) {
    fn(0, n);
    return;
  }
  std::atomic<int> next{0};  // the next unclaimed chunk (this call's own counter)
  parallel_for(n_threads_, [&](int, int) {
    for (int c; (c = next.fetch_add(1, std::memory_order_relaxed)) < n_chunks;)
      fn(c * chunk, (int)std::min<long>(n, ((long)c + 1) * chunk));
  });
}

}  // namespace oracle
