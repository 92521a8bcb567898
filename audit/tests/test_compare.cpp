// oracle compare's logits comparison on real llama2xs logits: a dump against
// itself is zero everywhere; a planted one-ULP change is found at exactly its
// step; an argmax swap at a near-tie is a tie (pass), a swap with a real
// margin is a flip (fail); safetensors/npy readers round-trip.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include <nlohmann/json.hpp>

#include "audit/interop/compare.h"
#include "audit/interop/dumps.h"
#include "audit/interop/npy.h"
#include "reference/compute/forward.h"
#include "reference/compute/kv_cache.h"
#include "fixture.h"
#include "reference/model/model.h"
#include "numerics/numerics.h"
#include "reference/tokenizer/tokenizer.h"

using namespace oracle;

namespace {

struct Rows {
  std::vector<float> logits;  // (steps, vocab)
  std::vector<int> prompt, tokens;
  int vocab = 0;
};

const Rows& rows() {
  static const Rows r = [] {
    Rows x;
    const Model m = load_model(test::fixture("gguf/llama2xs.gguf"));
    Tokenizer tok(m.vocab);
    x.prompt = tok.encode("Once upon a time", true);
    x.vocab = m.config.vocab_size;
    std::vector<int> ids;  // greedy ids (each step's row only depends on the ids before it)
    for (int s = 0; s < 16; s++) {
      ids.push_back(0);
      const std::vector<float> l = teacher_forced_logits(m, x.prompt, ids);
      ids.back() = num::argmax_lowest(&l[(size_t)s * x.vocab], x.vocab);
    }
    x.tokens = ids;
    x.logits = teacher_forced_logits(m, x.prompt, ids);
    return x;
  }();
  return r;
}

int second_best(const float* x, int n, int best) {
  int s = best == 0 ? 1 : 0;
  for (int k = 0; k < n; k++)
    if (k != best && x[k] > x[s]) s = k;
  return s;
}

}  // namespace

TEST_CASE("a dump compared with itself: zero difference, pass") {
  const Rows& r = rows();
  const LogitsComparison c = compare_logit_rows(r.logits, r.logits, 16, r.vocab, r.tokens, {});
  CHECK(c.pass);
  CHECK(c.first_bit_diff == -1);
  CHECK(c.first_argmax_diff == -1);
  CHECK(c.kld_max == 0.0);
  CHECK(c.max_abs == 0.0);
  CHECK(c.max_ulp == 0);
  CHECK(c.top1_agree == 16);
}

TEST_CASE("a planted one-ULP change is found at exactly its step") {
  const Rows& r = rows();
  for (int step : {0, 7, 15}) {
    std::vector<float> got = r.logits;
    float& x = got[(size_t)step * r.vocab + 123];
    x = std::nextafter(x, INFINITY);
    const LogitsComparison c = compare_logit_rows(r.logits, got, 16, r.vocab, r.tokens, {});
    CHECK(c.first_bit_diff == step);
    CHECK(c.max_ulp == 1);
    CHECK(c.per_step[step].stats.first_diff == 123);
    CHECK(c.pass);  // one ULP is far inside every threshold
  }
  // --max-ulp 0 with one-ULP changes planted at steps 0, 7 and 15: each is a failure, the
  // first failing step is 0 (not a later one), one message per failing step.
  std::vector<float> got = r.logits;
  for (int step : {0, 7, 15}) {
    float& x = got[(size_t)step * r.vocab + 123];
    x = std::nextafter(x, INFINITY);
  }
  CompareThresholds t;
  t.max_ulp = 0;
  const LogitsComparison c = compare_logit_rows(r.logits, got, 16, r.vocab, r.tokens, t);
  CHECK_FALSE(c.pass);
  CHECK(c.first_failure == 0);
  CHECK(c.failures.size() == 3);
  // 16 failing steps: the sentences of the first 8 (compare.h), the first failure still 0.
  std::vector<float> all = r.logits;
  for (int step = 0; step < 16; step++) {
    float& x = all[(size_t)step * r.vocab + 123];
    x = std::nextafter(x, INFINITY);
  }
  const LogitsComparison c16 = compare_logit_rows(r.logits, all, 16, r.vocab, r.tokens, t);
  CHECK(c16.first_failure == 0);
  REQUIRE(c16.failures.size() == 8);
  for (int step = 0; step < 8; step++) CHECK(c16.failures[step].rfind("step " + std::to_string(step) + ":", 0) == 0);
}

