// The shared paged-KV block manager (reference/compute/kv_blocks.h) on its own,
// against a brute-force model, over random append / fork / attach_prefix /
// truncate / release sequences (tokens from {0, 1, 2} so prefixes repeat):
//  * contents: a recording storage keeps, for every slot, the token history
//    whose K/V a forward pass would have written there (ids 0 .. pos); after
//    every operation each position of each sequence must read its own history —
//    a write into a shared or cached block, or a prefix hit on a block with
//    another history, shows up as a wrong row;
//  * structure: token ids equal the model's; a sequence holds ceil(len / bs)
//    blocks; a block's refcount is the number of table entries naming it; the
//    free count is the pool minus the referenced blocks; a refused append
//    (blocks_needed > blocks_free) changes nothing;
//  * prefix hits (pool large enough that nothing is evicted): attach_prefix
//    attaches exactly the longest run of whole-block prefixes of the prompt that
//    some append has completed (capped at prompt.size() - 1 tokens).
// Directed cases pin the allocation and eviction order.
// Catches KV_COW_SHARED_WRITE, KV_PREFIX_OWN_BLOCK_KEY, PREFIX_COW_SKIPS_CACHED,
// PAGED_TRUNCATE_KEEPS_EXTRA_BLOCK.
#include <catch2/catch.hpp>
#include <rapidcheck/catch.h>

#include <set>
#include <string>
#include <vector>

#include "base/errors.h"
#include "property_tests/generators.h"
#include "reference/compute/kv_blocks.h"

using namespace oracle;

namespace {

using History = std::vector<int>;  // token ids 0 .. pos: what a slot's K/V depend on

// Storage that records, per slot, the history written there.
class RecordingStorage final : public KvBlockStorage {
 public:
  explicit RecordingStorage(int bs) : bs_(bs) {}
  void create_block(int block) override {
    RC_ASSERT(block == (int)slots_.size());  // ids handed out in increasing order
    slots_.emplace_back((size_t)bs_);
  }
  void copy_block(int dst, int src, int slots) override {
    for (int i = 0; i < slots; i++) slots_[dst][i] = slots_[src][i];
  }
  void write_row(int, int, int, std::span<const float>, std::span<const float>) override {}
  void read_row(int, int, int, std::span<float>, std::span<float>) const override {}
  History& at(int block, int slot) { return slots_[block][slot]; }

