// Tokenizer: llama2.c tokenizer.bin loading, SentencePiece encoding checked
// against a transcription of llama2.c's encode() and against the sentencepiece
// package (fixture), GPT-2 pre-tokenizer and Unicode classes, round trips,
// and bad input (InputError naming the field).
#include <catch2/catch.hpp>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <unistd.h>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <sstream>

#include "base/errors.h"
#include "reference/model/gguf.h"
#include "reference/model/synthetic.h"
#include "reference/tokenizer/tokenizer.h"
#include "reference/tokenizer/tokenizer_impl.h"
#include "reference/tokenizer/unicode_class.h"
#include "base/utf8.h"
#include "fixture.h"
#include "llama2c_encode.h"

using namespace oracle;

namespace {

using test::fixture;
using test::llama2c_encode;
using test::read_raw;
using test::RawTokenizer;

std::string data_file(const std::string& name) { return std::string(ORACLE_TEST_DATA_DIR) + "/" + name; }

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  INFO("cannot read " << path);
  REQUIRE(in.good());
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string ids_text(const std::vector<int>& ids) {
  std::string s;
  for (int id : ids) s += " " + std::to_string(id);
  return s;
}

// Seeded random text from pieces that exercise merges, score ties, spaces and
// multi-byte characters.
std::string random_text(std::mt19937& rng) {
  static const char* const kPieces[] = {
      "a", "b", "e", "t", "h", "s", " ", "  ", "the", "Once", "upon", "time", ",", ".", "\n",
      "l", "o", "ll", "!!", "   ", "ee",  // runs of one character: ties between equal pairs
      "\t", "'", "\"", "!", "1", "9", "\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80",
      "\xE6\x88\x91", "\xC3\xBC", "\xE2\x80\x94", "\xD0\xB1", "\xE1\x9E\x80"};
  std::uniform_int_distribution<int> count(1, 12), pick(0, (int)std::size(kPieces) - 1);
  std::string s;
  for (int n = count(rng); n > 0; n--) s += kPieces[pick(rng)];
  return s;
}

Tokenizer llama2c_tokenizer(const std::string& rel, int n_vocab) {
  return Tokenizer(load_llama2c_tokenizer(fixture(rel), n_vocab));
}

std::string temp_path(const std::string& name) {
  // the process id: concurrent runs (other worktrees, ctest -j) must not share a file
  const std::string file = "oracle_test_tokenizer_" + std::to_string(getpid()) + "_";
  return (std::filesystem::temp_directory_path() / (file + name)).string();
}

template <class F>
void require_input_error(F&& f, const std::string& field, const std::string& file) {
  try {
    f();
    FAIL("expected InputError naming field '" << field << "'");
  } catch (const InputError& e) {
    INFO(e.what());
    CHECK(e.field() == field);
    CHECK(std::string(e.what()).find(field) != std::string::npos);
    CHECK(std::string(e.what()).find(file) != std::string::npos);
  }
}

}  // namespace

// ---- llama2.c tokenizer.bin --------------------------------------------------------------
TEST_CASE("tok512.bin loads as a SentencePiece vocabulary in GGUF form") {
  Vocab v = load_llama2c_tokenizer(fixture("stories260K/tok512.bin"), 512);
  REQUIRE(v.tokens.size() == 512);
  CHECK(v.max_token_length == 7);
  CHECK(v.tokens[0] == "<unk>");
  CHECK(v.tokens[1] == "<s>");
  CHECK(v.tokens[2] == "</s>");
  CHECK(v.tokens[3] == "<0x00>");
  CHECK(v.tokens[259] == "\xE2\x96\x81t");  // " t" in the file
  CHECK(v.token_types[0] == 2);
  CHECK(v.token_types[1] == 3);
  CHECK(v.token_types[3 + 0x41] == 6);
  CHECK(v.token_types[259] == 1);
  CHECK(v.scores[260] == -1.0f);
  CHECK(v.bos_id == 1);
  CHECK(v.eos_id == 2);
}

