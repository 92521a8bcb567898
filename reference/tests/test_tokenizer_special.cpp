// Tokenizer metadata and special tokens: SmolLM2 against llama.cpp's own ids
// (../shared/models/smollm2/llamacpp_tokens_public.json, llama-tokenize, both
// modes), add_bos/add_eos/add_space_prefix/remove_extra_whitespaces, token
// types, EOG ids; and the split-pattern regex engine against hand-derived
// splits.
#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "base/errors.h"
#include "reference/model/gguf.h"
#include "reference/tokenizer/regex_split.h"
#include "reference/tokenizer/tokenizer.h"
#include "fixture.h"

using namespace oracle;
using nlohmann::json;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

const Tokenizer& smollm2() {
  static const Tokenizer tok(load_gguf_vocab(test::fixture("smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")));
  return tok;
}

std::string ids_text(const std::vector<int>& ids) {
  std::string s;
  for (int id : ids) s += " " + std::to_string(id);
  return s;
}

using W = std::vector<std::string>;
W split(const std::string& pattern, const std::string& text) { return regex_split_words(text, {SplitRegex(pattern)}); }

}  // namespace

TEST_CASE("SmolLM2 tokenizes every llama.cpp string to llama.cpp's ids, with and without special parsing") {
  const Tokenizer& tok = smollm2();
  const json cases = json::parse(slurp(test::fixture("smollm2/llamacpp_tokens_public.json")));
  REQUIRE(cases.size() == 19);
  int checked = 0;
  for (const json& c : cases) {
    const std::string text = c["text"];
    INFO("text '" << text << "'");
    // llama-tokenize adds the vocabulary's specials (add_bos_token = false here) and parses by default.
    const auto want_special = c["ids_parse_special"].get<std::vector<int>>();
    const auto want_plain = c["ids_no_parse_special"].get<std::vector<int>>();
    const Vocab& v = tok.vocab();
    const auto got_special = tok.encode(text, EncodeOptions{v.add_bos, v.add_eos, true});
    const auto got_plain = tok.encode(text, EncodeOptions{v.add_bos, v.add_eos, false});
    INFO("want" << ids_text(want_special) << "\n got" << ids_text(got_special));
    CHECK(got_special == want_special);
    INFO("want (no parse)" << ids_text(want_plain) << "\n got" << ids_text(got_plain));
    CHECK(got_plain == want_plain);
    checked++;
  }
  CHECK(checked == 19);
}

TEST_CASE("SmolLM2 metadata: no BOS, no space prefix, ChatML control tokens, EOG ids") {
  const Tokenizer& tok = smollm2();
  const Vocab& v = tok.vocab();
  CHECK_FALSE(v.add_bos);
  CHECK_FALSE(v.add_eos);
  CHECK(v.pre == "smollm");
  CHECK(tok.bos_id() == 1);
  CHECK(tok.eos_id() == 2);
  // EOS <|im_end|> and <|endoftext|> (llama.cpp's EOG texts) and the FIM repo token <reponame>
  // end generation (llama.cpp's llama_vocab_is_eog set, data/tokdiff/smollm2.jsonl); <|im_start|> does not.
  CHECK(tok.vocab().tokens[4] == "<reponame>");
  CHECK(tok.eog_ids() == std::vector<int>{0, 2, 4});
  CHECK(tok.vocab().eot_id == 2);  // found by its text (<|im_end|> before <|endoftext|> in llama.cpp's list)
  CHECK_FALSE(tok.is_eog(1));
  CHECK(tok.token_bytes(-1, 1).empty());  // control tokens print nothing
  CHECK(tok.encode("<|im_start|>", EncodeOptions{false, false, true}) == std::vector<int>{1});
  CHECK(tok.encode("<|im_start|>", EncodeOptions{false, false, false}).size() > 1);
}

