// DeviceKv's paged cache with fork, copy-on-write and the prefix cache:
//  * storage: DeviceKvStorage (device pools) reads back, after random row writes
//    and block copies, what the host HostKvStorage holds. The bookkeeping is the
//    shared KvBlocks of the reference cache, tested on its own by prop_kv_blocks;
//  * contents: forked, prefix-attached and rolled-back sequences on the device
//    (emulated kernels) give logits bit-identical to a contiguous reference run
//    of the same tokens, at block sizes 1, 3, 4 and 16.
// Catches KV_COW_SHARED_WRITE and KV_PREFIX_OWN_BLOCK_KEY (planted in the shared KvBlocks).
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
#include "reference/compute/kv_blocks.h"
#include "reference/compute/kv_cache.h"
#include "reference/model/model.h"
#include "test_support.h"

using namespace oracle;
using oracle::kernels::test::count_bit_mismatches;

namespace {

// ---- storage: the device pools against the host blocks ----------------------------------------
// Random row writes and block copies on both storages, then every row read back: the same bits.
void storage_trial(std::mt19937_64& rng, int n_layers, int n_blocks, int bs, int kv_dim) {
  HostKvStorage host(n_layers, bs, kv_dim);
  optimized::DeviceKvStorage dev(n_layers, n_blocks, bs, kv_dim);
  for (int b = 0; b < n_blocks; b++) host.create_block(b), dev.create_block(b);
  auto pick = [&](int n) { return (int)(rng() % (uint64_t)n); };
  std::vector<float> k((size_t)kv_dim), v((size_t)kv_dim), hk(k), hv(v), dk(k), dv(v);
  for (int op = 0; op < 40; op++) {
    if (pick(3) == 0) {  // copy a prefix of one block into another
      const int dst = pick(n_blocks), src = pick(n_blocks), slots = 1 + pick(bs);
      if (dst == src) continue;
      host.copy_block(dst, src, slots);
      dev.copy_block(dst, src, slots);
      continue;
    }
    for (float& x : k) x = (float)(int)(rng() % 2001) / 64.0f - 15.0f;
    for (float& x : v) x = (float)(int)(rng() % 2001) / 64.0f - 15.0f;
    const int b = pick(n_blocks), l = pick(n_layers), slot = pick(bs);
    host.write_row(b, l, slot, k, v);
    dev.write_row(b, l, slot, k, v);
  }
  for (int b = 0; b < n_blocks; b++)
    for (int l = 0; l < n_layers; l++)
      for (int slot = 0; slot < bs; slot++) {
        host.read_row(b, l, slot, hk, hv);
        dev.read_row(b, l, slot, dk, dv);
        const std::string at = "block " + std::to_string(b) + " layer " + std::to_string(l) + " slot " + std::to_string(slot);
        REQUIRE(count_bit_mismatches(at + " K", hk, dk) == 0);
        REQUIRE(count_bit_mismatches(at + " V", hv, dv) == 0);
        REQUIRE(count_bit_mismatches(at + " host K view", hk, std::vector<float>(host.k_row(b, l, slot), host.k_row(b, l, slot) + kv_dim)) == 0);
      }
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

TEST_CASE("device KV storage: row writes and block copies read back as on the host storage", "[emu][device_kv]") {
  std::mt19937_64 rng(31);
  int trials = 0;
  for (int bs : {1, 3, 16})
    for (int kv_dim : {1, 4, 64}) {
      storage_trial(rng, 2, 5, bs, kv_dim);
      trials++;
    }
  std::printf("device KV storage: %d trials of 40 writes/copies each\n", trials);
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
