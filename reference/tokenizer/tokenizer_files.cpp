#include "reference/tokenizer/tokenizer_files.h"

#include <filesystem>

#include "base/errors.h"
#include "base/file_io.h"
#include "reference/model/gguf.h"
#include "reference/tokenizer/tokenizer.h"

namespace oracle {

namespace fs = std::filesystem;

// By content, not by name: a GGUF vocabulary named tokenizer.bin is still a GGUF
// (and a FIFO or a directory is refused here, before anything reads it).
static bool is_gguf_file(const std::string& path) { return read_file_prefix(path, "file", 4) == "GGUF"; }

std::string tokenizer_beside(const Model& m) {
  if (m.format != "llama2c") return "";
  const fs::path dir = fs::path(m.path).parent_path();
  for (const std::string& name : {"tok" + std::to_string(m.config.vocab_size) + ".bin",
                                 std::string("tokenizer.bin")}) {
    if (fs::exists(dir / name)) return (dir / name).string();
  }
  return "";
}

Vocab load_tokenizer_file(const std::string& path, int vocab_size) {
  if (is_gguf_file(path)) return load_gguf_vocab(path);
  return load_llama2c_tokenizer(path, vocab_size);
}

Vocab resolve_vocab(const Model& model, const std::string& explicit_path, std::string* source) {
  std::string path = explicit_path;
  if (path.empty() && model.vocab.tokens.empty()) path = tokenizer_beside(model);
  require_input(!path.empty() || !model.vocab.tokens.empty(), model.path, "tokenizer",
                "the model embeds no vocabulary and none was found beside it; pass --tokenizer");
  Vocab vocab = path.empty() ? model.vocab : load_tokenizer_file(path, model.config.vocab_size);
  require_input((int)vocab.tokens.size() == model.config.vocab_size, path.empty() ? model.path : path,
                "vocab_size",
                "tokenizer has " + std::to_string(vocab.tokens.size()) + " tokens but the model " + model.path +
                    " has vocab_size " + std::to_string(model.config.vocab_size));
  if (source) *source = path.empty() ? "embedded" : path;
  return vocab;
}

}  // namespace oracle
