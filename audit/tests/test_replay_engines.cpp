// Engine-log replay pieces that the real captures (cli_server_logs.sh) exercise
// only as a whole: SSE bodies assembled per request (chunks written here by
// hand in llama.cpp's server spelling), and the engine bound's tie rule on the
// real stories260K model — a greedy pick that is the reference's runner-up, g
// logits below its argmax (g recomputed here from forward()), is a tie
// (PLAUSIBLE, borderline [greedy]) under a bound b with 2b > g and DIVERGED
// (impossible [greedy]) with 2b < g; a logprob moved by more than b is
// DIVERGED, by less is PLAUSIBLE.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>

#include <nlohmann/json.hpp>

#include "audit/replay/replay_adapters.h"
#include "audit/replay/replay_calibration.h"
#include "audit/replay/replay_engines.h"
#include "base/errors.h"
#include "reference/compute/forward.h"
#include "reference/compute/kv_cache.h"
#include "reference/model/gguf.h"
#include "reference/tokenizer/chat_template.h"
#include "fixture.h"

using namespace oracle;
using nlohmann::json;

namespace {

using oracle::test::fixture;

struct Fixture {
  Model model;
  Tokenizer tok;
  Fixture()
      : model(load_model(fixture("stories260K/stories260K.bin"))),
        tok(load_llama2c_tokenizer(fixture("stories260K/tok512.bin"), model.config.vocab_size)) {}
  ReplayModel rm() const { return ReplayModel{model, tok, model.sha256, "t"}; }
};

const Fixture& fx() {
  static const Fixture f;
  return f;
}

std::string sse(const std::vector<json>& chunks) {
  std::string body;
  for (const json& c : chunks) body += "data: " + c.dump() + "\n\n";
  return body + "data: [DONE]\n\n";
}

ReplayOptions with_bound(double b) {
  ReplayOptions o;
  o.calibration_file = "cal.json";
  CalibrationEntry e;
  e.model = "stories260K.bin";
  e.model_sha256 = fx().model.sha256;
  e.numerics = "canonical";
  e.engine = "llamacpp-server";
  e.max_abs_diff = b / 2;
  e.bound = b;
  o.calibration = {e};
  return o;
}

}  // namespace

TEST_CASE("SSE bodies of the three llama.cpp server endpoints assemble into their responses", "[replay]") {
  const json step0 = {{"id", 7}, {"logprob", -0.5}, {"top_logprobs", json::array()}};
  const json step1 = {{"id", 9}, {"logprob", -0.25}, {"top_logprobs", json::array()}};
  SECTION("/completion") {
    const json line = {{"request", {{"prompt", "a"}, {"stream", true}}},
                       {"response", sse({{{"content", "x"}, {"stop", false}, {"completion_probabilities", {step0}}},
                                         {{"content", "y"}, {"stop", false}, {"completion_probabilities", {step1}}},
                                         {{"content", ""}, {"stop", true}, {"stop_type", "limit"}, {"tokens_evaluated", 2}}})}};
    REQUIRE(is_stream_line(line));
    int n = 0;
    const json r = assemble_stream(line, "F:1", &n).at("response");
    CHECK(n == 3);
    CHECK(r.at("content") == "xy");
    CHECK(r.at("completion_probabilities") == json::array({step0, step1}));
    CHECK(r.at("stop_type") == "limit");
    CHECK(engine_of(assemble_stream(line, "F:1")) == "llamacpp-server");
  }
  SECTION("/v1/chat/completions") {
    auto chunk = [](const json& delta, const json& lp, const json& finish) {
      json c = {{"index", 0}, {"delta", delta}, {"finish_reason", finish}};
      if (!lp.is_null()) c["logprobs"] = {{"content", {lp}}};
      return json{{"object", "chat.completion.chunk"}, {"choices", {c}}};
    };
    json last = chunk(json::object(), nullptr, "length");
    last["timings"] = {{"predicted_n", 2}};
    last["usage"] = {{"prompt_tokens", 5}};
    const json line = {{"request", {{"messages", json::array()}, {"stream", true}}},
                       {"response", sse({chunk({{"role", "assistant"}, {"content", nullptr}}, nullptr, nullptr),
                                         chunk({{"content", "x"}}, step0, nullptr), chunk({{"content", "y"}}, step1, nullptr),
                                         last})}};
    const json a = assemble_stream(line, "F:1");
    const json& c = a.at("response").at("choices").at(0);
    CHECK(a.at("response").at("object") == "chat.completion");
    CHECK(c.at("message").at("content") == "xy");
    CHECK(c.at("logprobs").at("content") == json::array({step0, step1}));
    CHECK(c.at("finish_reason") == "length");
    CHECK(a.at("response").at("usage").at("prompt_tokens") == 5);
    CHECK(engine_of(a) == "llamacpp-chat");
  }
  SECTION("a chunk that is not JSON or of no known shape names response.sse[k]") {
    json line = {{"request", json::object()}, {"response", "data: {\"content\": \"x\"}\n\ndata: {oops\n\n"}};
    try {
      assemble_stream(line, "F:1");
      FAIL("no error");
    } catch (const InputError& e) {
      CHECK(e.field() == "response.sse[1]");
    }
    line["response"] = "data: {\"object\": \"embedding\"}\n\n";
    CHECK_THROWS_AS(assemble_stream(line, "F:1"), InputError);
  }
}

