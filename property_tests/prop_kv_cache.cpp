// KV cache properties (reference/compute/kv_cache.h) through the forward pass:
// rollback then continue == never having gone there; fork + copy-on-write
// leaves the parent's logits unchanged; paged == contiguous for any block size.
#include <catch2/catch.hpp>
#include <rapidcheck/catch.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>

#include "base/errors.h"

#include "property_tests/generators.h"
#include "reference/compute/forward.h"
#include "numerics/numerics.h"

using namespace oracle;

namespace {

bool same_bits(const std::vector<float>& a, const std::vector<float>& b, const char* what) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); i++)
    if (num::f32_bits(a[i]) != num::f32_bits(b[i])) {
      std::printf("%s: logit %zu: 0x%08x vs 0x%08x\n", what, i, num::f32_bits(a[i]), num::f32_bits(b[i]));
      return false;
    }
  return true;
}

KvCacheOptions gen_kv_options(int max_seqs) {
  KvCacheOptions o;
  o.paged = *rc::gen::arbitrary<bool>();
  o.block_size = *oracle::prop::gen_block_size();
  o.max_seqs = max_seqs;
  o.prefix_cache = *rc::gen::arbitrary<bool>();
  return o;
}

std::vector<float> run_all(const Model& m, KvCache& kv, int seq, std::span<const int> toks) {
  ForwardOptions all;
  all.all_logits = true;
  return forward(m, kv, seq, toks, all);
}

}  // namespace

TEST_CASE("property: KV cache rollback and fork", "[property][kv]") {
  oracle::prop::Shapes shapes;

  oracle::prop::check("rollback to a, continue == straight run (paged or contiguous, any block size)", 1000, shapes, [&] {
    Config c = *oracle::prop::gen_config();
    Model model = oracle::prop::make_model(c, *rc::gen::inRange<uint64_t>(1, 1000));
    std::vector<int> toks = *oracle::prop::gen_tokens(2, 70);
    shapes.add("tokens", (long)toks.size());
    int a = *rc::gen::inRange(1, (int)toks.size());
    std::vector<int> junk = *oracle::prop::gen_tokens(1, 10);
    KvCache ref(c, KvCacheOptions{});
    std::vector<float> want = run_all(model, ref, 0, toks);
    KvCache kv(c, gen_kv_options(1));
    std::span<const int> all(toks);
    run_all(model, kv, 0, all.first((size_t)a));
    run_all(model, kv, 0, junk);
    kv.truncate(0, a);
    RC_ASSERT(kv.length(0) == a);
    if (kv.options().paged) {  // a rollback frees every block past ceil(a / bs)
      const size_t keep = (size_t)((a + kv.options().block_size - 1) / kv.options().block_size);
      RC_ASSERT(kv.block_table(0).size() == keep);
      RC_ASSERT(kv.memory_report().blocks_used == (int)keep);
    }
    std::vector<float> got = run_all(model, kv, 0, all.subspan((size_t)a));
    std::vector<float> tail(want.begin() + (long)a * c.vocab_size, want.end());
    RC_ASSERT(same_bits(got, tail, "after rollback"));
    kv.release(0);
    if (kv.options().paged) RC_ASSERT(kv.memory_report().blocks_used == 0);  // (contiguous keeps its buffer)
  });

  // Interleaved so that a write into a shared block would be seen: the child
  // appends, the parent appends at the same positions, the child continues.
  oracle::prop::check("fork then interleave: parent and child each equal a fresh run", 1000, shapes, [&] {
    Config c = *oracle::prop::gen_config();
    Model model = oracle::prop::make_model(c, *rc::gen::inRange<uint64_t>(1, 1000));
    std::vector<int> prefix = *oracle::prop::gen_tokens(1, 20);
    std::vector<int> t0 = *oracle::prop::gen_tokens(1, 8), t1 = *oracle::prop::gen_tokens(2, 8);
    size_t split = (size_t)*rc::gen::inRange(1, (int)t1.size());
    KvCache kv(c, gen_kv_options(2));
    run_all(model, kv, 0, prefix);
    kv.fork(0, 1);
    std::span<const int> child(t1);
    std::vector<float> got1 = run_all(model, kv, 1, child.first(split));
    std::vector<float> got0 = run_all(model, kv, 0, t0);
    std::vector<float> rest = run_all(model, kv, 1, child.subspan(split));
    got1.insert(got1.end(), rest.begin(), rest.end());
    for (int which = 0; which < 2; which++) {
      KvCache fresh(c, KvCacheOptions{});
      run_all(model, fresh, 0, prefix);
      std::vector<float> want = run_all(model, fresh, 0, which == 0 ? t0 : t1);
      RC_ASSERT(same_bits(which == 0 ? got0 : got1, want, which == 0 ? "parent" : "child"));
    }
  });
}

