// The sampling-tuple log and its replay on the real stories260K model: 200
// mixed generations (both presets, every processor, stops, unicode prompts)
// replay as MATCH; an edited token is flagged at exactly its index; a lowered
// top_p is flagged impossible at the first token outside the new nucleus
// (nucleus recomputed here in double from forward()); garbled lines are
// reported by line number while the rest still replay; jobs 1 == jobs 2;
// foreign OpenAI-style records with logprobs; strict schema errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <unistd.h>
#include <fstream>

#include <nlohmann/json.hpp>

#include "base/errors.h"
#include "reference/compute/forward.h"
#include "reference/compute/kv_cache.h"
#include "audit/replay/replay.h"
#include "base/sha256.h"
#include "fixture.h"

using namespace oracle;
using nlohmann::json;

namespace {

using oracle::test::fixture;

// stories260K + tok512, loaded once per process.
struct Fixture {
  Model model;
  Tokenizer tok;
  ModelIdentity id;
  Fixture()
      : model(load_model(fixture("stories260K/stories260K.bin"))),
        tok(load_llama2c_tokenizer(fixture("stories260K/tok512.bin"), model.config.vocab_size)) {
    id = {model.path, model.sha256, fixture("stories260K/tok512.bin"),
          sha256_file(fixture("stories260K/tok512.bin")), model.config.seq_len};
  }
  ReplayModel rm() const { return ReplayModel{model, tok, id.model_sha256, id.tokenizer_sha256}; }
  LogRecord run(const std::string& prompt, const GenerateOptions& o) const {
    return make_log_record("test", id, prompt, o, generate(model, tok, prompt, o));
  }
};

const Fixture& fx() {
  static const Fixture f;
  return f;
}

std::string temp_path(const std::string& name) {
  // the process id: concurrent runs (other worktrees, ctest -j) must not share a file
  const std::string file = "oracle_test_replay_" + std::to_string(getpid()) + "_";
  return (std::filesystem::temp_directory_path() / (file + name)).string();
}

std::vector<LogLine> to_lines(const std::vector<std::string>& texts) {
  std::vector<LogLine> lines;
  for (size_t i = 0; i < texts.size(); i++) lines.push_back({(int)i + 1, texts[i]});
  return lines;
}

// ---- 200 mixed tuples ---------------------------------------------------------------
const std::vector<std::string> kPrompts = {"Once upon a time", "Lily and Tom 🌟 went", "Ça va? naïve café",
                                           "日本語のテキスト", "", "The cat sat on the", "Ωμέγα — «ok»",
                                           "One day, a big dog"};

GenerateOptions mixed_options(int i) {
  GenerateOptions o;
  o.max_tokens = 6 + i % 5;
  SamplerConfig& s = o.sampler;
  s = preset_config(i % 2 ? Preset::Hf : Preset::LlamaCpp);
  s.temperature = i % 5 == 0 ? 0.0f : std::vector<float>{0.7f, 1.0f, 1.3f, 0.9f}[(size_t)i % 4];
  s.top_k = std::vector<int>{0, 5, 40}[(size_t)i % 3];
  s.top_p = std::vector<float>{1.0f, 0.9f, 0.6f, 0.95f}[(size_t)(i / 3) % 4];
  s.min_p = std::vector<float>{0.0f, 0.05f, 0.2f}[(size_t)(i / 2) % 3];
  if (i % 4 == 1) {
    s.repetition_penalty = 1.3f;
    s.frequency_penalty = 0.2f;
    s.presence_penalty = 0.1f;
    s.penalty_window = 16;
  }
  if (i % 7 == 2) s.logit_bias = {{(i * 37) % 512, 3.0f}, {(i * 11) % 512, -2.0f}};
  if (i % 6 == 3) s.banned_tokens = {(i * 13) % 512 + 3, 100};
  if (i % 11 == 4) s.order = {Processor::Temperature, Processor::MinP,   Processor::TopP,     Processor::TopK,
                             Processor::Penalties,   Processor::Banned, Processor::LogitBias};
  if (i % 10 == 7) s.min_keep = 3;
  s.seed = 1000u + (uint64_t)i * 7919u;
  o.seq_id = (uint32_t)(i % 3);
  if (i % 4 == 0) o.stop_strings = {".", " the"};
  if (i % 9 == 0) o.stop_token_ids = {(i * 29) % 512};
  if (i % 13 == 5) o.stop_on_eos = false;
  return o;
}

std::vector<LogRecord> mixed_records(int n) {
  std::vector<LogRecord> recs;
  for (int i = 0; i < n; i++) recs.push_back(fx().run(kPrompts[(size_t)i % kPrompts.size()], mixed_options(i)));
  return recs;
}

std::vector<std::string> to_texts(const std::vector<LogRecord>& recs) {
  std::vector<std::string> t;
  for (const LogRecord& r : recs) t.push_back(record_to_line(r));
  return t;
}

void require_all_match(const std::vector<RecordReport>& reps) {
  for (const RecordReport& r : reps) {
    INFO("line " << r.line << ": " << replay_summary_table({r}));
    REQUIRE(r.status == RecordStatus::Match);
  }
}

// Replaces token `index` of a logged line by `id` (output_ids and its step).
std::string with_token(const std::string& line, int index, int id) {
  json j = json::parse(line);
  j["output_ids"][(size_t)index] = id;
  j["steps"][(size_t)index]["token"] = id;
  j["steps"][(size_t)index]["logprobs"]["token"] = id;
  return j.dump();
}

}  // namespace

