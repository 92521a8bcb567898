// KV cache, contiguous and paged: see kv_cache.h and docs/kv-cache.md.
#include "reference/compute/kv_cache.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <utility>

#include "faults/fault.h"
#include "base/errors.h"
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
  std::vector<std::vector<int>> tokens;  // (max_seqs, length) token ids

  // contiguous: per sequence a position-major buffer that grows with the request
  std::vector<std::vector<float>> k_seq, v_seq;  // (max_seqs) x (length, n_layers, kv_dim)

  // paged: blocks are created on first use, up to n_blocks
  int n_blocks = 0;
  std::vector<std::vector<float>> k_pool, v_pool;  // (blocks created) x (n_layers, bs, kv_dim)
  std::vector<int> refcount;                    // (n_blocks)
  std::vector<int> free_list;                   // stack of unreferenced, uncached blocks
  std::vector<int> evictable;                   // cached blocks with refcount 0, oldest first
  std::vector<std::vector<int>> tables;         // (max_seqs, n_blocks_of_seq) block ids
  using PrefixKey = std::pair<uint64_t, std::vector<int>>;  // (prefix_key, all token ids)
  std::map<PrefixKey, int> prefix_map;          // full-block prefixes -> block
  std::vector<PrefixKey> block_key;             // (n_blocks) key of a cached block
  std::vector<char> cached;                     // (n_blocks) block is in prefix_map
  int prefix_hits = 0;

  long row(int layer, int slot) const { return ((long)layer * bs + slot) * kv_dim; }
  long pos_row(int layer, int pos) const { return ((long)pos * cfg.n_layers + layer) * kv_dim; }
  void grow_contiguous(int seq, int pos);
  void check_seq(int seq) const;
  int alloc_block();
  void ref_drop(int block);
  void uncache(int block);
  void cache_block(int seq, int block);
  void copy_on_write(int seq, int bi, int filled);
  int filled_slots(int block) const;
};

void KvCache::Impl::check_seq(int seq) const {
  require_input(seq >= 0 && seq < opt.max_seqs, "kv_cache", "seq",
                "sequence id " + std::to_string(seq) + " outside [0, " +
                    std::to_string(opt.max_seqs) + ")");
}

// ============================================================================
// Paged pool: allocation, reference counts, prefix cache, copy-on-write
// ============================================================================
int KvCache::Impl::alloc_block() {
  int b;
  if (!free_list.empty()) {
    b = free_list.back();
    free_list.pop_back();
  } else if ((int)k_pool.size() < n_blocks) {  // create a new block
    b = (int)k_pool.size();
    k_pool.emplace_back((size_t)cfg.n_layers * bs * kv_dim, 0.0f);
    v_pool.emplace_back(k_pool.back().size(), 0.0f);
  } else if (!evictable.empty()) {
    b = evictable.front();  // least recently released cached block
    evictable.erase(evictable.begin());
    uncache(b);
  } else {
    throw InputError("kv_cache", "max_tokens",
                     "KV block pool exhausted (" + std::to_string(n_blocks) + " blocks of " +
                         std::to_string(bs) + " tokens)");
  }
  refcount[b] = 1;
  return b;
}

void KvCache::Impl::ref_drop(int block) {
  if (--refcount[block] > 0) return;
  if (cached[block]) evictable.push_back(block);
  else free_list.push_back(block);
}

void KvCache::Impl::uncache(int block) {
  prefix_map.erase(block_key[block]);
  block_key[block] = {};
  cached[block] = 0;
}

// Called when `block` (the last of `seq`) has just become full.
void KvCache::Impl::cache_block(int seq, int block) {
  if (!opt.prefix_cache || cached[block]) return;
  PrefixKey key{opt.prefix_key, tokens[seq]};
  if (prefix_map.count(key)) return;  // same prefix already cached elsewhere
  prefix_map.emplace(key, block);
  block_key[block] = std::move(key);
  cached[block] = 1;
}

