// StopMatcher and TextStream: stop strings across token boundaries (2-4
// tokens), overlapping stops, a stop at the very first token, a stop inside a
// multi-byte character, hold-back, and the token-level stops with their
// finish reasons.
#include <catch2/catch.hpp>
#include <rapidcheck/catch.h>

#include <cstdlib>

#include "base/errors.h"
#include "reference/generate/stop.h"
#include "reference/tokenizer/tokenizer.h"
#include "fixture.h"

using namespace oracle;

namespace {

using test::fixture;

Tokenizer tok512() { return Tokenizer(load_llama2c_tokenizer(fixture("stories260K/tok512.bin"), 512)); }

// What must be emitted: the text before the earliest occurrence of any stop.
std::string expected_prefix(const std::string& text, const std::vector<std::string>& stops, bool* hit) {
  size_t first = std::string::npos;
  for (const std::string& s : stops) first = std::min(first, text.find(s));
  *hit = first != std::string::npos;
  return text.substr(0, *hit ? first : text.size());
}

// Feeds `text` cut at `cuts` (sorted offsets); returns everything emitted.
std::string feed(const std::string& text, const std::vector<size_t>& cuts,
                 const std::vector<std::string>& stops, bool* stopped) {
  StopMatcher m(stops);
  std::string out;
  size_t prev = 0;
  for (size_t i = 0; i <= cuts.size() && !m.stopped(); i++) {
    size_t end = i < cuts.size() ? cuts[i] : text.size();
    out += m.push(text.substr(prev, end - prev));
    prev = end;
  }
  out += m.finish();
  *stopped = m.stopped();
  return out;
}

// Every way of cutting `text` into chunks gives the expected prefix.
void check_all_cuts(const std::string& text, const std::vector<std::string>& stops) {
  bool hit = false;
  std::string want = expected_prefix(text, stops, &hit);
  size_t n = text.size() > 0 ? text.size() - 1 : 0;
  for (uint32_t mask = 0; mask < (1u << n); mask++) {
    std::vector<size_t> cuts;
    for (size_t k = 0; k < n; k++)
      if (mask & (1u << k)) cuts.push_back(k + 1);
    bool stopped = false;
    INFO("text '" << text << "' cut mask " << mask);
    REQUIRE(feed(text, cuts, stops, &stopped) == want);
    REQUIRE(stopped == hit);
  }
}

// Streams the ids through a TextStream; returns all text emitted.
std::string stream(TextStream& s, const std::vector<int>& ids, StreamStep* last) {
  std::string out;
  for (int id : ids) {
    *last = s.push(id);
    out += last->text;
    if (last->done) break;
  }
  return out;
}

}  // namespace

// ---- StopMatcher ----------------------------------------------------------------------
TEST_CASE("stop strings: overlapping, nested and repeated, for every chunking") {
  check_all_cuts("xabcx", {"ab", "bc"});      // overlap: "ab" starts first
  check_all_cuts("xabcx", {"bc", "ab"});      // order of the list does not matter
  check_all_cuts("abx", {"abc", "b"});         // "b" inside a longer stop that fails
  check_all_cuts("abcx", {"abc", "b"});        // ... and that completes: earlier start wins
  check_all_cuts("aaab", {"aab"});             // self-overlapping prefix
  check_all_cuts("ababac", {"abac"});
  check_all_cuts("hello world", {"xyz"});      // no stop: everything comes out
  check_all_cuts("stop", {"stop"});            // at the very start
  check_all_cuts("caf\xC3\xA9!", {"\xC3\xA9"});  // a two-byte character
}

TEST_CASE("held-back text is exactly the longest suffix that can start a stop") {
  StopMatcher m({"</s>", "STOP"});
  CHECK(m.push("abc<") == "abc");
  CHECK(m.n_held() == 1);
  CHECK(m.push("/") == "");
  CHECK(m.push("x") == "</x");  // no longer a stop prefix: released
  CHECK(m.push("ST") == "");
  CHECK(m.push("OP and more") == "");
  CHECK(m.stopped());
  CHECK(m.stop_index() == 1);
  CHECK(m.push("ignored") == "");
  CHECK(m.finish() == "");
}

TEST_CASE("finish releases a held partial stop") {
  StopMatcher m({"the end"});
  CHECK(m.push("and that was the en") == "and that was ");
  CHECK(m.finish() == "the en");
  CHECK(!m.stopped());
}

TEST_CASE("bad stop strings are InputErrors naming the entry") {
  auto field_of = [](std::vector<std::string> stops) {
    try {
      StopMatcher m(std::move(stops));
    } catch (const InputError& e) {
      return e.field();
    }
    return std::string("no error");
  };
  CHECK(field_of({"ok", ""}) == "stop[1]");
  CHECK(field_of({"\xE2\x82"}) == "stop[0]");  // half a character can never match complete text
}