// ============================================================================
TEST_CASE("200 mixed logged generations written by the log writer replay as MATCH", "[replay]") {
  const std::vector<LogRecord> recs = mixed_records(200);
  const std::string path = temp_path("mixed.jsonl");
  std::filesystem::remove(path);
  for (const LogRecord& r : recs) append_log_record(path, r);
  const std::vector<LogLine> lines = read_log_lines(path);
  REQUIRE(lines.size() == 200);
  int stopped = 0, greedy = 0, hf = 0;
  for (size_t i = 0; i < recs.size(); i++) {
    // Round trip through the strict reader is exact.
    LogRecord back = parse_log_line(lines[i].text, path + ":" + std::to_string(i + 1));
    REQUIRE(record_to_json(back) == record_to_json(recs[i]));
    stopped += recs[i].finish_reason == "stop";
    greedy += recs[i].sampler.temperature <= 0.0f;
    hf += recs[i].sampler.preset == Preset::Hf;
  }
  CHECK(stopped > 10);  // the mix really exercises stops
  CHECK(greedy == 40);
  CHECK(hf == 100);
  ReplayOptions o;
  o.mode = ReplayMode::Own;
  require_all_match(replay_lines(lines, path, fx().rm(), o));
  std::filesystem::remove(path);
}

TEST_CASE("one changed token id is flagged at exactly that index, not reproducible", "[replay]") {
  // A sampled record with at least 8 tokens whose step 4 has an alternative in the support.
  GenerateOptions o = mixed_options(3);
  o.max_tokens = 10;
  o.stop_strings.clear();
  o.stop_on_eos = false;
  const LogRecord rec = fx().run("Once upon a time", o);
  REQUIRE(rec.output_ids.size() == 10);
  const int index = 4, original = rec.output_ids[index];
  int alt = -1;
  for (const TokenLogprob& t : rec.steps[index].logprobs.processed_top)
    if (t.id != original && alt < 0) alt = t.id;
  REQUIRE(alt >= 0);
  ReplayOptions ro;
  const RecordReport rep = replay_line({1, with_token(record_to_line(rec), index, alt)}, "edited.jsonl", fx().rm(), ro);
  INFO(replay_summary_table({rep}));
  REQUIRE(rep.status == RecordStatus::Diverged);
  REQUIRE(rep.diverged_at == index);
  REQUIRE(rep.findings.front().index == index);
  CHECK(rep.findings.front().verdict == Verdict::NotReproducible);
  CHECK(rep.findings.front().logged == alt);
  CHECK(rep.findings.front().reproduced == original);  // same history up to here: our own draw
  CHECK(rep.findings.front().processed_rank >= 1);
}