// ---- several requests, prefix cache on ---------------------------------------------------
// Token streams share prefixes of random lengths (whole blocks and mid-block).
// Every live sequence always holds a prefix of one stream, so its logits are
// rows of that stream's contiguous one-pass prefill: the model the paged cache
// is checked against. Operations, interleaved at random over 4 sequence slots:
//   append c tokens of its stream; fork into an empty slot, the child then
//   following any stream that shares the parent's tokens; attach_prefix for a
//   new request (reuses cached full blocks) and run the rest of its prompt;
//   truncate (rollback) to a random length; release.
// After every operation: each sequence's length and tokens equal the model's;
// its block table has ceil(len / bs) blocks; every block's reference count
// equals the number of tables holding it; blocks_used equals the number of
// distinct blocks held. At the end, releasing everything frees every block.
namespace {

struct Slot {
  int stream = -1, len = 0;  // -1: empty
};

std::string accounting_error(const KvCache& kv, const std::vector<Slot>& slots, int bs, int n_blocks) {
  std::map<int, int> owners;
  for (size_t s = 0; s < slots.size(); s++) {
    if (kv.length((int)s) != slots[s].len) return "length of seq " + std::to_string(s);
    std::span<const int> t = kv.block_table((int)s);
    if ((int)t.size() != (slots[s].len + bs - 1) / bs)
      return "seq " + std::to_string(s) + " holds " + std::to_string(t.size()) + " blocks for " +
             std::to_string(slots[s].len) + " tokens";
    for (int b : t) owners[b]++;
  }
  for (int b = 0; b < n_blocks; b++) {
    const int want = owners.count(b) ? owners[b] : 0;
    if (kv.block_refcount(b) != want)
      return "block " + std::to_string(b) + " refcount " + std::to_string(kv.block_refcount(b)) + ", owners " +
             std::to_string(want);
  }
  if (kv.memory_report().blocks_used != (int)owners.size()) return "blocks_used != distinct blocks held";
  return "";
}

// A random stream whose first n tokens equal stream `from`'s (possibly `from`).
int follower(const std::vector<std::vector<int>>& streams, int from, int n) {
  std::vector<int> options;
  for (size_t j = 0; j < streams.size(); j++)
    if (std::equal(streams[j].begin(), streams[j].begin() + n, streams[(size_t)from].begin())) options.push_back((int)j);
  return options[(size_t)*rc::gen::inRange(0, (int)options.size())];
}

}  // namespace