TEST_CASE("the engine bound: a greedy runner-up is a tie within 2b of the argmax, DIVERGED beyond", "[replay]") {
  const Fixture& f = fx();
  const std::vector<int> prompt = f.tok.encode("Once upon a time", true);
  KvCache kv(f.model.config, KvCacheOptions{});
  const std::vector<float> logits = forward(f.model, kv, 0, prompt);  // (vocab)
  std::vector<int> order((size_t)f.model.config.vocab_size);
  for (size_t i = 0; i < order.size(); i++) order[i] = (int)i;
  std::sort(order.begin(), order.end(), [&](int a, int b) { return logits[(size_t)a] > logits[(size_t)b]; });
  const double gap = (double)logits[(size_t)order[0]] - (double)logits[(size_t)order[1]];  // argmax - runner-up
  REQUIRE(gap > 0.01);
  double lse = 0.0;
  for (float l : logits) lse += std::exp((double)l - (double)logits[(size_t)order[0]]);
  const double lp = (double)logits[(size_t)order[1]] - (double)logits[(size_t)order[0]] - std::log(lse);
  auto record = [&](double logprob) {
    const json line = {{"request", {{"prompt", prompt}, {"temperature", 0}, {"top_k", 0}, {"top_p", 1.0}, {"min_p", 0.0},
                                    {"n_predict", 1}, {"n_probs", 1}}},
                       {"response", {{"completion_probabilities", {{{"id", order[1]}, {"logprob", logprob}}}},
                                     {"stop_type", "limit"}}}};
    return LogLine{1, line.dump()};
  };
  const ReplayModel rm = f.rm();
  const ModelResolver one = single_model(rm);
  const RecordReport tie = replay_engine_line(record(lp), "F", one, with_bound(0.75 * gap));
  CHECK(tie.status == RecordStatus::Plausible);
  REQUIRE(tie.findings.size() == 1);
  CHECK(tie.findings[0].verdict == Verdict::Borderline);
  CHECK(tie.findings[0].reason == "greedy");
  CHECK(std::fabs(tie.findings[0].margin - gap) < 1e-5);
  const RecordReport beyond = replay_engine_line(record(lp), "F", one, with_bound(0.4 * gap));
  CHECK(beyond.status == RecordStatus::Diverged);
  CHECK(beyond.diverged_at == 0);
  CHECK(beyond.findings.at(0).verdict == Verdict::Impossible);
  // The logprob itself: moved by 0.9 b still PLAUSIBLE, by 1.1 b DIVERGED [logprob].
  const double b = 0.75 * gap;
  CHECK(replay_engine_line(record(lp - 0.9 * b), "F", one, with_bound(b)).status == RecordStatus::Plausible);
  const RecordReport moved = replay_engine_line(record(lp - 1.1 * b), "F", one, with_bound(b));
  CHECK(moved.status == RecordStatus::Diverged);
  CHECK(first_finding(moved, Verdict::LogprobMismatch) != nullptr);
  // Without a calibration the bound is --logprob-tol: the same runner-up is impossible.
  CHECK(replay_engine_line(record(lp), "F", one, ReplayOptions{}).status == RecordStatus::Diverged);

  // The logged alternatives (n_probs 2, raw logprobs: no post_sampling_probs): each compared
  // with the reference's value of the same id, within b; an id the reference's list does not
  // reach (it holds 2 n_probs + 4 = 8 ranks; rank 21 here) is DIVERGED [top_logprobs], unless it
  // is logged as impossible (below -1e30: a support question). Expected logprobs from the logits above: l_k - max - ln Σ e^(l - max).
  auto lp_of = [&](int rank) {
    return (double)logits[(size_t)order[rank]] - (double)logits[(size_t)order[0]] - std::log(lse);
  };
  auto with_top = [&](const json& top) {
    const json line = {{"request", {{"prompt", prompt}, {"temperature", 0}, {"top_k", 0}, {"top_p", 1.0}, {"min_p", 0.0},
                                    {"n_predict", 1}, {"n_probs", 2}}},
                       {"response", {{"completion_probabilities",
                                      {{{"id", order[0]}, {"logprob", lp_of(0)}, {"top_logprobs", top}}}},
                                     {"stop_type", "limit"}}}};
    return replay_engine_line(LogLine{1, line.dump()}, "F", one, with_bound(b));
  };
  auto top_finding = [](const RecordReport& r) {
    for (const TokenFinding& t : r.findings)
      if (t.reason == "top_logprobs") return true;
    return false;
  };
  const json exact = {{{"id", order[0]}, {"logprob", lp_of(0)}}, {{"id", order[1]}, {"logprob", lp_of(1)}}};
  const RecordReport ok = with_top(exact);
  CHECK(ok.status != RecordStatus::Diverged);
  CHECK_FALSE(top_finding(ok));
  json moved_top = exact;
  moved_top[1]["logprob"] = lp_of(1) - 1.1 * b;
  const RecordReport far_top = with_top(moved_top);
  CHECK(far_top.status == RecordStatus::Diverged);
  CHECK(top_finding(far_top));
  json outside = exact;
  outside.push_back({{"id", order[20]}, {"logprob", lp_of(20)}});
  const RecordReport not_in_top = with_top(outside);
  CHECK(not_in_top.status == RecordStatus::Diverged);
  REQUIRE(top_finding(not_in_top));
  CHECK_THAT(not_in_top.findings.back().detail, Catch::Matchers::Contains("not among the reference's top"));
  json impossible = exact;
  impossible.push_back({{"id", order[20]}, {"logprob", -1e31}});  // below -1e30: logged as impossible
  const RecordReport skipped = with_top(impossible);
  CHECK(skipped.status != RecordStatus::Error);
  std::string why;
  for (const TokenFinding& t : skipped.findings) why += t.reason + ": " + t.detail + "\n";
  INFO(why);
  CHECK_FALSE(top_finding(skipped));
}