// ggml-vocab-gpt-2 (50257 tokens) with `extra` appended as control tokens (GGUF type 3),
// as a converter writes a model's added special tokens: ids 50257, 50258, ...
static Tokenizer gpt2_plus(const std::vector<std::string>& extra, int eos_extra = -1) {
  Vocab v = load_gguf_vocab(test::fixture("vocab-only/ggml-vocab-gpt-2.gguf"));
  REQUIRE(v.tokens.size() == 50257);
  for (const std::string& t : extra) {
    v.tokens.push_back(t);
    if (!v.token_types.empty()) v.token_types.push_back(3);
    if (!v.scores.empty()) v.scores.push_back(0.0f);
  }
  if (eos_extra >= 0) v.eos_id = 50257 + eos_extra;
  return Tokenizer(v);
}

TEST_CASE("llama.cpp's two end-of-generation exceptions: <|end|> of o200k_harmony / solar-open, </s> of gemma4 / plamo") {
  // llama_vocab::impl::load (llama-cpp-python 0.3.36, vendor/llama.cpp/src/llama-vocab.cpp,
  // after the EOG sanity checks): <|end|> leaves the EOG set and becomes USER_DEFINED when the
  // set also holds <|return|> and <|call|>/<|calls|>, or <|call|>/<|calls|> and <|flush|>;
  // </s> leaves it and becomes NORMAL when the set holds <|tool_response> or <|plamo:eos|>.
  // A user-defined token is split out even without special parsing and prints its text; a
  // normal one is never split out as a special token and prints its text.
  const EncodeOptions plain{false, false, false}, special{false, false, true};
  for (const auto& extra : {W{"<|end|>", "<|return|>", "<|call|>"}, W{"<|end|>", "<|calls|>", "<|flush|>"},
                            W{"<|end|>", "<|return|>", "<|calls|>"}, W{"<|end|>", "<|call|>", "<|flush|>"}}) {
    INFO(extra[1] << " " << extra[2]);
    const Tokenizer tok = gpt2_plus(extra);
    CHECK_FALSE(tok.is_eog(50257));
    CHECK(tok.is_eog(50258));
    CHECK(tok.is_eog(50259));
    CHECK(tok.encode("<|end|>", plain) == std::vector<int>{50257});
    CHECK(tok.token_bytes(-1, 50257) == "<|end|>");
  }
  for (const auto& extra : {W{"<|end|>", "<|call|>"}, W{"<|end|>", "<|return|>", "<|flush|>"}, W{"<|end|>"}}) {
    INFO(extra.size());
    const Tokenizer tok = gpt2_plus(extra);
    CHECK(tok.is_eog(50257));  // neither condition holds: <|end|> stays an EOG control token
    CHECK(tok.encode("<|end|>", plain) != std::vector<int>{50257});
    CHECK(tok.encode("<|end|>", special) == std::vector<int>{50257});
    CHECK(tok.token_bytes(-1, 50257).empty());
  }
  for (int plamo = 0; plamo < 2; plamo++) {
    const Tokenizer tok = plamo ? gpt2_plus({"</s>", "<|plamo:eos|>"}, 1) : gpt2_plus({"</s>", "<|tool_response>"});
    CHECK_FALSE(tok.is_eog(50257));
    CHECK(tok.is_eog(50258));
    CHECK(tok.encode("</s>", special) != std::vector<int>{50257});
    CHECK(tok.token_bytes(-1, 50257) == "</s>");
  }
  const Tokenizer paddle = gpt2_plus({"</s>"});  // paddleocr: </s> alone ends generation
  CHECK(paddle.is_eog(50257));
  CHECK(paddle.encode("</s>", special) == std::vector<int>{50257});
}

