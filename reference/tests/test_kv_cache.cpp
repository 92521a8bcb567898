// KV cache: paged equals contiguous for every block size; rollback leaves the
// state as if the removed tokens were never appended; fork shares blocks and
// copies on write; the prefix cache reuses K/V without recomputing it; the
// memory report counts shared blocks once.
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <random>

#include "bit_compare.h"
#include "forward_test_util.h"
#include "base/errors.h"
#include "base/huge_pages.h"
#include "reference/compute/kv_blocks.h"

using namespace oracle;
using namespace oracle::test;

namespace {
KvCacheOptions paged(int block_size, int max_seqs = 1, bool prefix_cache = true) {
  KvCacheOptions o;
  o.paged = true;
  o.block_size = block_size;
  o.max_seqs = max_seqs;
  o.prefix_cache = prefix_cache;
  return o;
}

std::vector<int> concat(std::span<const int> a, std::span<const int> b) {
  std::vector<int> v(a.begin(), a.end());
  v.insert(v.end(), b.begin(), b.end());
  return v;
}

// Logits rows [first, first + n) of an (N, vocab) block.
std::span<const float> rows(const std::vector<float>& all, int first, int n, int vocab) {
  return std::span<const float>(all).subspan((size_t)first * vocab, (size_t)n * vocab);
}

const Model& stories() {
  static Model m = fixture_model("stories260K/stories260K.bin");
  return m;
}
}  // namespace

TEST_CASE("paged KV equals contiguous for block sizes 1, 3, 16, 64", "[kv][paged]") {
  const Model& m = stories();
  auto toks = test_tokens(m, 90);
  auto want = run_fresh(m, toks, 90);
  for (int bs : {1, 3, 16, 64})
    for (int chunk : {1, 7, 90}) {
      INFO("block size " << bs << ", chunk " << chunk);
      CHECK(first_bit_mismatch(run_fresh(m, toks, chunk, paged(bs)), want) == "");
    }
}

TEST_CASE("memory report: bytes per token and fragmentation", "[kv][report]") {
  const Model& m = stories();
  const Config& c = m.config;
  KvCache kv(c, paged(16));
  run_chunks(m, kv, 0, test_tokens(m, 20), 20);
  KvMemoryReport r = kv.memory_report();
  CHECK(r.bytes_per_token == 2ull * c.n_layers * c.n_kv_heads * c.head_dim * sizeof(float));
  CHECK(r.blocks_used == 2);
  CHECK(r.blocks_total == (c.seq_len + 15) / 16);
  CHECK(r.blocks_free == r.blocks_total - 2);
  CHECK(r.tokens_stored == 20);
  CHECK(r.internal_fragmentation == Approx(12.0 / 32.0));
  // Contiguous (kv_cache.h: one "block" per sequence with storage, its capacity): 20 tokens in
  // sequence 0 of 2, storage reserved for 32.
  KvCacheOptions co;
  co.max_seqs = 2;
  co.reserve_tokens = 32;
  KvCache flat(c, co);
  run_chunks(m, flat, 0, test_tokens(m, 20), 20);
  const KvMemoryReport f = flat.memory_report();
  CHECK(f.blocks_total == 2);
  CHECK(f.blocks_used == 1);
  CHECK(f.blocks_free == 1);
  CHECK(f.tokens_logical == 20);
  CHECK(f.tokens_stored == 20);
  CHECK(f.bytes_allocated >= 32 * f.bytes_per_token);
  CHECK(f.internal_fragmentation == Approx(1.0 - 20.0 * f.bytes_per_token / (double)f.bytes_allocated));
}

TEST_CASE("contiguous capacity: reserve_tokens, then doubling, capped at the context", "[kv][report]") {
  // kv_cache.cpp grow_contiguous: the first allocation holds max(pos + 1, reserve_tokens) tokens,
  // each later one max(pos + 1, 2 x the old capacity), at most seq_len (24 is no power of two,
  // so a vector's own doubling from one token would give 32 and 64 instead).
  const Model& m = stories();
  KvCacheOptions co;
  co.reserve_tokens = 24;
  KvCache flat(m.config, co);
  const std::vector<int> toks = test_tokens(m, 60);
  run_chunks(m, flat, 0, std::vector<int>(toks.begin(), toks.begin() + 20), 20);
  KvMemoryReport f = flat.memory_report();
  CHECK(f.bytes_allocated == 24 * f.bytes_per_token);
  run_chunks(m, flat, 0, std::vector<int>(toks.begin() + 20, toks.begin() + 25), 5);
  f = flat.memory_report();
  CHECK(f.bytes_allocated == 48 * f.bytes_per_token);
  run_chunks(m, flat, 0, std::vector<int>(toks.begin() + 25, toks.end()), 35);
  f = flat.memory_report();
  CHECK(f.bytes_allocated == (uint64_t)std::min(96, m.config.seq_len) * f.bytes_per_token);
}

