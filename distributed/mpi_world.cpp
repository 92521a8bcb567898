// The MPI world (communicator.h), built with ORACLE_ENABLE_MPI: MPI_COMM_WORLD,
// initialised on construction and finalised on destruction. Only the calling
// thread talks MPI (MPI_THREAD_FUNNELED); compute threads never do.
#include <mpi.h>

#include <numeric>

#include "distributed/communicator.h"
#include "base/errors.h"

namespace oracle::dist {

namespace {

class MpiWorld final : public Communicator {
 public:
  MpiWorld() {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiWorld() override { MPI_Finalize(); }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* kind() const override { return "mpi"; }

  std::vector<std::string> gather(const std::string& mine) override {
    require_input(mine.size() < (1u << 31), "mpi", "gather", "a rank's result exceeds 2 GiB");
    int len = (int)mine.size();
    std::vector<int> lens(rank_ == 0 ? size_ : 0), displs(lens.size());
    MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    long total = 0;
    for (size_t r = 0; r < lens.size(); r++) displs[r] = (int)total, total += lens[r];
    require_input(total < (1L << 31), "mpi", "gather", "the gathered results exceed 2 GiB");
    std::string all((size_t)total, '\0');
    MPI_Gatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
    std::vector<std::string> out;
    for (size_t r = 0; r < lens.size(); r++) out.push_back(all.substr((size_t)displs[r], (size_t)lens[r]));
    return out;
  }
  int broadcast(int value) override {
    MPI_Bcast(&value, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return value;
  }

 protected:
  void all_gather_impl(std::span<const float> mine, std::span<const int> counts, float* all) override {
    std::vector<int> displs(counts.size());  // (size) offsets in rank order
    int at = 0;
    for (size_t r = 0; r < counts.size(); r++) displs[r] = at, at += counts[r];
    MPI_Allgatherv(mine.data(), (int)mine.size(), MPI_FLOAT, all, counts.data(), displs.data(), MPI_FLOAT,
                   MPI_COMM_WORLD);
  }

 private:
  int rank_ = 0, size_ = 1;
};

}  // namespace

bool mpi_built() { return true; }

std::unique_ptr<Communicator> mpi_world() { return std::make_unique<MpiWorld>(); }

}  // namespace oracle::dist