TEST_CASE("no end-of-turn text: eot_id and eom_id stay -1 (llama.cpp's LLAMA_TOKEN_NULL)") {
  // llama_vocab_eot() / llama_vocab_eom() return LLAMA_TOKEN_NULL (-1) when neither the file
  // nor any candidate text names one; Llama 2's SentencePiece vocabulary has none.
  const Tokenizer tok(load_gguf_vocab(test::fixture("vocab-only/ggml-vocab-llama-spm.gguf")));
  CHECK(tok.vocab().eot_id == -1);
  CHECK(tok.vocab().eom_id == -1);
  CHECK(tok.eog_ids() == std::vector<int>{2});  // </s>, EOS (data/tokdiff/llama-spm.jsonl: eog [2])
}

TEST_CASE("add_bos_token / add_eos_token / pre-tokenizer default BOS are honoured") {
  Vocab v = load_gguf_vocab(test::fixture("vocab-only/ggml-vocab-gpt-2.gguf"));
  CHECK_FALSE(v.add_bos_explicit);
  v.add_eos = true;
  Tokenizer tok(v);
  CHECK(tok.encode("a", EncodeOptions{true, true, false}) == std::vector<int>{50256, 64, 50256});
  CHECK(tok.encode("a", EncodeOptions{false, false, false}) == std::vector<int>{64});
  CHECK_FALSE(tok.vocab().add_bos);  // gpt-2's default: no BOS
  v.pre = "llama-bpe";               // llama.cpp: llama-bpe vocabularies default to BOS
  CHECK(Tokenizer(v).vocab().add_bos);
  v.add_bos_explicit = true;
  v.add_bos = false;  // ... unless the file says otherwise
  CHECK_FALSE(Tokenizer(v).vocab().add_bos);
}

TEST_CASE("SentencePiece: dummy prefix after special tokens, add_space_prefix, remove_extra_whitespaces") {
  Vocab v = load_gguf_vocab(test::fixture("vocab-only/ggml-vocab-llama-spm.gguf"));
  Tokenizer tok(v);
  const int s = 1, e = 2;  // <s>, </s> (control)
  const std::vector<int> hello = tok.encode("Hello", false);
  // llama.cpp: every text fragment that follows a special token gets the dummy prefix.
  std::vector<int> want = {s};
  want.insert(want.end(), hello.begin(), hello.end());
  want.push_back(e);
  want.insert(want.end(), hello.begin(), hello.end());
  CHECK(tok.encode("<s>Hello</s>Hello", EncodeOptions{false, false, true}) == want);
  v.add_space_prefix = false;
  CHECK(Tokenizer(v).encode("Hello", false) != hello);
  v.add_space_prefix = true;
  v.remove_extra_whitespaces = true;  // sentencepiece's normalizer: trim, collapse runs of spaces
  CHECK(Tokenizer(v).encode("  Hello   world ", false) == tok.encode("Hello world", false));
}

TEST_CASE("user-defined tokens are split out even without special parsing; unknown pre is refused") {
  Vocab v = load_gguf_vocab(test::fixture("vocab-only/ggml-vocab-gpt-2.gguf"));
  v.token_types.assign(v.tokens.size(), 1);
  const int id = 1000;  // some normal token, made user-defined
  v.token_types[id] = 4;
  const std::string piece = v.tokens[id];
  Tokenizer tok(v);
  CHECK(tok.encode("x" + piece + "x", false) ==
        std::vector<int>{tok.encode("x", false)[0], id, tok.encode("x", false)[0]});
  v.pre = "not-a-pre-tokenizer";
  try {
    Tokenizer bad(v);
    FAIL("accepted an unknown pre-tokenizer");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("tokenizer.ggml.pre") != std::string::npos);
  }
}

TEST_CASE("Phi-3: special tokens strip the whitespace to their right (llama.cpp RSTRIP)") {
  Vocab v = load_gguf_vocab(test::fixture("vocab-only/ggml-vocab-phi-3.gguf"));
  REQUIRE(v.name == "Phi3");
  Tokenizer tok(v);
  const int user = tok.encode("<|user|>", EncodeOptions{false, false, true}).at(0);
  CHECK(tok.encode("<|user|>\nHi", EncodeOptions{false, false, true}) ==
        tok.encode("<|user|>Hi", EncodeOptions{false, false, true}));
  CHECK(tok.encode("<|user|>\nHi", EncodeOptions{false, false, true}).at(0) == user);
  v.name = "other";
  CHECK(Tokenizer(v).encode("<|user|>\nHi", EncodeOptions{false, false, true}) !=
        tok.encode("<|user|>\nHi", EncodeOptions{false, false, true}));
}

