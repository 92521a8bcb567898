// Certification pipeline: corpus -> chunks -> per-token records of both
// models -> summary (see certify.h and docs/certify.md).
#include "audit/certify/certify.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <functional>
#include <mutex>
#include <string>

#include "base/errors.h"
#include "base/file_io.h"
#include "base/utf8.h"
#include "reference/compute/forward.h"
#include "reference/compute/kv_cache.h"
#include "numerics/numerics.h"
#include "base/thread_pool.h"
#include "reference/tokenizer/tokenizer.h"

namespace oracle {

// ============================================================================
// Compatibility
// ============================================================================
void require_comparable(const Model& ref, const Model& cand) {
  const std::string& f = cand.path;
  require_input(cand.config.architecture == ref.config.architecture, f, "general.architecture",
                "candidate architecture '" + cand.config.architecture + "' differs from the reference's '" +
                    ref.config.architecture + "'");
  require_input(cand.config.vocab_size == ref.config.vocab_size, f, "vocab_size",
                "candidate vocabulary of " + std::to_string(cand.config.vocab_size) +
                    " tokens differs from the reference's " + std::to_string(ref.config.vocab_size));
  require_input(!ref.vocab.tokens.empty(), ref.path, "tokenizer.ggml.tokens",
                "the reference embeds no tokenizer");
  require_input(cand.vocab.tokens.empty() || cand.vocab.tokens == ref.vocab.tokens, f,
                "tokenizer.ggml.tokens", "candidate and reference tokenizers have different pieces");
  require_input(cand.vocab.tokens.empty() || (cand.vocab.bos_id == ref.vocab.bos_id &&
                                              cand.vocab.eos_id == ref.vocab.eos_id),
                f, "tokenizer.ggml.bos_token_id", "candidate and reference special token ids differ");
}

namespace {

// ============================================================================
// Chunks
// ============================================================================
}  // namespace

// llamacpp: perplexity.cpp's chunks — the first token of each chunk becomes BOS
// only when the vocabulary's add_bos is true (`if (add_bos && j == 0)`), as the
// corpus itself was tokenized with BOS only then. full: [BOS] + n - 1 tokens.
std::vector<CertifyChunk> make_certify_chunks(const std::vector<int>& corpus, int bos, bool add_bos,
                                              const CertifyOptions& o) {
  std::vector<CertifyChunk> chunks;
  const int n = o.ctx;
  if (o.protocol == Protocol::LlamaCpp) {
    for (size_t s = 0; s + n <= corpus.size(); s += n) {
      CertifyChunk c{std::vector<int>(corpus.begin() + s, corpus.begin() + s + n), n / 2};
      if (add_bos) c.tokens[0] = bos;
      chunks.push_back(std::move(c));
    }
  } else {
    for (size_t s = 0; s + (n - 1) <= corpus.size(); s += n - 1) {
      CertifyChunk c{{bos}, 0};
      c.tokens.insert(c.tokens.end(), corpus.begin() + s, corpus.begin() + s + (n - 1));
      chunks.push_back(std::move(c));
    }
  }
  if (o.max_chunks > 0 && (int)chunks.size() > o.max_chunks) chunks.resize(o.max_chunks);
  return chunks;
}

namespace {

KvCacheOptions kv_options(int ctx, bool int8) {
  KvCacheOptions k;
  k.max_seqs = 1;
  k.max_tokens = ctx;
  k.int8 = int8;
  return k;
}

// Slot k of a chunk's scored rows (counted from first_scored; lr, lc the two models'
// logits (v) of that row, lse_r = log_sum_exp_f64(lr)): the record of position
// first_scored + k. Writes slot k only.
void score_row(std::vector<TokenRecord>& out, const CertifyChunk& c, int index, const float* lr, double lse_r,
               const float* lc, int k, int v) {
  const int j = c.first_scored + k;
  if (k >= (int)out.size()) return;  // the last position predicts nothing
  out[k] = compare_logits_lse(lr, lse_r, lc, v, c.tokens[j + 1]);
  out[k].chunk = index;
  out[k].pos = j;
}

// Rows [row0, row0 + rows) of a chunk's scored rows: lr_row(i) and lc + i * v the two
// models' logits (v) of row row0 + i. Row i writes slot row0 + i only, the rows split
// over the pool, so the thread count changes no bit.
template <class LrRow>
void compare_block(std::vector<TokenRecord>& out, const CertifyChunk& c, int index, LrRow lr_row, const float* lc,
                   int row0, int rows, int v, ThreadPool& pool) {
  pool.parallel_for(rows, [&](int begin, int end) {
    for (int i = begin; i < end; i++)
      score_row(out, c, index, lr_row(i), log_sum_exp_f64(lr_row(i), v), &lc[(size_t)i * v], row0 + i, v);
  });
}

// The candidate's pass over a chunk: every scored row's logits (from `first`), in the
// candidate's numerics, split over `pool`; the caller sets the logits_sink.
ForwardOptions candidate_pass_options(const CertifyOptions& o, int first, ThreadPool& pool) {
  ForwardOptions fo;
  fo.all_logits = true;
  fo.first_logit = first;
  fo.numerics = o.candidate_numerics;
  fo.pool = &pool;
  return fo;
}

// One chunk on one pool (--threads 1, --backend): the reference's logits of the scored
// rows [first_scored, n) (its activations and KV cache freed on return), then the
// candidate's pass, whose logits arrive in blocks of 8 rows (ForwardOptions::logits_sink)
// and are compared as they come — only the reference's rows and one candidate block live.
std::vector<TokenRecord> score_chunk(const Model& ref, const Model& cand, const CertifyChunk& c, int index,
                                     const CertifyOptions& o, ThreadPool& pool) {
  const int first = c.first_scored, n = (int)c.tokens.size(), v = ref.config.vocab_size;
  const std::vector<float> lr =  // (n - first, v)
      certify_chunk_logits(ref, c.tokens, false, num::NumericsProfile::Canonical, first, &pool);
  std::vector<TokenRecord> out(std::max(0, n - 1 - first));  // (scored) predictions at positions first .. n-2
  if (o.candidate_forward) {  // --backend: every position's logits (n, v)
    const std::vector<float> lc = o.candidate_forward(cand, c.tokens, true);
    compare_block(out, c, index, [&](int i) { return &lr[(size_t)i * v]; }, &lc[(size_t)first * v], 0, n - first, v,
                  pool);
    return out;
  }
  KvCache kv(cand.config, kv_options(n, o.candidate_kv_int8));
  ForwardOptions fo = candidate_pass_options(o, first, pool);
  fo.logits_sink = [&](int row0, std::span<const float> lc) {
    compare_block(out, c, index, [&](int i) { return &lr[(size_t)(row0 + i) * v]; }, lc.data(), row0,
                  (int)(lc.size() / v), v, pool);
  };
  forward(cand, kv, 0, c.tokens, fo);
  return out;
}

// ============================================================================
// Overlapped passes (threads >= 2): the reference on one group of threads, the
// candidate on the other, no hand-off between them per op
// ============================================================================
// Threads of each group: the candidate, which also computes the statistics, gets the odd one.
int reference_threads(int threads) { return threads / 2; }

// Rows of reference logits handed over at a time (6 MiB at a vocabulary of 49 152): half a
// llamacpp chunk at ctx 128. A whole chunk (12 MiB) lets the reference run further ahead,
// measured no faster, and put certify's whole-corpus peak RSS 1.8 MB under its bound
// (docs/performance.md, "certify's two passes overlapped").
constexpr int kHandoffRows = 32;

// a() and b() at the same time on two threads; rethrows a's error first (the one-thread
// order). The pool reports a thread the system refuses as an InputError.
template <class A, class B>
void run_pair(A a, B b) {
  ThreadPool two(2);
  two.parallel_for(2, [&](int begin, int) { begin == 0 ? a() : b(); });
}

// The reference's scored rows, with each row's log_sum_exp_f64 (computed on the
// reference's thread: a third of the statistics' exps), handed to the candidate's
// thread through a ring of `slots` rows: rows are counted over the whole run (chunk s, row k: s * rows + k); the
// reference writes a block of rows once the candidate has compared the rows that held
// those slots before, the candidate reads a block once written. Both counters only
// grow. cancel() wakes both sides when the other failed.
// The candidate's side also computes the statistics of each block (share()): while the
// reference waits for slots — the candidate is behind — its thread takes rows of the
// block being compared, so the side that is ahead works instead of waiting. Each row is
// one independent record (score_row): which thread computes it changes no bit.
class RowHandoff {
 public:
  struct Cancelled {};  // the other side failed: not an error of its own
  RowHandoff(int slots, int v) : slots_(slots), v_((size_t)v), buf_((size_t)slots * v), lse_(slots) {}
  // rows [g, g + nb): block (nb, v), nb <= slots, and their log-sum-exps lse (nb)
  void put(long g, std::span<const float> block, std::span<const double> lse) {
    const long nb = (long)(block.size() / v_);
    wait([&] { return consumed_ >= g + nb - slots_; }, true);
    for (long i = 0; i < nb; i++) {
      std::memcpy(row_mut(g + i), &block[(size_t)i * v_], v_ * sizeof(float));
      lse_[(size_t)((g + i) % slots_)] = lse[i];
    }
    advance(written_, g + nb);
  }
  void get(long g, int nb) {  // waits until rows [g, g + nb) are written
    wait([&] { return written_ >= g + nb; }, false);
  }
  const float* row(long g) { return &buf_[(size_t)(g % slots_) * v_]; }  // (v)
  double lse(long g) const { return lse_[(size_t)(g % slots_)]; }
  void release(long g, int nb) { advance(consumed_, g + nb); }
  // fn(i) for i in [0, n), by the pool's threads and the reference's thread while it
  // waits in put(); returns when all are done, rethrowing the first error of a row.
  void share(int n, const std::function<void(int)>& fn, ThreadPool& pool) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      job_ = &fn, job_n_ = n, job_next_ = 0, job_done_ = 0, job_error_ = nullptr;
      cv_.notify_all();
    }
    pool.parallel_for(pool.size(), [&](int, int) {
      std::unique_lock<std::mutex> lock(mu_);
      while (job_next_ < job_n_) run_one(lock);
    });
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return job_done_ == job_n_; });
    job_ = nullptr;
    if (job_error_) std::rethrow_exception(job_error_);
  }
  void cancel() {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = true;
    cv_.notify_all();
  }

 private:
  float* row_mut(long g) { return &buf_[(size_t)(g % slots_) * v_]; }
  // Until ready() (or cancelled); `help`: runs rows of a shared job meanwhile.
  template <class Ready>
  void wait(Ready ready, bool help) {
    std::unique_lock<std::mutex> lock(mu_);
    while (!cancelled_ && !ready()) {
      if (help && job_ && job_next_ < job_n_) run_one(lock);
      else cv_.wait(lock);
    }
    if (!ready()) throw Cancelled{};
  }
  // Claims the next row of the shared job and runs it unlocked (lock held on entry and exit).
  void run_one(std::unique_lock<std::mutex>& lock) {
    const int i = job_next_++;
    const std::function<void(int)>& fn = *job_;
    lock.unlock();
    std::exception_ptr e;
    try {
      fn(i);
    } catch (...) {
      e = std::current_exception();
    }
    lock.lock();
    if (e && !job_error_) job_error_ = e;
    if (++job_done_ == job_n_) cv_.notify_all();
  }
  void advance(long& counter, long to) {
    std::lock_guard<std::mutex> lock(mu_);
    counter = to;
    cv_.notify_all();
  }
  const long slots_;
  const size_t v_;
  std::vector<float> buf_;  // (slots, v)
  std::vector<double> lse_;  // (slots)
  std::mutex mu_;
  std::condition_variable cv_;
  long written_ = 0, consumed_ = 0;
  bool cancelled_ = false;
  const std::function<void(int)>* job_ = nullptr;  // the shared job: rows [0, job_n_)
  int job_n_ = 0, job_next_ = 0, job_done_ = 0;    // rows claimed, rows finished
  std::exception_ptr job_error_;
};

