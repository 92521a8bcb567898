#pragma once
// Tensor parallelism over a Communicator (docs/scale.md): the forward pass's
// TensorSplit (reference/compute/tensor_split.h) with its all-gather bound to
// the group. The reference computes; this layer only moves bytes.
#include "distributed/communicator.h"
#include "reference/compute/tensor_split.h"

namespace oracle::dist {

// rank/ranks of `comm`; all_gather = comm.all_gather (exact copies).
TensorSplit tensor_split(Communicator& comm);

}  // namespace oracle::dist