// ---- the regex engine -----------------------------------------------------------------
TEST_CASE("split regex: leftmost-first alternation, greedy backtracking, lookahead, $") {
  CHECK(split("a|ab", "ab") == W{"a", "b"});            // first alternative wins (not longest)
  CHECK(split("ab|a", "ab") == W{"ab"});
  CHECK(split("\\s+(?!\\S)", "a   b") == W{"a", "  ", " b"});  // backtracks one space; rest unmatched
  CHECK(split("\\s+(?!\\S)|\\s+", "a   ") == W{"a", "   "});
  CHECK(split("\\p{N}{1,3}", "1234567") == W{"123", "456", "7"});
  CHECK(split("\\p{N}", "a12") == W{"a", "1", "2"});
  CHECK(split("\\s+$", "a  b  ") == W{"a  b", "  "});
  CHECK(split("[^\\r\\n\\p{L}\\p{N}]?\\p{L}+", "!hi\nyo") == W{"!hi", "\n", "yo"});
  CHECK(split("(?:'[sS]|'[tT])", "it'S") == W{"it", "'S"});
  CHECK(split("[\\p{P}\\$\\+<=>\\^~\\|`]+", "a+b,,c") == W{"a", "+", "b", ",,", "c"});
  CHECK(split("[一-龥]+", "ab中文cd") == W{"ab", "中文", "cd"});
  CHECK(split("\\s?[!-/]+", "x !!y") == W{"x", " !!", "y"});
  CHECK(split("\\p{M}+", "e\xCC\x81x") == W{"e", "\xCC\x81", "x"});  // U+0301 combining acute
  CHECK(split("a(?=b)", "acab") == W{"ac", "a", "b"});
  CHECK(split("x", "").empty());
}

TEST_CASE("split regex: bounded repeats of groups and multi-digit bounds (PCRE semantics)") {
  // {n,m} on a group: at most m copies, greedily; bounds of several digits and the digit 9.
  CHECK(split("(?:ab){1,2}", "ababab") == W{"abab", "ab"});
  CHECK(split("(?:ab){2}", "ababa") == W{"abab", "a"});
  CHECK(split("a{10}", "aaaaaaaaaaaa") == W{"aaaaaaaaaa", "aa"});
  CHECK(split("a{9}", "aaaaaaaaaa") == W{"aaaaaaaaa", "a"});
  CHECK(split("\\p{N}{2,19}", std::string(20, '7')) == W{std::string(19, '7'), "7"});
}

TEST_CASE("split regex: non-ASCII whitespace compares as U+000B against literals, still matches \\s") {
  CHECK(split("[\xE3\x80\x80-\xE3\x80\x82]+", "a\xE3\x80\x80\xE3\x80\x81") == W{"a\xE3\x80\x80", "\xE3\x80\x81"});
  CHECK(split("\\s", "a\xE3\x80\x80") == W{"a", "\xE3\x80\x80"});
}

TEST_CASE("split regex: unsupported syntax is refused, never guessed") {
  // \0 and \9 are PCRE's NUL and a back reference, \a its BEL, \A its start-of-subject anchor:
  // not the literal digit or letter.
  for (const char* bad : {"(a)", "a+?", "a++", "(?i:a)", "\\p{Lu}", "\\w", "[a", "a{2", ".", "\\p{Z}", "(?<=a)b", "\\0",
                          "\\9", "\\a", "\\A", "[\\0]"}) {
    INFO(bad);
    CHECK_THROWS_AS(SplitRegex(bad), std::invalid_argument);
  }
}