// The first error in the one-thread order (reference of chunk s = 2s, candidate = 2s + 1).
struct FirstError {
  std::mutex mu;
  long order = -1;
  std::exception_ptr error;
  void record(long at, std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(mu);
    if (order < 0 || at < order) order = at, error = e;
  }
};

// Every chunk of `mine` (indices into chunks, in order; all of one length): the
// reference's pass of chunk s runs on its own thread while the candidate's pass of
// chunk s - 1 (or s) runs here, each split over its own pool; the statistics of a
// block run on the candidate's pool as its logits arrive. Each record is computed
// by the same functions on the same rows as score_chunk: no bit depends on it.
void score_chunks_overlapped(const Model& ref, const Model& cand, const std::vector<CertifyChunk>& chunks,
                             const std::vector<int>& mine, const CertifyOptions& o, int total,
                             std::vector<std::vector<TokenRecord>>& out) {
  if (mine.empty()) return;
  const int first = chunks[mine[0]].first_scored, n = (int)chunks[mine[0]].tokens.size();
  const int v = ref.config.vocab_size, rows_per_chunk = n - first;
  RowHandoff hand(std::min(rows_per_chunk, kHandoffRows), v);
  FirstError err;
  ThreadPool ref_pool(reference_threads(o.threads)), cand_pool(o.threads - reference_threads(o.threads));
  auto reference = [&] {
    long s = 0;
    try {
      for (; s < (long)mine.size(); s++) {
        KvCache kv(ref.config, kv_options(n, false));
        ForwardOptions fo;
        fo.all_logits = true;
        fo.first_logit = first;
        fo.pool = &ref_pool;
        fo.logits_sink = [&](int row0, std::span<const float> lr) {
          std::vector<double> lse(lr.size() / v);  // (rows)
          ref_pool.parallel_for((int)lse.size(), [&](int begin, int end) {
            for (int i = begin; i < end; i++) lse[i] = log_sum_exp_f64(&lr[(size_t)i * v], v);
          });
          hand.put(s * rows_per_chunk + row0, lr, lse);
        };
        forward(ref, kv, 0, chunks[mine[s]].tokens, fo);
      }
    } catch (const RowHandoff::Cancelled&) {
    } catch (...) {
      err.record(2 * s, std::current_exception());
      hand.cancel();
    }
  };
  auto candidate = [&] {
    long s = 0;
    try {
      for (; s < (long)mine.size(); s++) {
        const CertifyChunk& c = chunks[mine[s]];
        std::vector<TokenRecord>& recs = out[mine[s]];
        recs.assign(std::max(0, n - 1 - first), TokenRecord{});  // (scored) predictions at positions first .. n-2
        KvCache kv(cand.config, kv_options(n, o.candidate_kv_int8));
        ForwardOptions fo = candidate_pass_options(o, first, cand_pool);
        fo.logits_sink = [&](int row0, std::span<const float> lc) {
          const int rows = (int)(lc.size() / v);
          const long g = s * rows_per_chunk + row0;
          hand.get(g, rows);
          hand.share(
              rows,
              [&](int i) { score_row(recs, c, mine[s], hand.row(g + i), hand.lse(g + i), &lc[(size_t)i * v], row0 + i, v); },
              cand_pool);
          hand.release(g, rows);
        };
        forward(cand, kv, 0, c.tokens, fo);
        if (o.progress) o.progress((int)s + 1, total);
      }
    } catch (const RowHandoff::Cancelled&) {
    } catch (...) {
      err.record(2 * s + 1, std::current_exception());
      hand.cancel();
    }
  };
  run_pair(reference, candidate);
  if (err.error) std::rethrow_exception(err.error);
}

