// KV cache, contiguous and paged: see kv_cache.h and docs/kv-cache.md.
#include "reference/compute/kv_cache.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "faults/fault.h"
#include "reference/compute/kv_blocks.h"
#include "base/errors.h"
#include "base/huge_pages.h"
#include "base/memory_budget.h"

namespace oracle {

// ============================================================================
// State
// ============================================================================
struct KvCache::Impl {
  Config cfg;
  KvCacheOptions opt;
  int kv_dim = 0;  // n_kv_heads * head_dim
  int bs = 0;      // tokens per block (paged)

  // contiguous: per sequence the token ids and a layer-major buffer that grows
  // with the request. A layer's rows are consecutive, so a decode step reads
  // each layer's K (and V) as one run (position-major, each row sat a whole
  // token's n_layers rows from the next: slower to stream, a page per row).
  struct SeqRows {
    FloatBuffer k, v;  // (n_layers, cap, kv_dim); rows at positions >= length unset
    int cap = 0;                    // positions per layer
  };
  std::vector<std::vector<int>> tokens;  // (max_seqs, length) token ids
  std::vector<SeqRows> seqs;             // (max_seqs)

  // paged: the shared block manager over host blocks
  std::unique_ptr<HostKvStorage> storage;
  std::unique_ptr<KvBlocks> blocks;

  long row_at(int seq, int layer, int pos) const { return ((long)layer * seqs[seq].cap + pos) * kv_dim; }
  SeqRows copy_rows(const SeqRows& from, int cap, int len) const;
  void grow_contiguous(int seq, int pos);
  void check_seq(int seq) const;
};

void KvCache::Impl::check_seq(int seq) const {
  if (seq >= 0 && seq < opt.max_seqs) return;  // hot (every K/V row pointer): no message built
  throw InputError("kv_cache", "seq",
                   "sequence id " + std::to_string(seq) + " outside [0, " + std::to_string(opt.max_seqs) + ")");
}

// Admission control (base/memory_budget.h): K and V of `positions` tokens, checked
// against the memory this process can still get before anything is allocated.
static void admit_kv(const Config& c, uint64_t positions, const char* what) {
  const uint64_t kv_dim = (uint64_t)c.n_kv_heads * (uint64_t)c.head_dim;
  const uint64_t bytes = mul_sat(mul_sat(mul_sat(2 * (uint64_t)c.n_layers, positions), kv_dim), sizeof(float));
  admit_allocation(bytes, "kv_cache", "context_length",
                   std::string(what) + " (2 x " + std::to_string(c.n_layers) + " layers x " +
                       std::to_string(positions) + " positions x " + std::to_string(kv_dim) + " floats)",
                   "lower --context (the context length is " + std::to_string(c.seq_len) + ")");
}

// Rows [0, len) of every layer of `from` in new buffers of `cap` positions a
// layer (the rest left unset: never read before they are stored).
KvCache::Impl::SeqRows KvCache::Impl::copy_rows(const SeqRows& from, int cap, int len) const {
  SeqRows to;
  const size_t n = (size_t)cfg.n_layers * (size_t)cap * (size_t)kv_dim;
  to.k = alloc_floats(n);  // from 2 MiB on, on huge pages (base/huge_pages.h)
  to.v = alloc_floats(n);
  to.cap = cap;
  len = std::min(len, from.cap);  // a sequence never holds more rows than its buffer
  for (int l = 0; l < cfg.n_layers && len > 0; l++) {
    const size_t src = (size_t)l * from.cap * kv_dim, dst = (size_t)l * cap * kv_dim;
    const size_t bytes = sizeof(float) * len * kv_dim;
    std::memcpy(&to.k[dst], &from.k[src], bytes);
    std::memcpy(&to.v[dst], &from.v[src], bytes);
  }
  return to;
}

// Room for position `pos` of a contiguous sequence: capacity doubles from
// reserve_tokens (default 16), capped at the context length. A reallocation
// needs the new buffer while the old one still lives: admitted whole. Pages
// are touched as rows are stored, so resident memory follows the length.
void KvCache::Impl::grow_contiguous(int seq, int pos) {
  SeqRows& s = seqs[seq];
  if (pos < s.cap) return;
  const int first = opt.reserve_tokens > 0 ? opt.reserve_tokens : 16;
  const int cap = std::min(cfg.seq_len, std::max({pos + 1, 2 * s.cap, first}));
  if (s.cap > 0) admit_kv(cfg, (uint64_t)cap, "growing the KV cache of one sequence");
  s = copy_rows(s, cap, pos);  // rows [0, pos) are the sequence so far
}

// ============================================================================
// Public API
// ============================================================================
KvCache::KvCache(const Config& config, const KvCacheOptions& options)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.cfg = config;
  m.opt = options;
  require_input(options.max_seqs >= 1, "kv_cache", "max_seqs", "must be >= 1");
  require_input(!options.paged || options.block_size >= 1, "kv_cache", "block_size",
                "must be >= 1");
  m.kv_dim = config.n_kv_heads * config.head_dim;
  if (!options.paged) {
    // What the request says it needs (reserve_tokens), else the whole context;
    // growth past it is admitted step by step in grow_contiguous.
    const int admitted = options.reserve_tokens > 0 ? std::min(options.reserve_tokens, config.seq_len) : config.seq_len;
    admit_kv(config, (uint64_t)std::max(0, admitted), "the KV cache of one sequence");
    m.tokens.resize(options.max_seqs);
    m.seqs.resize(options.max_seqs);
    return;
  }
  m.bs = options.block_size;
  long max_tokens = options.max_tokens > 0 ? options.max_tokens
                                           : (long)options.max_seqs * config.seq_len;
  admit_kv(config, (uint64_t)std::max(0L, max_tokens) + (uint64_t)m.bs, "the paged KV pool");
  KvBlocksOptions bo;
  bo.max_seqs = options.max_seqs, bo.block_size = m.bs, bo.n_blocks = (int)((max_tokens + m.bs - 1) / m.bs);
  bo.seq_len = config.seq_len, bo.prefix_cache = options.prefix_cache, bo.prefix_key = options.prefix_key;
  bo.owner = "kv_cache", bo.pool_field = "max_tokens";
  m.storage = std::make_unique<HostKvStorage>(config.n_layers, m.bs, m.kv_dim);  // blocks created on demand
  m.blocks = std::make_unique<KvBlocks>(bo, m.storage.get());
}

