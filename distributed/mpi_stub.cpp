// mpi_world() of a build without MPI (ORACLE_ENABLE_MPI off or MPI not found):
// one rank is fine, more is an error naming the build option — never N copies
// each doing all the work and writing the same files.
#include <cstdlib>
#include <string>

#include "distributed/communicator.h"
#include "base/errors.h"

namespace oracle::dist {

bool mpi_built() { return false; }

std::unique_ptr<Communicator> mpi_world() {
  int n = 1;
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const char* s = std::getenv(v)) n = std::atoi(s);
  require_input(n <= 1, "mpirun", "ORACLE_ENABLE_MPI",
                "launched as one of " + std::to_string(n) +
                    " ranks, but this oracle was built without MPI (install libopenmpi-dev and reconfigure)");
  return single_process();
}

}  // namespace oracle::dist