// ============================================================================
// Sampler-step order of the engines whose semantics replay adopts (docs/replay.md,
// "Sampler order of vLLM and transformers", with the source of each order).
// For each order-sensitive pair a logit row is built whose candidate set
// differs between the two orders; the expected set is recomputed here by a
// naive float64 filter chain in the engine's cited order, and the chain replay
// builds (the vLLM adapter's SamplerConfig, the hf preset a foreign record
// names) must give exactly that set — and not the other order's.
// ============================================================================
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

struct NaiveParams {
  double temperature = 1.0, top_p = 1.0, min_p = 0.0, repetition_penalty = 1.0;
  int top_k = 0;
  std::vector<int> history;
};

// T, top-p, min-p, repetition penalty, top-k, the history the penalty counts.
NaiveParams params(double t, double p, double mp, double rp, int k, std::vector<int> h) {
  NaiveParams q;
  q.temperature = t, q.top_p = p, q.min_p = mp, q.repetition_penalty = rp, q.top_k = k, q.history = std::move(h);
  return q;
}

std::vector<double> naive_probs(const std::vector<double>& l) {
  double m = kNegInf, s = 0.0;
  for (double x : l) m = std::max(m, x);
  std::vector<double> p(l.size(), 0.0);
  for (size_t i = 0; i < l.size(); i++) s += (p[i] = l[i] == kNegInf ? 0.0 : std::exp(l[i] - m));
  for (double& x : p) x /= s;
  return p;
}