TEST_CASE("contiguous rows: every stored K/V row survives each growth and a fork, bit for bit", "[kv]") {
  // Row (layer, pos) holds the value layer * 1000 + pos + d / 1000 in K and its negation in V;
  // the cache grows from 3 positions (3, 6, 12, 24, 48) and sequence 0 is forked at 40.
  const Config& c = stories().config;
  KvCacheOptions co;
  co.max_seqs = 2;
  co.reserve_tokens = 3;
  KvCache kv(c, co);
  const int kv_dim = c.n_kv_heads * c.head_dim;
  auto want = [&](int l, int p, int d) { return (float)(l * 1000 + p) + (float)d / 1000.0f; };
  auto check_rows = [&](int seq, int n) {
    for (int l = 0; l < c.n_layers; l++)
      for (int p = 0; p < n; p++)
        for (int d = 0; d < kv_dim; d++) {
          INFO("seq " << seq << " layer " << l << " pos " << p << " d " << d);
          REQUIRE(kv.key(seq, l, p)[d] == want(l, p, d));
          REQUIRE(kv.value(seq, l, p)[d] == -want(l, p, d));
        }
  };
  for (int p = 0; p < 40; p++) {
    REQUIRE(kv.append(0, 5) == p);
    for (int l = 0; l < c.n_layers; l++)
      for (int d = 0; d < kv_dim; d++) {
        kv.key_mut(0, l, p)[d] = want(l, p, d);
        kv.value_mut(0, l, p)[d] = -want(l, p, d);
      }
    check_rows(0, p + 1);
  }
  kv.fork(0, 1);
  check_rows(1, 40);
  kv.key_mut(0, 0, 0)[0] = 9.0f;  // the fork owns its rows
  CHECK(kv.key(1, 0, 0)[0] == want(0, 0, 0));
  CHECK(kv.memory_report().bytes_allocated == 2 * 48 * kv.memory_report().bytes_per_token);
}

TEST_CASE("alloc_floats: small buffers plain, from 2 MiB on 2 MiB-aligned whole pages", "[kv]") {
  FloatBuffer none = alloc_floats(0), small = alloc_floats(1000);
  CHECK(none != nullptr);
  small[999] = 1.5f;
  CHECK(small[999] == 1.5f);
  for (size_t n : {kHugePageBytes / sizeof(float), kHugePageBytes / sizeof(float) + 1, 3 * kHugePageBytes / 4 + 5}) {
    INFO(n << " floats");
    FloatBuffer big = alloc_floats(n);
    CHECK(reinterpret_cast<uintptr_t>(big.get()) % kHugePageBytes == 0);
    big[0] = 2.0f, big[n - 1] = 3.0f;  // first and last written
    CHECK(big[0] + big[n - 1] == 5.0f);
  }
}

TEST_CASE("KV admission: the paged pool is admitted as max_tokens + one block of positions", "[kv][errors]") {
  // kv_cache.cpp: a pool of max_tokens tokens in blocks of block_size is admitted as K and V of
  // (max_tokens + block_size) positions, 2 x layers x positions x kv_dim floats (the last block
  // may be partly past max_tokens). At Llama-3-8B's shape and 2^31 - 16 tokens that is
  // ~563 TB, refused on any machine; the message gives the count, computed here independently.
  Config c;
  c.dim = 4096, c.n_layers = 32, c.n_heads = 32, c.n_kv_heads = 8, c.head_dim = 128, c.seq_len = 8192;
  c.hidden_dim = 14336, c.vocab_size = 128256;
  for (int bs : {1, 16, 64}) {
    INFO("block size " << bs);
    KvCacheOptions o = paged(bs);
    o.max_tokens = 2147483632;
    const std::string positions = std::to_string(2147483632LL + bs) + " positions x 1024 floats";
    try {
      KvCache kv(c, o);
      FAIL("a 563 TB pool was admitted");
    } catch (const InputError& e) {
      CHECK(e.field() == "context_length");
      CHECK_THAT(e.what(), Catch::Contains("2 x 32 layers x " + positions));
      const uint64_t bytes = 2ull * 32 * (2147483632ull + bs) * 1024 * 4;
      CHECK_THAT(e.what(), Catch::Contains("needs " + std::to_string(bytes) + " bytes"));
    }
  }
}

