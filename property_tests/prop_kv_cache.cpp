// KV cache properties (reference/compute/kv_cache.h) through the forward pass:
// rollback then continue == never having gone there; fork + copy-on-write
// leaves the parent's logits unchanged; paged == contiguous for any block size.
#include <catch2/catch.hpp>
#include <rapidcheck/catch.h>

#include <cstdio>

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
  o.prefix_cache = false;
  return o;
}

std::vector<float> run_all(const Model& m, KvCache& kv, int seq, std::span<const int> toks) {
  ForwardOptions all;
  all.all_logits = true;
  return forward(m, kv, seq, toks, all);
}

}  // namespace

TEST_CASE("property: KV cache rollback and fork", "[property][kv]") {
  oracle::prop::seed_rapidcheck();

  oracle::prop::check("rollback to a, continue == straight run (paged or contiguous, any block size)", [] {
    Config c = *oracle::prop::gen_config();
    Model model = oracle::prop::make_model(c, *rc::gen::inRange<uint64_t>(1, 1000));
    std::vector<int> toks = *oracle::prop::gen_tokens(2, 30);
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
    std::vector<float> got = run_all(model, kv, 0, all.subspan((size_t)a));
    std::vector<float> tail(want.begin() + (long)a * c.vocab_size, want.end());
    RC_ASSERT(same_bits(got, tail, "after rollback"));
  });

  // Interleaved so that a write into a shared block would be seen: the child
  // appends, the parent appends at the same positions, the child continues.
  oracle::prop::check("fork then interleave: parent and child each equal a fresh run", [] {
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
