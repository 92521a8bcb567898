// Certification through llama.cpp's KL-divergence base file (certify_kld.h).
#include "audit/certify/certify_kld.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "base/errors.h"
#include "reference/compute/forward.h"
#include "reference/compute/kv_cache.h"
#include "base/thread_pool.h"
#include "reference/tokenizer/tokenizer.h"

namespace oracle {

namespace {

// Chunk c as the model runs it: (n_ctx) the file's tokens, the first replaced by BOS.
std::vector<int> chunk_tokens(const KldBase& b, int c, const Model& m) {
  std::vector<int> t(b.tokens.begin() + (size_t)c * b.n_ctx, b.tokens.begin() + (size_t)(c + 1) * b.n_ctx);
  if (m.vocab.tokens.empty() || m.vocab.add_bos) t[0] = m.vocab.bos_id;
  return t;
}

// Chunks one at a time, in order; fn(c, pool) splits its forward passes and rows
// over the pool (row j writes slot j only: the thread count changes no bit).
template <class Fn>
void each_chunk(int n, const CertifyOptions& o, int total, Fn fn) {
  ThreadPool pool(std::max(1, o.threads));
  for (int c = 0; c < n; c++) {
    fn(c, pool);
    if (o.progress) o.progress(c + 1, total);
  }
}

CertifyResult result_shell(const KldBase& b) {
  CertifyResult r;
  r.protocol = Protocol::LlamaCpp;
  r.ctx = (int)b.n_ctx;
  r.corpus_tokens = (int)b.tokens.size();
  r.chunks = b.n_chunk;
  return r;
}

// Scores every chunk with `score(chunk, position, next)` and summarizes in corpus order.
template <class Score>
void score_all(const KldBase& b, const CertifyOptions& o, int total, CertifyResult& r, Score score) {
  std::vector<std::vector<TokenRecord>> per_chunk(b.n_chunk);  // (n_chunk) records
  each_chunk(b.n_chunk, o, total, [&](int c, ThreadPool& pool) { per_chunk[c] = score(c, pool); });
  for (auto& recs : per_chunk) r.records.insert(r.records.end(), recs.begin(), recs.end());
  r.summary = summarize(r.records);
}

// score(j) for every scored position j in [first_scored, n_ctx - 1), split over the pool.
template <class Score>
std::vector<TokenRecord> scored_rows(const KldBase& b, ThreadPool& pool, Score score) {
  const int first = b.first_scored();
  std::vector<TokenRecord> out(std::max(0, (int)b.n_ctx - 1 - first));  // (scored) slot k: position first + k
  pool.parallel_for((int)out.size(), [&](int begin, int end) {
    for (int k = begin; k < end; k++) out[k] = score(first + k);
  });
  return out;
}

TokenRecord placed(TokenRecord t, int chunk, int pos) {
  t.chunk = chunk;
  t.pos = pos;
  return t;
}

}  // namespace

// ============================================================================
// Writing
// ============================================================================
KldBase kld_base_layout(const Model& ref, const std::string& corpus, const CertifyOptions& o) {
  require_input(!ref.vocab.tokens.empty(), ref.path, "tokenizer.ggml.tokens", "the reference embeds no tokenizer");
  require_input(o.ctx >= 4 && o.ctx <= ref.config.seq_len, "--ctx", "ctx",
                "context " + std::to_string(o.ctx) + " outside [4, " + std::to_string(ref.config.seq_len) + "]");
  Tokenizer tok(ref.vocab);
  const std::vector<int> ids = tok.encode(corpus, tok.vocab().add_bos);
  int n_chunk = (int)(ids.size() / (size_t)o.ctx);
  if (o.max_chunks > 0) n_chunk = std::min(n_chunk, o.max_chunks);
  require_input(n_chunk > 0, "corpus", "tokens",
                "the corpus has " + std::to_string(ids.size()) + " tokens, fewer than one context of " +
                    std::to_string(o.ctx));
  KldBase b;
  b.n_ctx = (uint32_t)o.ctx;
  b.n_vocab = ref.config.vocab_size;
  b.n_chunk = n_chunk;
  b.tokens.assign(ids.begin(), ids.begin() + (size_t)n_chunk * o.ctx);
  return b;
}

KldBase make_kld_base(const Model& ref, KldBase b, const CertifyOptions& o) {
  require_base_fits(b, ref, "reference");
  b.records.assign((size_t)b.n_chunk * b.scored_per_chunk() * b.nv(), 0);
  const int v = b.n_vocab;
  const int first = b.first_scored();
  each_chunk(b.n_chunk, o, b.n_chunk, [&](int c, ThreadPool& pool) {
    const std::vector<float> logits =  // (n_ctx - first, v)
        certify_chunk_logits(ref, chunk_tokens(b, c, ref), false, num::NumericsProfile::Canonical, first, &pool);
    pool.parallel_for((int)b.n_ctx - 1 - first, [&](int begin, int end) {
      for (int k = begin; k < end; k++) encode_kld_record(&logits[(size_t)k * v], v, b.record(c, first + k));
    });
  });
  return b;
}

void require_base_fits(const KldBase& b, const Model& m, const std::string& path) {
  require_input(b.n_vocab == m.config.vocab_size, path, "n_vocab",
                "the file has a vocabulary of " + std::to_string(b.n_vocab) + " tokens, " + m.path + " has " +
                    std::to_string(m.config.vocab_size));
  require_input((int)b.n_ctx <= m.config.seq_len, path, "n_ctx",
                "the file's context " + std::to_string(b.n_ctx) + " exceeds " + m.path + "'s " +
                    std::to_string(m.config.seq_len));
}

// ============================================================================
// Scoring
// ============================================================================
CertifyResult certify_against_base(const KldBase& b, const Model& cand, const CertifyOptions& o, const Model* ref) {
  require_base_fits(b, cand, "reference KLD base");
  CertifyResult r = result_shell(b);
  std::vector<std::vector<int>> chunks;
  for (int c = 0; c < b.n_chunk; c++) chunks.push_back(chunk_tokens(b, c, cand));
  const int prompts = ref ? std::min(o.greedy_prompts, b.n_chunk) : 0;
  const int v = b.n_vocab;
  const int first = b.first_scored();
  score_all(b, o, b.n_chunk + prompts, r, [&](int c, ThreadPool& pool) {
    const std::vector<float> lc =  // (n_ctx - first, v)
        certify_chunk_logits(cand, chunks[c], o.candidate_kv_int8, o.candidate_numerics, first, &pool);
    return scored_rows(b, pool, [&](int j) {
      return placed(compare_base_logits(b.record(c, j), &lc[(size_t)(j - first) * v], v, chunks[c][j + 1]), c, j);
    });
  });
  if (ref) {
    require_comparable(*ref, cand);
    r.first_divergence = greedy_first_divergences(*ref, cand, chunks, ref->vocab.bos_id, o, b.n_chunk,
                                                  b.n_chunk + prompts);
  }
  r.greedy = summarize_greedy(r.first_divergence, o.greedy_steps);
  return r;
}

CertifyResult certify_base_candidate(const Model& ref, const KldBase& b, const CertifyOptions& o) {
  require_base_fits(b, ref, "candidate KLD base");
  CertifyResult r = result_shell(b);
  const int v = b.n_vocab;
  const int first = b.first_scored();
  score_all(b, o, b.n_chunk, r, [&](int c, ThreadPool& pool) {
    const std::vector<int> tokens = chunk_tokens(b, c, ref);
    const std::vector<float> lr =  // (n_ctx - first, v)
        certify_chunk_logits(ref, tokens, false, num::NumericsProfile::Canonical, first, &pool);
    return scored_rows(b, pool, [&](int j) {
      return placed(compare_logits_base(&lr[(size_t)(j - first) * v], b.record(c, j), v, tokens[j + 1]), c, j);
    });
  });
  r.greedy = summarize_greedy(r.first_divergence, o.greedy_steps);
  return r;
}

CertifyResult certify_base_base(const KldBase& ref, const KldBase& cand, const std::string& cand_path,
                                const CertifyOptions& o) {
  const std::string ref_has = " (the reference file has ";
  require_input(cand.n_ctx == ref.n_ctx, cand_path, "n_ctx",
                "context " + std::to_string(cand.n_ctx) + ref_has + std::to_string(ref.n_ctx) + ")");
  require_input(cand.n_vocab == ref.n_vocab, cand_path, "n_vocab",
                "vocabulary " + std::to_string(cand.n_vocab) + ref_has + std::to_string(ref.n_vocab) + ")");
  require_input(cand.n_chunk == ref.n_chunk, cand_path, "n_chunk",
                std::to_string(cand.n_chunk) + " chunks" + ref_has + std::to_string(ref.n_chunk) + ")");
  require_input(cand.tokens == ref.tokens, cand_path, "tokens", "not the reference file's corpus tokens");
  CertifyResult r = result_shell(ref);
  score_all(ref, o, ref.n_chunk, r, [&](int c, ThreadPool&) {  // two files' records: nothing to split
    std::vector<TokenRecord> out;
    for (int j = ref.first_scored(); j + 1 < (int)ref.n_ctx; j++) {
      const int next = ref.tokens[(size_t)c * ref.n_ctx + (size_t)j + 1];
      out.push_back(placed(compare_base_records(ref.record(c, j), cand.record(c, j), ref.n_vocab, next), c, j));
    }
    return out;
  });
  r.greedy = summarize_greedy(r.first_divergence, o.greedy_steps);
  return r;
}

// ============================================================================
// Reference cache
// ============================================================================
namespace {

// The file has no model hash, so chunk 0 is recomputed: every log-prob above the
// 16-nat floor must agree within two quantization steps plus 1e-3 nats (llama.cpp's
// own F32 logits differ from ours by ~1e-5; another model differs by far more).
void require_first_chunk_matches(const KldBase& b, const Model& ref, const std::string& path) {
  const int v = b.n_vocab;
  const int first = b.first_scored();
  const std::vector<float> logits =  // (n_ctx - first, v)
      certify_chunk_logits(ref, chunk_tokens(b, 0, ref), false, num::NumericsProfile::Canonical, first);
  std::vector<uint16_t> mine((size_t)b.nv());
  for (int j = first; j + 1 < (int)b.n_ctx; j++) {
    encode_kld_record(&logits[(size_t)(j - first) * v], v, mine.data());
    const std::vector<float> a = decode_kld_record(mine.data(), v), f = decode_kld_record(b.record(0, j), v);
    float scale;
    std::memcpy(&scale, b.record(0, j), 4);
    for (int k = 0; k < v; k++) {
      if (a[k] < -16.0f && f[k] < -16.0f) continue;
      const double d = std::fabs((double)a[k] - (double)f[k]);
      require_input(d <= 2.0 * scale + 1e-3, path, "records",
                    "chunk 0 position " + std::to_string(j) + " token " + std::to_string(k) + ": cached log-prob " +
                        std::to_string(f[k]) + ", the reference gives " + std::to_string(a[k]) +
                        " — the cache was written by another model");
    }
  }
}

}  // namespace

KldBase reference_cache(const std::string& path, const Model& ref, const std::string& corpus,
                        const CertifyOptions& o, bool& reused) {
  KldBase want = kld_base_layout(ref, corpus, o);
  reused = std::filesystem::exists(path);
  if (!reused) {
    KldBase b = make_kld_base(ref, std::move(want), o);
    write_kld_base(path, b);
    write_kld_sidecar(path, b);
    return b;
  }
  check_kld_sidecar(path, true, "delete " + path + " and its sidecar, and re-run `oracle certify` to rebuild the cache");
  KldBase b = read_kld_base(path);
  const std::string again = " (another corpus, model or --ctx/--max-chunks; delete the file to rebuild it)";
  require_input(b.n_ctx == want.n_ctx, path, "n_ctx",
                "cached for context " + std::to_string(b.n_ctx) + ", not " + std::to_string(want.n_ctx) + again);
  require_input(b.n_vocab == want.n_vocab, path, "n_vocab", "cached for another vocabulary size" + again);
  require_input(b.n_chunk == want.n_chunk, path, "n_chunk",
                "cached " + std::to_string(b.n_chunk) + " chunks, this corpus gives " +
                    std::to_string(want.n_chunk) + again);
  require_input(b.tokens == want.tokens, path, "tokens", "the cached tokens are not this corpus's" + again);
  require_first_chunk_matches(b, ref, path);
  return b;
}

}  // namespace oracle