 private:
  int bs_;
  std::vector<std::vector<History>> slots_;  // (blocks created, bs)
};

struct World {
  int bs, max_seqs, n_blocks;
  bool no_eviction;  // the pool outlasts every allocation: the prefix model is exact
  RecordingStorage storage;
  KvBlocks kv;
  std::vector<History> seqs;   // the model: token ids per sequence
  std::set<History> prefixes;  // the model: every whole-block prefix an append completed
};

KvBlocksOptions options_of(int bs, int max_seqs, int n_blocks) {
  KvBlocksOptions o;
  o.max_seqs = max_seqs, o.block_size = bs, o.n_blocks = n_blocks, o.seq_len = 24, o.prefix_cache = true;
  return o;
}

// The forward pass after an append: positions [first, len) of `seq` get their histories.
void write_rows(World& w, int seq, int first) {
  const auto toks = w.kv.tokens(seq);
  const auto table = w.kv.block_table(seq);
  for (int p = first; p < (int)toks.size(); p++)
    w.storage.at(table[p / w.bs], p % w.bs) = History(toks.begin(), toks.begin() + p + 1);
}

void op_append(World& w, int seq) {
  std::vector<int> toks = *rc::gen::container<std::vector<int>>(*rc::gen::inRange(1, 7), rc::gen::inRange(0, 3));
  History& h = w.seqs[seq];
  if ((int)(h.size() + toks.size()) > w.kv.options().seq_len) return;
  const bool fits = w.kv.blocks_needed(seq, (int)toks.size()) <= w.kv.blocks_free();
  const int free_before = w.kv.blocks_free();
  try {
    const int first = w.kv.append(seq, toks);
    RC_ASSERT(fits);
    RC_ASSERT(first == (int)h.size());
  } catch (const InputError&) {
    RC_ASSERT(!fits);
    RC_ASSERT(w.kv.blocks_free() == free_before);
    return;
  }
  const int first = (int)h.size();
  h.insert(h.end(), toks.begin(), toks.end());
  for (int end = (first / w.bs + 1) * w.bs; end <= (int)h.size(); end += w.bs)
    w.prefixes.insert(History(h.begin(), h.begin() + end));
  write_rows(w, seq, first);
}

// The model's answer: the longest run of completed whole-block prefixes, at most size - 1 tokens.
int expected_attach(const World& w, const std::vector<int>& prompt) {
  int n = 0;
  while (n + w.bs <= (int)prompt.size() - 1 && w.prefixes.count(History(prompt.begin(), prompt.begin() + n + w.bs)))
    n += w.bs;
  return n;
}

void op_attach(World& w, int seq) {
  if (!w.seqs[seq].empty()) return;
  std::vector<int> prompt = *rc::gen::container<std::vector<int>>(*rc::gen::inRange(1, 14), rc::gen::inRange(0, 2));
  const int hits_before = w.kv.prefix_hits(), n = w.kv.attach_prefix(seq, prompt);
  RC_ASSERT(n % w.bs == 0);
  RC_ASSERT(n <= (int)prompt.size() - 1 || n == 0);
  RC_ASSERT(w.kv.prefix_hits() == hits_before + n / w.bs);
  if (w.no_eviction) RC_ASSERT(n == expected_attach(w, prompt));
  w.seqs[seq].assign(prompt.begin(), prompt.begin() + n);
}

void op_random(World& w) {
  const int seq = *rc::gen::inRange(0, w.max_seqs), op = *rc::gen::inRange(0, 10);
  if (op < 5) return op_append(w, seq);
  if (op == 5) {
    const int dst = *rc::gen::inRange(0, w.max_seqs);
    if (dst == seq || !w.seqs[dst].empty()) return;
    w.kv.fork(seq, dst);
    w.seqs[dst] = w.seqs[seq];
    return;
  }
  if (op == 6) return op_attach(w, seq);
  const int n = op == 9 ? 0 : *rc::gen::inRange(0, (int)w.seqs[seq].size() + 1);
  w.kv.truncate(seq, n);
  w.seqs[seq].resize((size_t)n);
}

void check_against_model(World& w) {
  std::vector<int> refs((size_t)w.n_blocks, 0);
  for (int s = 0; s < w.max_seqs; s++) {
    const History& h = w.seqs[s];
    const auto toks = w.kv.tokens(s);
    const auto table = w.kv.block_table(s);
    RC_ASSERT(History(toks.begin(), toks.end()) == h);
    RC_ASSERT((int)table.size() == ((int)h.size() + w.bs - 1) / w.bs);
    for (int b : table) refs[b]++;
    for (int p = 0; p < (int)h.size(); p++)
      RC_ASSERT(w.storage.at(table[p / w.bs], p % w.bs) == History(h.begin(), h.begin() + p + 1));
  }
  int used = 0;
  for (int b = 0; b < w.n_blocks; b++) {
    RC_ASSERT(w.kv.block_refcount(b) == refs[b]);
    used += refs[b] > 0;
  }
  RC_ASSERT(w.kv.blocks_free() == w.n_blocks - used);
}

}  // namespace

TEST_CASE("property: KV block manager against a brute-force model", "[property][kv][kv_blocks]") {
  oracle::prop::Shapes shapes;
  oracle::prop::check("random operations keep contents, refcounts and prefix hits of the model", 300, shapes, [&] {
    const int bs = *rc::gen::element(1, 2, 3, 4, 7), max_seqs = *rc::gen::inRange(2, 5);
    const bool no_eviction = *rc::gen::arbitrary<bool>();
    const int n_blocks = no_eviction ? 1000 : *rc::gen::inRange(3, 13);  // 1000 > every allocation of 80 ops
    World w{bs, max_seqs, n_blocks, no_eviction, RecordingStorage(bs), KvBlocks(options_of(bs, max_seqs, n_blocks), nullptr),
            std::vector<History>((size_t)max_seqs), {}};
    w.kv = KvBlocks(options_of(bs, max_seqs, n_blocks), &w.storage);
    const int n_ops = *rc::gen::inRange(10, 80);
    shapes.add("operations", n_ops);
    shapes.add("block size", bs);
    for (int i = 0; i < n_ops; i++) {
      op_random(w);
      check_against_model(w);
    }
  });
}