// Raw logits at every logged step, recomputed here with forward().
std::vector<std::vector<float>> step_logits(const LogRecord& rec) {
  KvCache kv(fx().model.config, KvCacheOptions{});
  std::vector<std::vector<float>> rows{forward(fx().model, kv, 0, rec.prompt_ids)};
  for (size_t i = 0; i + 1 < rec.output_ids.size(); i++)
    rows.push_back(forward(fx().model, kv, 0, std::span<const int>(&rec.output_ids[i], 1)));
  return rows;
}

// Mass (double softmax) ranked strictly above `token`; ties by lower id.
double mass_above(const std::vector<float>& logits, int token) {
  double m = logits[0];
  for (float x : logits) m = std::max(m, (double)x);
  double z = 0.0;
  for (float x : logits) z += std::exp((double)x - m);
  double above = 0.0;
  for (size_t i = 0; i < logits.size(); i++) {
    bool before = logits[i] > logits[(size_t)token] || (logits[i] == logits[(size_t)token] && (int)i < token);
    if (before) above += std::exp((double)logits[i] - m) / z;
  }
  return above;
}

TEST_CASE("a top_p lowered after the fact is impossible at the first token outside the new nucleus", "[replay]") {
  GenerateOptions o;
  o.max_tokens = 24;
  o.stop_on_eos = false;
  o.sampler.preset = Preset::LlamaCpp;  // neutral config: T 1, every filter off
  o.sampler.seed = 77;
  const LogRecord rec = fx().run("Once upon a time", o);
  const float new_p = 0.5f;
  const std::vector<std::vector<float>> rows = step_logits(rec);
  int expected = -1;
  double expected_margin = 0.0;
  for (size_t i = 0; i < rows.size() && expected < 0; i++) {
    double above = mass_above(rows[i], rec.output_ids[i]);
    if (above >= new_p) expected = (int)i, expected_margin = above - new_p;
  }
  REQUIRE(expected >= 0);
  REQUIRE(expected_margin > 1e-3);  // clearly outside: impossible, not borderline
  json j = json::parse(record_to_line(rec));
  j["sampler"]["top_p"] = new_p;
  const RecordReport rep = replay_line({1, j.dump()}, "lowered.jsonl", fx().rm(), ReplayOptions{});
  INFO(replay_summary_table({rep}) << " expected index " << expected);
  REQUIRE(rep.status == RecordStatus::Diverged);
  const TokenFinding* imp = first_finding(rep, Verdict::Impossible);
  REQUIRE(imp != nullptr);
  CHECK(imp->index == expected);
  CHECK(imp->reason == "top_p");
  CHECK(std::fabs(imp->margin - expected_margin) < 1e-5);
  CHECK(first_finding(rep, Verdict::Borderline) == nullptr);
  CHECK(rep.diverged_at <= expected);

  // With a tolerance just above that token's margin it is borderline instead.
  ReplayOptions wide;
  wide.prob_tolerance = expected_margin + 1e-5;
  const RecordReport near = replay_line({1, j.dump()}, "lowered.jsonl", fx().rm(), wide);
  const TokenFinding* b = first_finding(near, Verdict::Borderline);
  REQUIRE(b != nullptr);
  CHECK(b->index == expected);
  CHECK(b->detail.find("within the tolerance") != std::string::npos);
  CHECK(near.status == RecordStatus::Diverged);  // own log: borderline still fails
}