// ============================================================================
// Greedy agreement
// ============================================================================
// Every prompt's greedy continuation at once: prompt i prefilled on sequence i,
// then one forward_batch step for all sequences per generated token (each row
// bit-identical to that sequence decoded alone, forward.h) — the weights are
// streamed once per step for every prompt, not once per prompt.
std::vector<std::vector<int>> greedy_continuations(const Model& m, const std::vector<std::vector<int>>& prompts,
                                                   int steps, bool kv_int8, num::NumericsProfile numerics,
                                                   ThreadPool& pool) {
  const int n = (int)prompts.size(), v = m.config.vocab_size;
  std::vector<std::vector<int>> out(n);  // (prompts, steps)
  if (n == 0) return out;
  size_t longest = 0;
  for (const auto& p : prompts) longest = std::max(longest, p.size());
  KvCacheOptions ko = kv_options((int)longest + steps, kv_int8);
  ko.max_seqs = n;
  ko.reserve_tokens = (int)longest + steps;
  KvCache kv(m.config, ko);
  ForwardOptions fo;
  fo.numerics = numerics;
  fo.pool = &pool;
  std::vector<int> seqs(n), next(n);  // (prompts)
  for (int i = 0; i < n; i++) {
    seqs[i] = i;
    const std::vector<float> logits = forward(m, kv, i, prompts[i], fo);  // (1, v)
    next[i] = num::argmax_lowest(logits.data(), v);
  }
  for (int s = 0; s < steps; s++) {
    for (int i = 0; i < n; i++) out[i].push_back(next[i]);
    if (s + 1 == steps) break;
    const std::vector<float> logits = forward_batch(m, kv, seqs, next, fo);  // (n, v)
    for (int i = 0; i < n; i++) next[i] = num::argmax_lowest(&logits[(size_t)i * v], v);
  }
  return out;
}