TEST_CASE("an argmax swap at a near-tie is a tie; with a real margin it is a failure") {
  const Rows& r = rows();
  const int step = 5, v = r.vocab;
  std::vector<float> want = r.logits;
  float* w = &want[(size_t)step * v];
  const int a = num::argmax_lowest(w, v), b = second_best(w, v, a);
  w[b] = w[a] - 1e-5f;  // the reference itself is at a near-tie
  std::vector<float> got = want;
  std::swap(got[(size_t)step * v + a], got[(size_t)step * v + b]);
  LogitsComparison c = compare_logit_rows(want, got, 16, v, r.tokens, {});
  CHECK(c.first_argmax_diff == step);
  CHECK(c.per_step[step].tie);
  CHECK(c.ties == 1);
  CHECK(c.flips == 0);
  CHECK(c.per_step[step].margin <= c.per_step[step].tie_bound);
  CHECK(c.pass);
  // the real rows: the margin at step 5 is far beyond 2·1e-4·max|logit|
  std::vector<float> swapped = r.logits;
  const float* x = &r.logits[(size_t)step * v];
  const int a2 = num::argmax_lowest(x, v), b2 = second_best(x, v, a2);
  REQUIRE(x[a2] - x[b2] > 0.01f);
  std::swap(swapped[(size_t)step * v + a2], swapped[(size_t)step * v + b2]);
  c = compare_logit_rows(r.logits, swapped, 16, v, r.tokens, {});
  CHECK(c.first_argmax_diff == step);
  CHECK_FALSE(c.per_step[step].tie);
  CHECK(c.flips == 1);
  CHECK_FALSE(c.pass);
  CHECK(c.first_failure == step);
}

TEST_CASE("logits dumps round-trip through safetensors, and .npy logits are read") {
  const Rows& r = rows();
  const std::string p = (std::filesystem::temp_directory_path() / "oracle_compare_test.safetensors").string();
  write_safetensors(p, logits_dump({"m", "00", "11", "{}", "test", r.prompt}, r.tokens, r.logits, r.vocab));
  const LogitsInput in = read_logits_input(p);
  CHECK(in.steps == 16);
  CHECK(in.vocab == r.vocab);
  CHECK(in.token_ids == r.tokens);
  CHECK(in.prompt_ids == r.prompt);
  CHECK(std::memcmp(in.logits.data(), r.logits.data(), r.logits.size() * 4) == 0);
  CHECK(in.metadata.at("format") == "oracle-logits");
  std::filesystem::remove(p);
  // .npy version 1.0, <f4, shape (2, 3)
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  header.append(128 - 10 - header.size() - 1, ' ');  // data 64-byte aligned
  header += '\n';
  std::string npy = std::string("\x93NUMPY\x01\x00", 8);
  npy += (char)header.size();
  npy += '\0';
  npy += header;
  const float vals[6] = {1, 2, 3, 4, 5, -6.5f};
  npy.append((const char*)vals, sizeof vals);
  const NpyArray a = parse_npy(npy, "x.npy");
  CHECK(a.shape == std::vector<int64_t>{2, 3});
  CHECK(a.values[5] == -6.5);
  CHECK_THROWS(parse_npy(npy.substr(0, npy.size() - 1), "x.npy"));
}

