// Differential tokenization (docs/testing.md "Differential harnesses"): the
// committed fixtures in data/tokdiff hold what llama.cpp's llama_tokenize
// (every models/ggml-vocab-*.gguf of the llama-cpp-python 0.3.36 sdist, and
// SmolLM2) and sentencepiece (Llama 2 tokenizer.model) make of ~1100
// generated adversarial inputs per vocabulary, written by
// scripts/tokenizer_diff.py (the `peer` test regenerates and diffs them).
// Our tokenizer must give the same ids without special handling and with
// BOS/EOS as the vocabulary says plus special-token parsing; our end-of-
// generation set must equal llama.cpp's llama_vocab_is_eog set.
// The vocabularies are found as in test_tokenizer_conformance
// ($ORACLE_VOCAB_DIR, scripts/fetch_vocab.sh); a missing one FAILS.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/errors.h"
#include "base/sha256.h"
#include "reference/generate/generate.h"
#include "reference/generate/stop.h"
#include "reference/model/synthetic.h"
#include "reference/model/gguf.h"
#include "reference/model/loaders.h"
#include "reference/tokenizer/tokenizer.h"
#include "test_support.h"

using namespace oracle;
using nlohmann::json;

namespace {

std::string data_dir() { return std::string(ORACLE_TEST_DATA_DIR) + "/tokdiff"; }

std::string vocab_dir() {
  if (const char* env = std::getenv("ORACLE_VOCAB_DIR"); env && *env) return env;
  return ORACLE_DEFAULT_VOCAB_DIR;
}

// As test_tokenizer_conformance: three vocabularies from ../shared, the rest from vocab_dir().
std::string vocab_path(const json& header) {
  if (header.contains("shared")) return test::models(header["shared"].get<std::string>());
  const std::string file = header["vocab"];
  for (const char* shared : {"ggml-vocab-llama-spm.gguf", "ggml-vocab-gpt-2.gguf", "ggml-vocab-phi-3.gguf"})
    if (file == shared) return test::models("vocab-only/" + file);
  return vocab_dir() + "/" + file;
}

std::vector<json> read_jsonl(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  std::vector<json> out;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(json::parse(line));
  return out;
}

std::string ids_text(const std::vector<int>& ids) {
  std::string s;
  for (int id : ids) s += " " + std::to_string(id);
  return s.empty() ? " (none)" : s;
}

std::string escaped(const std::string& s) { return json(s).dump(-1, ' ', true); }

struct Tally {
  int cases = 0, plain_ok = 0, special_ok = 0, shown = 0;
};

void check_case(const Tokenizer& tok, const json& c, const json& h, Tally& t) {
  const std::string text = c["t"];
  const std::vector<int> want_a = c["a"].get<std::vector<int>>();
  std::vector<int> want_b = want_a;
  if (c.contains("b")) {
    want_b = c["b"].get<std::vector<int>>();
  } else {
    if (h["add_bos"].get<bool>() && h["bos"].get<int>() >= 0) want_b.insert(want_b.begin(), h["bos"].get<int>());
    if (h["add_eos"].get<bool>() && h["eos"].get<int>() >= 0) want_b.push_back(h["eos"].get<int>());
  }
  const Vocab& v = tok.vocab();
  const std::vector<int> got_a = tok.encode(text, EncodeOptions{false, false, false});
  const std::vector<int> got_b = tok.encode(text, EncodeOptions{v.add_bos, v.add_eos, true});
  t.cases++;
  t.plain_ok += got_a == want_a;
  t.special_ok += got_b == want_b;
  if ((got_a != want_a || got_b != want_b) && t.shown++ < 8) {
    UNSCOPED_INFO(h["vocab"].get<std::string>() << " [" << c["g"].get<std::string>() << "] " << escaped(text)
                                                << (got_a != want_a ? "\n  plain  want" + ids_text(want_a) + "\n         got " + ids_text(got_a) : "")
                                                << (got_b != want_b ? "\n  special want" + ids_text(want_b) + "\n          got " + ids_text(got_b) : ""));
  }
}

std::vector<std::string> fixtures() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(data_dir())) {
    const std::string name = e.path().filename().string();
    if (e.path().extension() == ".jsonl" && name != "invalid_utf8.jsonl" && name != "llama2-sentencepiece.jsonl")
      out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

Tokenizer load(const std::string& path) { return Tokenizer(load_gguf_vocab(path)); }

// A synthetic model over `tok`, its logits pushed to each id by a logit bias, stops right there
// with reason eos in generate() (run, golden) and in the TextStream replay teacher-forces through.
int check_stops_at(const Tokenizer& tok, const std::vector<int>& ids, const std::string& vocab) {
  SyntheticPreset preset = synthetic_preset(kDefaultPreset);
  preset.config.vocab_size = tok.vocab_size();
  const Model model = synthetic_model(preset, 7, tok.vocab());
  const int plain = tok.encode("a", false).at(0);
  for (int id : ids) {
    INFO(vocab << " EOG id " << id);
    GenerateOptions o;
    o.max_tokens = 4;
    o.sampler.temperature = 0.0f;
    o.sampler.logit_bias = {{id, 1.0e4f}};
    o.logprobs_top_n = 0;
    const GenerationResult g = generate(model, tok, "Hello", o);
    CHECK(g.output_ids == std::vector<int>{id});
    CHECK(g.stop_detail == "eos");
    CHECK(g.text.empty());
    TextStream stream(tok, StopConditions{}, -1);
    CHECK_FALSE(stream.push(plain).done);
    const StreamStep st = stream.push(id);
    CHECK(st.done);
    CHECK(st.reason == FinishReason::Eos);
  }
  return (int)ids.size();
}

}  // namespace

