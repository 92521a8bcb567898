// bench_decode_seq: the roofline of a decode step's (or a prefill's) matmul
// sequence (issue 30). Runs the model's matrices in the forward's order and
// grouping (per layer: q/k/v as one job list, o, gate/up as one job list, down;
// then the LM head, on the last token only) over `tokens` tokens (1: a decode
// step) through ops::matmul_jobs with the forward's thread split, on synthetic
// weights of the given stored type (every byte 0x11: finite scales, no
// subnormal products), and compares with
//   one   - the same number of rows as ONE matrix (the probe's single stream),
//   nosync - every matrix's rows split as the forward splits them, but each
//           thread runs its share of the whole token with no hand-off between
//           matrices (not a valid forward: it shows what the hand-offs cost).
// Prints G weights/s (G MAC/s when tokens > 1) and ms per call for each.
// Timing only: no value is used.
//
//   bench_decode_seq [smollm2|s15m] [Q8_0|Q4_K|F32|...|Q4_K_M] threads reps [tokens] [huge]
#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "base/stopwatch.h"
#include "base/thread_pool.h"
#include "reference/compute/qmatmul.h"
#include "reference/model/quant.h"

using namespace oracle;

namespace {

struct Shape {
  int dim, kv, hidden, layers, vocab;
};

struct Mat {
  const uint8_t* w;
  int n, k;
  DType type;
};

// The stored type of each matrix: one type for all, or llama.cpp's Q4_K_M mix
// on SmolLM2 (the oracle's /tmp/perf_q4km.gguf recipe, checked with gguf-py):
// rows of 576 are not whole 256-element blocks, so q/k/o/gate/up fall back to
// Q5_0 and attn_v to Q5_0 or, on use_more_bits layers, Q8_0; ffn_down Q4_K or,
// on those layers, Q6_K; the tied head Q8_0.
struct Types {
  DType all;
  bool q4_k_m = false;
  // kind: 0 q, 1 k, 2 v, 3 o, 4 gate, 5 up, 6 down, 7 head
  DType of(int kind, int layer, int layers) const {
    if (!q4_k_m) return all;
    const bool more = layer < layers / 8 || layer >= 7 * layers / 8 || (layer - layers / 8) % 3 == 2;
    if (kind == 7) return DType::Q8_0;
    if (kind == 2) return more ? DType::Q8_0 : DType::Q5_0;
    if (kind == 6) return more ? DType::Q6_K : DType::Q4_K;
    return DType::Q5_0;
  }
};

// Per token, in the forward's order: groups of matrices that share one input
// (one matmul_jobs call each).
std::vector<std::vector<Mat>> plan(const Shape& s, const Types& ty, const uint8_t* base) {
  std::vector<std::vector<Mat>> g;
  int64_t off = 0;
  int layer = 0;
  auto take = [&](int kind, int n, int k) {
    const DType t = ty.of(kind, layer, s.layers);
    Mat m{base + off, n, k, t};
    off += dtype_row_bytes(t, k) * n;
    return m;
  };
  for (; layer < s.layers; layer++) {
    g.push_back({take(0, s.dim, s.dim), take(1, s.kv, s.dim), take(2, s.kv, s.dim)});
    g.push_back({take(3, s.dim, s.dim)});
    g.push_back({take(4, s.hidden, s.dim), take(5, s.hidden, s.dim)});
    g.push_back({take(6, s.dim, s.hidden)});
  }
  g.push_back({take(7, s.vocab, s.dim)});
  return g;
}

int64_t plan_bytes(const Shape& s, const Types& ty) {
  int64_t b = 0;
  for (const auto& grp : plan(s, ty, nullptr))
    for (const Mat& m : grp) b += dtype_row_bytes(m.type, m.k) * m.n;
  return b;
}

// out (T, sum of the group's n): each job's (T, n) block one after another.
void run_group(const std::vector<Mat>& grp, float* out, const float* x, int T, ThreadPool* pool) {
  std::vector<ops::MatmulJob> jobs;
  int64_t o = 0;
  for (const Mat& m : grp) {
    jobs.push_back({out + o, WeightMatrix(m.type, m.w), m.n});
    o += (int64_t)m.n * T;
  }
  ops::matmul_jobs(jobs, x, T, grp[0].k, pool);
}

// Each thread's share of one group: an even split of its 4-row groups (as
// matmul_jobs's parallel_for for one token; prefill's chunks are claimed in
// turn, and an even split is what they come to when both threads keep pace).
void share(const std::vector<Mat>& grp, float* out, const float* x, int T, int th, int nth) {
  int groups = 0;
  for (const Mat& m : grp) groups += (m.n + 3) / 4;
  int g0 = (int)((long)groups * th / nth), g1 = (int)((long)groups * (th + 1) / nth), first = 0;
  const isa::Kernels& k = isa::kernels();
  int64_t o = 0;
  for (const Mat& m : grp) {
    int last = first + (m.n + 3) / 4, a = std::max(g0, first), b = std::min(g1, last);
    if (a < b)
      ops::matmul_rows(k, out + o, x, WeightMatrix(m.type, m.w), T, m.k, m.n, (a - first) * 4,
                       std::min(m.n, (b - first) * 4));
    first = last;
    o += (int64_t)m.n * T;
  }
}

// The step: every layer group over T tokens, then the head on the last token.
void step(const std::vector<std::vector<Mat>>& groups, float* out, const float* x, int T, int K, ThreadPool* pool) {
  for (size_t gi = 0; gi + 1 < groups.size(); gi++) run_group(groups[gi], out, x, T, pool);
  run_group(groups.back(), out, x + (int64_t)(T - 1) * K, 1, pool);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: bench_decode_seq smollm2|s15m TYPE|Q4_K_M threads reps [tokens] [huge]\n");
    return 2;
  }
  const std::string model = argv[1];
  const Shape s = model == "s15m" ? Shape{288, 288, 768, 6, 32000} : Shape{576, 192, 1536, 30, 49152};
  Types ty{DType::F32};
  bool known = std::string(argv[2]) == "Q4_K_M";
  if (known) ty = Types{DType::Q5_0, true};  // "one" below: the mix's main type
  for (DType c : {DType::F32, DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q4_K, DType::Q6_K})
    if (std::string(dtype_name(c)) == argv[2]) ty.all = c, known = true;
  if (!known) {
    std::fprintf(stderr, "unknown type %s\n", argv[2]);
    return 2;
  }
  const int nth = std::atoi(argv[3]), reps = std::atoi(argv[4]);
  int T = 1, arg = 5;
  if (argc > arg && std::string(argv[arg]) != "huge") T = std::max(1, std::atoi(argv[arg++]));
  const bool huge = argc > arg && std::string(argv[arg]) == "huge";
  const int64_t bytes = plan_bytes(s, ty);
  const size_t len = (size_t)(bytes + (2 << 20));
  auto* base = (uint8_t*)mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) return 1;
  if (huge) madvise(base, len, MADV_HUGEPAGE);
  std::memset(base, 0x11, len);
  const auto groups = plan(s, ty, base);
  int64_t weights = 0, head = (int64_t)s.vocab * s.dim;
  for (const auto& grp : groups)
    for (const Mat& m : grp) weights += (int64_t)m.n * m.k;
  const double macs = (double)(weights - head) * T + (double)head;  // per call: the head on one token
  std::vector<float> x((size_t)T * s.hidden, 0.5f);                // (T, K)
  std::vector<float> out((size_t)std::max(T * (s.dim + 2 * s.kv), std::max(s.vocab, T * 2 * s.hidden)));
  ThreadPool pool(nth);
  // The same rows as one stream: K = dim rows of the step's weight count (a
  // prefill's: the layers' only, over T tokens).
  const int64_t one_w = T == 1 ? weights : weights - head;
  const std::vector<Mat> one{{base, (int)(one_w / s.dim), s.dim, ty.all}};
  std::vector<float> out1((size_t)one[0].n * T);
  const int calls = T == 1 ? 16 : 1;
  auto best = [&](auto&& fn) {
    double b = 1e30;
    for (int r = 0; r < reps; r++) {
      Stopwatch sw;
      for (int c = 0; c < calls; c++) fn();
      b = std::min(b, sw.seconds() / calls);
    }
    return b;
  };
  const double t_seq = best([&] { step(groups, out.data(), x.data(), T, s.dim, &pool); });
  const double t_one = best([&] { run_group(one, out1.data(), x.data(), T, &pool); });
  const double t_nosync = best([&] {
    pool.parallel_for(nth, [&](int th, int) {
      for (size_t gi = 0; gi + 1 < groups.size(); gi++) share(groups[gi], out.data(), x.data(), T, th, nth);
      share(groups.back(), out.data(), x.data() + (int64_t)(T - 1) * s.dim, 1, th, nth);
    });
  });
  // Where the sequence's time goes: G MACs/s per group kind (qkv, o, gate/up, down, head).
  double kind_s[5] = {0, 0, 0, 0, 0}, kind_w[5] = {0, 0, 0, 0, 0};
  for (int r = 0; r < reps; r++)
    for (size_t gi = 0; gi < groups.size(); gi++) {
      const bool last = gi + 1 == groups.size();
      const int kind = last ? 4 : (int)(gi % 4), n_tok = last ? 1 : T;
      Stopwatch sw;
      run_group(groups[gi], out.data(), x.data() + (int64_t)(T - n_tok) * s.dim, n_tok, &pool);
      kind_s[kind] += sw.seconds();
      for (const Mat& m : groups[gi]) kind_w[kind] += (double)m.n * m.k * n_tok;
    }
  const double one_macs = (double)one_w * T;
  const char* unit = T == 1 ? "G weights/s" : "G MAC/s";
  std::printf("%s %s threads %d tokens %d%s: %.1f M weights (%.1f MB), %.1f M MACs a call\n", model.c_str(),
              argv[2], nth, T, huge ? " hugepage" : "", weights / 1e6, bytes / 1e6, macs / 1e6);
  std::printf("  seq    %.3f ms/call  %.2f %s  (%.1f tok/s)\n", t_seq * 1e3, macs / t_seq / 1e9, unit, T / t_seq);
  std::printf("  one    %.3f ms/call  %.2f %s\n", t_one * 1e3, one_macs / t_one / 1e9, unit);
  std::printf("  nosync %.3f ms/call  %.2f %s\n", t_nosync * 1e3, macs / t_nosync / 1e9, unit);
  const char* names[5] = {"qkv", "o", "gate/up", "down", "head"};
  for (int i = 0; i < 5; i++)
    std::printf("  %-7s %.2f %s (%.3f ms/call)\n", names[i], kind_w[i] / kind_s[i] / 1e9, unit,
                kind_s[i] / reps * 1e3);
  munmap(base, len);
  return 0;
}