// tensor_compare.h: ulp_distance counts the representable floats between a and b (+0 and -0
// one value; NaN against anything else UINT64_MAX). Brute force: walk from a to b with
// std::nextafter and count the steps, around 1, across zero (subnormals, both zeros) and up
// to infinity; the NaN cases as the header states them.
TEST_CASE("ulp_distance = the nextafter steps between two floats; NaN against a number is the maximum") {
  auto steps = [](float a, float b) {  // b >= a; == treats -0 and +0 as one value
    uint64_t n = 0;
    for (float x = a; x != b; n++) x = std::nextafter(x, INFINITY);
    return n;
  };
  const float starts[] = {1.0f, -1.0f, 0.0f, -0.0f, -4 * std::numeric_limits<float>::denorm_min(),
                          std::numeric_limits<float>::max(), std::numeric_limits<float>::min(), 3.5e-3f};
  for (float a : starts) {
    float b = a;
    for (int k = 0; k < 12; k++) {
      INFO(a << " -> " << b);
      CHECK(ulp_distance(a, b) == steps(a, b));
      CHECK(ulp_distance(b, a) == steps(a, b));
      b = std::nextafter(b, INFINITY);
    }
  }
  CHECK(ulp_distance(0.0f, -0.0f) == 0);
  CHECK(ulp_distance(std::numeric_limits<float>::max(), INFINITY) == 1);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (float x : {0.0f, 1.0f, -INFINITY, INFINITY}) {
    CHECK(ulp_distance(nan, x) == std::numeric_limits<uint64_t>::max());
    CHECK(ulp_distance(x, nan) == std::numeric_limits<uint64_t>::max());
  }
  CHECK(ulp_distance(nan, -nan) == 0);
}

// dumps.h: teacher_forced_logits row s = the logits after prompt + tokens[0..s) — the row
// that predicts tokens[s]. Recomputed here one step at a time (prefill the prompt, then feed
// each token into the cache): the same bits, as the forward pass is batch invariant.
TEST_CASE("teacher-forced logits rows are the step-by-step decode's logits") {
  const Rows& r = rows();
  const Model m = load_model(test::fixture("gguf/llama2xs.gguf"));
  KvCache kv(m.config, KvCacheOptions{});
  std::vector<float> l = forward(m, kv, 0, r.prompt);  // (vocab): predicts tokens[0]
  for (size_t s = 0; s < r.tokens.size(); s++) {
    INFO("step " << s);
    REQUIRE(l.size() == (size_t)r.vocab);
    CHECK(std::memcmp(l.data(), &r.logits[s * r.vocab], sizeof(float) * r.vocab) == 0);
    l = forward(m, kv, 0, std::vector<int>{r.tokens[s]});
  }
}

// tensor_compare.h: "blk.N.<op>" names layer N (every digit of N), anything else -1.
TEST_CASE("layer_of reads every digit of blk.N and nothing after it") {
  CHECK(layer_of("blk.12.attn_out") == 12);
  CHECK(layer_of("blk.0.ffn_down") == 0);
  CHECK(layer_of("blk.123.ffn_gate.weight") == 123);
  CHECK(layer_of("blk.7") == 7);
  CHECK(layer_of("blk.3.q8") == 3);
  CHECK(layer_of("blk.x.attn") == -1);
  CHECK(layer_of("blk.") == -1);
  CHECK(layer_of("output_norm") == -1);
  CHECK(layer_of("token_embd.blk.1") == -1);
}

// compare.h: the trace comparison names the first op that is not bit-identical and the first
// beyond max_nmse, by index into the trace — index 0 included (JSON null only when none).
TEST_CASE("trace comparison: an op beyond max_nmse at index 0 is named, by index") {
  const std::vector<TraceEntry> want = {{"blk.0.attn_norm", 0, {1.0f, 2.0f, 3.0f}}, {"blk.0.attn_q", 0, {4.0f, 5.0f}}};
  for (int at : {0, 1}) {
    std::vector<TraceEntry> got = want;
    got[at].values[0] *= 2.0f;  // NMSE 1/14 or 16/41: far beyond 1e-7
    const TraceComparison c = compare_trace_dumps(want, got, 1e-7);
    CHECK_FALSE(c.pass);
    CHECK(c.first_beyond == at);
    const nlohmann::json j = trace_comparison_json(c, want, got);
    REQUIRE(j["first_beyond"].is_object());
    CHECK(j["first_beyond"]["index"] == at);
    CHECK(j["first_beyond"]["op"] == want[at].name);
    CHECK(j["first_beyond"]["layer"] == 0);
    CHECK(j["first_divergent"]["index"] == at);
  }
  const nlohmann::json same = trace_comparison_json(compare_trace_dumps(want, want, 1e-7), want, want);
  CHECK(same["first_beyond"].is_null());
  CHECK(same["first_divergent"].is_null());
  CHECK(same["bit_exact"] == true);
}