TEST_CASE("HostKvStorage: write_row then read_row and the row views give the row back", "[kv][paged]") {
  const int layers = 3, block_size = 4, kv_dim = 10;
  HostKvStorage st(layers, block_size, kv_dim);
  for (int b = 0; b < 2; b++) st.create_block(b);
  for (int b = 0; b < 2; b++)
    for (int l = 0; l < layers; l++)
      for (int slot = 0; slot < block_size; slot++) {
        std::vector<float> k(kv_dim), v(kv_dim);
        for (int j = 0; j < kv_dim; j++) k[j] = (float)(1000 * b + 100 * l + 10 * slot + j), v[j] = -k[j] - 0.5f;
        st.write_row(b, l, slot, k, v);
      }
  for (int b = 0; b < 2; b++)
    for (int l = 0; l < layers; l++)
      for (int slot = 0; slot < block_size; slot++) {
        INFO("block " << b << " layer " << l << " slot " << slot);
        std::vector<float> k(kv_dim), v(kv_dim);
        st.read_row(b, l, slot, k, v);
        for (int j = 0; j < kv_dim; j++) {
          const float want = (float)(1000 * b + 100 * l + 10 * slot + j);
          CHECK(k[j] == want);
          CHECK(v[j] == -want - 0.5f);
          CHECK(st.k_row(b, l, slot)[j] == want);
          CHECK(st.v_row(b, l, slot)[j] == -want - 0.5f);
        }
      }
}

TEST_CASE("rollback: truncate then append equals a run that never saw the removed tokens", "[kv][rollback]") {
  const Model& m = stories();
  auto a = test_tokens(m, 40, 1), b = test_tokens(m, 25, 2);
  for (int n : {0, 1, 16, 17, 39})
    for (KvCacheOptions ko : {KvCacheOptions{}, paged(1), paged(3), paged(16)}) {
      INFO("truncate to " << n << ", paged " << ko.paged << " block " << ko.block_size);
      auto fresh_tokens = concat(std::span<const int>(a).first(n), b);
      KvCache fresh(m.config, ko);
      auto want = run_chunks(m, fresh, 0, fresh_tokens, 9);
      KvCache kv(m.config, ko);
      run_chunks(m, kv, 0, a, 40);
      kv.truncate(0, n);
      REQUIRE(kv.length(0) == n);
      auto got = run_chunks(m, kv, 0, b, 4);
      CHECK(first_bit_mismatch(got, rows(want, n, 25, m.config.vocab_size)) == "");
      auto tk = kv.tokens(0);
      CHECK(std::vector<int>(tk.begin(), tk.end()) == fresh_tokens);
      CHECK(kv.memory_report().blocks_used == fresh.memory_report().blocks_used);
      CHECK(kv.memory_report().tokens_stored == fresh.memory_report().tokens_stored);
    }
}

TEST_CASE("fork + copy-on-write: diverging sequences each equal their solo run", "[kv][cow]") {
  const Model& m = stories();
  int V = m.config.vocab_size;
  auto prefix = test_tokens(m, 37, 3), s0 = test_tokens(m, 20, 4), s1 = test_tokens(m, 20, 5);
  auto want0 = run_fresh(m, concat(prefix, s0), 1), want1 = run_fresh(m, concat(prefix, s1), 1);
  for (int bs : {1, 3, 16}) {
    INFO("block size " << bs);
    KvCache kv(m.config, paged(bs, 2));
    run_chunks(m, kv, 0, prefix, 37);
    kv.fork(0, 1);
    KvMemoryReport shared = kv.memory_report();
    CHECK(shared.blocks_used == (37 + bs - 1) / bs);  // prefix stored once
    CHECK(shared.tokens_stored == 37);
    CHECK(shared.tokens_logical == 74);
    for (int i = 0; i < 20; i++) {  // interleave so each write hits a shared block
      auto l0 = forward(m, kv, 0, std::span<const int>(&s0[i], 1));
      auto l1 = forward(m, kv, 1, std::span<const int>(&s1[i], 1));
      INFO("step " << i);
      REQUIRE(first_bit_mismatch(l0, rows(want0, 37 + i, 1, V)) == "");
      REQUIRE(first_bit_mismatch(l1, rows(want1, 37 + i, 1, V)) == "");
    }
    KvMemoryReport after = kv.memory_report();
    CHECK(after.blocks_used == 37 / bs + 2 * ((57 + bs - 1) / bs - 37 / bs));
  }
}

