// Forward-pass invariance (docs/numerics.md) on random model shapes:
// batch invariance of greedy decoding (random batch-mates joining and leaving)
// and prefill / chunk / thread invariance. Bits, not tolerances.
#include <catch2/catch.hpp>
#include <rapidcheck/catch.h>

#include <cstdio>
#include <cstring>

#include "property_tests/generators.h"
#include "reference/compute/forward.h"
#include "numerics/numerics.h"

using namespace oracle;

namespace {

// First differing float of two logit rows, printed with both bit patterns.
bool same_bits(const float* a, const float* b, int n, const char* what, int step) {
  for (int i = 0; i < n; i++)
    if (num::f32_bits(a[i]) != num::f32_bits(b[i])) {
      std::printf("%s step %d logit %d: 0x%08x vs 0x%08x\n", what, step, i, num::f32_bits(a[i]),
                  num::f32_bits(b[i]));
      return false;
    }
  return true;
}

struct Mate {  // a batch-mate: its prompt, and the steps during which it decodes
  std::vector<int> prompt;
  int join = 0, leave = 0;
};

}  // namespace

// Every sequence of a continuous batch against its solo run: B = 1..8 token
// streams of mixed lengths (up to 100 positions, so attention merges up to 4
// chunks of 32), fed one token per sequence per step in a random order of
// rows, sequences joining late, some still in their prompt (prefill rows) while
// others decode, paged (random block size) or contiguous. Each row's logits
// must equal the solo one-pass prefill's row at that position, bit for bit.
struct Stream {
  std::vector<int> tokens;
  int slot = 0, join = 0, fed = 0;
};

TEST_CASE("property: batch-mates", "[property][forward][batch]") {
  oracle::prop::Shapes shapes;
  oracle::prop::check("every row of random shuffled batches == its sequence's solo run (logits bits)", 300, shapes, [&] {
    Config c = *oracle::prop::gen_config();
    c.seq_len = 112;
    Model model = oracle::prop::make_model(c, *rc::gen::inRange<uint64_t>(1, 1000));
    const int V = c.vocab_size, B = *rc::gen::inRange(1, 9);
    std::vector<Stream> streams((size_t)B);
    std::vector<int> slots(8);
    for (int i = 0; i < 8; i++) slots[(size_t)i] = i;
    for (int i = 7; i > 0; i--) std::swap(slots[(size_t)i], slots[(size_t)*rc::gen::inRange(0, i + 1)]);
    for (int b = 0; b < B; b++) {
      Stream& st = streams[(size_t)b];
      const int len = *rc::gen::weightedOneOf<int>({{1, rc::gen::inRange(1, 8)}, {2, rc::gen::inRange(8, 40)},
                                                    {2, rc::gen::inRange(40, 101)}});
      st.tokens = *rc::gen::container<std::vector<int>>((size_t)len, oracle::prop::gen_token());
      st.slot = slots[(size_t)b];
      st.join = *rc::gen::inRange(0, 30);
      shapes.add("stream length", len);
    }
    shapes.add("batch size", B);
    shapes.add("layers", c.n_layers);
    shapes.add("dim", c.dim);
    ForwardOptions all;
    all.all_logits = true;
    std::vector<std::vector<float>> solo((size_t)B);
    for (int b = 0; b < B; b++) {
      KvCache kv(c, KvCacheOptions{});
      solo[(size_t)b] = forward(model, kv, 0, streams[(size_t)b].tokens, all);
    }
    KvCacheOptions opt;
    opt.paged = *rc::gen::element(true, true, false);
    opt.block_size = *oracle::prop::gen_block_size();
    opt.max_seqs = 8;
    KvCache kv(c, opt);
    ForwardOptions fo;
    fo.threads = *rc::gen::inRange(1, 3);
    for (int step = 0;; step++) {
      std::vector<int> rows;  // stream indices in this step, shuffled
      for (int b = 0; b < B; b++) {
        const Stream& st = streams[(size_t)b];
        if (step >= st.join && st.fed < (int)st.tokens.size() && *rc::gen::inRange(0, 8) != 7) rows.push_back(b);  // 1/8 sit out
      }
      bool left = false;
      for (const Stream& st : streams) left = left || st.fed < (int)st.tokens.size();
      if (!left) break;
      if (rows.empty()) continue;
      for (size_t i = rows.size() - 1; i > 0; i--) std::swap(rows[i], rows[(size_t)*rc::gen::inRange(0, (int)i + 1)]);
      std::vector<int> seqs, toks;
      for (int b : rows) {
        seqs.push_back(streams[(size_t)b].slot);
        toks.push_back(streams[(size_t)b].tokens[(size_t)streams[(size_t)b].fed]);
      }
      shapes.add("rows per step", (long)rows.size());
      const std::vector<float> got = forward_batch(model, kv, seqs, toks, fo);
      RC_ASSERT(got.size() == rows.size() * (size_t)V);
      for (size_t i = 0; i < rows.size(); i++) {
        Stream& st = streams[(size_t)rows[i]];
        const float* want = solo[(size_t)rows[i]].data() + (size_t)st.fed * V;
        RC_ASSERT(same_bits(got.data() + i * V, want, V, "batch row", st.fed));
        st.fed++;
      }
    }
  });
}