// One step by its textbook rule (HF/vLLM semantics), on logits with -inf = removed.
void naive_step(const std::string& name, const NaiveParams& q, std::vector<double>& l) {
  const size_t n = l.size();
  if (name == "temperature") {
    for (double& x : l) x = x == kNegInf ? x : x / q.temperature;
  } else if (name == "penalties") {
    for (size_t i = 0; i < n; i++)
      if (std::find(q.history.begin(), q.history.end(), (int)i) != q.history.end() && l[i] != kNegInf)
        l[i] = l[i] > 0 ? l[i] / q.repetition_penalty : l[i] * q.repetition_penalty;
  } else if (name == "top_k" && q.top_k > 0) {
    std::vector<double> s = l;
    std::sort(s.begin(), s.end(), std::greater<double>());
    for (double& x : l) if (x < s[q.top_k - 1]) x = kNegInf;  // ties at the k-th stay
  } else if (name == "top_p" && q.top_p < 1.0) {
    const std::vector<double> p = naive_probs(l);
    std::vector<size_t> asc(n);
    for (size_t i = 0; i < n; i++) asc[i] = i;
    std::stable_sort(asc.begin(), asc.end(), [&](size_t a, size_t b) { return p[a] < p[b]; });
    double cum = 0.0;
    for (size_t r = 0; r + 1 < n; r++) {  // the most likely always stays
      cum += p[asc[r]];
      if (cum <= 1.0 - q.top_p) l[asc[r]] = kNegInf;
      else break;
    }
  } else if (name == "min_p" && q.min_p > 0.0) {
    const std::vector<double> p = naive_probs(l);
    const double pmax = *std::max_element(p.begin(), p.end());
    for (size_t i = 0; i < n; i++) if (p[i] < q.min_p * pmax) l[i] = kNegInf;
  }
}

std::vector<int> naive_survivors(const std::vector<std::string>& order, const NaiveParams& q,
                                 std::vector<double> l) {
  for (const std::string& name : order) naive_step(name, q, l);
  std::vector<int> ids;
  for (size_t i = 0; i < l.size(); i++) if (l[i] != kNegInf) ids.push_back((int)i);
  return ids;
}

std::vector<int> chain_survivors(const SamplerConfig& cfg, const std::vector<double>& l, const std::vector<int>& history) {
  std::vector<float> logits(l.begin(), l.end());
  SamplingContext ctx{history, {cfg.seed, 0, (uint32_t)history.size()}};
  const SampleResult r = sample(build_chain(cfg), logits, ctx);
  std::vector<int> ids;
  for (const Candidate& c : r.processed.items) ids.push_back(c.id);
  return ids;
}

