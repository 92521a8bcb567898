// Kernel cases (optimized/kernel_cases.h): candidates_compact
// (kernels/sampler_filter.cuh) versions 1 (Serial), 2 (Block) and the Auto switch
// (Block when stride > 256) vs the erase loop written from the spec: the
// survivors (keep != 0) among each row's first counts[r] candidates, in their
// order. Outputs compared bit for bit: ids and counts as exact floats (< 2^24),
// the surviving logits as they are. Shapes cover one chunk, several chunks, a
// partial last chunk and warp, rows shorter than their stride, no survivor, all
// survivors. In place: every launch first restores the counts (a copy of R ints on
// the same stream, inside the timing), so a repeated call keeps the same survivors'
// positions and does the first call's work on the rows it compacted.
//   bytes = 4 (3 R stride + R) + 4 (2 R stride + R)   (ids, logits, keep and counts
//           read; ids, logits and counts written — at most, when every candidate survives);
//   flops = 0 (integer work).
#include <memory>

#include "kernels/sampler_filter.cuh"
#include "optimized/kernel_cases.h"

namespace oracle::optimized::cases {
namespace k = oracle::kernels;
namespace {

struct CompactInputs {
  std::vector<int> ids, counts, keep;  // (R, stride), (R), (R, stride)
  Floats x;                            // (R, stride)
};

// Row r holds n_r = stride - k % 3 candidates with increasing ids, k = r + first_kind;
// survival odds vary by row: none, all, and random at 1/8, 1/2 and 7/8 (the
// benchmark starts at 1/2: a one-row case that keeps nothing would time nothing).
CompactInputs compact_inputs(std::mt19937& rng, int R, int stride, int first_kind) {
  CompactInputs in{std::vector<int>((size_t)R * stride), std::vector<int>((size_t)R),
                   std::vector<int>((size_t)R * stride), random_floats(rng, (size_t)R * stride, 5.0f)};
  for (int r = 0; r < R; r++) {
    const int kind = r + first_kind;
    in.counts[(size_t)r] = std::max(0, stride - kind % 3);
    const int odds[] = {0, 8, 1, 4, 7};  // eighths kept
    for (int i = 0, id = 0; i < stride; i++, id += 1 + (int)(rng() % 3)) {
      in.ids[(size_t)r * stride + i] = id;
      in.keep[(size_t)r * stride + i] = (int)(rng() % 8) < odds[kind % 5] ? 1 + (int)(rng() % 3) : 0;
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

// The spec: erase, never reorder.
Floats spec_compact(const CompactInputs& in, int R, int stride) {
  std::vector<int> ids = in.ids, counts = in.counts;
  Floats x = in.x;
  for (int r = 0; r < R; r++) {
    int w = 0;
    for (int i = 0; i < in.counts[(size_t)r]; i++) {
      const size_t src = (size_t)r * stride + i;
      if (in.keep[src] != 0) ids[(size_t)r * stride + w] = in.ids[src], x[(size_t)r * stride + w++] = in.x[src];
    }
    counts[(size_t)r] = w;
  }
  return flatten(ids, x, counts, stride);
}

struct CompactState {
  k::CompactVersion version;
  int R, stride;
  CompactInputs in;
  Dev<int> ids, counts, keep, counts0;  // counts0: the input counts, restored before every call
  Dev<float> x;
  CompactState(k::CompactVersion v, int R_, int s, CompactInputs i)
      : version(v), R(R_), stride(s), in(std::move(i)), ids(in.ids), counts(in.counts), keep(in.keep),
        counts0(in.counts), x(in.x) {}
  void launch() {
    kernels::check_cuda(cudaMemcpyAsync(counts.get(), counts0.get(), (size_t)R * sizeof(int), cudaMemcpyDeviceToDevice,
                                        nullptr), "restore counts");
    k::candidates_compact(ids.get(), x.get(), counts.get(), keep.get(), R, stride, nullptr, version);
  }
  CaseResult result() {
    return {{{"spec", spec_compact(in, R, stride)}}, flatten(ids.host(), x.host(), counts.host(), stride), {}};
  }
};

const char* version_name(k::CompactVersion v) {
  return v == k::CompactVersion::Serial ? "v1" : v == k::CompactVersion::Block ? "v2" : "auto";
}

KernelCase compact_case(k::CompactVersion v, int R, int stride, uint32_t seed, int first_kind = 0) {
  const double cells = (double)R * stride;
  return {"compact",
          std::string("compact ") + version_name(v) + " R=" + std::to_string(R) + " stride=" + std::to_string(stride),
          seed, Tolerance::Exact, 4.0 * (3.0 * cells + R) + 4.0 * (2.0 * cells + R), 0.0, [=](uint32_t s) {
            std::mt19937 rng(s);
            auto st = std::make_shared<CompactState>(v, R, stride, compact_inputs(rng, R, stride, first_kind));
            return CaseRun{[st] { st->launch(); }, [st] { return st->result(); }};
          }};
}

void add_check(std::vector<KernelCase>& out) {
  uint32_t seed = 900;
  for (auto v : {k::CompactVersion::Serial, k::CompactVersion::Block})
    for (auto [R, stride] : {std::pair{5, 1}, {5, 31}, {5, 256}, {6, 257}, {5, 700}, {10, 1031}})
      out.push_back(compact_case(v, R, stride, seed++));
}

// The Auto switch against both versions, on both sides of it (one chunk of 256 and
// a long row): tiny, or a llama-3 vocabulary (128256) for 1 and 8 rows.
void add_bench(std::vector<KernelCase>& out, bool model) {
  const std::pair<int, int> shapes[] = {{model ? 8 : 2, 256}, {1, model ? 128256 : 1031}, {model ? 8 : 2, model ? 128256 : 1031}};
  uint32_t seed = 1;
  for (auto [R, stride] : shapes) {
    for (auto v : {k::CompactVersion::Auto, k::CompactVersion::Serial, k::CompactVersion::Block})
      out.push_back(compact_case(v, R, stride, seed, 3));
    seed++;
  }
}

}  // namespace

void add_sampler_cases(std::vector<KernelCase>& out, CaseSet set) {
  if (set == CaseSet::Check) add_check(out);
  else add_bench(out, set == CaseSet::BenchModel);
}

}  // namespace oracle::optimized::cases