// The same on the candidate's own forward pass: the whole sequence again each step
// (a fresh sequence in one call gives the incremental logits bit for bit).
std::vector<int> greedy_continuation_with(const CertifyOptions& o, const Model& m, std::vector<int> seq, int steps) {
  std::vector<int> out;
  for (int s = 0; s < steps; s++) {
    const std::vector<float> logits = o.candidate_forward(m, seq, false);
    out.push_back(num::argmax_lowest(logits.data(), m.config.vocab_size));
    seq.push_back(out.back());
  }
  return out;
}

int first_divergence(const std::vector<int>& a, const std::vector<int>& b, int steps) {
  int i = 0;
  while (i < steps && a[i] == b[i]) i++;
  return i;
}

// Prompt i: BOS + the first greedy_prompt_tokens tokens after chunk i's start.
std::vector<std::vector<int>> greedy_prompts(const std::vector<std::vector<int>>& chunks, int bos,
                                             const CertifyOptions& o) {
  std::vector<std::vector<int>> prompts;
  int n = std::min<int>(o.greedy_prompts, (int)chunks.size());
  for (int i = 0; i < n; i++) {
    std::vector<int> p{bos};
    p.insert(p.end(), chunks[i].begin() + 1, chunks[i].begin() + 1 + o.greedy_prompt_tokens);
    prompts.push_back(std::move(p));
  }
  return prompts;
}

