// DeviceKv's paged cache with fork, copy-on-write and the prefix cache:
//  * bookkeeping: random interleavings of append / fork / attach_prefix /
//    truncate / release give the same lengths, token ids, block tables, reference
//    counts and prefix hits as the reference KvCache (paged, prefix cache on) —
//    which prop_kv_cache checks against a contiguous model of the same operations;
//  * contents: forked, prefix-attached and rolled-back sequences on the device
//    (emulated kernels) give logits bit-identical to a contiguous reference run
//    of the same tokens, at block sizes 1, 3, 4 and 16.
// Catches DEVICE_KV_COW_SHARED_WRITE and DEVICE_KV_PREFIX_OWN_BLOCK_KEY.
#include <catch2/catch.hpp>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "kernels/tests/kernel_test_support.h"
#include "optimized/tests/device_test_support.h"
#include "optimized/backend.h"
#include "base/errors.h"
#include "reference/compute/forward.h"
#include "reference/compute/kv_cache.h"
#include "reference/model/model.h"
#include "test_support.h"

using namespace oracle;
using oracle::kernels::test::count_bit_mismatches;

namespace {

// ---- bookkeeping against the reference KvCache ------------------------------------------------
struct Caches {
  KvCache ref;
  optimized::DeviceKv dev;
  int n_blocks;
};

Config tiny_config() {
  Config c;
  c.dim = 8, c.hidden_dim = 16, c.n_layers = 2, c.n_heads = 2, c.n_kv_heads = 1, c.head_dim = 4;
  c.vocab_size = 8, c.seq_len = 24;
  return c;
}

void expect_same(const Caches& c, int max_seqs, const std::string& where) {
  INFO(where);
  for (int s = 0; s < max_seqs; s++) {
    REQUIRE(c.dev.length(s) == c.ref.length(s));
    const auto rt = c.ref.tokens(s), rb = c.ref.block_table(s), db = c.dev.block_table(s);
    REQUIRE(std::vector<int>(rb.begin(), rb.end()) == std::vector<int>(db.begin(), db.end()));
    (void)rt;
  }
  for (int b = 0; b < c.n_blocks; b++) REQUIRE(c.dev.block_refcount(b) == c.ref.block_refcount(b));
  REQUIRE(c.dev.prefix_hits() == c.ref.memory_report().prefix_hits);
}

// One random operation on both caches; tokens from {0, 1, 2} so prefixes repeat.
std::string random_op(Caches& c, std::mt19937_64& rng, int max_seqs, int seq_len) {
  auto pick = [&](int n) { return (int)(rng() % (uint64_t)n); };
  const int seq = pick(max_seqs), op = pick(10);
  if (op < 5) {  // append 1..6 tokens (skipped on both when the device says the pool cannot take them)
    std::vector<int> toks(1 + pick(6));
    for (int& t : toks) t = pick(3);
    if (c.dev.length(seq) + (int)toks.size() > seq_len) return "skip";
    try {
      c.dev.append(seq, toks);
    } catch (const InputError&) {
      return "append refused (pool)";
    }
    c.dev.sync_table();  // the launch that writes the K/V: full blocks enter the prefix cache
    for (int t : toks) c.ref.append(seq, t);
    return "append " + std::to_string(toks.size()) + " to " + std::to_string(seq);
  }
  if (op == 5) {  // fork into an empty sequence
    const int dst = pick(max_seqs);
    if (dst == seq || c.ref.length(dst) != 0) return "skip";
    c.dev.fork(seq, dst);
    c.ref.fork(seq, dst);
    return "fork " + std::to_string(seq) + " -> " + std::to_string(dst);
  }
  if (op == 6) {  // attach a prompt to an empty sequence
    if (c.ref.length(seq) != 0) return "skip";
    std::vector<int> prompt(2 + pick(12));
    for (int& t : prompt) t = pick(2);
    const int a = c.dev.attach_prefix(seq, prompt), b = c.ref.attach_prefix(seq, prompt);
    REQUIRE(a == b);
    return "attach " + std::to_string(a) + " to " + std::to_string(seq);
  }
  if (op < 9) {  // rollback
    const int n = pick(c.ref.length(seq) + 1);
    c.dev.truncate(seq, n);
    c.ref.truncate(seq, n);
    return "truncate " + std::to_string(seq) + " to " + std::to_string(n);
  }
  c.dev.release(seq);
  c.ref.release(seq);
  return "release " + std::to_string(seq);
}

// ---- contents: device logits against contiguous reference runs -------------------------------

// The last logits row of `tokens` run from an empty contiguous cache (the known answer).
std::vector<float> solo_logits(const Model& m, const std::vector<int>& tokens) {
  KvCache kv(m.config, {});
  return forward(m, kv, 0, tokens);
}

void require_same(const std::string& label, const std::vector<float>& want, const std::vector<float>& got) {
  INFO(label);
  REQUIRE(count_bit_mismatches(label, want, got) == 0);
}

// Appends `more` to device sequence `seq` one token at a time (the history `hist` grows),
// each step's logits checked against the contiguous run of the whole history.
void decode_checked(const Model& m, optimized::Backend& dev, int seq, std::vector<int>& hist,
                    const std::vector<int>& more, const std::string& label) {
  for (size_t i = 0; i < more.size(); i++) {
    hist.push_back(more[i]);
    require_same(label + " step " + std::to_string(i), solo_logits(m, hist),
                 dev.forward(seq, std::span<const int>(&more[i], 1)));
  }
}

std::vector<int> ids(std::initializer_list<int> v) { return v; }

}  // namespace