// Gives `seq` a private copy of its block bi, of which `filled` slots are used.
void KvCache::Impl::copy_on_write(int seq, int bi, int filled) {
  int old = tables[seq][bi];
  if (fault::active(fault::Fault::PAGED_COW_SHARED_WRITE)) return;  // FAULT: keeps writing into the shared block
  int b = alloc_block();
  for (int l = 0; l < cfg.n_layers; l++) {
    std::memcpy(&k_pool[b][row(l, 0)], &k_pool[old][row(l, 0)], sizeof(float) * filled * kv_dim);
    std::memcpy(&v_pool[b][row(l, 0)], &v_pool[old][row(l, 0)], sizeof(float) * filled * kv_dim);
  }
  tables[seq][bi] = b;
  ref_drop(old);
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

// Room for position `pos` of a contiguous sequence: capacity doubles from
// reserve_tokens (default 16), capped at the context length.
// A reallocation needs the new buffer while the old one still lives: admitted whole.
void KvCache::Impl::grow_contiguous(int seq, int pos) {
  const size_t stride = (size_t)cfg.n_layers * kv_dim, need = (size_t)(pos + 1) * stride;
  std::vector<float>&k = k_seq[seq], &v = v_seq[seq];
  if (k.capacity() < need) {
    size_t have = k.capacity() / stride, first = opt.reserve_tokens > 0 ? opt.reserve_tokens : 16;
    size_t tokens = std::min<size_t>(cfg.seq_len, std::max({(size_t)pos + 1, 2 * have, first}));
    if (have > 0) admit_kv(cfg, (uint64_t)tokens, "growing the KV cache of one sequence");
    k.reserve(tokens * stride);
    v.reserve(tokens * stride);
  }
  k.resize(need, 0.0f);
  v.resize(need, 0.0f);
}

// Slots of `block` holding K/V some sequence can read (max over its users).
int KvCache::Impl::filled_slots(int block) const {
  int filled = 0;
  for (size_t s = 0; s < tables.size(); s++)
    for (size_t bi = 0; bi < tables[s].size(); bi++)
      if (tables[s][bi] == block)
        filled = std::max(filled, std::min(bs, (int)tokens[s].size() - (int)bi * bs));
  return filled;
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
  m.tokens.resize(options.max_seqs);
  if (!options.paged) {
    // What the request says it needs (reserve_tokens), else the whole context;
    // growth past it is admitted step by step in grow_contiguous.
    const int admitted = options.reserve_tokens > 0 ? std::min(options.reserve_tokens, config.seq_len) : config.seq_len;
    admit_kv(config, (uint64_t)std::max(0, admitted), "the KV cache of one sequence");
    m.k_seq.resize(options.max_seqs);
    m.v_seq.resize(options.max_seqs);
    return;
  }
  m.bs = options.block_size;
  long max_tokens = options.max_tokens > 0 ? options.max_tokens
                                           : (long)options.max_seqs * config.seq_len;
  admit_kv(config, (uint64_t)std::max(0L, max_tokens) + (uint64_t)m.bs, "the paged KV pool");
  m.n_blocks = (int)((max_tokens + m.bs - 1) / m.bs);
  m.refcount.assign(m.n_blocks, 0);
  m.cached.assign(m.n_blocks, 0);
  m.block_key.resize(m.n_blocks);
  m.tables.resize(options.max_seqs);  // blocks 0, 1, 2, ... are created on demand
}

KvCache::~KvCache() = default;
KvCache::KvCache(KvCache&&) noexcept = default;
KvCache& KvCache::operator=(KvCache&&) noexcept = default;

const KvCacheOptions& KvCache::options() const { return impl_->opt; }

int KvCache::length(int seq) const {
  impl_->check_seq(seq);
  return (int)impl_->tokens[seq].size();
}

std::span<const int> KvCache::tokens(int seq) const {
  impl_->check_seq(seq);
  return impl_->tokens[seq];
}

std::span<const int> KvCache::block_table(int seq) const {
  impl_->check_seq(seq);
  if (!impl_->opt.paged) return {};
  return impl_->tables[seq];
}

int KvCache::block_refcount(int block) const {
  const Impl& m = *impl_;
  require_input(block >= 0 && block < m.n_blocks, "kv_cache", "block",
                "block " + std::to_string(block) + " outside [0, " + std::to_string(m.n_blocks) + ")");
  return m.refcount[block];
}

int KvCache::append(int seq, int token) {
  Impl& m = *impl_;
  int pos = length(seq);
  require_input(pos < m.cfg.seq_len, "kv_cache", "position",
                "sequence " + std::to_string(seq) + " is full (context length " +
                    std::to_string(m.cfg.seq_len) + ")");
  if (!m.opt.paged) {
    m.grow_contiguous(seq, pos);
  } else if (pos % m.bs == 0) {
    m.tables[seq].push_back(m.alloc_block());
  } else {
    int b = m.tables[seq][pos / m.bs];
    const bool cached = m.cached[b] && !fault::active(fault::Fault::PREFIX_COW_SKIPS_CACHED);  // FAULT: in place
    if (m.refcount[b] > 1 || cached) m.copy_on_write(seq, pos / m.bs, pos % m.bs);
  }
  m.tokens[seq].push_back(token);
  if (m.opt.paged && pos % m.bs == m.bs - 1) m.cache_block(seq, m.tables[seq][pos / m.bs]);
  return pos;
}

void KvCache::truncate(int seq, int n) {
  Impl& m = *impl_;
  int len = length(seq);
  require_input(n >= 0 && n <= len, "kv_cache", "n",
                "truncate to " + std::to_string(n) + " outside [0, " + std::to_string(len) + "]");
  if (fault::active(fault::Fault::KV_ROLLBACK_OFF_BY_ONE) && n < len) n += 1;  // FAULT: keeps one token too many
  m.tokens[seq].resize(n);
  if (!m.opt.paged) return;
  size_t keep = (size_t)((n + m.bs - 1) / m.bs);
  if (fault::active(fault::Fault::PAGED_TRUNCATE_KEEPS_EXTRA_BLOCK)) keep = (size_t)(n / m.bs + 1);  // FAULT
  while (m.tables[seq].size() > keep) {
    m.ref_drop(m.tables[seq].back());
    m.tables[seq].pop_back();
  }
}

void KvCache::release(int seq) { truncate(seq, 0); }

void KvCache::fork(int src, int dst) {
  Impl& m = *impl_;
  require_input(length(dst) == 0 && src != dst, "kv_cache", "dst",
                "fork target " + std::to_string(dst) + " must be an empty, different sequence");
  m.tokens[dst] = m.tokens[src];
  if (m.opt.paged) {
    m.tables[dst] = m.tables[src];
    for (int b : m.tables[dst]) m.refcount[b]++;
  } else {
    m.k_seq[dst] = m.k_seq[src];
    m.v_seq[dst] = m.v_seq[src];
  }
}

int KvCache::attach_prefix(int seq, std::span<const int> prompt) {
  Impl& m = *impl_;
  require_input(length(seq) == 0, "kv_cache", "seq",
                "attach_prefix needs an empty sequence (" + std::to_string(seq) + ")");
  if (!m.opt.paged || !m.opt.prefix_cache || prompt.empty()) return 0;
  int max_blocks = ((int)prompt.size() - 1) / m.bs;
  for (int bi = 0; bi < max_blocks; bi++) {
    Impl::PrefixKey key{m.opt.prefix_key,
                        std::vector<int>(prompt.begin(), prompt.begin() + (bi + 1) * m.bs)};
    auto it = m.prefix_map.find(key);
    if (it == m.prefix_map.end()) break;
    int b = it->second;
    if (m.refcount[b]++ == 0) std::erase(m.evictable, b);
    m.tables[seq].push_back(b);
    m.prefix_hits++;
  }
  int n = (int)m.tables[seq].size() * m.bs;
  m.tokens[seq].assign(prompt.begin(), prompt.begin() + n);
  return n;
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
  if (!m.opt.paged) return &m.k_seq[seq][m.pos_row(layer, pos)];
  return &m.k_pool[m.tables[seq][pos / m.bs]][m.row(layer, pos % m.bs)];
}
const float* KvCache::value(int seq, int layer, int pos) const {
  const Impl& m = *impl_;
  if (!m.opt.paged) return &m.v_seq[seq][m.pos_row(layer, pos)];
  return &m.v_pool[m.tables[seq][pos / m.bs]][m.row(layer, pos % m.bs)];
}

// ---- memory report ------------------------------------------------------------------
KvMemoryReport KvCache::memory_report() const {
  const Impl& m = *impl_;
  KvMemoryReport r;
  r.bytes_per_token = 2ull * m.cfg.n_layers * m.kv_dim * sizeof(float);
  for (const auto& t : m.tokens) r.tokens_logical += t.size();
  if (!m.opt.paged) {  // one "block" per sequence with storage: its current capacity
    uint64_t slots = 0;
    const uint64_t stride = (uint64_t)m.cfg.n_layers * m.kv_dim;
    for (size_t s = 0; s < m.k_seq.size(); s++) {
      if (m.k_seq[s].capacity() == 0) continue;
      r.blocks_used++;
      slots += m.k_seq[s].capacity() / stride;
    }
    r.blocks_total = m.opt.max_seqs;
    r.blocks_free = r.blocks_total - r.blocks_used;
    r.bytes_allocated = slots * r.bytes_per_token;
    r.tokens_stored = r.tokens_logical;
    r.bytes_formula = r.tokens_stored * r.bytes_per_token;
    r.internal_fragmentation = slots ? 1.0 - (double)r.tokens_stored / (double)slots : 0.0;
    return r;
  }
  r.blocks_total = m.n_blocks;
  r.bytes_allocated = (uint64_t)m.k_pool.size() * m.bs * r.bytes_per_token;
  for (int b = 0; b < m.n_blocks; b++) {
    if (m.refcount[b] == 0) continue;
    r.blocks_used++;
    r.tokens_stored += m.filled_slots(b);
  }
  r.blocks_free = r.blocks_total - r.blocks_used;
  r.blocks_cached = (int)m.evictable.size();
  r.bytes_formula = r.tokens_stored * r.bytes_per_token;
  uint64_t slots = (uint64_t)r.blocks_used * m.bs;
  r.internal_fragmentation = slots ? 1.0 - (double)r.tokens_stored / (double)slots : 0.0;
  r.prefix_hits = m.prefix_hits;
  return r;
}

}  // namespace oracle