TEST_CASE("rollback into a shared block leaves the other sequence intact", "[kv][rollback][cow]") {
  const Model& m = stories();
  int V = m.config.vocab_size;
  auto a = test_tokens(m, 40, 6), b = test_tokens(m, 10, 7), c = test_tokens(m, 10, 8);
  auto want_a = run_fresh(m, concat(a, c), 50);
  auto want_b = run_fresh(m, concat(std::span<const int>(a).first(21), b), 31);
  KvCache kv(m.config, paged(16, 2));
  run_chunks(m, kv, 0, a, 40);
  kv.fork(0, 1);
  kv.truncate(1, 21);  // inside the shared second block
  CHECK(first_bit_mismatch(run_chunks(m, kv, 1, b, 3), rows(want_b, 21, 10, V)) == "");
  CHECK(first_bit_mismatch(run_chunks(m, kv, 0, c, 3), rows(want_a, 40, 10, V)) == "");
}

TEST_CASE("prefix cache: a new sequence reuses cached blocks without recomputing them", "[kv][prefix]") {
  const Model& m = stories();
  int V = m.config.vocab_size;
  auto prompt = test_tokens(m, 50, 9);
  auto want = run_fresh(m, prompt, 50);
  for (bool release_first : {false, true}) {
    INFO("first sequence released before the second attaches: " << release_first);
    KvCache kv(m.config, paged(16, 2));
    run_chunks(m, kv, 0, prompt, 50);
    if (release_first) kv.release(0);
    int reused = kv.attach_prefix(1, prompt);
    CHECK(reused == 48);  // 3 full blocks; >= 1 token left to run
    CHECK(kv.memory_report().prefix_hits == 3);
    int traced_rows = 0;
    Trace tr;
    tr.emit = [&](const std::string& name, int, std::span<const float>) { traced_rows += name == "blk.0.q"; };
    ForwardOptions o;
    o.all_logits = true;
    o.trace = &tr;
    auto got = forward(m, kv, 1, std::span<const int>(prompt).subspan(reused), o);
    CHECK(traced_rows == 2);  // only positions 48 and 49 were computed
    CHECK(first_bit_mismatch(got, rows(want, 48, 2, V)) == "");
    CHECK(kv.memory_report().blocks_used == (release_first ? 4 : 5));
  }
}

TEST_CASE("prefix cache misses on different tokens and on evicted blocks", "[kv][prefix]") {
  const Model& m = stories();
  auto prompt = test_tokens(m, 40, 10), other = test_tokens(m, 40, 11);
  KvCacheOptions ko = paged(16, 2);
  ko.max_tokens = 64;  // 4 blocks
  KvCache kv(m.config, ko);
  run_chunks(m, kv, 0, prompt, 40);
  CHECK(kv.attach_prefix(1, other) == 0);
  kv.release(0);
  CHECK(kv.memory_report().blocks_cached == 2);
  // `other` needs 3 blocks: the free one, then evicts the cached ones deepest
  // first (a release frees a sequence's blocks from its end).
  run_chunks(m, kv, 0, other, 40);
  CHECK(kv.memory_report().blocks_cached == 1);
  CHECK(kv.attach_prefix(1, prompt) == 16);  // only the first block survived
  kv.release(0);
  auto want = run_fresh(m, prompt, 40);
  auto got = run_chunks(m, kv, 1, std::span<const int>(prompt).subspan(16), 5);
  CHECK(first_bit_mismatch(got, rows(want, 16, 24, m.config.vocab_size)) == "");
  CHECK_THROWS_WITH(run_chunks(m, kv, 0, other, 40), Catch::Contains("max_tokens"));
  CHECK(kv.length(0) == 0);  // a failed forward appends nothing
  CHECK(kv.memory_report().blocks_used == 3);
}