TEST_CASE("garbled lines are reported with their line numbers; the others still replay", "[replay]") {
  std::vector<std::string> texts = to_texts(mixed_records(8));
  texts[4] = texts[4].substr(0, texts[4].size() / 2);  // truncated
  json j = json::parse(texts[6]);
  j["sampler"]["top_p"] = "high";  // wrong type
  texts[6] = j.dump();
  texts[2] = "{\"hello\": 1}";  // neither an own nor a foreign record
  const std::vector<RecordReport> reps = replay_lines(to_lines(texts), "g.jsonl", fx().rm(), ReplayOptions{});
  REQUIRE(reps.size() == texts.size());  // records in == records reported
  CHECK(reps[4].status == RecordStatus::Error);
  CHECK(reps[4].error.find("g.jsonl:5: json:") == 0);
  CHECK(reps[6].status == RecordStatus::Error);
  CHECK(reps[6].error.find("g.jsonl:7: sampler.top_p:") == 0);
  CHECK(reps[2].status == RecordStatus::Error);
  CHECK(reps[2].error.find("g.jsonl:3: record:") == 0);
  for (int i : {0, 1, 3, 5, 7}) {
    INFO("line " << i + 1 << " " << reps[(size_t)i].error);
    CHECK(reps[(size_t)i].status == RecordStatus::Match);
  }
  CHECK(replay_summary_table(reps).find("records: 8 in, 8 reported, 3 failed") != std::string::npos);
}

TEST_CASE("replay reports are identical with 1 and 2 jobs", "[replay]") {
  std::vector<std::string> texts = to_texts(mixed_records(12));
  texts[3] = with_token(texts[3], 1, 7);
  texts[9] = "not json";
  ReplayOptions a, b;
  b.jobs = 2;
  const json ra = replay_report_json(replay_lines(to_lines(texts), "j.jsonl", fx().rm(), a), "j.jsonl", a);
  const json rb = replay_report_json(replay_lines(to_lines(texts), "j.jsonl", fx().rm(), b), "j.jsonl", a);
  CHECK(ra == rb);
  CHECK(ra["summary"]["records"] == 12);
  CHECK(ra["summary"]["error"] == 1);
  CHECK(ra["summary"]["diverged"] == 1);
}

// ============================================================================
// Foreign records
// ============================================================================
namespace {

// An OpenAI-style completion record of one of our generations (raw logprobs).
json foreign_record(const LogRecord& rec) {
  json lps = json::array();
  for (const GenerationStep& s : rec.steps) lps.push_back(s.logprobs.raw_logprob);
  const SamplerConfig& s = rec.sampler;
  return json{{"id", "cmpl-1"},
              {"object", "text_completion"},
              {"prompt", rec.prompt},
              {"preset", preset_name(s.preset)},
              {"temperature", s.temperature},
              {"top_k", s.top_k},
              {"top_p", s.top_p},
              {"min_p", s.min_p},
              {"seed", 4242},  // another engine's RNG: draws are not comparable
              {"max_tokens", rec.stop.max_tokens},
              {"choices", {{{"text", rec.text}, {"token_ids", rec.output_ids}, {"finish_reason", rec.finish_reason},
                            {"logprobs", {{"token_logprobs", lps}}}}}}};
}

}  // namespace