TEST_CASE("property: the emitted text never depends on the chunking") {
  setenv("RC_PARAMS", "seed=20261130", 0);  // seeded unless the caller chose one
  rc::prop("random text over {a,b,c}, random stops, random cuts", [] {
    auto letter = rc::gen::element('a', 'b', 'c');
    std::string text = *rc::gen::container<std::string>(letter);
    auto stop = rc::gen::nonEmpty(rc::gen::resize(4, rc::gen::container<std::string>(letter)));
    std::vector<std::string> stops = *rc::gen::resize(3, rc::gen::container<std::vector<std::string>>(stop));
    std::vector<size_t> cuts;
    for (size_t k = 1; k < text.size(); k++)
      if (*rc::gen::inRange(0, 3) == 0) cuts.push_back(k);
    bool hit = false, stopped = false;
    std::string want = expected_prefix(text, stops, &hit);
    RC_ASSERT(feed(text, cuts, stops, &stopped) == want);
    RC_ASSERT(stopped == hit);
  });
}

// ---- TextStream on real tokens (tok512: " Once"=403 " upon"=407 " a"=261 " time"=378) --------
TEST_CASE("stop strings spanning 2, 3 and 4 tokens") {
  Tokenizer tok = tok512();
  const std::vector<int> ids{403, 407, 261, 378, 13 /* <0x0A> */, 403};
  struct Case { std::string stop; std::string emitted; };
  for (const Case& c : {Case{"upon a", "Once "},           // 2 tokens
                        Case{"on a ti", "Once up"},        // 3 tokens
                        Case{"nce upon a tim", "O"},       // 4 tokens
                        Case{"time\n", "Once upon a "}}) {  // 2 tokens, one a byte token
    TextStream s(tok, StopConditions{true, {}, {c.stop}, 0}, tok.bos_id());
    StreamStep last;
    INFO("stop '" << c.stop << "'");
    CHECK(stream(s, ids, &last) == c.emitted);
    CHECK(last.done);
    CHECK(last.reason == FinishReason::StopString);
  }
}

TEST_CASE("a stop at the very first token emits nothing") {
  Tokenizer tok = tok512();
  TextStream s(tok, StopConditions{true, {}, {"Once"}, 0}, tok.bos_id());
  StreamStep step = s.push(403);
  CHECK(step.text.empty());
  CHECK(step.done);
  CHECK(step.reason == FinishReason::StopString);
  CHECK(s.n_tokens() == 1);
}

TEST_CASE("a stop made of a multi-byte character split over byte tokens") {
  Tokenizer tok = tok512();
  const std::vector<int> euro{3 + 0xE2, 3 + 0x82, 3 + 0xAC};
  TextStream s(tok, StopConditions{true, {}, {"\xE2\x82\xAC"}, 0}, 403);
  StreamStep last;
  std::vector<int> ids{407};
  ids.insert(ids.end(), euro.begin(), euro.end());
  ids.push_back(261);
  CHECK(stream(s, ids, &last) == " upon");
  CHECK(last.reason == FinishReason::StopString);
  CHECK(s.n_tokens() == 4);  // stopped on the token completing the character
  // A different character sharing the first two bytes (U+20AD) is not a stop.
  TextStream t(tok, StopConditions{true, {}, {"\xE2\x82\xAC"}, 3}, 403);
  CHECK(stream(t, {3 + 0xE2, 3 + 0x82, 3 + 0xAD}, &last) == "\xE2\x82\xAD");
  CHECK(last.reason == FinishReason::Length);
}

TEST_CASE("EOS, stop tokens and max tokens end the stream with their reason") {
  Tokenizer tok = tok512();
  StreamStep last;
  TextStream eos(tok, StopConditions{true, {}, {" a time"}, 0}, 1);
  CHECK(stream(eos, {403, 407, 261, 2, 378}, &last) == "Once upon a");  // held " a" released
  CHECK(last.reason == FinishReason::Eos);
  CHECK(std::string(finish_reason_name(last.reason)) == "eos");
  TextStream bos(tok, StopConditions{true, {1}, {}, 0}, 1);
  CHECK(stream(bos, {403, 1, 407}, &last) == "Once");
  CHECK(last.reason == FinishReason::StopToken);
  TextStream len(tok, StopConditions{true, {}, {}, 2}, 1);
  CHECK(stream(len, {403, 407, 261}, &last) == "Once upon");
  CHECK(last.reason == FinishReason::Length);
  CHECK(len.n_tokens() == 2);
  TextStream cut(tok, StopConditions{true, {}, {}, 2}, 1);
  CHECK(stream(cut, {403, 3 + 0xE2}, &last) == "Once\xEF\xBF\xBD");  // unfinished char: visible
  CHECK(cut.n_replaced() == 1);
  TextStream early(tok, StopConditions{false, {}, {"upon a"}, 0}, 1);
  CHECK(stream(early, {403, 407}, &last) == "Once ");
  last = early.finish();  // caller ends early: the held "upon" comes out
  CHECK(last.text == "upon");
  CHECK(last.reason == FinishReason::Length);
}
