// The numerics contract version in our own records (docs/numerics.md §8): every
// writer stamps numerics/contract_version.h's constant, every reader refuses another
// version (the file, the field, both values and how to regenerate in one InputError),
// and a record without the field reads as version 1. The expected values here are the
// constant itself and the rule "absent = 1", never a number copied from our output.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "audit/certify/certify_report.h"
#include "audit/interop/dumps.h"
#include "audit/interop/kld_base.h"
#include "audit/replay/replay_log.h"
#include "base/errors.h"
#include "base/numerics_version.h"
#include "base/sha256.h"
#include "fixture.h"
#include "reference/generate/generate.h"
#include "reference/model/model.h"
#include "reference/tokenizer/tokenizer.h"

using namespace oracle;
using nlohmann::json;
using Catch::Matchers::Contains;

namespace {

constexpr int kNow = num::kNumericsContractVersion;

std::string tmp(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("oracle_test_numver_" + name)).string();
}

std::string slurp(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The refusal of `f` (its what()), or "" when it is accepted.
template <typename F>
std::string refusal(F&& f, std::string* file = nullptr, std::string* field = nullptr) {
  try {
    f();
  } catch (const InputError& e) {
    if (file) *file = e.file();
    if (field) *field = e.field();
    return e.what();
  }
  return "";
}

// One refusal names the file, the field, the value found, the value expected and the fix.
void check_refusal(const std::string& what, const std::string& file, int found, int expected, const std::string& fix) {
  INFO(what);
  CHECK_THAT(what, Contains(file + ": numerics_version: "));
  CHECK_THAT(what, Contains("found " + std::to_string(found)));
  CHECK_THAT(what, Contains("reads " + std::to_string(expected)));
  CHECK_THAT(what, Contains(fix));
}

}  // namespace

TEST_CASE("check_numerics_version: this version passes, any other is refused, a missing field is version 1") {
  json r = {{"id", "x"}};
  stamp_numerics_version(r);
  CHECK(r["numerics_version"] == kNow);
  CHECK(refusal([&] { check_numerics_version(r, "f.jsonl:3", "regenerate"); }).empty());
  for (int other : {999, kNow - 1, kNow + 1}) {
    if (other < 1) continue;
    r["numerics_version"] = other;
    std::string file, field;
    const std::string what = refusal([&] { check_numerics_version(r, "f.jsonl:3", "regenerate it so"); }, &file, &field);
    CHECK(file == "f.jsonl:3");
    CHECK(field == "numerics_version");
    check_refusal(what, "f.jsonl:3", other, kNow, "regenerate it so");
  }
  // The constant as a parameter: the reader of the next contract refuses this one's records.
  r["numerics_version"] = kNow;
  check_refusal(refusal([&] { check_numerics_version(r, "g.jsonl:1", "fix", kNow + 1); }), "g.jsonl:1", kNow,
                kNow + 1, "fix");
  // No field: written before it existed, under version 1 — accepted now only if 1 is current,
  // refused by the reader of any later contract.
  const json old = {{"id", "x"}};
  CHECK(record_numerics_version(old, "o") == 1);
  CHECK(refusal([&] { check_numerics_version(old, "o", "fix", 1); }).empty());
  check_refusal(refusal([&] { check_numerics_version(old, "o", "fix", 2); }), "o", 1, 2, "fix");
  CHECK(refusal([&] { check_numerics_version(old, "o", "fix"); }).empty() == (kNow == 1));
  json bad = {{"numerics_version", "one"}};
  std::string field;
  refusal([&] { check_numerics_version(bad, "b", "fix"); }, nullptr, &field);
  CHECK(field == "numerics_version");
}

TEST_CASE("replay logs: run --log lines carry the version; the reader refuses another one", "[replay]") {
  const Model model = load_model(test::fixture("stories260K/stories260K.bin"));
  const Tokenizer tok(load_llama2c_tokenizer(test::fixture("stories260K/tok512.bin"), model.config.vocab_size));
  const ModelIdentity id{model.path, model.sha256, "tok", sha256_file(test::fixture("stories260K/tok512.bin")),
                         model.config.seq_len};
  GenerateOptions o;
  o.max_tokens = 4;
  const LogRecord rec = make_log_record("test", id, "Once", o, generate(model, tok, "Once", o));
  const json j = record_to_json(rec);
  CHECK(j.at("numerics_version") == kNow);  // the writer stamps the constant
  CHECK(record_to_json(parse_log_line(j.dump(), "x.jsonl:1")) == j);  // round trip
  json other = j;
  other["numerics_version"] = 999;
  check_refusal(refusal([&] { parse_log_line(other.dump(), "x.jsonl:7"); }), "x.jsonl:7", 999, kNow,
                "oracle run ... --log F");
  json legacy = j;
  legacy.erase("numerics_version");
  CHECK(refusal([&] { parse_log_line(legacy.dump(), "x.jsonl:2"); }).empty() == (kNow == 1));
  // The whole log: refused before anything replays (exit 2 in oracle replay), naming the line;
  // garbage and foreign lines are left to the per-line report.
  const std::vector<LogLine> lines = {{1, j.dump()}, {2, "not json"}, {3, R"({"choices": []})"}, {5, other.dump()}};
  check_refusal(refusal([&] { check_log_numerics_version(lines, "x.jsonl"); }), "x.jsonl:5", 999, kNow, "--log F");
  CHECK(refusal([&] { check_log_numerics_version({lines[0], lines[1], lines[2]}, "x.jsonl"); }).empty());
}