TEST_CASE("tokenizer.bin files equal the same vocabularies in GGUF form") {
  // stories260K.gguf: llama.cpp's llama2c converter; ggml-vocab-llama-spm.gguf: llama.cpp's
  // HF converter on Llama 2, the tokenizer llama2.c exported as tokenizer.bin.
  for (auto [bin, gguf] : {std::pair{"stories260K/tok512.bin", "gguf/stories260K.gguf"},
                           std::pair{"llama2-tokenizer/tokenizer.bin", "vocab-only/ggml-vocab-llama-spm.gguf"}}) {
    Vocab a = load_llama2c_tokenizer(fixture(bin), 0);
    Vocab b = load_gguf_vocab(fixture(gguf));
    REQUIRE(a.tokens.size() == b.tokens.size());
    for (size_t i = 0; i < a.tokens.size(); i++) {
      INFO(bin << " token " << i << " '" << a.tokens[i] << "' vs '" << b.tokens[i] << "'");
      REQUIRE(a.tokens[i] == b.tokens[i]);
      REQUIRE(a.scores[i] == b.scores[i]);
      REQUIRE(a.token_types[i] == b.token_types[i]);
    }
  }
}

TEST_CASE("tokenizer.bin vocabulary size must agree with the model") {
  std::string path = fixture("stories260K/tok512.bin");
  require_input_error([&] { load_llama2c_tokenizer(path, 32000); }, "vocab_size", path);
  Vocab v = load_llama2c_tokenizer(path, 0);
  require_input_error([&] { require_vocab_size(v, 32000, "model.bin"); }, "vocab_size", path);
  require_vocab_size(v, 512, "model.bin");
}

TEST_CASE("a truncated tokenizer.bin is an InputError naming the record") {
  std::string data = slurp(fixture("stories260K/tok512.bin"));
  std::string path = temp_path("truncated.bin");
  std::ofstream(path, std::ios::binary) << data.substr(0, data.size() - 3);
  require_input_error([&] { load_llama2c_tokenizer(path, 512); }, "tokens[511]", path);
  std::ofstream(path, std::ios::binary) << data.substr(0, 2);
  require_input_error([&] { load_llama2c_tokenizer(path, 512); }, "max_token_length", path);
  std::filesystem::remove(path);
  require_input_error([&] { load_llama2c_tokenizer(path, 512); }, "file", path);
}

TEST_CASE("a tokenizer.bin whose last record is an empty piece loads (llama2.c reads len 0)") {
  // llama2.c's build_tokenizer: per record fread(score), fread(len), fread(len bytes): a
  // record of length 0 is 8 bytes, and one ending the file is complete (mutation audit).
  std::string data = slurp(fixture("stories260K/tok512.bin"));
  const float score = -1.5f;
  const int32_t len = 0;
  data.append(reinterpret_cast<const char*>(&score), 4).append(reinterpret_cast<const char*>(&len), 4);
  std::string path = temp_path("empty_last.bin");
  std::ofstream(path, std::ios::binary) << data;
  Vocab v = load_llama2c_tokenizer(path, 513);
  CHECK(v.tokens.size() == 513);
  CHECK(v.tokens.back().empty());
  CHECK(v.scores.back() == score);
  std::filesystem::remove(path);
}

// ---- SentencePiece encoding -----------------------------------------------------------------
TEST_CASE("'Once upon a time' encodes to llama2.c's prompt ids") {
  std::istringstream ids(slurp(fixture("stories260K/expected_greedy_once_upon_a_time_200steps.ids.txt")));
  std::vector<int> want{1};
  for (int i = 0, id; i < 4 && ids >> id; i++) want.push_back(id);
  CHECK(want == std::vector<int>{1, 403, 407, 261, 378});  // " Once" " upon" " a" " time"
  Tokenizer tok = llama2c_tokenizer("stories260K/tok512.bin", 512);
  CHECK(tok.encode("Once upon a time", true) == want);
  CHECK(tok.encode("", true) == std::vector<int>{1});
  CHECK(tok.encode("", false).empty());
}

TEST_CASE("SentencePiece encoding equals llama2.c's encode() on random text") {
  for (const char* rel : {"stories260K/tok512.bin", "llama2-tokenizer/tokenizer.bin",
                          "aidreams260K/tok512.bin"}) {
    RawTokenizer raw = read_raw(fixture(rel));
    Tokenizer tok = llama2c_tokenizer(rel, (int)raw.pieces.size());
    std::mt19937 rng(20261130);
    int failures = 0;
    for (int i = 0; i < 300; i++) {
      std::string text = random_text(rng);
      std::vector<int> want = llama2c_encode(raw, text), got = tok.encode(text, true);
      if (got != want && ++failures <= 5)
        FAIL_CHECK(rel << " text '" << text << "'\n  llama2.c:" << ids_text(want) << "\n  oracle:  " << ids_text(got));
      if (tok.decode(got) != text && ++failures <= 5)
        FAIL_CHECK(rel << " decode(encode('" << text << "')) = '" << tok.decode(got) << "'");
    }
    CHECK(failures == 0);
  }
}