TEST_CASE("property: forward invariance", "[property][forward]") {
  oracle::prop::Shapes shapes;

  oracle::prop::check("greedy decode alone == inside random batches, every step's logits bits", 300, shapes, [&] {
    Config c = *oracle::prop::gen_config();
    Model model = oracle::prop::make_model(c, *rc::gen::inRange<uint64_t>(1, 1000));
    const int V = c.vocab_size, steps = *rc::gen::inRange(1, 8);
    std::vector<int> prompt = *oracle::prop::gen_tokens(1, 12);
    int n_mates = *rc::gen::inRange(1, 4);
    std::vector<Mate> mates;
    for (int m = 0; m < n_mates; m++) {
      Mate mate{*oracle::prop::gen_tokens(1, 12), *rc::gen::inRange(0, steps), 0};
      mate.leave = *rc::gen::inRange(mate.join + 1, steps + 1);
      mates.push_back(mate);
    }
    // alone
    KvCache solo(c, KvCacheOptions{});
    std::vector<std::vector<float>> want;
    std::vector<float> logits = forward(model, solo, 0, prompt);
    for (int s = 0; s < steps; s++) {
      want.push_back(logits);
      int next = num::argmax_lowest(logits.data(), V);
      logits = forward(model, solo, 0, std::span<const int>(&next, 1));
    }
    // batched: paged cache with a random block size, sequence 0 is ours
    KvCacheOptions opt;
    opt.paged = true;
    opt.block_size = *oracle::prop::gen_block_size();
    opt.max_seqs = n_mates + 1;
    opt.prefix_cache = false;
    KvCache kv(c, opt);
    std::vector<int> last(n_mates + 1);
    logits = forward(model, kv, 0, prompt);
    for (int s = 0; s < steps; s++) {
      std::vector<int> seqs{0}, toks;
      RC_ASSERT(same_bits(logits.data(), want[(size_t)s].data(), V, "batched", s));
      last[0] = num::argmax_lowest(logits.data(), V);
      toks.push_back(last[0]);
      for (int m = 0; m < n_mates; m++) {
        const Mate& mate = mates[(size_t)m];
        if (s == mate.join) {
          std::vector<float> l = forward(model, kv, m + 1, mate.prompt);
          last[m + 1] = num::argmax_lowest(l.data(), V);
        }
        if (s == mate.leave) kv.release(m + 1);
        if (s >= mate.join && s < mate.leave) {
          seqs.push_back(m + 1);
          toks.push_back(last[m + 1]);
        }
      }
      std::vector<float> rows = forward_batch(model, kv, seqs, toks);
      for (size_t i = 1; i < seqs.size(); i++)
        last[(size_t)seqs[i]] = num::argmax_lowest(rows.data() + i * V, V);
      logits.assign(rows.begin(), rows.begin() + V);
    }
  });

  oracle::prop::check("prefill in one pass == random chunks == 1..3 threads (all positions' logits bits)", 1000, shapes, [&] {
    Config c = *oracle::prop::gen_config();
    Model model = oracle::prop::make_model(c, *rc::gen::inRange<uint64_t>(1, 1000));
    std::vector<int> prompt = *oracle::prop::gen_tokens(1, 90);
    shapes.add("prompt length", (long)prompt.size());
    shapes.add("dim", c.dim);
    const int V = c.vocab_size, n = (int)prompt.size();
    ForwardOptions all;
    all.all_logits = true;
    KvCache kv1(c, KvCacheOptions{});
    std::vector<float> want = forward(model, kv1, 0, prompt, all);
    all.threads = *rc::gen::inRange(1, 4);
    KvCache kv2(c, KvCacheOptions{});
    std::vector<float> got;
    for (int at = 0; at < n;) {
      int len = std::min(n - at, *rc::gen::inRange(1, 40));
      std::vector<float> part = forward(model, kv2, 0, std::span<const int>(prompt).subspan(at, len), all);
      got.insert(got.end(), part.begin(), part.end());
      at += len;
    }
    RC_ASSERT(got.size() == want.size());
    for (int t = 0; t < n; t++)
      RC_ASSERT(same_bits(got.data() + t * V, want.data() + t * V, V, "chunked prefill", t));
  });
}