TEST_CASE("logits and trace dumps carry the version; compare's readers refuse another one, not foreign files") {
  const std::vector<int> prompt = {1}, tokens = {2, 3};
  const std::vector<float> logits = {0.5f, 1.0f, -1.0f, 2.0f, 0.0f, 0.25f};
  const DumpInfo info{"m", "00", "11", "{}", "test", prompt};
  SafetensorsFile f = logits_dump(info, tokens, logits, 3);
  CHECK(f.metadata.at("numerics_version") == std::to_string(kNow));
  const std::string p = tmp("logits.safetensors");
  write_safetensors(p, f);
  CHECK(read_logits_input(p).metadata.at("numerics_version") == std::to_string(kNow));  // round trip
  f.metadata["numerics_version"] = "999";
  write_safetensors(p, f);
  check_refusal(refusal([&] { read_logits_input(p); }), p, 999, kNow, "--dump-logits");
  f.metadata.erase("numerics_version");
  write_safetensors(p, f);
  CHECK(refusal([&] { read_logits_input(p); }).empty() == (kNow == 1));  // no field: version 1
  f.metadata = {{"numerics_version", "999"}};  // not an oracle dump (no format): another program's, not checked
  write_safetensors(p, f);
  CHECK(refusal([&] { read_logits_input(p); }).empty());

  SafetensorsFile t = trace_dump(info, tokens, {{"logits", 0, {1.0f, 2.0f, 3.0f}}});
  CHECK(t.metadata.at("numerics_version") == std::to_string(kNow));
  write_safetensors(p, t);
  CHECK(refusal([&] { read_trace_dump(p); }).empty());
  t.metadata["numerics_version"] = std::to_string(kNow + 1);
  write_safetensors(p, t);
  check_refusal(refusal([&] { read_trace_dump(p); }), p, kNow + 1, kNow, "--dump-trace");
  std::filesystem::remove(p);
}

TEST_CASE("certificates carry the version in certificate.json and the Markdown") {
  std::vector<TokenRecord> recs(2);
  recs[1].pos = 1, recs[1].kld = 0.01;
  CertifyResult r;
  r.protocol = Protocol::Full;
  r.ctx = 2;
  r.chunks = 1;
  r.records = recs;
  r.summary = summarize(recs);
  CertificateInfo info{"ref.gguf", "aa", "cand.gguf", "bb", "corpus.txt", "cc", "0.1.0", "Q8_0", false};
  const auto checks = check_thresholds(r, default_thresholds("Q8_0"));
  CHECK(certificate_json(r, info, checks).at("numerics_version") == kNow);
  CHECK_THAT(certificate_markdown(r, info, checks), Contains("numerics_version " + std::to_string(kNow) + " |"));
}

TEST_CASE("KLD base sidecars: written beside the file, refused with another version, absent for llama.cpp's") {
  KldBase b;
  b.n_ctx = 4, b.n_vocab = 3, b.n_chunk = 1;
  b.tokens = {1, 2, 0, 1};
  b.records.assign((size_t)b.scored_per_chunk() * b.nv(), 0);
  const std::string base = tmp("base.kld"), side = kld_sidecar_path(base);
  CHECK(side == base + ".oracle.json");
  std::filesystem::remove(side);
  write_kld_base(base, b);
  const std::string theirs = slurp(base);
  CHECK_FALSE(check_kld_sidecar(base, false, "fix"));  // llama.cpp's file: no sidecar, not checked
  CHECK(refusal([&] { check_kld_sidecar(base, true, "fix"); }).empty() == (kNow == 1));  // our cache, pre-sidecar: v1
  write_kld_sidecar(base, b);
  CHECK(slurp(base) == theirs);  // the base file itself is untouched (llama.cpp's format)
  json j = json::parse(slurp(side));
  CHECK(j.at("numerics_version") == kNow);
  CHECK(j.at("format") == "oracle-kld-base-sidecar");
  CHECK(j.at("n_ctx") == 4);
  CHECK(check_kld_sidecar(base, false, "fix"));
  CHECK(check_kld_sidecar(base, true, "fix"));
  j["numerics_version"] = 999;
  std::ofstream(side, std::ios::binary) << j.dump();
  check_refusal(refusal([&] { check_kld_sidecar(base, false, "re-write it with `oracle certify --write-kld-base`"); }),
                side, 999, kNow, "oracle certify --write-kld-base");
  std::filesystem::remove(side);
  std::filesystem::remove(base);
}