TEST_CASE("llama.cpp llama_tokenize fixtures: every vocabulary, plain and with special tokens", "[differential]") {
  const std::vector<std::string> files = fixtures();
  REQUIRE(files.size() >= 17);
  for (const std::string& file : files) {
    const std::vector<json> lines = read_jsonl(file);
    const json& h = lines.at(0);
    const std::string path = vocab_path(h);
    INFO("vocabulary " << path << " is missing: run scripts/fetch_vocab.sh or set ORACLE_VOCAB_DIR");
    REQUIRE(test::have(path));
    INFO(path << " is not the file the fixture was written from");
    REQUIRE(sha256_file(path) == h["sha256"].get<std::string>());
    if (h.value("refused", false)) {  // a model type we do not implement: refused naming the key
      CHECK_THROWS_AS(load(path), InputError);
      std::printf("%-24s refused (as documented)\n", h["vocab"].get<std::string>().c_str());
      continue;
    }
    std::optional<Tokenizer> loaded;
    try {
      loaded.emplace(load(path));
    } catch (const InputError& e) {
      FAIL_CHECK(path << " refused, but the fixture expects it tokenized: " << e.what());
      continue;
    }
    const Tokenizer& tok = *loaded;
    Tally t;
    for (size_t i = 1; i < lines.size(); i++) check_case(tok, lines[i], h, t);
    std::printf("%-24s %5d cases: plain %5d, special %5d\n", h["vocab"].get<std::string>().c_str(), t.cases,
                t.plain_ok, t.special_ok);
    CHECK(t.cases == h["cases"].get<int>());
    CHECK(t.cases >= 1000);
    CHECK(t.plain_ok == t.cases);
    CHECK(t.special_ok == t.cases);
  }
}

TEST_CASE("end-of-generation ids equal llama.cpp's llama_vocab_is_eog set", "[differential][eog]") {
  for (const std::string& file : fixtures()) {
    const std::vector<json> lines = read_jsonl(file);
    const json& h = lines.at(0);
    if (h.value("refused", false)) continue;
    const Tokenizer tok = load(vocab_path(h));
    std::vector<int> ours = tok.eog_ids();
    std::sort(ours.begin(), ours.end());
    ours.erase(std::unique(ours.begin(), ours.end()), ours.end());
    INFO(h["vocab"].get<std::string>() << ": ours" << ids_text(ours) << ", llama.cpp"
                                       << ids_text(h["eog"].get<std::vector<int>>()));
    CHECK(ours == h["eog"].get<std::vector<int>>());
    for (int id : h["eog"].get<std::vector<int>>()) CHECK(tok.is_eog(id));
  }
}

// run and golden generate through generate(), replay teacher-forces through the same
// TextStream: a synthetic model over each real vocabulary, its logits pushed to one EOG id by a
// logit bias, must stop right there with reason eos, for every id in llama.cpp's set.
TEST_CASE("generation stops at every id of llama.cpp's end-of-generation set", "[differential][eog]") {
  int checked = 0;
  for (const std::string& file : fixtures()) {
    const std::vector<json> lines = read_jsonl(file);
    const json& h = lines.at(0);
    if (h.value("refused", false)) continue;
    const Tokenizer tok = load(vocab_path(h));
    checked += check_stops_at(tok, h["eog"].get<std::vector<int>>(), h["vocab"].get<std::string>());
  }
  std::printf("generation stopped at %d end-of-generation ids\n", checked);
  CHECK(checked >= 20);
}

