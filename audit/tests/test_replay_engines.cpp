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

#include <nlohmann/json.hpp>

#include "audit/replay/replay_adapters.h"
#include "audit/replay/replay_engines.h"
#include "base/errors.h"
#include "reference/compute/forward.h"
#include "reference/compute/kv_cache.h"
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
}