// ============================================================================
// Parallel driver: work item i writes slot i only; one mutex guards progress.
// ============================================================================
template <class Fn>
void for_each_parallel(int n, int threads, const CertifyOptions& o, int progress_base, int total,
                       Fn fn) {
  std::mutex mu;
  int done = progress_base;
  ThreadPool pool(std::max(1, std::min(threads, n)));
  pool.parallel_for(n, [&](int begin, int end) {
    for (int i = begin; i < end; i++) {
      fn(i);
      std::lock_guard<std::mutex> lock(mu);
      if (o.progress) o.progress(++done, total);
    }
  });
}

// Prompts per greedy group: the KV caches of 8 prompts of each model at a time.
constexpr int kGreedyGroup = 8;

// --threads >= 2: every group's two passes (the reference's continuations of its
// prompts, the candidate's) are jobs, the reference's first (they take about twice
// as long: F32 against Q4_1); the two groups of threads claim the next job as they
// finish one, so neither waits for the other's model (before: the candidate's side
// idled while each group's reference pass ran on). Two jobs run at a time, as
// before: the memory of one reference and one candidate group, or of two groups of
// one model (the KV caches have the same shape). Each job computes its sequences
// exactly as at one thread (which threads run it changes no bit); the divergences are
// compared once both passes of a group are done. A failed job stops the claiming; the
// error of the one-thread order (group g's reference before its candidate) is thrown.
std::vector<int> greedy_jobs_overlapped(const Model& ref, const Model& cand,
                                        const std::vector<std::vector<int>>& prompts, const CertifyOptions& o,
                                        int progress_base, int total) {
  const int n = (int)prompts.size(), groups = (n + kGreedyGroup - 1) / kGreedyGroup;
  std::vector<std::vector<std::vector<int>>> a(groups), b(groups);  // (groups, batch, steps) each model's
  std::vector<int> out(n, 0), passes_done(groups, 0);               // (prompts), (groups)
  std::mutex mu;  // guards next, stop, passes_done, done, the progress calls
  int next = 0, done = progress_base;
  bool stop = false;
  FirstError err;
  auto job = [&](int j, ThreadPool& pool) {  // j < groups: the reference's pass of group j, else the candidate's
    const bool is_ref = j < groups;
    const int g = is_ref ? j : j - groups, g0 = g * kGreedyGroup, m = std::min(n - g0, kGreedyGroup);
    const std::vector<std::vector<int>> batch(prompts.begin() + g0, prompts.begin() + g0 + m);
    if (is_ref) a[g] = greedy_continuations(ref, batch, o.greedy_steps, false, num::NumericsProfile::Canonical, pool);
    else b[g] = greedy_continuations(cand, batch, o.greedy_steps, o.candidate_kv_int8, o.candidate_numerics, pool);
    std::lock_guard<std::mutex> lock(mu);
    if (++passes_done[g] < 2) return;
    for (int i = 0; i < m; i++) {
      out[g0 + i] = first_divergence(a[g][i], b[g][i], o.greedy_steps);
      if (o.progress) o.progress(++done, total);
    }
  };
  auto side = [&](ThreadPool& pool) {
    for (;;) {
      int j;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (stop || next == 2 * groups) return;
        j = next++;
      }
      try {
        job(j, pool);
      } catch (...) {
        const int g = j < groups ? j : j - groups;
        err.record(2 * g + (j < groups ? 0 : 1), std::current_exception());
        std::lock_guard<std::mutex> lock(mu);
        stop = true;
      }
    }
  };
  ThreadPool ref_pool(reference_threads(o.threads)), cand_pool(o.threads - reference_threads(o.threads));
  run_pair([&] { side(ref_pool); }, [&] { side(cand_pool); });
  if (err.error) std::rethrow_exception(err.error);
  return out;
}

