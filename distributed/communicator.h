#pragma once
// ============================================================================
// A group of ranks that run one command together (docs/scale.md). Every call
// is collective: each rank of the group makes the same calls in the same
// order. Data moves as exact copies (bytes in, the same bytes out), so nothing
// a rank computes depends on how many ranks there are.
//   single process   — one rank, every call is a copy (always built)
//   in-process group — N ranks as N threads of one process (always built;
//                      `--tp N` without mpirun, and the tests)
//   MPI              — the ranks of `mpirun -np N` (built with ORACLE_ENABLE_MPI;
//                      mpi_world.cpp, or mpi_stub.cpp without MPI)
// ============================================================================
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace oracle::dist {

// What all_gather moved on this rank: calls (messages) and bytes received from
// the other ranks (its own block is not counted).
struct CommStats {
  uint64_t all_gathers = 0;
  uint64_t bytes_received = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual const char* kind() const = 0;  // "single" | "threads" | "mpi"

  // all = every rank's `mine` concatenated in rank order, on every rank;
  // counts[r] = floats from rank r (counts[rank()] == mine.size()), all has sum(counts).
  void all_gather(std::span<const float> mine, std::span<const int> counts, float* all);
  // Every rank's bytes in rank order on rank 0; the other ranks get {}.
  virtual std::vector<std::string> gather(const std::string& mine) = 0;
  // Rank 0's value on every rank.
  virtual int broadcast(int value) = 0;
  bool root() const { return rank() == 0; }
  const CommStats& stats() const { return stats_; }

 protected:
  virtual void all_gather_impl(std::span<const float> mine, std::span<const int> counts, float* all) = 0;

 private:
  CommStats stats_;
};

std::unique_ptr<Communicator> single_process();

// Runs fn(rank's communicator) for ranks 0..n-1 on n threads of this process and
// joins them. An exception on one rank ends the group: the ranks waiting in a
// collective leave with an error, and the lowest rank's first exception is rethrown.
void run_in_process(int n, const std::function<void(Communicator&)>& fn);

// True when this process was started by mpirun / srun (Open MPI, PMI or PMIx
// rank variables in the environment).
bool launched_by_mpi_launcher();
// True when this binary was built with MPI (ORACLE_ENABLE_MPI).
bool mpi_built();
// The world of this process: MPI_COMM_WORLD when launched by mpirun (MPI is
// initialised here and finalised when the communicator is destroyed; one per
// process), else single_process(). InputError("mpirun", "ORACLE_ENABLE_MPI")
// when launched with more than one rank by a binary built without MPI.
std::unique_ptr<Communicator> world();

// Implemented by mpi_world.cpp (MPI) or mpi_stub.cpp (none): the MPI world.
std::unique_ptr<Communicator> mpi_world();

}  // namespace oracle::dist
