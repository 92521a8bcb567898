// candidates_compact (kernels/sampler_filter.cuh) versions 1 (Serial) and 2 (Block)
// on the host emulation vs the erase loop written from the spec, bit for bit: the
// kernel case registry's compaction cases (optimized/kernel_cases_sampler.cpp:
// one chunk, several chunks, a partial last chunk and warp, rows shorter than
// their stride, no survivor, all survivors). Catches KERNEL_COMPACT_DROPS_LAST
// (v1) and KERNEL_COMPACT_BLOCK_WARP_OFFSET (v2).
#include "kernel_test_support.h"

using namespace oracle::kernels::test;

TEST_CASE("candidates_compact v1 and v2 equal the erase loop bit for bit", "[emu][sampler][compact]") {
  check_registry_op("compact");
}