TEST_CASE("foreign OpenAI-style records: support and logprobs within tolerance", "[replay]") {
  GenerateOptions o;
  o.max_tokens = 12;
  o.stop_on_eos = false;
  o.sampler = preset_config(Preset::LlamaCpp);
  o.sampler.seed = 5;
  const LogRecord rec = fx().run("One day, a big dog", o);
  ReplayOptions ro;  // auto mode picks "foreign" from "choices"
  json f = foreign_record(rec);
  RecordReport rep = replay_line({1, f.dump()}, "f.jsonl", fx().rm(), ro);
  INFO(replay_summary_table({rep}));
  REQUIRE(rep.mode == "foreign");
  REQUIRE(rep.status == RecordStatus::Plausible);
  CHECK(first_finding(rep, Verdict::Impossible) == nullptr);

  SECTION("a logprob off by more than the tolerance is flagged at its index") {
    f["choices"][0]["logprobs"]["token_logprobs"][5] = rec.steps[5].logprobs.raw_logprob + 0.5;
    f["choices"][0]["logprobs"]["token_logprobs"][7] = rec.steps[7].logprobs.raw_logprob + 0.5 * ro.logprob_tolerance;
    rep = replay_line({1, f.dump()}, "f.jsonl", fx().rm(), ro);
    REQUIRE(rep.status == RecordStatus::Diverged);
    REQUIRE(rep.diverged_at == 5);
    REQUIRE(first_finding(rep, Verdict::LogprobMismatch) != nullptr);
    CHECK(first_finding(rep, Verdict::LogprobMismatch)->index == 5);
    CHECK(std::fabs(first_finding(rep, Verdict::LogprobMismatch)->margin - 0.5) < 1e-4);
  }
  SECTION("the first implausible token is where the record diverged, also at index 0") {
    for (int i : {0, 5, 9}) f["choices"][0]["logprobs"]["token_logprobs"][i] = rec.steps[i].logprobs.raw_logprob + 0.5;
    rep = replay_line({1, f.dump()}, "f.jsonl", fx().rm(), ro);
    REQUIRE(rep.status == RecordStatus::Diverged);
    CHECK(rep.diverged_at == 0);
  }
  SECTION("a stated top_k of 1 makes the first non-argmax token impossible") {
    f["top_k"] = 1;
    int first = -1;
    for (size_t i = 0; i < rec.steps.size() && first < 0; i++)
      if (rec.steps[i].logprobs.raw_rank != 1) first = (int)i;
    REQUIRE(first >= 0);
    rep = replay_line({1, f.dump()}, "f.jsonl", fx().rm(), ro);
    REQUIRE(rep.status == RecordStatus::Diverged);
    REQUIRE(rep.diverged_at == first);
    CHECK(first_finding(rep, Verdict::Impossible)->reason == "top_k");
    // The margin is the logit gap to the argmax: the raw log-softmax gap.
    const float gap = rec.steps[(size_t)first].logprobs.raw_top[0].logprob - rec.steps[(size_t)first].logprobs.raw_logprob;
    CHECK(std::fabs(first_finding(rep, Verdict::Impossible)->margin - gap) < 1e-4);
    // A logit tolerance beyond that gap makes it borderline, which a foreign record may be.
    ReplayOptions wide = ro;
    wide.logit_tolerance = gap + 1e-3;
    rep = replay_line({1, f.dump()}, "f.jsonl", fx().rm(), wide);
    REQUIRE(first_finding(rep, Verdict::Borderline) != nullptr);
    CHECK(first_finding(rep, Verdict::Borderline)->index == first);
  }
  SECTION("a record for another model is an error naming model_sha256") {
    f["model_sha256"] = std::string(64, 'a');
    rep = replay_line({3, f.dump()}, "f.jsonl", fx().rm(), ro);
    CHECK(rep.status == RecordStatus::Error);
    CHECK(rep.error.find("f.jsonl:3: model_sha256:") == 0);
  }
}