// First divergence of each of `prompts`, in groups of at most 8 (the KV cache of 8
// prompts at a time): the reference's continuations of a group in one batch and the
// candidate's — one after the other on one pool at --threads 1; at 2 and more the
// groups' passes are jobs that the two groups of threads claim in turn
// (greedy_jobs_overlapped); the candidate's own forward pass (--backend) runs prompt
// by prompt after the reference's.
std::vector<int> first_divergences(const Model& ref, const Model& cand, const std::vector<std::vector<int>>& prompts,
                                   const CertifyOptions& o, int progress_base, int total) {
  const int n = (int)prompts.size();
  std::vector<int> out(n, 0);  // (prompts)
  if (n == 0) return out;
  if (o.threads >= 2 && !o.candidate_forward) return greedy_jobs_overlapped(ref, cand, prompts, o, progress_base, total);
  ThreadPool pool(std::max(1, o.threads));
  for (int g0 = 0; g0 < n; g0 += kGreedyGroup) {
    const std::vector<std::vector<int>> batch(prompts.begin() + g0, prompts.begin() + std::min(n, g0 + kGreedyGroup));
    const int m = (int)batch.size();
    const std::vector<std::vector<int>> a =  // (batch, steps)
        greedy_continuations(ref, batch, o.greedy_steps, false, num::NumericsProfile::Canonical, pool);
    std::vector<std::vector<int>> b(m);  // (batch, steps)
    if (o.candidate_forward)
      for_each_parallel(m, o.threads, CertifyOptions{}, 0, 0,
                        [&](int i) { b[i] = greedy_continuation_with(o, cand, batch[i], o.greedy_steps); });
    else
      b = greedy_continuations(cand, batch, o.greedy_steps, o.candidate_kv_int8, o.candidate_numerics, pool);
    for (int i = 0; i < m; i++) {
      out[g0 + i] = first_divergence(a[i], b[i], o.greedy_steps);
      if (o.progress) o.progress(progress_base + g0 + i + 1, total);
    }
  }
  return out;
}

}  // namespace