// A vLLM /v1/completions record with these request parameters and one logged token.
json vllm_record(const NaiveParams& q) {
  json req = {{"model", "stories260K"}, {"prompt", q.history}, {"max_tokens", 1}, {"temperature", q.temperature},
              {"top_p", q.top_p}, {"top_k", q.top_k}, {"min_p", q.min_p},
              {"repetition_penalty", q.repetition_penalty}, {"return_token_ids", true}};
  json resp = {{"object", "text_completion"}, {"model", "stories260K"}, {"prompt_token_ids", q.history},
               {"choices", json::array({{{"index", 0}, {"text", ""}, {"token_ids", {0}}, {"finish_reason", "length"}}})}};
  return {{"request", req}, {"response", resp}};
}

struct OrderCase {
  const char* pair;
  std::vector<double> logits;
  NaiveParams q;
  std::vector<std::string> other;  // the order the construction separates from the engine's
};

std::vector<double> ln(std::vector<double> p) {
  for (double& x : p) x = std::log(x);
  return p;
}

// vLLM v1 (docs/replay.md): penalties, temperature, min_p, top_k, top_p.
const std::vector<std::string> kVllmOrder = {"penalties", "temperature", "min_p", "top_k", "top_p"};
// transformers _get_logits_processor: repetition penalty, then temperature, top_k, top_p, min_p.
const std::vector<std::string> kHfOrder = {"penalties", "temperature", "top_k", "top_p", "min_p"};

}  // namespace

TEST_CASE("vLLM replay applies vLLM's sampler order on every order-sensitive pair", "[replay][order]") {
  std::vector<OrderCase> cases;
  // temperature before top_p: T = 0.5 sharpens [2, 1, 0] so that 0.867 >= 0.8 alone; after it
  // (llama.cpp's place) top_p sees 0.665 + 0.245 and keeps two.
  cases.push_back({"temperature < top_p", {2, 1, 0, -1}, params(0.5, 0.8, 0.0, 1.0, 0, {1, 3}),
                   {"penalties", "min_p", "top_k", "top_p", "temperature"}});
  // temperature before min_p: at T = 0.5 the runner-up's ratio is e^-3 = 0.050 < 0.1, at T = 1 e^-1.5 = 0.223.
  cases.push_back({"temperature < min_p", {0, -1.5, -9, -9}, params(0.5, 1.0, 0.1, 1.0, 0, {1, 3}),
                   {"penalties", "min_p", "temperature", "top_k", "top_p"}});
  // min_p before top_p: min_p 0.3 drops the 0.1; top_p 0.75 over the renormalised 0.444/0.333/0.222
  // drops the 0.222 (cum 0.222 <= 0.25); top_p first keeps 0.4/0.3/0.2 (cum 0.1 <= 0.25, 0.3 > 0.25).
  cases.push_back({"min_p < top_p", ln({0.4, 0.3, 0.2, 0.1}), params(1.0, 0.75, 0.3, 1.0, 0, {1, 3}),
                   {"penalties", "temperature", "top_k", "top_p", "min_p"}});
  // top_k before top_p: top_k 3 then top_p 0.75 over 0.444/0.333/0.222 keeps two; top_p first keeps three.
  cases.push_back({"top_k < top_p", ln({0.4, 0.3, 0.2, 0.1}), params(1.0, 0.75, 0.0, 1.0, 3, {1, 3}),
                   {"penalties", "temperature", "min_p", "top_p", "top_k"}});
  // penalties before top_k: token 0 (in the prompt) 2.0 -> 1.0 under penalty 2, so top_k 1 keeps token 1;
  // top_k first keeps token 0.
  cases.push_back({"penalties < top_k", {2.0, 1.9, 0, -1}, params(1.0, 1.0, 0.0, 2.0, 1, {0, 3}),
                   {"temperature", "min_p", "top_k", "top_p", "penalties"}});
  for (const OrderCase& c : cases) {
    INFO(c.pair);
    const std::vector<int> want = naive_survivors(kVllmOrder, c.q, c.logits);
    REQUIRE(want != naive_survivors(c.other, c.q, c.logits));  // the construction separates the orders
    const AdaptedRecord a = adapt_engine_record(vllm_record(c.q), "vllm.jsonl:1", fx().tok);
    REQUIRE(a.engine == "vllm-completions");
    REQUIRE(a.options.sampler.preset == Preset::Hf);
    CHECK(chain_survivors(a.options.sampler, c.logits, c.q.history) == want);
  }
}

