// llama.cpp's tokenizer conformance vectors (tests/test-tokenizer-0): every
// string of <vocab>.gguf.inp must encode (no BOS, no special-token parsing,
// as test-tokenizer-0) to the ids on the same line of <vocab>.gguf.out, and
// decode back to itself. The .out files were written by Hugging Face's
// tokenizers (llama.cpp's convert_hf_to_gguf_update.py): an independent
// derivation.
//
// Where the files come from (none is committed; docs/tokenizer.md "Conformance"):
//   llama-spm, gpt-2, phi-3: ../shared/models/vocab-only
//   the others: $ORACLE_VOCAB_DIR, default build/peer/.../vendor/llama.cpp/models,
//     filled by scripts/fetch_vocab.sh (pip download of the llama-cpp-python
//     0.3.36 sdist; extracts only models/ggml-vocab-*). A missing file FAILS.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>

#include "base/errors.h"
#include "reference/model/gguf.h"
#include "reference/tokenizer/tokenizer.h"
#include "test_support.h"

using namespace oracle;

namespace {

std::string vocab_dir() {
  if (const char* env = std::getenv("ORACLE_VOCAB_DIR"); env && *env) return env;
  return ORACLE_DEFAULT_VOCAB_DIR;
}

// The three vocabularies in ../shared come from there; the rest from vocab_dir().
std::string vocab_path(const std::string& name) {
  if (name == "llama-spm" || name == "gpt-2" || name == "phi-3")
    return test::models("vocab-only/ggml-vocab-" + name + ".gguf");
  return vocab_dir() + "/ggml-vocab-" + name + ".gguf";
}

std::string slurp(const std::string& path) {
  INFO("fixture " << path << " is missing: run scripts/fetch_vocab.sh or set ORACLE_VOCAB_DIR "
                  "(the llama.cpp vocab files; ../shared for llama-spm, gpt-2, phi-3)");
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
  const std::string base = vocab_path(name);
  std::vector<std::string> inputs = read_inputs(base + ".inp");
  std::vector<std::vector<int>> outputs = read_outputs(base + ".out");
  REQUIRE(inputs.size() == outputs.size());
  REQUIRE(inputs.size() >= 30);
  REQUIRE(test::have(base));
  Tokenizer tok(load_gguf_vocab(base));
  int failures = 0, passed = 0;
  for (size_t i = 0; i < inputs.size(); i++) {
    std::vector<int> got = tok.encode(inputs[i], EncodeOptions{false, false, false});
    int at = first_mismatch(got, outputs[i]);
    bool ok = at < 0;
    if (!ok && ++failures <= 5)
      FAIL_CHECK(name << " case " << i << " first mismatch at id " << at << "\n  text: '" << inputs[i]
                      << "'\n  want:" << ids_text(outputs[i]) << "\n  got: " << ids_text(got));
    passed += ok;
  }
  // The table row of docs/tokenizer.md.
  std::printf("| %s | %s | %zu | %d |\n", name.c_str(), tok.vocab().pre.c_str(), inputs.size(), passed);
  CHECK(failures == 0);
}

}  // namespace

TEST_CASE("llama-spm vocabulary matches llama.cpp's conformance vectors") { check_vocab_file("llama-spm"); }

TEST_CASE("phi-3 vocabulary matches llama.cpp's conformance vectors") {
  Vocab v = load_gguf_vocab(vocab_path("phi-3"));
  CHECK(v.type == VocabType::SentencePiece);
  CHECK(v.add_space_prefix);  // no tokenizer.ggml.add_space_prefix key: llama.cpp's default
  check_vocab_file("phi-3");
}

TEST_CASE("gpt-2 vocabulary matches llama.cpp's conformance vectors") {
  Vocab v = load_gguf_vocab(vocab_path("gpt-2"));
  CHECK(v.type == VocabType::Gpt2);
  CHECK(v.pre == "gpt-2");
  check_vocab_file("gpt-2");
}

// Every byte-level BPE pre-tokenizer we accept, on its own vocabulary file.
TEST_CASE("BPE pre-tokenizers match llama.cpp's conformance vectors") {
  for (const char* name : {"llama-bpe", "qwen2", "qwen35", "deepseek-llm", "deepseek-coder", "falcon", "mpt",
                           "command-r", "starcoder", "refact"}) {
    SECTION(name) { check_vocab_file(name); }
  }
}

TEST_CASE("decode(encode(s)) == s on every conformance string of the byte-level vocabularies") {
  for (const char* name : {"gpt-2", "llama-bpe", "qwen2", "deepseek-coder", "command-r"}) {
    const std::string base = vocab_path(name);
    Tokenizer tok(load_gguf_vocab(base));
    for (const std::string& s : read_inputs(base + ".inp")) {
      INFO(name << ": '" << s << "'");
      CHECK(tok.decode(tok.encode(s, false)) == s);
    }
  }
}

// Vocabularies we do not implement are refused with the key that says so.
TEST_CASE("unsupported vocabularies and pre-tokenizers are refused naming the key") {
  for (const char* name : {"bert-bge", "gemma-4"}) {
    INFO(name);
    try {
      Tokenizer tok(load_gguf_vocab(vocab_path(name)));
      FAIL("accepted " << name);
    } catch (const InputError& e) {
      CHECK(std::string(e.what()).find("tokenizer.ggml.model") != std::string::npos);
    }
  }
  Vocab v = load_gguf_vocab(vocab_path("gpt-2"));
  for (const char* pre : {"", "tekken", "chatglm-bpe", "GPT-2"}) {
    v.pre = pre;
    INFO("pre '" << pre << "'");
    try {
      Tokenizer tok(v);
      FAIL("accepted pre " << pre);
    } catch (const InputError& e) {
      CHECK(std::string(e.what()).find("tokenizer.ggml.pre") != std::string::npos);
    }
  }
}
