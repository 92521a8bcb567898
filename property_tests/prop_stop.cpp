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