TEST_CASE("hf replay applies transformers' sampler order on every order-sensitive pair", "[replay][order]") {
  std::vector<OrderCase> cases;
  // top_p before min_p (transformers) — the reverse of vLLM: the same row and parameters as vLLM's
  // "min_p < top_p" case keep three tokens here, two there.
  cases.push_back({"top_p < min_p", ln({0.4, 0.3, 0.2, 0.1}), params(1.0, 0.75, 0.3, 1.0, 0, {1, 3}),
                   kVllmOrder});
  cases.push_back({"temperature < top_p", {2, 1, 0, -1}, params(0.5, 0.8, 0.0, 1.0, 0, {1, 3}),
                   {"penalties", "top_k", "top_p", "min_p", "temperature"}});
  cases.push_back({"temperature < min_p", {0, -1.5, -9, -9}, params(0.5, 1.0, 0.1, 1.0, 0, {1, 3}),
                   {"penalties", "top_k", "top_p", "min_p", "temperature"}});
  cases.push_back({"top_k < top_p", ln({0.4, 0.3, 0.2, 0.1}), params(1.0, 0.75, 0.0, 1.0, 3, {1, 3}),
                   {"penalties", "temperature", "top_p", "top_k", "min_p"}});
  cases.push_back({"penalties < top_k", {2.0, 1.9, 0, -1}, params(1.0, 1.0, 0.0, 2.0, 1, {0, 3}),
                   {"temperature", "top_k", "top_p", "min_p", "penalties"}});
  for (const OrderCase& c : cases) {
    INFO(c.pair);
    const std::vector<int> want = naive_survivors(kHfOrder, c.q, c.logits);
    REQUIRE(want != naive_survivors(c.other, c.q, c.logits));
    SamplerConfig cfg;  // what a foreign record with "preset": "hf" replays under (replay_foreign.cpp)
    cfg.preset = Preset::Hf;
    cfg.order = preset_order(Preset::Hf);
    cfg.temperature = (float)c.q.temperature;
    cfg.top_p = (float)c.q.top_p;
    cfg.top_k = c.q.top_k;
    cfg.min_p = (float)c.q.min_p;
    cfg.repetition_penalty = (float)c.q.repetition_penalty;
    CHECK(chain_survivors(cfg, c.logits, c.q.history) == want);
  }
}

// replay_calibration.h: the entry of a calibration log is mean and max |logged - reference|
// over every compared logprob, bound = 3 x max (docs/replay.md); one compared value is
// enough, none is refused naming "calibration".
TEST_CASE("calibrate: one compared logprob is enough, none is refused", "[replay]") {
  RecordReport one;
  one.line = 1;
  one.mode = "llamacpp-server";
  one.status = RecordStatus::Plausible;
  one.n_logprobs = 1;
  one.sum_logprob_diff = one.max_logprob_diff = 0.25;
  const CalibrationEntry e = calibrate({one}, "m/x.gguf", "ab", num::NumericsProfile::Canonical, "cal.jsonl", "cd");
  CHECK(e.values == 1);
  CHECK(e.records == 1);
  CHECK(e.model == "x.gguf");
  CHECK(e.engine == "llamacpp-server");
  CHECK(e.mean_abs_diff == 0.25);
  CHECK(e.max_abs_diff == 0.25);
  CHECK(e.bound == 0.75);
  RecordReport none = one;
  none.n_logprobs = 0;
  none.sum_logprob_diff = none.max_logprob_diff = 0.0;
  try {
    calibrate({none, none}, "m/x.gguf", "ab", num::NumericsProfile::Canonical, "cal.jsonl", "cd");
    FAIL("a calibration without a compared logprob was accepted");
  } catch (const InputError& err) {
    CHECK(err.field() == "calibration");
  }
}

