// candidates_compact (kernels/sampler_filter.cuh) versions 1 (Serial) and 2 (Block)
// on the host emulation vs the erase loop written from the spec: the survivors
// (keep != 0) among each row's first counts[r] candidates, in their order. Outputs
// are compared bit for bit (tolerance 0): ids and counts as exact floats (< 2^24),
// the surviving logits as they are. Shapes cover one chunk, several chunks, a
// partial last chunk and warp, rows shorter than their stride, no survivor, all
// survivors. Catches KERNEL_COMPACT_DROPS_LAST (v1) and
// KERNEL_COMPACT_BLOCK_WARP_OFFSET (v2).
#include "kernel_test_support.h"
#include "kernels/sampler_filter.cuh"

using namespace oracle;
using namespace oracle::kernels::test;
namespace k = oracle::kernels;

namespace {

struct CompactInputs {
  std::vector<int> ids, counts, keep;  // (R, stride), (R), (R, stride)
  Floats x;                            // (R, stride)
};

// Row r holds n_r = stride - r % 3 candidates with increasing ids; survival odds
// vary by row: none, all, and random at 1/8, 1/2 and 7/8.
CompactInputs compact_inputs(std::mt19937& rng, int R, int stride) {
  CompactInputs in{std::vector<int>((size_t)R * stride), std::vector<int>((size_t)R),
                   std::vector<int>((size_t)R * stride), random_floats(rng, (size_t)R * stride, 5.0f)};
  for (int r = 0; r < R; r++) {
    in.counts[(size_t)r] = std::max(0, stride - r % 3);
    const int odds[] = {0, 8, 1, 4, 7};  // eighths kept
    for (int i = 0, id = 0; i < stride; i++, id += 1 + (int)(rng() % 3)) {
      in.ids[(size_t)r * stride + i] = id;
      in.keep[(size_t)r * stride + i] = (int)(rng() % 8) < odds[r % 5] ? 1 + (int)(rng() % 3) : 0;
    }
  }
  return in;
}

// (ids, x of the first counts[r] entries of each row, then counts) as one float vector.
Floats flatten(const std::vector<int>& ids, const Floats& x, const std::vector<int>& counts, int stride) {
  Floats out;
  for (size_t r = 0; r < counts.size(); r++)
    for (int i = 0; i < counts[r]; i++) out.push_back((float)ids[r * stride + i]), out.push_back(x[r * stride + i]);
  for (int c : counts) out.push_back((float)c);
  return out;
}

OpCase compact_case(k::CompactVersion version, int R, int stride, uint32_t seed) {
  const char* name = version == k::CompactVersion::Serial ? "compact v1" : "compact v2";
  return {shape_label(name, {{"R", R}, {"stride", stride}}), seed, [=](uint32_t s) {
            std::mt19937 rng(s);
            const CompactInputs in = compact_inputs(rng, R, stride);
            std::vector<int> ids = in.ids, counts = in.counts;  // spec: erase, never reorder
            Floats x = in.x;
            for (int r = 0; r < R; r++) {
              int w = 0;
              for (int i = 0; i < in.counts[(size_t)r]; i++) {
                const size_t src = (size_t)r * stride + i;
                if (in.keep[src] != 0) ids[(size_t)r * stride + w] = in.ids[src], x[(size_t)r * stride + w++] = in.x[src];
              }
              counts[(size_t)r] = w;
            }
            OpOutputs o;
            o.spec = flatten(ids, x, counts, stride);
            Dev<int> d_ids(in.ids), d_counts(in.counts), d_keep(in.keep);
            Dev<float> d_x(in.x);
            k::candidates_compact(d_ids.get(), d_x.get(), d_counts.get(), d_keep.get(), R, stride, nullptr, version);
            o.kernel = flatten(d_ids.host(), d_x.host(), d_counts.host(), stride);
            return o;
          }};
}

}  // namespace

TEST_CASE("candidates_compact v1 and v2 equal the erase loop bit for bit", "[emu][sampler][compact]") {
  std::vector<OpCase> cases;
  uint32_t seed = 900;
  for (auto version : {k::CompactVersion::Serial, k::CompactVersion::Block})
    for (auto [R, stride] : {std::pair{5, 1}, {5, 31}, {5, 256}, {6, 257}, {5, 700}, {10, 1031}})
      cases.push_back(compact_case(version, R, stride, seed++));
  check_cases(cases);
}
