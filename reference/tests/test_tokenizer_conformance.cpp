// llama.cpp's tokenizer conformance vectors (tests/test-tokenizer-0): every
// string of ../shared/models/vocab-only/<vocab>.gguf.inp must encode (no BOS,
// no special-token parsing) to the ids on the same line of <vocab>.gguf.out,
// and decode back to itself.
#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>
#include <sstream>

#include "reference/model/gguf.h"
#include "reference/tokenizer/tokenizer.h"
#include "test_support.h"

using namespace oracle;

namespace {

std::string slurp(const std::string& path) {
  INFO("fixture " << path << " is missing (tests need ../shared)");
  REQUIRE(test::have(path));
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Cases are separated by "\n__ggml_vocab_test__\n" (also after the last one).
std::vector<std::string> read_inputs(const std::string& path) {
  std::string text = slurp(path);
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> cases;
  size_t pos = 0;
  for (size_t hit; (hit = text.find(sep, pos)) != std::string::npos; pos = hit + sep.size())
    cases.push_back(text.substr(pos, hit - pos));
  return cases;
}

std::vector<std::vector<int>> read_outputs(const std::string& path) {
  std::istringstream in(slurp(path));
  std::vector<std::vector<int>> lines;
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::vector<int> ids;
    for (int id; fields >> id;) ids.push_back(id);
    lines.push_back(ids);
  }
  return lines;
}

std::string ids_text(const std::vector<int>& ids) {
  std::string s;
  for (int id : ids) s += " " + std::to_string(id);
  return s;
}

// Index of the first differing id, or -1.
int first_mismatch(const std::vector<int>& got, const std::vector<int>& want) {
  size_t n = std::max(got.size(), want.size());
  for (size_t i = 0; i < n; i++)
    if (i >= got.size() || i >= want.size() || got[i] != want[i]) return (int)i;
  return -1;
}

void check_vocab_file(const std::string& name) {
  std::string base = test::models("vocab-only/ggml-vocab-" + name + ".gguf");
  std::vector<std::string> inputs = read_inputs(base + ".inp");
  std::vector<std::vector<int>> outputs = read_outputs(base + ".out");
  REQUIRE(inputs.size() == outputs.size());
  REQUIRE(inputs.size() >= 40);
  Tokenizer tok(load_gguf_vocab(base));
  int failures = 0;
  for (size_t i = 0; i < inputs.size(); i++) {
    std::vector<int> got = tok.encode(inputs[i], false);
    int at = first_mismatch(got, outputs[i]);
    if (at >= 0 && ++failures <= 5)
      FAIL_CHECK(name << " case " << i << " first mismatch at id " << at << "\n  text: '" << inputs[i]
                      << "'\n  want:" << ids_text(outputs[i]) << "\n  got: " << ids_text(got));
    if (tok.decode(got) != inputs[i] && ++failures <= 5)
      FAIL_CHECK(name << " case " << i << " decode(encode(s)) != s: '" << tok.decode(got) << "'");
  }
  CHECK(failures == 0);
}

}  // namespace

TEST_CASE("llama-spm vocabulary matches llama.cpp's conformance vectors") { check_vocab_file("llama-spm"); }

TEST_CASE("phi-3 vocabulary matches llama.cpp's conformance vectors") {
  Vocab v = load_gguf_vocab(test::models("vocab-only/ggml-vocab-phi-3.gguf"));
  CHECK(v.type == VocabType::SentencePiece);
  CHECK(v.add_space_prefix);  // no tokenizer.ggml.add_space_prefix key: llama.cpp's default
  check_vocab_file("phi-3");
}

TEST_CASE("gpt-2 vocabulary matches llama.cpp's conformance vectors") {
  Vocab v = load_gguf_vocab(test::models("vocab-only/ggml-vocab-gpt-2.gguf"));
  CHECK(v.type == VocabType::Gpt2);
  CHECK(v.pre == "gpt-2");
  check_vocab_file("gpt-2");
}