// tokenizer.ggml.fim_*_token_id (scripts/fim_vocab_diff.py, data/tokdiff_fim): vocabularies whose
// FIM keys name tokens llama.cpp's text lists miss, sit beside a listed text, lie outside the
// vocabulary, or use the deprecated prefix/suffix/middle keys; llama.cpp's FIM ids, its EOG set
// (pad, repo and file separator end generation) and its tokenization of the re-texted tokens.
TEST_CASE("FIM keys: ids, end-of-generation set and special tokens as llama.cpp", "[differential][fim][eog]") {
  const std::string dir = std::string(ORACLE_TEST_DATA_DIR) + "/tokdiff_fim";
  int files = 0, stops = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".json") continue;
    std::ifstream in(e.path());
    const json f = json::parse(in);
    const std::string path = std::string(ORACLE_FIM_VOCAB_DIR) + "/" + f["vocab"].get<std::string>();
    INFO(path);
    REQUIRE(sha256_file(path) == f["sha256"].get<std::string>());
    const Tokenizer tok = load(path);
    const Vocab& v = tok.vocab();
    CHECK(std::vector<int>(v.fim_ids, v.fim_ids + 6) == f["fim"].get<std::vector<int>>());
    std::vector<int> ours = tok.eog_ids();
    std::sort(ours.begin(), ours.end());
    CHECK(ours == f["eog"].get<std::vector<int>>());
    for (const json& c : f["cases"]) {
      INFO(escaped(c["t"].get<std::string>()));
      CHECK(tok.encode(c["t"].get<std::string>(), EncodeOptions{false, false, false}) == c["a"].get<std::vector<int>>());
      CHECK(tok.encode(c["t"].get<std::string>(), EncodeOptions{v.add_bos, v.add_eos, true}) ==
            c["b"].get<std::vector<int>>());
    }
    stops += check_stops_at(tok, f["eog"].get<std::vector<int>>(), f["vocab"].get<std::string>());
    files++;
  }
  std::printf("FIM vocabularies: %d, generation stopped at %d end-of-generation ids\n", files, stops);
  CHECK(files >= 8);
}

TEST_CASE("sentencepiece fixture: Llama 2 tokenizer.model", "[differential]") {
  const std::vector<json> lines = read_jsonl(data_dir() + "/llama2-sentencepiece.jsonl");
  const std::string path = test::models("llama2-tokenizer/tokenizer.bin");
  REQUIRE(test::have(path));
  const Tokenizer tok(load_llama2c_tokenizer(path, 32000));
  Tally t;
  json h = lines[0];
  h["add_bos"] = false, h["add_eos"] = false, h["bos"] = -1, h["eos"] = -1;
  for (size_t i = 1; i < lines.size(); i++) {
    const std::string text = lines[i]["t"];
    const std::vector<int> want = lines[i]["a"].get<std::vector<int>>();
    const std::vector<int> got = tok.encode(text, false);
    t.cases++;
    t.plain_ok += got == want;
    if (got != want && t.shown++ < 8)
      UNSCOPED_INFO("llama2 [" << lines[i]["g"].get<std::string>() << "] " << escaped(text) << "\n  want"
                               << ids_text(want) << "\n  got " << ids_text(got));
  }
  std::printf("%-24s %5d cases: %5d equal\n", "llama2 sentencepiece", t.cases, t.plain_ok);
  CHECK(t.cases >= 1000);
  CHECK(t.plain_ok == t.cases);
}

TEST_CASE("invalid UTF-8 is refused by every vocabulary, naming the prompt", "[differential]") {
  const std::vector<json> bad = read_jsonl(data_dir() + "/invalid_utf8.jsonl");
  REQUIRE(bad.size() >= 40);
  for (const std::string& file : fixtures()) {
    const json h = read_jsonl(file).at(0);
    if (h.value("refused", false)) continue;
    const Tokenizer tok = load(vocab_path(h));
    for (const json& b : bad) {
      const std::string hex = b["x"];
      std::string bytes;
      for (size_t i = 0; i + 1 < hex.size(); i += 2) bytes += (char)std::stoi(hex.substr(i, 2), nullptr, 16);
      for (bool special : {false, true}) {
        try {
          tok.encode(bytes, EncodeOptions{false, false, special});
          FAIL_CHECK(h["vocab"].get<std::string>() << " accepted invalid UTF-8 " << hex);
        } catch (const InputError& e) {
          CHECK(e.field() == "prompt");
        }
      }
    }
  }
}