// A vLLM request field that changes sampling in a way the reference does not implement is
// accepted only while it is off (docs/replay.md): null, false, [], {} and "" are off; anything
// else refuses the record naming request.<field>.
TEST_CASE("vLLM off-only request fields: accepted while off, refused naming the field otherwise", "[replay]") {
  NaiveParams q;
  q.history = {1, 7, 42};
  for (const json& off : {json(nullptr), json(false), json::array(), json::object(), json("")})
    for (const char* key : {"echo", "use_beam_search", "guided_json", "allowed_token_ids"}) {
      json line = vllm_record(q);
      line["request"][key] = off;
      INFO(key << " = " << off.dump());
      CHECK_NOTHROW(adapt_engine_record(line, "vllm.jsonl:1", fx().tok));
    }
  for (const json& on : {json(true), json::array({3}), json("x"), json(1)}) {
    json line = vllm_record(q);
    line["request"]["use_beam_search"] = on;
    try {
      adapt_engine_record(line, "vllm.jsonl:1", fx().tok);
      FAIL("use_beam_search " << on.dump() << " accepted");
    } catch (const InputError& e) {
      CHECK(e.field() == "request.use_beam_search");
    }
  }
}

// A chat request is rendered as the engines render it: the model's own template through Jinja.
// Expected: jinja2 3.1.6's rendering of each of the 15 templates (chat_jinja_expected.json, written
// by reference/tests/data/gen_chat_jinja.py, never by us), tokenized by SmolLM2's tokenizer with
// the template's bos_token text removed once, as the generator does. On 9 of the 15 templates
// the built-in formatter renders some of these conversations differently (e.g. Phi-3-mini drops
// the system turn), so a replay through it would call an honest engine DIVERGED.
TEST_CASE("replay renders chat requests with the model's template through Jinja", "[replay][chat]") {
  std::ifstream in(std::string(ORACLE_CHAT_DATA_DIR) + "/chat_jinja_expected.json", std::ios::binary);
  REQUIRE(in.good());
  const json d = json::parse(std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()));
  const Vocab base = load_gguf_vocab(fixture("smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"));
  int checked = 0, builtin_differs = 0;
  for (const json& t : d.at("templates")) {
    Vocab v = base;
    v.chat_template = t.at("template").get<std::string>();
    v.tokens[(size_t)v.bos_id] = "<s>";  // the generator's bos_token / eos_token texts
    v.tokens[(size_t)v.eos_id] = "</s>";
    v.add_bos = true;  // so the template's leading bos_token text is removed once, as the generator does
    v.add_eos = false;
    const Tokenizer tok(v);
    for (const json& r : t.at("renders")) {
      if (!r.contains("expected")) continue;  // jinja2 refused this conversation
      json req = {{"messages", d.at("conversations").at(r.at("conversation").get<size_t>())},
                  {"add_generation_prompt", r.at("add_generation_prompt")}};
      std::string format;
      const std::vector<int> ours = render_chat_prompt(req, tok, "log.jsonl:1", &format);
      const std::vector<int> want = tok.encode(r.at("expected").get<std::string>(), EncodeOptions{true, false, true});
      INFO(t.at("name").get<std::string>() << ", conversation " << r.at("conversation"));
      CHECK(format == "jinja");
      CHECK(ours == want);
      checked++;
      ChatTemplate b;
      if (detect_chat_template(v.chat_template, &b)) {
        std::vector<ChatMessage> m;
        for (const json& e : req.at("messages")) m.push_back({e.at("role"), e.at("content")});
        if (render_chat(b, m, r.at("add_generation_prompt").get<bool>()) != r.at("expected").get<std::string>())
          builtin_differs++;
      }
    }
  }
  CHECK(checked > 1500);
  CHECK(builtin_differs > 0);  // the reason this test exists
}
