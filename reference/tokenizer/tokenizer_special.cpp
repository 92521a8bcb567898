// ============================================================================
// Special tokens, as llama.cpp's llama_vocab::impl::load and
// tokenizer_st_partition (src/llama-vocab.cpp):
// - attributes from the GGUF token types (3 control, 4 user-defined,
//   2 unknown); tokens whose text is one of llama.cpp's end-of-generation
//   texts are made control, as llama.cpp does;
// - Phi-3 (general.name contains "phi-3"/"phi3"): every special token but
//   <unk>, <s>, <|endoftext|> strips the whitespace to its right (RSTRIP);
// - the special-token list: control, user-defined and unknown tokens with
//   non-empty text, longest text first (ties: lower id first);
// - FIM ids: tokenizer.ggml.fim_*_token_id (or the deprecated prefix/suffix/middle keys),
//   else found by text (made control);
// - EOG ids: the FIM pad / repo / separator tokens, EOS, EOT, EOM (keys, or
//   found by text) and the EOG texts, then llama.cpp's <|end|> and </s> exceptions.
// ============================================================================
#include <algorithm>
#include <cctype>
#include <iterator>

#include "reference/tokenizer/tokenizer_impl.h"

namespace oracle {

namespace {

// llama.cpp: EOT candidates when tokenizer.ggml.eot_token_id is absent.
const char* const kEotTexts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
                                 "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]",
                                 "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>",
                                 "<end_of_utterance>"};
// llama.cpp: texts that end generation (special_eog_ids).
const char* const kEogTexts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>",
                                 "<|calls|>", "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>",
                                 "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>", "<end_of_utterance>", "<eos>",
                                 "<turn|>", "<|tool_response>",
                                 "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>", "[e~["};

// llama.cpp: the FIM tokens' texts, searched when the file names no id (Vocab::fim_ids order:
// pre, suf, mid, pad, rep, sep); pad / repo / file-separator end generation.
const char* const kFimPreTexts[] = {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>",
                                    "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "begin\xEF\xBD\x9C>", "<PRE>",
                                    "\xE2\x96\x81<PRE>", "<|code_prefix|>", "<|prefix|>"};
const char* const kFimSufTexts[] = {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",
                                    "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "hole\xEF\xBD\x9C>", "<SUF>",
                                    "\xE2\x96\x81<SUF>", "<|code_suffix|>", "<|suffix|>"};
const char* const kFimMidTexts[] = {"<|fim_middle|>", "<fim-middle>", "<fim_middle>",
                                    "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "end\xEF\xBD\x9C>", "<MID>",
                                    "\xE2\x96\x81<MID>", "<|code_middle|>", "<|middle|>"};
