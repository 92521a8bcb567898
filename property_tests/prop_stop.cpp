// Stop-string handling over random token streams (reference/generate/stop.h TextStream):
// the emitted text never contains a stop string and equals the longest prefix
// of the decoded text before the first occurrence of any stop string, however
// the tokens cut the text.
#include <catch2/catch.hpp>
#include <rapidcheck/catch.h>

#include "property_tests/generators.h"
#include "reference/generate/stop.h"
#include "reference/tokenizer/tokenizer.h"
#include "test_support.h"

using namespace oracle;

namespace {

Tokenizer tok512() {
  std::string path = test::models("stories260K/tok512.bin");
  if (!test::have(path)) FAIL("missing fixture " << path);
  return Tokenizer(load_llama2c_tokenizer(path, 512));
}

// Ids of tok512 whose text (not at the start) uses only "abn " (pieces and byte tokens).
std::vector<int> small_alphabet_tokens(const Tokenizer& tok) {
  std::vector<int> ids;
  for (int id = 3; id < tok.vocab_size(); id++) {
    std::string t = tok.token_bytes(3, id);
    if (!t.empty() && t.find_first_not_of("abn ") == std::string::npos) ids.push_back(id);
  }
  return ids;
}

std::string before_first_stop(const std::string& text, const std::vector<std::string>& stops, bool* hit) {
  size_t first = std::string::npos;
  for (const std::string& s : stops) first = std::min(first, text.find(s));
  *hit = first != std::string::npos;
  return *hit ? text.substr(0, first) : text;
}

}  // namespace

TEST_CASE("property: stop strings over random token streams", "[property][stop]") {
  oracle::prop::Shapes shapes;
  const Tokenizer tok = tok512();
  const std::vector<int> pool = small_alphabet_tokens(tok);
  REQUIRE(pool.size() >= 8);
  const int prev = pool[0];  // a prompt token that is not BOS: no leading-space strip

  oracle::prop::check("emitted text = longest prefix before the first stop, never contains one", 2000, shapes, [&] {
    const int n_ids = *rc::gen::inRange(0, 60);
    std::vector<int> ids = *rc::gen::container<std::vector<int>>((size_t)n_ids, rc::gen::elementOf(pool));
    std::vector<std::string> stops = *oracle::prop::gen_stop_strings();
    shapes.add("tokens", n_ids);
    shapes.add("stop strings", (long)stops.size());
    std::string full;
    int p = prev;
    for (int id : ids) {
      full += tok.token_bytes(p, id);
      p = id;
    }
    bool hit = false;
    std::string want = before_first_stop(full, stops, &hit);

    StopConditions cond;
    cond.stop_strings = stops;
    TextStream stream(tok, cond, prev);
    std::string got;
    bool done = false;
    for (size_t i = 0; i < ids.size() && !done; i++) {
      StreamStep step = stream.push(ids[i]);
      got += step.text;
      done = step.done;
    }
    if (!done) {
      StreamStep step = stream.finish();
      got += step.text;
      RC_ASSERT((step.reason == FinishReason::StopString) == hit);
    } else {
      RC_ASSERT(hit);
    }
    for (const std::string& s : stops) RC_ASSERT(got.find(s) == std::string::npos);
    RC_ASSERT(got == want);
  });
}