// ============================================================================
// Strict schema, identity, stops
// ============================================================================
TEST_CASE("the strict reader names the line and the field", "[replay]") {
  const LogRecord rec = mixed_records(1)[0];
  const json good = record_to_json(rec);
  auto error_of = [](const json& j) -> std::string {
    try {
      record_from_json(j, "x.jsonl:9");
    } catch (const InputError& e) {
      CHECK(e.file() == "x.jsonl:9");
      return e.field();
    }
    return "(accepted)";
  };
  json j = good;
  j.erase("seq_id");
  CHECK(error_of(j) == "seq_id");
  j = good;
  j["extra"] = 1;
  CHECK(error_of(j) == "extra");
  j = good;
  j["version"] = 2;
  CHECK(error_of(j) == "version");
  j = good;
  j["stop"]["max_tokens"] = "ten";
  CHECK(error_of(j) == "stop.max_tokens");
  j = good;
  j["sampler"].erase("seed");
  CHECK(error_of(j) == "sampler.seed");
  j = good;  // the sampler's own parser names the key; the reader puts it under the log's line
  j["sampler"]["preset"] = "bogus";
  CHECK(error_of(j) == "sampler.preset");
  j = good;
  j["sampler"]["order"] = json::array();
  CHECK(error_of(j) == "sampler.order");
  j = good;
  j["steps"][0]["logprobs"]["raw"]["rank"] = 1.5;
  CHECK(error_of(j) == "steps[0].logprobs.raw.rank");
  j = good;
  j["model"]["sha256"] = "abc";
  CHECK(error_of(j) == "model.sha256");
  j = good;
  j["output_ids"].push_back(3);
  CHECK(error_of(j) == "steps");
  j = good;
  j["finish_reason"] = "length";
  j["stop_detail"] = "eos";
  CHECK(error_of(j) == "stop_detail");
  CHECK(error_of(good) == "(accepted)");
}

TEST_CASE("a replay model with another hash is an error naming the field", "[replay]") {
  const LogRecord rec = mixed_records(1)[0];
  ReplayModel other{fx().model, fx().tok, std::string(64, '0'), fx().id.tokenizer_sha256};
  const RecordReport rep = replay_line({2, record_to_line(rec)}, "m.jsonl", other, ReplayOptions{});
  CHECK(rep.status == RecordStatus::Error);
  CHECK(rep.error.find("m.jsonl:2: model.sha256:") == 0);
}

TEST_CASE("a token logged after a stop is impossible", "[replay]") {
  GenerateOptions o;
  o.max_tokens = 40;
  o.sampler.temperature = 0.0f;
  o.stop_strings = {" the"};
  const LogRecord rec = fx().run("Once upon a time", o);
  REQUIRE(rec.stop_detail == "stop_string");
  json j = json::parse(record_to_line(rec));
  j["output_ids"].push_back(rec.output_ids.back());
  j["steps"].push_back(j["steps"].back());
  const RecordReport rep = replay_line({1, j.dump()}, "s.jsonl", fx().rm(), ReplayOptions{});
  INFO(replay_summary_table({rep}));
  REQUIRE(rep.status == RecordStatus::Diverged);
  REQUIRE(rep.diverged_at == (int)rec.output_ids.size());
  CHECK(rep.findings.front().verdict == Verdict::Impossible);
  CHECK(rep.findings.front().reason == "after_stop");
}

TEST_CASE("a foreign record with text only is re-tokenized after the prompt", "[replay]") {
  GenerateOptions o;
  o.max_tokens = 10;
  o.stop_on_eos = false;
  o.sampler.temperature = 0.0f;
  const LogRecord rec = fx().run("Once upon a time", o);
  json f = {{"prompt", rec.prompt}, {"temperature", 0}, {"choices", {{{"text", rec.text}}}}};
  const RecordReport rep = replay_line({1, f.dump()}, "t.jsonl", fx().rm(), ReplayOptions{});
  INFO(replay_summary_table({rep}));
  CHECK(rep.status == RecordStatus::Plausible);
  CHECK(rep.n_tokens == (int)fx().tok.encode(rec.prompt + rec.text, true).size() - (int)rec.prompt_ids.size());
  f["choices"][0]["text"] = rec.text + " zebra";  // not the greedy continuation
  const RecordReport bad = replay_line({1, f.dump()}, "t.jsonl", fx().rm(), ReplayOptions{});
  CHECK(bad.status == RecordStatus::Diverged);
  REQUIRE(bad.diverged_at >= 0);
  CHECK(first_finding(bad, Verdict::Impossible)->reason == "greedy");
}
