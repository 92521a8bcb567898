// ============================================================================
// llama2.c tokenizer.bin: int32 max_token_length, then per token
// float32 score, int32 len, len bytes, up to the end of the file. The file does
// not store the vocabulary size: it is the number of records.
// Pieces are converted to GGUF's form (U+2581 for space, "<s>"/"</s>").
// ============================================================================
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include "base/errors.h"
#include "reference/tokenizer/tokenizer.h"
#include "base/file_io.h"

namespace oracle {

static std::string read_file(const std::string& path) {
  return read_regular_file(path, "file");
}

static std::string to_gguf_piece(const std::string& piece) {
  if (piece == "\n<s>\n") return "<s>";
  if (piece == "\n</s>\n") return "</s>";
  std::string out;
  for (char c : piece) out += c == ' ' ? std::string("\xE2\x96\x81") : std::string(1, c);
  return out;
}

// GGUF token types as llama.cpp's converter assigns them: <unk>, BOS/EOS control,
// <0xAB> bytes, everything else normal.
static int token_type(int id, const std::string& piece) {
  if (id == 0) return 2;
  if (id == 1 || id == 2) return 3;
  unsigned value = 0;
  char tail = 0;
  if (piece.size() == 6 && std::sscanf(piece.c_str(), "<0x%2X%c", &value, &tail) == 2 && tail == '>')
    return 6;
  return 1;
}

// One record at `pos`; advances `pos`. InputError on a truncated or bad record.
static void read_record(const std::string& data, size_t& pos, const std::string& path, Vocab& v) {
  std::string field = "tokens[" + std::to_string(v.tokens.size()) + "]";
  require_input(data.size() - pos >= 8, path, field, "truncated record (score and length)");
  float score = 0.0f;
  int32_t len = 0;
  std::memcpy(&score, data.data() + pos, 4);
  std::memcpy(&len, data.data() + pos + 4, 4);
  pos += 8;
  require_input(len >= 0 && (size_t)len <= data.size() - pos, path, field,
                "length " + std::to_string(len) + " runs past the end of the file");
  std::string piece = data.substr(pos, (size_t)len);
  pos += (size_t)len;
  v.token_types.push_back(token_type((int)v.tokens.size(), piece));
  v.tokens.push_back(to_gguf_piece(piece));
  v.scores.push_back(score);
}

Vocab load_llama2c_tokenizer(const std::string& path, int expected_vocab_size) {
  std::string data = read_file(path);
  require_input(data.size() >= 4, path, "max_token_length", "file shorter than its header");
  Vocab v;
  v.source = path;
  int32_t max_len = 0;
  std::memcpy(&max_len, data.data(), 4);
  require_input(max_len > 0, path, "max_token_length", "must be positive, got " + std::to_string(max_len));
  v.max_token_length = max_len;
  size_t pos = 4;
  while (pos < data.size()) read_record(data, pos, path, v);
  require_input(v.tokens.size() >= 3, path, "vocab_size", "fewer than 3 tokens (<unk>, <s>, </s>)");
  if (expected_vocab_size > 0)
    require_input((int)v.tokens.size() == expected_vocab_size, path, "vocab_size",
                  "file holds " + std::to_string(v.tokens.size()) + " tokens, the model expects " +
                      std::to_string(expected_vocab_size));
  v.type = VocabType::SentencePiece;
  v.bos_id = 1;
  v.eos_id = 2;
  v.unk_id = 0;
  v.add_bos = true;
  v.add_space_prefix = true;
  return v;
}

}  // namespace oracle