TEST_CASE("SentencePiece encoding equals the sentencepiece package (fixture)") {
  std::map<std::string, Tokenizer> toks{
      {"tok512", llama2c_tokenizer("stories260K/tok512.bin", 512)},
      {"llama2", llama2c_tokenizer("llama2-tokenizer/tokenizer.bin", 32000)}};
  std::istringstream lines(slurp(data_file("spm_expected_ids.txt")));
  int n = 0;
  for (std::string line; std::getline(lines, line); n++) {
    std::istringstream f(line);
    std::string model, hex, text;
    f >> model >> hex;
    for (size_t i = 0; i + 1 < hex.size(); i += 2) text += (char)std::stoi(hex.substr(i, 2), nullptr, 16);
    std::vector<int> want;
    for (int id; f >> id;) want.push_back(id);
    const Tokenizer& tok = toks.at(model);
    INFO(model << " text '" << text << "'\n  sentencepiece:" << ids_text(want)
               << "\n  oracle:       " << ids_text(tok.encode(text, false)));
    CHECK(tok.encode(text, false) == want);
    CHECK(tok.decode(tok.encode(text, true)) == text);
  }
  CHECK(n >= 40);
}

TEST_CASE("token_bytes: byte fallback, U+2581, leading space after BOS, control tokens") {
  Tokenizer tok = llama2c_tokenizer("stories260K/tok512.bin", 512);
  CHECK(tok.token_bytes(5, 3 + 0xE2) == "\xE2");
  CHECK(tok.token_bytes(5, 3 + 0x0A) == "\n");
  CHECK(tok.token_bytes(5, 403) == " Once");
  CHECK(tok.token_bytes(1, 403) == "Once");   // after BOS (llama2.c)
  CHECK(tok.token_bytes(-1, 403) == "Once");  // start of text (dummy prefix)
  CHECK(tok.token_bytes(403, 1).empty());
  CHECK(tok.token_bytes(403, 2).empty());
  CHECK(tok.token_bytes(403, 0) == "\xE2\x96\x85");  // <unk> as llama.cpp prints it
  CHECK(tok.decode({1, 403, 407, 3 + 0xE2, 3 + 0x82, 3 + 0xAC}) == "Once upon\xE2\x82\xAC");
  // Without BOS the first piece's dummy prefix is dropped too: sentencepiece's DecodeIds
  // ("\u2581Once\u2581upon" -> "Once upon") and llama.cpp's detokenize (remove_space =
  // add_space_prefix for the first token). After <unk> (id 0) it is kept: not the start.
  CHECK(tok.decode({403, 407}) == "Once upon");
  CHECK(tok.decode({0, 403}) == "\xE2\x96\x85 Once");
}

TEST_CASE("the synthetic byte-level vocabulary round-trips and merges its pieces") {
  Tokenizer tok(synthetic_byte_vocab(384));
  std::vector<int> ids = tok.encode("the the", false);
  REQUIRE(ids.size() == 2);  // merged pieces, not characters
  CHECK(tok.vocab().tokens[ids[0]] == "\xE2\x96\x81the");
  CHECK(ids[1] == ids[0]);
  // "an" (rank 6) outranks "\u2581a" (rank 7), so "\u2581and" is never reached.
  ids = tok.encode("and", false);
  REQUIRE(ids.size() == 3);
  CHECK(tok.vocab().tokens[ids[1]] == "an");
  std::mt19937 rng(5);
  for (int i = 0; i < 200; i++) {
    std::string text = random_text(rng);
    INFO("text '" << text << "'");
    CHECK(tok.decode(tok.encode(text, true)) == text);
  }
}

TEST_CASE("encoding a long prompt with the 32000-piece vocabulary is fast") {
  Tokenizer tok = llama2c_tokenizer("llama2-tokenizer/tokenizer.bin", 32000);
  std::string text;
  std::mt19937 rng(7);
  while (text.size() < 20000) text += random_text(rng);
  auto t0 = std::chrono::steady_clock::now();
  std::vector<int> ids = tok.encode(text, true);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  WARN("encoded " << text.size() << " bytes into " << ids.size() << " tokens in " << seconds << " s");
  CHECK(tok.decode(ids) == text);
  CHECK(seconds < 2.0);  // ~0.02 s measured; a quadratic scan would take minutes
}

