// CUDA graphs for the decode step (optimized/device_graph.h), on the emulated
// kernels (the replay of the recorded launch list) and, built as
// test_backend_graphs_cuda, on the GPU:
//  * graphed decode steps give logits bit-identical to eager steps and to the
//    reference forward_batch, in deterministic and fast mode, while the context
//    crosses several attention chunk bounds and the batch shape changes;
//  * one graph per shape: captured once, then replayed (counts asserted);
//  * prompt rows, speculative-style multi-row calls and traced calls run eagerly.
// Catches BACKEND_GRAPH_KEY_IGNORES_BOUND.
#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <vector>

#include "kernels/tests/kernel_test_support.h"
#include "numerics/numerics.h"
#include "optimized/backend.h"
#include "optimized/tests/device_test_support.h"
#include "reference/compute/forward.h"
#include "reference/compute/kv_cache.h"

using namespace oracle;
using oracle::kernels::test::count_bit_mismatches;

namespace {

void require_same(const std::string& label, const std::vector<float>& want, const std::vector<float>& got) {
  INFO(label);
  REQUIRE(count_bit_mismatches(label, want, got) == 0);
}

optimized::BackendOptions options(optimized::Mode mode, bool graphs) {
  optimized::BackendOptions o;
  o.mode = mode;
  o.cuda_graphs = graphs;
  return o;
}

// Greedy ids of (rows, vocab) logits.
std::vector<int> greedy(const std::vector<float>& logits, int rows, int vocab) {
  std::vector<int> ids(rows);
  for (int r = 0; r < rows; r++) ids[r] = num::argmax_lowest(&logits[(size_t)r * vocab], vocab);
  return ids;
}

// Chunk count of the attention grid of a graphed step at largest position p: the
// power of two at or above p / 32 + 1 (docs/cuda.md "CUDA graphs").
int chunk_bucket(int p) {
  int c = 1;
  while (c < p / 32 + 1) c *= 2;
  return c;
}

const std::vector<int> kPromptA = {1, 403, 407, 261, 378, 430, 290, 305, 261, 346, 284};  // 11 tokens
const std::vector<int> kPromptB = {1, 306, 311, 270, 347};                                 // 5 tokens

}  // namespace

TEST_CASE("graphs: decode steps replay per-shape graphs bit-identical to eager launches and the reference",
          "[emu][graphs]") {
  const Model m = test::stories260k();
  const int V = m.config.vocab_size;
  KvCacheOptions ko;
  ko.max_seqs = 2;
  KvCache ref(m.config, ko);
  optimized::Backend graphed(m, {2, 16, 0, false, 0}, options(optimized::Mode::Deterministic, true));
  optimized::Backend eager(m, {2, 16, 0, false, 0}, options(optimized::Mode::Deterministic, false));
  // Sequence 0 starts alone with one row (the scratch holds 1 row), then sequence 1's
  // prompt grows the scratch: the graph of the first shape must be dropped, not replayed.
  std::vector<float> want = forward(m, ref, 0, std::span<const int>(kPromptA.data(), 1));
  require_same("seq 0 token 0", want, graphed.forward(0, std::span<const int>(kPromptA.data(), 1)));
  eager.forward(0, std::span<const int>(kPromptA.data(), 1));
  CHECK(graphed.graphs().captured() == 1);
  const std::span<const int> restA(kPromptA.data() + 1, kPromptA.size() - 1);
  require_same("seq 0 prompt", forward(m, ref, 0, restA), graphed.forward(0, restA));
  require_same("seq 1 prompt", forward(m, ref, 1, kPromptB), graphed.forward(1, kPromptB));
  eager.forward(0, restA), eager.forward(1, kPromptB);
  CHECK(graphed.graphs().captured() == 1);  // prompt rows run eagerly
  const int replays0 = graphed.graphs().replays();
  std::vector<int> seqs = {0, 1}, next = {kPromptA.back(), kPromptB.back()};
  std::set<int> buckets;
  const int steps = 150;  // positions 11..160: chunk buckets 1, 2, 4, 8
  for (int step = 0; step < steps; step++) {
    want = forward_batch(m, ref, seqs, next);
    const std::string at = "decode step " + std::to_string(step);
    require_same(at + " graphed", want, graphed.forward_batch(seqs, next));
    require_same(at + " eager", want, eager.forward_batch(seqs, next));
    buckets.insert(chunk_bucket(ref.length(0) - 1));
    next = greedy(want, 2, V);
  }
  CHECK(buckets.size() == 4);
  CHECK(graphed.graphs().captured() == 1 + (int)buckets.size());  // one graph per (rows, bucket)
  CHECK(graphed.graphs().replays() == replays0 + steps);
  CHECK(eager.graphs().captured() == 0);
  // One sequence finishes: the 1-row shape at the current bucket is a new graph.
  want = forward(m, ref, 1, std::span<const int>(&next[1], 1));
  require_same("seq 1 alone", want, graphed.forward(1, std::span<const int>(&next[1], 1)));
  CHECK(graphed.graphs().captured() == 2 + (int)buckets.size());
}

TEST_CASE("graphs: fast mode replays the same launches as its eager steps", "[emu][graphs]") {
  const Model m = test::stories260k();
  const int V = m.config.vocab_size;
  optimized::Backend graphed(m, {1, 16, 0, false, 0}, options(optimized::Mode::Fast, true));
  optimized::Backend eager(m, {1, 16, 0, false, 0}, options(optimized::Mode::Fast, false));
  std::vector<float> a = graphed.forward(0, kPromptA), b = eager.forward(0, kPromptA);
  require_same("fast prompt", b, a);
  for (int step = 0; step < 40; step++) {
    const int next = greedy(b, 1, V)[0];
    a = graphed.forward(0, std::span<const int>(&next, 1));
    b = eager.forward(0, std::span<const int>(&next, 1));
    require_same("fast decode step " + std::to_string(step), b, a);
  }
  CHECK(graphed.graphs().captured() == 2);  // positions 11..50: chunk buckets 1 and 2
  CHECK(graphed.graphs().replays() == 40);
}

TEST_CASE("graphs: multi-row calls of one sequence and traced calls are not graphed", "[emu][graphs]") {
  const Model m = test::stories260k();
  Trace trace;
  int emitted = 0;
  trace.emit = [&](const std::string&, int, std::span<const float>) { emitted++; };
  optimized::BackendOptions traced = options(optimized::Mode::Deterministic, true);
  traced.trace = &trace;
  optimized::Backend dev(m, {1, 16, 0, false, 0}, traced);
  dev.forward(0, kPromptA, true);
  const int prompt_emits = emitted;
  dev.forward(0, std::span<const int>(kPromptB.data(), 1));
  CHECK(dev.graphs().captured() == 0);
  CHECK(emitted > prompt_emits);  // the decode step was traced, so it ran eagerly
  optimized::Backend plain(m, {1, 16, 0, false, 0}, options(optimized::Mode::Deterministic, true));
  plain.forward(0, kPromptA, true);   // a prompt
  plain.forward(0, kPromptB, true);   // a verify pass of k + 1 rows
  CHECK(plain.graphs().captured() == 0);
}