// ---- StopMatcher against a brute-force matcher ----------------------------------------------
namespace {

// The rule of docs/tokenizer.md "Stops", computed from scratch on the whole text T received so
// far: f = the earliest start of a complete occurrence of any stop; p = the earliest start i
// whose suffix T[i:] is a proper prefix of some stop (an occurrence that may still complete).
// Stopped iff f exists and no possible occurrence starts before it (p >= f), or at the end.
// Emitted: T[:f] when stopped, else T[:p] (T when nothing can start).
struct Naive {
  bool stopped = false;
  size_t emitted = 0;  // bytes of T released
  size_t at = std::string::npos;  // start of the declared occurrence
};

Naive naive_stop(const std::string& t, const std::vector<std::string>& stops, bool at_end) {
  size_t f = std::string::npos, p = std::string::npos;
  for (size_t i = 0; i < t.size() && f == std::string::npos; i++)
    for (const std::string& s : stops)
      if (i + s.size() <= t.size() && t.compare(i, s.size(), s) == 0) f = i;
  for (size_t i = 0; i < t.size() && p == std::string::npos && !at_end; i++)
    for (const std::string& s : stops)
      if (t.size() - i < s.size() && s.compare(0, t.size() - i, t, i, t.size() - i) == 0) p = i;
  Naive n;
  if (f != std::string::npos && (p == std::string::npos || p >= f)) {
    n.stopped = true, n.emitted = f, n.at = f;
  } else {
    n.emitted = p == std::string::npos ? t.size() : p;
  }
  return n;
}

// Stop sets with shared prefixes, overlaps and nesting: pieces of one base string (its prefixes,
// substrings, itself extended) and a few free strings, over a 4-symbol alphabet with multi-byte
// characters ("é" 2 bytes, "€" 3 bytes).
const char* const kSymbols[] = {"a", "b", "\xC3\xA9", "\xE2\x82\xAC"};

rc::Gen<std::string> gen_symbols(int lo, int hi) {
  return rc::gen::map(rc::gen::mapcat(rc::gen::inRange(lo, hi + 1),
                                      [](int n) { return rc::gen::container<std::vector<int>>((size_t)n, rc::gen::inRange(0, 4)); }),
                      [](const std::vector<int>& v) {
                        std::string s;
                        for (int i : v) s += kSymbols[i];
                        return s;
                      });
}

std::vector<std::string> related_stops(const std::string& base) {
  std::vector<size_t> cuts{0};  // character boundaries of base
  for (size_t i = 1; i <= base.size(); i++)
    if (i == base.size() || ((unsigned char)base[i] & 0xC0) != 0x80) cuts.push_back(i);
  std::vector<std::string> stops;
  const int n = *rc::gen::inRange(1, 5);
  for (int k = 0; k < n; k++) {
    const size_t a = *rc::gen::inRange<size_t>(0, cuts.size() - 1), b = *rc::gen::inRange<size_t>(a + 1, cuts.size());
    stops.push_back(base.substr(cuts[a], cuts[b] - cuts[a]));  // a substring (prefix, suffix, nested)
  }
  if (*rc::gen::inRange(0, 2) == 0) stops.push_back(base + *gen_symbols(1, 2));  // extends base
  if (*rc::gen::inRange(0, 2) == 0) stops.push_back(*gen_symbols(1, 3));         // unrelated
  return stops;
}

}  // namespace

TEST_CASE("property: StopMatcher equals a brute-force matcher after every chunk", "[property][stop]") {
  oracle::prop::Shapes shapes;
  oracle::prop::check("StopMatcher == naive matcher at every chunk boundary (nested, overlapping stops)", 3000,
                      shapes, [&] {
    const std::string base = *gen_symbols(1, 5);
    const std::vector<std::string> stops = related_stops(base);
    std::string text;  // free symbols with copies of base and of stop pieces spliced in
    for (int k = *rc::gen::inRange(0, 6); k > 0; k--) {
      const int what = *rc::gen::inRange(0, 3);
      text += what == 0 ? *gen_symbols(0, 3) : what == 1 ? base : stops[(size_t)*rc::gen::inRange<size_t>(0, stops.size())];
      if (*rc::gen::inRange(0, 3) == 0 && !text.empty()) text.pop_back();  // cut a character: a near-miss
    }
    shapes.add("stop strings", (long)stops.size());
    shapes.add("text bytes", (long)text.size());
    StopMatcher m(stops);
    std::string got, seen;
    size_t pos = 0;
    int chunks = 0;
    while (pos < text.size() && !m.stopped()) {  // random cuts at any byte
      const size_t len = *rc::gen::inRange<size_t>(0, std::min<size_t>(6, text.size() - pos) + 1);
      seen += text.substr(pos, len);
      got += m.push(text.substr(pos, len));
      pos += len;
      chunks++;
      const Naive want = naive_stop(seen, stops, false);
      RC_ASSERT(m.stopped() == want.stopped);
      RC_ASSERT(got == seen.substr(0, want.emitted));
      if (want.stopped) {
        const std::string& s = stops[(size_t)m.stop_index()];
        RC_ASSERT(seen.compare(want.at, s.size(), s) == 0);
        for (const std::string& o : stops)  // ties at the same start: the shortest stop string
          RC_ASSERT(!(seen.compare(want.at, o.size(), o) == 0 && o.size() < s.size()));
      }
    }
    shapes.add("chunks", chunks);
    if (!m.stopped()) {
      got += m.finish();
      const Naive want = naive_stop(seen, stops, true);
      RC_ASSERT(m.stopped() == want.stopped);
      RC_ASSERT(got == seen.substr(0, want.emitted));
    }
    if (m.stopped()) RC_ASSERT(m.push("a").empty());  // nothing after a stop
  });
}