// ---- directed sequences -----------------------------------------------------------------------
namespace {

struct Fixture {
  RecordingStorage storage{2};
  KvBlocks kv;
  explicit Fixture(int n_blocks) : kv(options_of(2, 3, n_blocks), &storage) {}
  std::vector<int> table(int seq) const {
    const auto t = kv.block_table(seq);
    return {t.begin(), t.end()};
  }
};

}  // namespace

TEST_CASE("KV blocks: released blocks first (last released first), then new ids, then the oldest evictable",
          "[kv][kv_blocks]") {
  Fixture f(4);
  f.kv.append(0, std::vector<int>{0, 1, 2, 0});  // blocks 0, 1; both full, both cached
  f.kv.append(1, std::vector<int>{1});           // block 2
  CHECK(f.table(0) == std::vector<int>{0, 1});
  CHECK(f.table(1) == std::vector<int>{2});
  f.kv.truncate(1, 0);                           // 2 is released (not cached: partly filled)
  f.kv.append(2, std::vector<int>{2});           // reuses 2 before the never-used 3
  CHECK(f.table(2) == std::vector<int>{2});
  f.kv.truncate(0, 0);                           // 1 then 0 become evictable, in that order
  CHECK(f.kv.blocks_cached() == 2);
  CHECK(f.kv.blocks_free() == 3);
  f.kv.append(1, std::vector<int>{2, 2, 2, 2});  // never-used 3, then the oldest evictable: 1
  CHECK(f.table(1) == std::vector<int>{3, 1});
  CHECK(f.kv.blocks_cached() == 1);
  CHECK(f.kv.attach_prefix(0, std::vector<int>{0, 1, 2, 0, 1}) == 2);  // block 0 survived, block 1 was evicted
  CHECK(f.table(0) == std::vector<int>{0});
  CHECK(f.kv.block_refcount(0) == 1);
  CHECK_THROWS_WITH(f.kv.append(0, std::vector<int>{1, 1, 1}), Catch::Contains("max_tokens"));  // 2 blocks, 0 free
  CHECK(f.kv.length(0) == 2);
}

TEST_CASE("KV blocks: fork shares, the first write copies the partly filled block", "[kv][kv_blocks]") {
  Fixture f(8);
  f.kv.append(0, std::vector<int>{0, 1, 2});  // blocks 0 (full, cached), 1 (one slot)
  f.kv.fork(0, 1);
  CHECK(f.kv.block_refcount(0) == 2);
  CHECK(f.kv.block_refcount(1) == 2);
  CHECK(f.kv.blocks_needed(1, 1) == 1);  // the copy of block 1
  f.kv.append(1, std::vector<int>{1});
  CHECK(f.table(1) == std::vector<int>{0, 2});
  CHECK(f.kv.block_refcount(1) == 1);
  f.kv.truncate(1, 0);                   // block 2 evictable; block 0 unshared again
  f.kv.truncate(0, 1);                   // into the cached, unshared block 0; block 1 released
  CHECK(f.kv.block_refcount(0) == 1);
  CHECK(f.kv.blocks_needed(0, 1) == 1);  // cached: copied, not written in place
  f.kv.append(0, std::vector<int>{2});
  CHECK(f.table(0) == std::vector<int>{1});  // the released block 1 holds the copy
  CHECK(f.kv.blocks_cached() == 2);          // 2, then 0
  CHECK(f.kv.attach_prefix(2, std::vector<int>{0, 1, 9}) == 2);  // still the original [0 1]
  CHECK(f.table(2) == std::vector<int>{0});
}

TEST_CASE("KV blocks: errors name the owner's fields", "[kv][kv_blocks]") {
  Fixture f(2);
  CHECK_THROWS_WITH(f.kv.length(3), Catch::Contains("kv_cache: seq"));
  CHECK_THROWS_WITH(f.kv.truncate(0, 1), Catch::Contains("kv_cache: n"));
  CHECK_THROWS_WITH(f.kv.fork(0, 0), Catch::Contains("kv_cache: dst"));
  CHECK_THROWS_WITH(f.kv.block_refcount(2), Catch::Contains("kv_cache: block"));
  CHECK_THROWS_WITH(f.kv.append(0, std::vector<int>(25, 0)), Catch::Contains("kv_cache: position"));
  f.kv.append(0, std::vector<int>{0});
  CHECK_THROWS_WITH(f.kv.attach_prefix(0, std::vector<int>{0, 1}), Catch::Contains("kv_cache: seq"));
}