std::vector<float> certify_chunk_logits(const Model& m, const std::vector<int>& tokens, bool kv_int8,
                                        num::NumericsProfile numerics, int first_row, ThreadPool* pool) {
  KvCache kv(m.config, kv_options((int)tokens.size(), kv_int8));
  ForwardOptions fo;
  fo.all_logits = true;
  fo.first_logit = first_row;
  fo.numerics = numerics;
  fo.pool = pool;
  return forward(m, kv, 0, tokens, fo);
}

std::string read_corpus(const std::string& path) {
  std::string text = read_regular_file(path, "corpus");
  require_utf8(text, path, "corpus");
  return text;
}

const char* protocol_name(Protocol p) { return p == Protocol::LlamaCpp ? "llamacpp" : "full"; }

Protocol parse_protocol(const std::string& name) {
  if (name == "full") return Protocol::Full;
  if (name == "llamacpp") return Protocol::LlamaCpp;
  throw InputError("--protocol", "protocol", "unknown protocol '" + name + "' (full or llamacpp)");
}

void check_certify_options(const Model& ref, const Model& cand, const CertifyOptions& o) {
  require_input(o.ctx >= 4, "--ctx", "ctx", "context must be at least 4 tokens");
  int limit = std::min(ref.config.seq_len, cand.config.seq_len);
  require_input(o.ctx <= limit, "--ctx", "ctx",
                "context " + std::to_string(o.ctx) + " exceeds the models' context length " +
                    std::to_string(limit));
  require_input(o.threads >= 1, "--threads", "threads", "must be >= 1, got " + std::to_string(o.threads));
  require_input(o.max_chunks >= 0, "--max-chunks", "max_chunks", "must be >= 0 (0: all), got " + std::to_string(o.max_chunks));
  require_input(o.greedy_prompts >= 0, "--greedy-prompts", "greedy_prompts",
                "must be >= 0 (0: skip), got " + std::to_string(o.greedy_prompts));
  require_input(o.greedy_prompt_tokens >= 0, "--greedy-prompt-tokens", "greedy_prompt_tokens",
                "must be >= 0, got " + std::to_string(o.greedy_prompt_tokens));
  require_input(o.greedy_steps >= 1, "--greedy-steps", "greedy_steps",
                "must be >= 1, got " + std::to_string(o.greedy_steps));
  require_input(o.greedy_prompts == 0 || (int64_t)o.greedy_prompt_tokens + 1 + o.greedy_steps <= limit,
                "--greedy-steps", "greedy_steps", "prompt + steps exceed the context length");
  require_input(o.greedy_prompt_tokens < o.ctx, "--greedy-prompt-tokens", "greedy_prompt_tokens",
                "prompt must be shorter than one chunk");
}