TEST_CASE("property: KV cache with the prefix cache, several requests", "[property][kv][prefix]") {
  oracle::prop::Shapes shapes;
  oracle::prop::check("random append/fork/attach/rollback/release over 4 requests == contiguous model; block accounting",
                      300, shapes, [&] {
    Config c = *oracle::prop::gen_config();
    c.seq_len = 96;
    Model model = oracle::prop::make_model(c, *rc::gen::inRange<uint64_t>(1, 1000));
    const int V = c.vocab_size, n_streams = *rc::gen::inRange(2, 5), L = *rc::gen::inRange(8, 90);
    std::vector<std::vector<int>> streams;
    streams.push_back(*rc::gen::container<std::vector<int>>((size_t)L, oracle::prop::gen_token()));
    for (int i = 1; i < n_streams; i++) {
      std::vector<int> s = streams[(size_t)*rc::gen::inRange(0, i)];
      const int share = *rc::gen::inRange(0, L);
      for (int j = share; j < L; j++) s[(size_t)j] = *oracle::prop::gen_token();
      streams.push_back(s);
      shapes.add("shared prefix", share);
    }
    shapes.add("stream length", L);
    std::vector<std::vector<float>> want;
    for (const auto& s : streams) want.push_back(run_all(model, *std::make_unique<KvCache>(c, KvCacheOptions{}), 0, s));
    KvCacheOptions o;
    o.paged = true;
    o.prefix_cache = true;
    o.block_size = *rc::gen::element(1, 2, 3, 4, 7, 8, 16);
    o.max_seqs = 4;
    o.max_tokens = *rc::gen::element(0, 4 * 96, 2 * 96);  // a tight pool evicts cached blocks
    KvCache kv(c, o);
    const int n_blocks = kv.memory_report().blocks_total;
    std::vector<Slot> slots(4);
    auto check_rows = [&](const Slot& s, int from, const std::vector<float>& got) {
      std::vector<float> rows(want[(size_t)s.stream].begin() + (long)from * V,
                              want[(size_t)s.stream].begin() + (long)s.len * V);
      return same_bits(got, rows, "sequence rows");
    };
    const int n_ops = *rc::gen::inRange(5, 40);
    shapes.add("operations", n_ops);
    for (int op = 0; op < n_ops; op++) {
      const int seq = *rc::gen::inRange(0, 4);
      Slot& s = slots[(size_t)seq];
      const int kind = *rc::gen::inRange(0, 5);
      if (s.stream < 0) {  // a new request: attach the cached prefix, run the rest of its prompt
        s.stream = *rc::gen::inRange(0, n_streams);
        const int prompt = *rc::gen::inRange(1, L + 1);
        std::span<const int> p = std::span<const int>(streams[(size_t)s.stream]).first((size_t)prompt);
        const int n = kv.attach_prefix(seq, p);
        RC_ASSERT(n % o.block_size == 0);
        RC_ASSERT(n <= prompt - 1);
        s.len = prompt;
        shapes.add("attached tokens", n);
        try {
          RC_ASSERT(check_rows(s, n, run_all(model, kv, seq, p.subspan((size_t)n))));
        } catch (const InputError&) {  // pool exhausted: the request is refused, the cache unchanged
          s.len = n;
        }
      } else if (kind == 0 && s.len < L) {  // append
        const int n = std::min(L - s.len, *rc::gen::inRange(1, 12));
        const int from = s.len;
        try {
          std::vector<float> got = run_all(model, kv, seq, std::span<const int>(streams[(size_t)s.stream]).subspan((size_t)from, (size_t)n));
          s.len += n;
          RC_ASSERT(check_rows(s, from, got));
        } catch (const InputError&) {
        }
      } else if (kind == 1) {  // fork into an empty slot; the child may follow another stream
        int dst = -1;
        for (int d = 0; d < 4; d++)
          if (slots[(size_t)d].stream < 0) dst = d;
        if (dst < 0) continue;
        kv.fork(seq, dst);
        Slot child = s;
        child.stream = follower(streams, s.stream, s.len);
        slots[(size_t)dst] = child;
      } else if (kind == 2 || kind == 3) {  // rollback
        const int n = *rc::gen::inRange(0, s.len + 1);
        kv.truncate(seq, n);
        s.len = n;
        if (n == 0) s.stream = -1;
        else s.stream = follower(streams, s.stream, n);  // after a rollback the request may diverge
      } else {  // release
        kv.release(seq);
        s = Slot{};
      }
      const std::string err = accounting_error(kv, slots, o.block_size, n_blocks);
      RC_LOG() << err;
      RC_ASSERT(err.empty());
      for (int q = 0; q < 4; q++)
        if (slots[(size_t)q].stream >= 0) {
          std::span<const int> t = kv.tokens(q);
          RC_ASSERT(std::equal(t.begin(), t.end(), streams[(size_t)slots[(size_t)q].stream].begin()));
        }
    }
    for (int q = 0; q < 4; q++) kv.release(q);
    RC_ASSERT(kv.memory_report().blocks_used == 0);
  });

  // Directed: a request rolls back into the middle of its last cached full
  // block and diverges. That block stays in the prefix cache for the original
  // prefix, so the divergent append must copy it (even with one owner); a new
  // request with the original tokens then attaches every full block and its
  // logits equal the contiguous run.
  oracle::prop::check("rollback into a cached block, diverge, attach the original prefix == contiguous", 1000, shapes, [&] {
    Config c = *oracle::prop::gen_config();
    Model model = oracle::prop::make_model(c, *rc::gen::inRange<uint64_t>(1, 1000));
    KvCacheOptions o;
    o.paged = o.prefix_cache = true;
    o.block_size = *rc::gen::element(2, 3, 4, 7, 8, 16);
    o.max_seqs = 2;
    const int bs = o.block_size, full = *rc::gen::inRange(1, std::min(5, 80 / bs) + 1);
    std::vector<int> a = *rc::gen::container<std::vector<int>>((size_t)(full * bs + *rc::gen::inRange(1, bs + 1)),
                                                               oracle::prop::gen_token());
    const int r = (full - 1) * bs + *rc::gen::inRange(1, bs);  // inside block full - 1
    std::vector<int> b(a.begin(), a.begin() + r);
    for (int i = 0, n = *rc::gen::inRange(1, std::min(2 * bs, c.seq_len - r) + 1); i < n; i++) b.push_back(*oracle::prop::gen_token());
    if (b[(size_t)r] == a[(size_t)r]) b[(size_t)r] = a[(size_t)r] == 3 + 0x20 ? 3 + 0x21 : 3 + 0x20;
    shapes.add("block size", bs);
    shapes.add("rollback point", r);
    std::vector<float> want_a = run_all(model, *std::make_unique<KvCache>(c, KvCacheOptions{}), 0, a);
    std::vector<float> want_b = run_all(model, *std::make_unique<KvCache>(c, KvCacheOptions{}), 0, b);
    const long V = c.vocab_size;
    KvCache kv(c, o);
    run_all(model, kv, 0, a);
    kv.truncate(0, r);
    std::vector<float> got_b = run_all(model, kv, 0, std::span<const int>(b).subspan((size_t)r));
    RC_ASSERT(same_bits(got_b, std::vector<float>(want_b.begin() + r * V, want_b.end()), "diverged request"));
    const int n = kv.attach_prefix(1, a);
    RC_ASSERT(n == full * bs);
    std::vector<float> got_a = run_all(model, kv, 1, std::span<const int>(a).subspan((size_t)n));
    RC_ASSERT(same_bits(got_a, std::vector<float>(want_a.begin() + n * V, want_a.end()), "attached request"));
    kv.release(0);
    kv.release(1);
    RC_ASSERT(kv.memory_report().blocks_used == 0);
  });
}