// ---- Bad input ---------------------------------------------------------------------------
TEST_CASE("invalid UTF-8 prompt is an InputError naming the prompt") {
  Tokenizer tok = llama2c_tokenizer("stories260K/tok512.bin", 512);
  for (const char* bad : {"abc\xFF", "\xC0\xAF", "\xED\xA0\x80", "caf\xC3", "\xF4\x90\x80\x80"})
    require_input_error([&] { tok.encode(bad, true); }, "prompt", "<text>");
}

TEST_CASE("a vocabulary with inconsistent arrays is an InputError naming the field") {
  Vocab v = load_llama2c_tokenizer(fixture("stories260K/tok512.bin"), 512);
  Vocab bad_scores = v;
  bad_scores.scores.pop_back();
  require_input_error([&] { Tokenizer t(bad_scores); }, "tokenizer.ggml.scores", v.source);
  Vocab bad_types = v;
  bad_types.token_types.resize(3);
  require_input_error([&] { Tokenizer t(bad_types); }, "tokenizer.ggml.token_type", v.source);
  Vocab bad_bos = v;
  bad_bos.bos_id = 512;
  require_input_error([&] { Tokenizer t(bad_bos); }, "tokenizer.ggml.bos_token_id", v.source);
  Vocab bad_merge = load_gguf_vocab(fixture("vocab-only/ggml-vocab-gpt-2.gguf"));
  bad_merge.merges[7] = "nospace";
  require_input_error([&] { Tokenizer t(bad_merge); }, "tokenizer.ggml.merges", bad_merge.source);
}

// ---- GPT-2 ------------------------------------------------------------------------------------
TEST_CASE("GPT-2 pre-tokenizer follows the regex") {
  using W = std::vector<std::string>;
  CHECK(gpt2_pretokenize("Hello, y'all! I'm") == W{"Hello", ",", " y", "'", "all", "!", " I", "'m"});
  CHECK(gpt2_pretokenize("   Hello") == W{"  ", " Hello"});  // \s+(?!\S) leaves one space
  CHECK(gpt2_pretokenize("a  ") == W{"a", "  "});             // trailing run stays whole
  CHECK(gpt2_pretokenize("x\n =") == W{"x", "\n", " ="});
  CHECK(gpt2_pretokenize("3.14 ½") == W{"3", ".", "14", " ½"});
  CHECK(gpt2_pretokenize("they're 've 'LL") == W{"they", "'re", " '", "ve", " '", "LL"});
  CHECK(gpt2_pretokenize("нещо 我想 ab12") == W{"нещо", " 我想", " ab", "12"});
  CHECK(gpt2_pretokenize("").empty());
}

TEST_CASE("GPT-2 encoding equals OpenAI's encoder.py algorithm on many scripts (fixture)") {
  Tokenizer tok(load_gguf_vocab(fixture("vocab-only/ggml-vocab-gpt-2.gguf")));
  std::istringstream lines(slurp(data_file("gpt2_expected_ids.txt")));
  int n = 0, failures = 0;
  for (std::string line; std::getline(lines, line); n++) {
    std::istringstream f(line);
    std::string hex, text;
    f >> hex;
    for (size_t i = 0; i + 1 < hex.size(); i += 2) text += (char)std::stoi(hex.substr(i, 2), nullptr, 16);
    std::vector<int> want, got = tok.encode(text, false);
    for (int id; f >> id;) want.push_back(id);
    if (got != want && ++failures <= 5)
      FAIL_CHECK("text '" << text << "' (hex " << hex << ")\n  encoder.py:" << ids_text(want)
                          << "\n  oracle:    " << ids_text(got));
    if (tok.decode(got) != text && ++failures <= 5) FAIL_CHECK("round trip of '" << text << "'");
  }
  CHECK(n == 300);
  CHECK(failures == 0);
}