TEST_CASE("device KV: random append/fork/attach/truncate/release keep the reference KvCache's bookkeeping",
          "[emu][device_kv]") {
  const Config c = tiny_config();
  int cases = 0, ops = 0, min_ops = 1 << 30, max_ops = 0;
  for (int bs : {1, 2, 3, 4, 7}) {
    for (int trial = 0; trial < 60; trial++) {
      std::mt19937_64 rng(1000 * bs + trial);
      const int max_seqs = 2 + trial % 3, n_blocks = 3 + (int)(rng() % 10);  // small pools: eviction happens
      KvCacheOptions ko;
      ko.paged = true, ko.block_size = bs, ko.max_seqs = max_seqs, ko.max_tokens = n_blocks * bs, ko.prefix_cache = true;
      Caches both{KvCache(c, ko), optimized::DeviceKv(c, {max_seqs, bs, n_blocks, true, 0}), n_blocks};
      const int n_ops = 20 + (int)(rng() % 60);
      std::string log;
      for (int i = 0; i < n_ops; i++) {
        INFO("block size " << bs << " trial " << trial << ": " << log);
        log += random_op(both, rng, max_seqs, c.seq_len) + "; ";
        expect_same(both, max_seqs, "after " + log);
      }
      cases++, ops += n_ops, min_ops = std::min(min_ops, n_ops), max_ops = std::max(max_ops, n_ops);
    }
  }
  std::printf("device KV bookkeeping: %d cases, %d operations (per case min %d, max %d)\n", cases, ops, min_ops, max_ops);
}

TEST_CASE("device KV: forked sequences copy a shared block before writing; logits equal solo runs",
          "[emu][device_kv]") {
  const Model m = test::stories260k();
  const std::vector<int> prompt = ids({1, 403, 407, 261, 378, 430, 290, 305, 261, 346, 284});  // 11 tokens
  for (int bs : {1, 3, 4, 16}) {
    const std::string at = "block size " + std::to_string(bs);
    optimized::Backend dev(m, {3, bs, 0, false, 0});
    require_same(at + " prompt", solo_logits(m, prompt), dev.forward(0, prompt));
    dev.kv().fork(0, 1);
    dev.kv().fork(0, 2);
    std::vector<int> h0 = prompt, h1 = prompt, h2 = prompt;
    decode_checked(m, dev, 0, h0, ids({290, 306, 311, 270}), at + " seq 0");
    decode_checked(m, dev, 1, h1, ids({347, 262, 288}), at + " seq 1");
    decode_checked(m, dev, 2, h2, ids({290, 306, 400}), at + " seq 2");
    decode_checked(m, dev, 0, h0, ids({280}), at + " seq 0 again");
    // rollback of a fork into the shared prompt, then a different continuation
    dev.kv().truncate(1, 7);
    h1.resize(7);
    decode_checked(m, dev, 1, h1, ids({300, 301}), at + " seq 1 after rollback to 7");
    decode_checked(m, dev, 2, h2, ids({270}), at + " seq 2 after seq 1's rollback");
  }
}

TEST_CASE("device KV: prefix cache shares whole-prefix blocks only; rollback into a cached block copies it",
          "[emu][device_kv]") {
  const Model m = test::stories260k();
  // Blocks of 4: A = [p q] + tail, C = [r s] + tail, B = [r q] + tail (B's second block
  // equals A's, but its prefix is C's first block: only one block may be shared).
  const std::vector<int> p = ids({1, 403, 407, 261}), q = ids({378, 430, 290, 305}), r = ids({1, 346, 284, 290}),
                         s = ids({306, 311, 270, 280}), tail = ids({261, 347});
  auto cat = [](std::vector<int> a, const std::vector<int>& b, const std::vector<int>& c) {
    a.insert(a.end(), b.begin(), b.end());
    a.insert(a.end(), c.begin(), c.end());
    return a;
  };
  const std::vector<int> A = cat(p, q, tail), C = cat(r, s, tail), B = cat(r, q, tail);
  optimized::Backend dev(m, {4, 4, 0, true, 0});
  auto run = [&](int seq, const std::vector<int>& prompt, int want_reused) {
    const int reused = dev.kv().attach_prefix(seq, prompt);
    REQUIRE(reused == want_reused);
    require_same("prompt of seq " + std::to_string(seq), solo_logits(m, prompt),
                 dev.forward(seq, std::span<const int>(prompt).subspan((size_t)reused)));
  };
  run(0, A, 0);
  run(1, C, 0);
  run(2, B, 4);  // r only: [r q] was never computed
  run(3, A, 8);  // p and q
  std::vector<int> h3 = A;
  decode_checked(m, dev, 3, h3, ids({290, 306}), "seq 3 after attaching A's blocks");
  // Seq 0 rolls back into its (cached, shared) second block and writes there.
  dev.kv().truncate(0, 6);
  std::vector<int> h0(A.begin(), A.begin() + 6);
  decode_checked(m, dev, 0, h0, ids({400, 401, 402}), "seq 0 after rollback into a cached block");
  decode_checked(m, dev, 3, h3, ids({270}), "seq 3 after seq 0 wrote past its rollback");
  dev.kv().release(0);
  dev.kv().release(3);
  run(0, A, 8);  // released blocks stay cached
}
