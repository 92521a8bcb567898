#pragma once
// llama2.c's encode(), transcribed from run.c: the independent oracle of
// SentencePiece-style segmentation for llama2.c tokenizer.bin files (BOS, the
// dummy-prefix space, code points or byte fallback, then repeatedly the
// best-scoring adjacent merge, leftmost on ties). Used by test_tokenizer and
// prop_tokenizer.
#include <catch2/catch.hpp>

#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

namespace oracle::test {

// ---- llama2.c's encode(), transcribed from run.c (the independent oracle) -----------
struct RawTokenizer {
  std::vector<std::string> pieces;  // as stored in tokenizer.bin (' ' for space)
  std::vector<float> scores;
  std::map<std::string, int> lookup;  // run.c's sorted vocab + bsearch
};

inline RawTokenizer read_raw(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  INFO("cannot read " << path);
  REQUIRE(in.good());
  const std::string d((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  RawTokenizer t;
  for (size_t pos = 4; pos + 8 <= d.size();) {
    float score;
    int32_t len;
    std::memcpy(&score, d.data() + pos, 4);
    std::memcpy(&len, d.data() + pos + 4, 4);
    t.lookup[d.substr(pos + 8, (size_t)len)] = (int)t.pieces.size();
    t.pieces.push_back(d.substr(pos + 8, (size_t)len));
    t.scores.push_back(score);
    pos += 8 + (size_t)len;
  }
  return t;
}

inline int str_lookup(const RawTokenizer& t, const std::string& s) {
  auto it = t.lookup.find(s);
  return it == t.lookup.end() ? -1 : it->second;
}

inline std::vector<int> llama2c_encode(const RawTokenizer& t, const std::string& text) {
  std::vector<int> tokens{1};  // bos
  if (!text.empty()) tokens.push_back(str_lookup(t, " "));
  std::string buf;
  for (size_t i = 0; i < text.size(); i++) {
    if ((text[i] & 0xC0) != 0x80) buf.clear();
    buf += text[i];
    char next = i + 1 < text.size() ? text[i + 1] : '\0';
    if ((next & 0xC0) == 0x80 && buf.size() < 4) continue;
    int id = str_lookup(t, buf);
    if (id != -1) tokens.push_back(id);
    else for (unsigned char b : buf) tokens.push_back((int)b + 3);
    buf.clear();
  }
  while (true) {
    float best_score = -1e10f;
    int best_id = -1, best_idx = -1;
    for (size_t i = 0; i + 1 < tokens.size(); i++) {
      int id = str_lookup(t, t.pieces[tokens[i]] + t.pieces[tokens[i + 1]]);
      if (id != -1 && t.scores[id] > best_score) {
        best_score = t.scores[id];
        best_id = id;
        best_idx = (int)i;
      }
    }
    if (best_idx == -1) break;
    tokens[best_idx] = best_id;
    tokens.erase(tokens.begin() + best_idx + 1);
  }
  return tokens;
}

}  // namespace oracle::test