const char* const kFimPadTexts[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"};
const char* const kFimRepTexts[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"};
const char* const kFimSepTexts[] = {"<|file_sep|>"};

uint8_t attr_of_type(int type) {
  if (type == kTokControl) return kAttrControl;
  if (type == kTokUserDefined) return kAttrUserDefined;
  if (type == kTokUnknown) return kAttrUnknown;
  return 0;
}

// llama.cpp takes whichever candidate its hash map yields first; we take the
// first in the list's order (deterministic; every candidate is an EOG anyway).
int find_first(const Tokenizer::Impl& t, const char* const* texts, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (int id = t.find(texts[i]); id >= 0) return id;
  return -1;
}

bool eog_has(const Tokenizer::Impl& t, const char* text) {
  const int id = t.find(text);
  return id >= 0 && std::find(t.eog_ids.begin(), t.eog_ids.end(), id) != t.eog_ids.end();
}

// `type`: what the token now prints as (llama.cpp's token_to_piece reads the new attribute).
void drop_eog(Tokenizer::Impl& t, const char* text, uint8_t attr, int type) {
  const int id = t.find(text);
  t.eog_ids.erase(std::remove(t.eog_ids.begin(), t.eog_ids.end(), id), t.eog_ids.end());
  t.attr[id] = attr;
  t.retyped[id] = type;
}

// llama.cpp's two exceptions, after the set is complete: o200k_harmony / solar-open's <|end|>
// (with <|return|> and <|call|>, or <|call(s)|> and <|flush|>) becomes user-defined; gemma4 /
// plamo's </s> (with <|tool_response> or <|plamo:eos|>) becomes a normal token.
void eog_exceptions(Tokenizer::Impl& t) {
  const bool call = eog_has(t, "<|call|>") || eog_has(t, "<|calls|>");
  if (eog_has(t, "<|end|>") && call && (eog_has(t, "<|return|>") || eog_has(t, "<|flush|>")))
    drop_eog(t, "<|end|>", kAttrUserDefined, kTokUserDefined);
  if (eog_has(t, "</s>") && (eog_has(t, "<|tool_response>") || eog_has(t, "<|plamo:eos|>")))
    drop_eog(t, "</s>", 0, kTokNormal);
}

// The FIM ids the file does not name, found by text (and made control, as llama.cpp); an id the
// file names keeps its type. Pad, repo and file separator end generation.
void collect_fim(Tokenizer::Impl& t) {
  const std::pair<const char* const*, size_t> texts[6] = {
      {kFimPreTexts, std::size(kFimPreTexts)}, {kFimSufTexts, std::size(kFimSufTexts)},
      {kFimMidTexts, std::size(kFimMidTexts)}, {kFimPadTexts, std::size(kFimPadTexts)},
      {kFimRepTexts, std::size(kFimRepTexts)}, {kFimSepTexts, std::size(kFimSepTexts)}};
  for (int i = 0; i < 6; i++) {
    int& id = t.vocab.fim_ids[i];
    if (id < 0 && (id = find_first(t, texts[i].first, texts[i].second)) >= 0) t.attr[id] |= kAttrControl;
    if (i >= 3 && id >= 0) t.eog_ids.push_back(id);
  }
}

void collect_eog(Tokenizer::Impl& t) {
  Vocab& v = t.vocab;
  collect_fim(t);
  if (v.eot_id < 0 && (v.eot_id = find_first(t, kEotTexts, std::size(kEotTexts))) >= 0)
    t.attr[v.eot_id] |= kAttrControl;  // found by text: made control, as llama.cpp
  if (v.eom_id < 0 && (v.eom_id = t.find("<|eom_id|>")) >= 0) t.attr[v.eom_id] |= kAttrControl;
  for (const char* text : kEogTexts) {
    int id = t.find(text);
    if (id < 0) continue;
    t.attr[id] |= kAttrControl;
    t.eog_ids.push_back(id);
  }
  for (int id : {v.eos_id, v.eot_id, v.eom_id})
    if (id >= 0) t.eog_ids.push_back(id);
  std::sort(t.eog_ids.begin(), t.eog_ids.end());
  t.eog_ids.erase(std::unique(t.eog_ids.begin(), t.eog_ids.end()), t.eog_ids.end());
  eog_exceptions(t);
}

bool is_phi3(const std::string& name) {
  std::string lower = name;
  for (char& c : lower) c = (char)std::tolower((unsigned char)c);
  return lower.find("phi-3") != std::string::npos || lower.find("phi3") != std::string::npos;
}

void set_phi3_strip(Tokenizer::Impl& t) {
  for (int id : t.special_ids) t.attr[id] |= kAttrRstrip;
  if (int id = t.find("</s>"); id >= 0) t.attr[id] |= kAttrRstrip;
  for (const char* text : {"<unk>", "<s>", "<|endoftext|>"})
    if (int id = t.find(text); id >= 0) t.attr[id] &= (uint8_t)~kAttrRstrip;
}

}  // namespace

void build_special_tables(Tokenizer::Impl& t) {
  const size_t n = t.vocab.tokens.size();
  t.attr.assign(n, 0);
  for (size_t id = 0; id < n && !t.vocab.token_types.empty(); id++) t.attr[id] = attr_of_type(t.vocab.token_types[id]);
  collect_eog(t);
  for (size_t id = 0; id < n; id++)
    if ((t.attr[id] & (kAttrControl | kAttrUserDefined | kAttrUnknown)) && !t.vocab.tokens[id].empty())
      t.special_ids.push_back((int)id);
  std::stable_sort(t.special_ids.begin(), t.special_ids.end(), [&](int a, int b) {
    return t.vocab.tokens[a].size() > t.vocab.tokens[b].size();
  });
  if (is_phi3(t.vocab.name)) set_phi3_strip(t);
}

// ---- Partition -----------------------------------------------------------------------
namespace {

bool is_space(char c) { return std::isspace((unsigned char)c) != 0; }

// Splits every raw fragment of `in` at the occurrences of token `id`.
std::vector<Fragment> split_on(const Tokenizer::Impl& t, const std::string& text, int id,
                               const std::vector<Fragment>& in) {
  const std::string& piece = t.vocab.tokens[id];
  std::vector<Fragment> out;
  for (const Fragment& f : in) {
    if (f.token >= 0) {
      out.push_back(f);
      continue;
    }
    size_t start = f.offset, end = f.offset + f.length;
    for (size_t hit; start < end && (hit = text.find(piece, start)) != std::string::npos && hit + piece.size() <= end;) {
      size_t left_end = hit;
      if (t.attr[id] & kAttrLstrip)
        while (left_end > start && is_space(text[left_end - 1])) left_end--;
      if (left_end > start) out.push_back({-1, start, left_end - start});
      out.push_back({id, hit, piece.size()});
      start = hit + piece.size();
      if (t.attr[id] & kAttrRstrip)
        while (start < end && is_space(text[start])) start++;
    }
    if (start < end) out.push_back({-1, start, end - start});
  }
  return out;
}

}  // namespace

std::vector<Fragment> partition_special(const Tokenizer::Impl& t, const std::string& text, bool parse_special) {
  std::vector<Fragment> frags;
  if (text.empty()) return frags;
  frags.push_back({-1, 0, text.size()});
  for (int id : t.special_ids) {
    if (!parse_special && (t.attr[id] & (kAttrControl | kAttrUnknown))) continue;
    frags = split_on(t, text, id, frags);
  }
  return frags;
}

}  // namespace oracle