TEST_CASE("GPT-2 decoding undoes the byte mapping; round trips on random text") {
  Tokenizer tok(load_gguf_vocab(fixture("vocab-only/ggml-vocab-gpt-2.gguf")));
  CHECK(tok.encode("Hello world", false) == std::vector<int>{15496, 995});
  CHECK(tok.token_bytes(-1, 995) == " world");  // "Ġworld": no space stripping for GPT-2
  CHECK(tok.token_bytes(-1, 198) == "\n");       // "Ċ"
  CHECK(tok.token_bytes(-1, 50256).empty());     // <|endoftext|> is a control token
  std::mt19937 rng(11);
  for (int i = 0; i < 200; i++) {
    std::string text = random_text(rng);
    INFO("text '" << text << "'");
    CHECK(tok.decode(tok.encode(text, false)) == text);
  }
}

TEST_CASE("Unicode classes agree with Python's unicodedata on the covered blocks") {
  std::istringstream lines(slurp(data_file("unicode_classes.txt")));
  uint32_t covered = 0;
  int mismatches = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream f(line);
    std::string lo, hi, cls;
    f >> lo >> hi >> cls;
    for (uint32_t cp = std::stoul(lo, nullptr, 16); cp <= std::stoul(hi, nullptr, 16); cp++, covered++) {
      UnicodeClass c = unicode_class(cp);
      char got = c == UnicodeClass::Letter ? 'L' : c == UnicodeClass::Number ? 'N'
               : c == UnicodeClass::Whitespace ? 'W' : 'O';
      if (got != cls[0] && ++mismatches <= 5) FAIL_CHECK("U+" << std::hex << cp << " want " << cls << " got " << got);
    }
  }
  CHECK(covered == 47748);  // the blocks the fixture lists (the tables are exact everywhere)
  CHECK(mismatches == 0);
}

TEST_CASE("Unicode categories of hand-picked code points (Unicode charts)") {
  using C = UnicodeCategory;
  const std::pair<uint32_t, C> cases[] = {
      {'a', C::Letter},        {'Z', C::Letter},       {'7', C::Number},        {'!', C::Punctuation},
      {'$', C::Symbol},        {'+', C::Symbol},       {'_', C::Punctuation},   {' ', C::Separator},
      {'\n', C::Other},       {0x0301, C::Mark},      {0x00A0, C::Separator},  {0x00B2, C::Number},
      {0x10D0, C::Letter},     {0x1200, C::Letter},    {0x2026, C::Punctuation}, {0x20AC, C::Symbol},
      {0x3002, C::Punctuation}, {0x4E00, C::Letter},   {0xFF01, C::Punctuation}, {0x1F600, C::Symbol},
      {0x1D7CE, C::Number},    {0xE000, C::Other},     {0x0378, C::Undefined},  {0x10FFFF, C::Undefined},
  };
  for (const auto& [cp, want] : cases) {
    INFO("U+" << std::hex << cp);
    CHECK(unicode_category(cp) == want);
  }
  CHECK(unicode_is_whitespace(0x85));
  CHECK(unicode_is_whitespace(0x3000));
  CHECK_FALSE(unicode_is_whitespace(0x200B));  // ZERO WIDTH SPACE is Cf, not White_Space
  CHECK_FALSE(unicode_is_whitespace(0x1C));
}

// ---- UTF-8 helpers ------------------------------------------------------------------------------
TEST_CASE("utf8 validation follows Unicode Table 3-7") {
  CHECK(utf8_valid(""));
  CHECK(utf8_valid("a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\xF4\x8F\xBF\xBF"));
  CHECK(utf8_first_invalid("ab\x80") == 2);           // lone continuation
  CHECK(utf8_first_invalid("\xC1\xBF") == 0);         // overlong
  CHECK(utf8_first_invalid("\xE0\x9F\xBF") == 0);     // overlong 3-byte
  CHECK(utf8_first_invalid("x\xED\xA0\x80") == 1);    // surrogate
  CHECK(utf8_first_invalid("\xF4\x90\x80\x80") == 0); // above U+10FFFF
  CHECK(utf8_first_invalid("\xE2\x82") == 0);         // truncated
  CHECK(utf8_to_codepoints("a\xE2\x82\xAC") == std::vector<uint32_t>{0x61, 0x20AC});
  std::string s;
  for (uint32_t cp : {0x24u, 0xA2u, 0x20ACu, 0x10348u}) utf8_append(s, cp);
  CHECK(s == "$\xC2\xA2\xE2\x82\xAC\xF0\x90\x8D\x88");
}
