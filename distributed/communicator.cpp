// Single-process and in-process (threads) communicators, and world()
// (communicator.h). The in-process group meets at a generation-counted
// barrier under one mutex: each collective writes its slot, waits for all,
// reads every slot, waits again.
#include "distributed/communicator.h"

#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <thread>

#include "base/errors.h"

namespace oracle::dist {

void Communicator::all_gather(std::span<const float> mine, std::span<const int> counts, float* all) {
  all_gather_impl(mine, counts, all);
  stats_.all_gathers++;
  const uint64_t total = std::accumulate(counts.begin(), counts.end(), (uint64_t)0);
  stats_.bytes_received += (total - mine.size()) * sizeof(float);
}

namespace {

class Single final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  const char* kind() const override { return "single"; }
  std::vector<std::string> gather(const std::string& mine) override { return {mine}; }
  int broadcast(int value) override { return value; }

 protected:
  void all_gather_impl(std::span<const float> mine, std::span<const int>, float* all) override {
    if (!mine.empty()) std::memcpy(all, mine.data(), mine.size_bytes());
  }
};

// What the ranks of one in-process group share.
struct Shared {
  explicit Shared(int n) : n(n), floats(n), strings(n), ints(n) {}
  const int n;
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0;
  uint64_t generation = 0;
  bool aborted = false;
  std::vector<std::span<const float>> floats;  // (n) each rank's block, valid between the two barriers
  std::vector<std::string> strings;            // (n)
  std::vector<int> ints;                       // (n)

  void barrier() {
    std::unique_lock<std::mutex> lock(mu);
    if (aborted) throw std::runtime_error("another rank of the in-process group failed");
    const uint64_t gen = generation;
    if (++arrived == n) {
      arrived = 0;
      generation++;
      cv.notify_all();
      return;
    }
    cv.wait(lock, [&] { return generation != gen || aborted; });
    if (generation == gen) throw std::runtime_error("another rank of the in-process group failed");
  }
  void abort() {
    std::lock_guard<std::mutex> lock(mu);
    aborted = true;
    cv.notify_all();
  }
};

class InProcess final : public Communicator {
 public:
  InProcess(Shared& s, int rank) : s_(s), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return s_.n; }
  const char* kind() const override { return "threads"; }
  std::vector<std::string> gather(const std::string& mine) override {
    s_.strings[rank_] = mine;
    s_.barrier();
    std::vector<std::string> out;
    if (rank_ == 0) out = s_.strings;
    s_.barrier();
    return out;
  }
  int broadcast(int value) override {
    if (rank_ == 0) s_.ints[0] = value;
    s_.barrier();
    const int v = s_.ints[0];
    s_.barrier();
    return v;
  }

 protected:
  void all_gather_impl(std::span<const float> mine, std::span<const int> counts, float* all) override {
    s_.floats[rank_] = mine;
    s_.barrier();
    size_t at = 0;
    for (int r = 0; r < s_.n; r++) {
      if (counts[r] > 0) std::memcpy(all + at, s_.floats[r].data(), sizeof(float) * (size_t)counts[r]);
      at += (size_t)counts[r];
    }
    s_.barrier();
  }

 private:
  Shared& s_;
  int rank_;
};

}  // namespace

std::unique_ptr<Communicator> single_process() { return std::make_unique<Single>(); }

void run_in_process(int n, const std::function<void(Communicator&)>& fn) {
  require_input(n >= 1, "--tp", "ranks", "must be >= 1");
  Shared shared(n);
  std::vector<std::exception_ptr> errors(n);  // (n) slot r written by rank r only
  std::vector<std::thread> threads;
  for (int r = 0; r < n; r++)
    threads.emplace_back([&, r] {
      InProcess comm(shared, r);
      try {
        fn(comm);
      } catch (...) {
        errors[r] = std::current_exception();
        shared.abort();
      }
    });
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors)  // a rank's own failure, not the "another rank failed" echoes
    if (e) {
      try {
        std::rethrow_exception(e);
      } catch (const std::runtime_error& re) {
        if (std::string(re.what()).find("in-process group failed") != std::string::npos) continue;
        throw;
      }
    }
}

bool launched_by_mpi_launcher() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(v)) return true;
  return false;
}

std::unique_ptr<Communicator> world() {
  if (!launched_by_mpi_launcher()) return single_process();
  return mpi_world();
}

}  // namespace oracle::dist