TEST_CASE("memory report: prompts sharing a long prefix store it once", "[kv][prefix][report]") {
  const Model& m = stories();
  int V = m.config.vocab_size, n_seqs = 4;
  auto prefix = test_tokens(m, 64, 12);
  KvCache kv(m.config, paged(16, n_seqs));
  for (int s = 0; s < n_seqs; s++) {
    auto prompt = concat(prefix, test_tokens(m, 5 + s, 20 + s));
    int reused = kv.attach_prefix(s, prompt);
    CHECK(reused == (s == 0 ? 0 : 64));
    auto got = forward(m, kv, s, std::span<const int>(prompt).subspan(reused));
    CHECK(first_bit_mismatch(got, rows(run_fresh(m, prompt, 1), (int)prompt.size() - 1, 1, V)) == "");
  }
  KvMemoryReport r = kv.memory_report();
  CHECK(r.blocks_used == 4 + n_seqs);  // 4 prefix blocks once + one suffix block each
  CHECK(r.tokens_stored == 64 + 5 + 6 + 7 + 8);
  CHECK(r.tokens_logical == 4 * 64 + 5 + 6 + 7 + 8);
  CHECK(r.prefix_hits == 3 * 4);
}

TEST_CASE("KV cache rejects bad arguments naming the field", "[kv][errors]") {
  const Model& m = stories();
  KvCache kv(m.config, paged(16, 2));
  run_chunks(m, kv, 0, test_tokens(m, 5), 5);
  CHECK_THROWS_WITH(kv.truncate(0, 6), Catch::Contains("n"));
  CHECK_THROWS_WITH(kv.length(2), Catch::Contains("seq"));
  CHECK_THROWS_WITH(kv.fork(1, 0), Catch::Contains("dst"));
  CHECK_THROWS_WITH(kv.attach_prefix(0, test_tokens(m, 40)), Catch::Contains("seq"));
  KvCacheOptions bad = paged(0);
  CHECK_THROWS_WITH(KvCache(m.config, bad), Catch::Contains("block_size"));
}

// ============================================================================
// Random operation sequences (seeded): paged cache vs fresh contiguous runs
// ============================================================================
namespace {
struct RandomOps {
  const Model& m;
  KvCache kv;
  std::mt19937 rng;
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

  // Runs `toks` on seq s and checks every row against a fresh contiguous run.
  void run_and_check(int s, const std::vector<int>& toks) {
    int len = kv.length(s);
    auto got = run_chunks(m, kv, s, toks, pick(1, 8));
    auto tk = kv.tokens(s);
    std::vector<int> all(tk.begin(), tk.end());
    auto want = run_fresh(m, all, (int)all.size());
    REQUIRE(first_bit_mismatch(got, rows(want, len, (int)toks.size(), m.config.vocab_size)) == "");
  }
  std::vector<int> random_tokens(int n) {  // small alphabet: prefixes collide often
    std::vector<int> t(n);
    for (int& x : t) x = 5 + pick(0, 2);
    return t;
  }
  void step() {
    int s = pick(0, 2), len = kv.length(s), op = pick(0, 9);
    INFO("op " << op << " seq " << s << " len " << len);
    if (op <= 4 && len < 60) run_and_check(s, random_tokens(pick(1, 8)));
    else if (op == 5) {
      int n = pick(0, len);
      kv.truncate(s, n);
      REQUIRE(kv.length(s) == n);
    }
    else if (op == 6) kv.release(s);
    else if (op == 7 && len > 0) {
      int d = (s + pick(1, 2)) % 3;
      if (kv.length(d) == 0) kv.fork(s, d);
    } else if (op >= 8 && len == 0) {
      auto other = kv.tokens(pick(0, 2));
      std::vector<int> prompt(other.begin(), other.end());
      for (int x : random_tokens(pick(1, 6))) prompt.push_back(x);
      int reused = kv.attach_prefix(s, prompt);
      REQUIRE(reused < (int)prompt.size());
      run_and_check(s, std::vector<int>(prompt.begin() + reused, prompt.end()));
    }
  }
};
}  // namespace

TEST_CASE("random append/truncate/fork/release/attach sequences match contiguous runs", "[kv][random]") {
  const Model& m = stories();
  for (uint32_t seed = 1; seed <= 24; seed++) {
    int bs = std::array<int, 5>{1, 2, 3, 5, 16}[seed % 5];
    INFO("seed " << seed << " block size " << bs);
    RandomOps r{m, KvCache(m.config, paged(bs, 3)), std::mt19937(seed)};
    for (int i = 0; i < 30; i++) r.step();
    KvMemoryReport rep = r.kv.memory_report();
    CHECK(rep.tokens_stored <= rep.tokens_logical);
    CHECK(rep.blocks_used + rep.blocks_free == rep.blocks_total);
  }
}