KvCache::~KvCache() = default;
KvCache::KvCache(KvCache&&) noexcept = default;
KvCache& KvCache::operator=(KvCache&&) noexcept = default;

const KvCacheOptions& KvCache::options() const { return impl_->opt; }

int KvCache::length(int seq) const {
  if (impl_->blocks) return impl_->blocks->length(seq);
  impl_->check_seq(seq);
  return (int)impl_->tokens[seq].size();
}

std::span<const int> KvCache::tokens(int seq) const {
  if (impl_->blocks) return impl_->blocks->tokens(seq);
  impl_->check_seq(seq);
  return impl_->tokens[seq];
}

std::span<const int> KvCache::block_table(int seq) const {
  if (impl_->blocks) return impl_->blocks->block_table(seq);
  impl_->check_seq(seq);
  return {};
}

int KvCache::block_refcount(int block) const {
  require_input(impl_->blocks != nullptr, "kv_cache", "block", "block " + std::to_string(block) + " outside [0, 0)");
  return impl_->blocks->block_refcount(block);
}

int KvCache::append(int seq, int token) {
  Impl& m = *impl_;
  if (m.blocks) return m.blocks->append(seq, std::span<const int>(&token, 1));
  int pos = length(seq);
  require_input(pos < m.cfg.seq_len, "kv_cache", "position",
                "position " + std::to_string(pos) + " of sequence " + std::to_string(seq) +
                    " exceeds the context length " + std::to_string(m.cfg.seq_len));
  m.grow_contiguous(seq, pos);
  m.tokens[seq].push_back(token);
  return pos;
}

void KvCache::truncate(int seq, int n) {
  Impl& m = *impl_;
  int len = length(seq);
  require_input(n >= 0 && n <= len, "kv_cache", "n",
                "truncate to " + std::to_string(n) + " outside [0, " + std::to_string(len) + "]");
  if (fault::active(fault::Fault::KV_ROLLBACK_OFF_BY_ONE) && n < len) n += 1;  // FAULT: keeps one token too many
  if (m.blocks) return m.blocks->truncate(seq, n);
  m.tokens[seq].resize(n);
}