std::vector<int> greedy_first_divergences(const Model& ref, const Model& cand,
                                          const std::vector<std::vector<int>>& chunk_tokens, int bos,
                                          const CertifyOptions& o, int progress_base, int total) {
  return first_divergences(ref, cand, greedy_prompts(chunk_tokens, bos, o), o, progress_base, total);
}

// ============================================================================
// certify
// ============================================================================
CertifyItems certify_items(const Model& ref, const Model& cand, const std::string& corpus, const CertifyOptions& o,
                           const std::function<bool(int)>& mine) {
  require_comparable(ref, cand);
  check_certify_options(ref, cand, o);
  const bool llamacpp = o.protocol == Protocol::LlamaCpp;
  int bos = 0;
  std::vector<int> ids;
  {  // the tokenizer's tables are freed before the scoring
    Tokenizer tok(ref.vocab);
    ids = tok.encode(corpus, llamacpp && tok.vocab().add_bos);
    bos = tok.bos_id();
  }
  std::vector<CertifyChunk> chunks = make_certify_chunks(ids, bos, ref.vocab.add_bos, o);
  require_input(!chunks.empty(), "corpus", "tokens",
                "the corpus has " + std::to_string(ids.size()) + " tokens, fewer than one context of " +
                    std::to_string(o.ctx));
  CertifyItems it;
  it.head.protocol = o.protocol;
  it.head.ctx = o.ctx;
  it.head.corpus_tokens = (int)ids.size();
  it.head.chunks = (int)chunks.size();
  std::vector<std::vector<int>> chunk_tokens;
  for (const CertifyChunk& c : chunks) chunk_tokens.push_back(c.tokens);
  const int n_chunks = it.head.chunks, n_prompts = std::min<int>(o.greedy_prompts, n_chunks);
  it.chunks.resize(chunks.size());  // (chunks) records; empty when not this worker's
  std::vector<int> my_chunks, my_prompts;
  for (int i = 0; i < n_chunks + n_prompts; i++)
    if (!mine || mine(i)) (i < n_chunks ? my_chunks : my_prompts).push_back(i);
  const int total = (int)(my_chunks.size() + my_prompts.size());
  if (o.threads >= 2 && !o.candidate_forward) {
    score_chunks_overlapped(ref, cand, chunks, my_chunks, o, total, it.chunks);
  } else {
    ThreadPool pool(std::max(1, o.threads));  // one chunk at a time, its rows and heads split over the pool
    int done = 0;
    for (int i : my_chunks) {
      it.chunks[i] = score_chunk(ref, cand, chunks[i], i, o, pool);
      if (o.progress) o.progress(++done, total);
    }
  }
  const std::vector<std::vector<int>> prompts = greedy_prompts(chunk_tokens, bos, o);
  it.first_divergence.assign(prompts.size(), -1);  // (prompts) -1 when not this worker's
  std::vector<std::vector<int>> mine_prompts;  // (my prompts) this worker's, in order
  for (int i : my_prompts) mine_prompts.push_back(prompts[i - n_chunks]);
  const std::vector<int> fd = first_divergences(ref, cand, mine_prompts, o, (int)my_chunks.size(), total);
  for (size_t k = 0; k < my_prompts.size(); k++) it.first_divergence[my_prompts[k] - n_chunks] = fd[k];
  return it;
}

CertifyResult certify_reduce(CertifyItems items, const CertifyOptions& o) {
  CertifyResult r = std::move(items.head);
  for (auto& recs : items.chunks) r.records.insert(r.records.end(), recs.begin(), recs.end());
  r.summary = summarize(r.records);
  r.first_divergence = std::move(items.first_divergence);
  r.greedy = summarize_greedy(r.first_divergence, o.greedy_steps);
  return r;
}

CertifyResult certify(const Model& ref, const Model& cand, const std::string& corpus,
                      const CertifyOptions& o) {
  return certify_reduce(certify_items(ref, cand, corpus, o, nullptr), o);
}

}  // namespace oracle
