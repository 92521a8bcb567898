// Kernel cases (optimized/kernel_cases.h): attention over the paged KV cache,
// every partial-kernel version (kernels/attention.cuh: Naive = v1, Tiled = v2,
// Auto = Tiled when T > 1), prefill and decode batches, GQA, block sizes.
// The K/V are stored through kv_store while the case is prepared (not timed).
//   bytes = 4 (2 T qdim + 2 kv_dim sum_s len_s) + 8 T   (q and out; every stored K/V row
//           read once; seq and pos) — the least traffic, whatever a version re-reads;
//   flops = sum_t n_heads (pos_t + 1) 4 head_dim     (q.k and p.v per visible position).
#include <algorithm>
#include <memory>
#include <numeric>

#include "kernels/attention.cuh"
#include "optimized/kernel_cases.h"
#include "reference/compute/ops.h"

namespace oracle::optimized::cases {
namespace k = oracle::kernels;
using num::add_rn;
using num::div_rn;
using num::mul_rn;
using num::sub_rn;
namespace {

struct AttnParams {
  k::AttentionVersion version;
  int n_heads, n_kv, hd, block_size;
  std::vector<int> seq_lens;  // tokens per sequence (all stored in the cache)
  int prefill_seq;            // this sequence contributes all its positions as queries (-1: none)
};

// Spec attention for one query (head_dim out), contiguous K/V (n_pos, kv_dim), head offset `off`.
void spec_attention(float* out, const float* q, const float* K, const float* V, int n_pos, int kv_dim, int off, int hd) {
  float M = 0, L = 0;
  Floats O(hd), oc(hd);
  const float scale = num::sqrt_rn((float)hd);
  for (int j0 = 0; j0 < n_pos; j0 += 32) {
    const int j1 = std::min(n_pos, j0 + 32);
    float sc[32], m = -num::inf_f32(), s = 0;
    for (int j = j0; j < j1; j++) {
      sc[j - j0] = div_rn(num::dot_canonical(q, K + (size_t)j * kv_dim + off, hd), scale);
      if (sc[j - j0] > m) m = sc[j - j0];
    }
    std::fill(oc.begin(), oc.end(), 0.0f);
    for (int j = j0; j < j1; j++) {
      const float e = num::exp_canonical(sub_rn(sc[j - j0], m));
      s = add_rn(s, e);
      for (int d = 0; d < hd; d++) oc[d] = num::fma_rn(e, V[(size_t)j * kv_dim + off + d], oc[d]);
    }
    if (j0 == 0) {
      M = m, L = s, O = oc;
      continue;
    }
    const float Mn = m > M ? m : M, a = num::exp_canonical(sub_rn(M, Mn)), b = num::exp_canonical(sub_rn(m, Mn));
    L = num::fma_rn(s, b, mul_rn(L, a));
    for (int d = 0; d < hd; d++) O[d] = num::fma_rn(oc[d], b, mul_rn(O[d], a));
    M = Mn;
  }
  for (int d = 0; d < hd; d++) out[d] = div_rn(O[d], L);
}

// Host inputs: per-sequence contiguous K/V, then the queries: every position of
// `prefill_seq` plus the last position of every other sequence (decode).
struct AttnHost {
  AttnParams P;
  std::vector<Floats> K, V;
  std::vector<int> qseq, qpos;
  Floats Q;
  int T() const { return (int)qseq.size(); }
  int kv_dim() const { return P.n_kv * P.hd; }
  int qdim() const { return P.n_heads * P.hd; }
};

// The queries' (sequence, position) pairs: they depend on the parameters only.
void query_positions(const AttnParams& P, std::vector<int>* qseq, std::vector<int>* qpos) {
  for (int q = 0; q < (int)P.seq_lens.size(); q++)
    for (int p = (q == P.prefill_seq ? 0 : P.seq_lens[q] - 1); p < P.seq_lens[q]; p++) qseq->push_back(q), qpos->push_back(p);
}

AttnHost attn_host(const AttnParams& P, std::mt19937& rng) {
  AttnHost h{P, {}, {}, {}, {}, {}};
  for (int len : P.seq_lens) {
    h.K.push_back(random_floats(rng, (size_t)len * h.kv_dim(), 1.5f));
    h.V.push_back(random_floats(rng, (size_t)len * h.kv_dim(), 1.0f));
  }
  query_positions(P, &h.qseq, &h.qpos);
  h.Q = random_floats(rng, (size_t)h.T() * h.qdim(), 1.5f);
  return h;
}

std::vector<Expected> attn_expected(const AttnHost& h) {
  const int T = h.T(), qdim = h.qdim(), kv_dim = h.kv_dim(), hd = h.P.hd, group = h.P.n_heads / h.P.n_kv;
  Expected spec{"spec", Floats((size_t)T * qdim)}, ref{"reference", Floats((size_t)T * qdim)};
  Floats scratch(hd);
  for (int t = 0; t < T; t++) {
    const int q = h.qseq[t], n_pos = h.qpos[t] + 1;
    std::vector<const float*> kr(n_pos), vr(n_pos);
    for (int j = 0; j < n_pos; j++) kr[j] = &h.K[q][(size_t)j * kv_dim], vr[j] = &h.V[q][(size_t)j * kv_dim];
    for (int head = 0; head < h.P.n_heads; head++) {
      const int off = (head / group) * hd;
      const float* qh = &h.Q[(size_t)t * qdim + head * hd];
      spec_attention(&spec.values[(size_t)t * qdim + head * hd], qh, h.K[q].data(), h.V[q].data(), n_pos, kv_dim, off, hd);
      ops::KvRows rows{kr.data(), vr.data(), off};
      ops::attention(&ref.values[(size_t)t * qdim + head * hd], qh, rows, n_pos, hd, scratch.data());
    }
  }
  return {spec, ref};
}

int max_blocks(const AttnParams& P) {
  int m = 0;
  for (int len : P.seq_lens) m = std::max(m, (len + P.block_size - 1) / P.block_size);
  return m;
}

// Device side: logical blocks mapped to a shuffled set of pool blocks, each
// sequence stored through kv_store.
struct AttnState {
  AttnHost h;
  Dev<float> kpool, vpool;
  Dev<int> table;
  Dev<float> dq, dout, ws;
  Dev<int> dseq, dpos;
  int max_pos;
  k::PagedKvLayer kv;
  AttnState(AttnHost host, std::vector<int> pool_ids)
      : h(std::move(host)),
        kpool(pool_ids.size() * h.P.block_size * h.kv_dim()),
        vpool(pool_ids.size() * h.P.block_size * h.kv_dim()),
        table(pool_ids),
        dq(h.Q),
        dout((size_t)h.T() * h.qdim()),
        ws(k::attention_workspace_floats(h.T(), shape(), *std::max_element(h.qpos.begin(), h.qpos.end()))),
        dseq(h.qseq),
        dpos(h.qpos),
        max_pos(*std::max_element(h.qpos.begin(), h.qpos.end())),
        kv{kpool.get(), vpool.get(), table.get(), h.P.block_size, max_blocks(h.P), h.kv_dim()} {
    for (size_t q = 0; q < h.K.size(); q++) {
      const int len = h.P.seq_lens[q];
      std::vector<int> sseq(len, (int)q), spos(len);
      std::iota(spos.begin(), spos.end(), 0);
      Dev<float> dk(h.K[q]), dv(h.V[q]);
      Dev<int> ds(sseq), dp(spos);
      k::kv_store(kv, dk.get(), dv.get(), ds.get(), dp.get(), len);
      kernels::check_cuda(cudaDeviceSynchronize(), "kv_store");
    }
  }
  k::AttentionShape shape() const { return {h.P.n_heads, h.P.n_kv, h.P.hd}; }
  void launch() {
    k::attention(dout.get(), dq.get(), kv, dseq.get(), dpos.get(), h.T(), max_pos, shape(), ws.get(), nullptr, h.P.version);
  }
};

const char* version_name(k::AttentionVersion v) {
  return v == k::AttentionVersion::Naive ? "naive" : v == k::AttentionVersion::Tiled ? "tiled" : "auto";
}

KernelCase attention_case(const AttnParams& P, const std::string& kind, uint32_t seed) {
  std::vector<int> qseq, qpos;
  query_positions(P, &qseq, &qpos);
  const double T = (double)qpos.size(), kv_dim = (double)P.n_kv * P.hd;
  double bytes = 4.0 * 2.0 * T * P.n_heads * P.hd + 8.0 * T, flops = 0;
  for (int len : P.seq_lens) bytes += 4.0 * 2.0 * kv_dim * len;
  for (int p : qpos) flops += (double)P.n_heads * (p + 1) * 4.0 * P.hd;
  const std::string label = "attention " + kind + " v=" + version_name(P.version) + " heads=" +
                            std::to_string(P.n_heads) + " kv=" + std::to_string(P.n_kv) + " hd=" +
                            std::to_string(P.hd) + " block=" + std::to_string(P.block_size) + " T=" + std::to_string(qpos.size());
  return {"attention", label, seed, Tolerance::Exact, bytes, flops, [P](uint32_t s) {
            std::mt19937 r(s);
            AttnHost host = attn_host(P, r);
            std::vector<int> pool_ids(P.seq_lens.size() * max_blocks(P));
            std::iota(pool_ids.begin(), pool_ids.end(), 0);
            std::shuffle(pool_ids.begin(), pool_ids.end(), r);
            auto st = std::make_shared<AttnState>(std::move(host), std::move(pool_ids));
            return CaseRun{[st] { st->launch(); },
                           [st] { return CaseResult{attn_expected(st->h), st->dout.host(), {}}; }};
          }};
}

void add_check(std::vector<KernelCase>& out) {
  uint32_t seed = 800;
  const int heads[][3] = {{2, 2, 8}, {4, 2, 64}, {8, 2, 16}, {8, 1, 8}, {4, 4, 128}, {2, 1, 256}};  // 256: no tile
  for (auto version : {k::AttentionVersion::Naive, k::AttentionVersion::Tiled})
    for (auto& h : heads)
      for (int bs : {1, 3, 16}) {
        AttnParams p{version, h[0], h[1], h[2], bs, {1, 31, 33, 70}, (int)(seed % 4)};
        out.push_back(attention_case(p, "mixed", seed++));
      }
}

// The Auto choice measured against both versions: a prefill (one sequence, every
// position a query) and a decode batch (one query per sequence), tiny or
// llama-3-8B's heads (32 of 128, 8 KV heads) at 128 prompt tokens / 8 x 512 context.
void add_bench(std::vector<KernelCase>& out, bool model) {
  const int nh = model ? 32 : 4, nkv = model ? 8 : 2, hd = model ? 128 : 16;
  const std::vector<int> prefill = {model ? 128 : 40};
  const std::vector<int> decode = model ? std::vector<int>(8, 512) : std::vector<int>{33, 40, 17, 64};
  uint32_t seed = 1;
  for (auto v : {k::AttentionVersion::Auto, k::AttentionVersion::Naive, k::AttentionVersion::Tiled}) {
    out.push_back(attention_case({v, nh, nkv, hd, 16, prefill, 0}, "prefill", seed));
    out.push_back(attention_case({v, nh, nkv, hd, 16, decode, -1}, "decode", seed + 1));
  }
}

}  // namespace

void add_attention_cases(std::vector<KernelCase>& out, CaseSet set) {
  if (set == CaseSet::Check) add_check(out);
  else add_bench(out, set == CaseSet::BenchModel);
}

}  // namespace oracle::optimized::cases