void KvCache::release(int seq) { truncate(seq, 0); }

void KvCache::fork(int src, int dst) {
  Impl& m = *impl_;
  if (m.blocks) return m.blocks->fork(src, dst);
  m.check_seq(src);
  require_input(length(dst) == 0 && src != dst, "kv_cache", "dst",
                "fork target " + std::to_string(dst) + " must be an empty, different sequence");
  m.tokens[dst] = m.tokens[src];
  m.seqs[dst] = m.copy_rows(m.seqs[src], m.seqs[src].cap, length(src));
}

int KvCache::attach_prefix(int seq, std::span<const int> prompt) {
  Impl& m = *impl_;
  if (m.blocks) return m.blocks->attach_prefix(seq, prompt);
  require_input(length(seq) == 0, "kv_cache", "seq",
                "attach_prefix needs an empty sequence (" + std::to_string(seq) + ")");
  return 0;
}

// ---- K/V rows -------------------------------------------------------------------
float* KvCache::key_mut(int seq, int layer, int pos) {
  return const_cast<float*>(key(seq, layer, pos));
}
float* KvCache::value_mut(int seq, int layer, int pos) {
  return const_cast<float*>(value(seq, layer, pos));
}

const float* KvCache::key(int seq, int layer, int pos) const {
  const Impl& m = *impl_;
  if (!m.blocks) return &m.seqs[seq].k[m.row_at(seq, layer, pos)];
  return m.storage->k_row(m.blocks->block_table(seq)[pos / m.bs], layer, pos % m.bs);
}
const float* KvCache::value(int seq, int layer, int pos) const {
  const Impl& m = *impl_;
  if (!m.blocks) return &m.seqs[seq].v[m.row_at(seq, layer, pos)];
  return m.storage->v_row(m.blocks->block_table(seq)[pos / m.bs], layer, pos % m.bs);
}

// ---- memory report ------------------------------------------------------------------
KvMemoryReport KvCache::memory_report() const {
  const Impl& m = *impl_;
  KvMemoryReport r;
  r.bytes_per_token = 2ull * m.cfg.n_layers * m.kv_dim * sizeof(float);
  if (!m.blocks) {  // one "block" per sequence with storage: its current capacity
    uint64_t slots = 0;
    for (const auto& t : m.tokens) r.tokens_logical += t.size();
    for (const Impl::SeqRows& s : m.seqs) {
      if (s.cap == 0) continue;
      r.blocks_used++;
      slots += (uint64_t)s.cap;
    }
    r.blocks_total = m.opt.max_seqs;
    r.blocks_free = r.blocks_total - r.blocks_used;
    r.bytes_allocated = slots * r.bytes_per_token;
    r.tokens_stored = r.tokens_logical;
    r.bytes_formula = r.tokens_stored * r.bytes_per_token;
    r.internal_fragmentation = slots ? 1.0 - (double)r.tokens_stored / (double)slots : 0.0;
    return r;
  }
  const KvBlocks& kb = *m.blocks;
  for (int s = 0; s < m.opt.max_seqs; s++) r.tokens_logical += (uint64_t)kb.length(s);
  r.blocks_total = kb.options().n_blocks;
  r.bytes_allocated = (uint64_t)kb.blocks_created() * m.bs * r.bytes_per_token;
  for (int b = 0; b < r.blocks_total; b++) {
    if (kb.block_refcount(b) == 0) continue;
    r.blocks_used++;
    r.tokens_stored += kb.filled_slots(b);
  }
  r.blocks_free = r.blocks_total - r.blocks_used;
  r.blocks_cached = kb.blocks_cached();
  r.bytes_formula = r.tokens_stored * r.bytes_per_token;
  uint64_t slots = (uint64_t)r.blocks_used * m.bs;
  r.internal_fragmentation = slots ? 1.0 - (double)r.tokens_stored / (double)slots : 0.0;
  r.prefix_hits = kb.prefix_hits();
  return r;
}

}  // namespace oracle
