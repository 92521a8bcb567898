#pragma once
// How a model finds its tokenizer (docs/cli.md, "--tokenizer"): an explicit
// file (a llama2.c tokenizer.bin or a GGUF holding tokenizer.ggml.*), else the
// vocabulary the model embeds, else for a llama2.c .bin tok<vocab_size>.bin
// then tokenizer.bin beside it. Shared by the CLI and the public API.
#include <string>

#include "reference/model/model.h"

namespace oracle {

// A tokenizer file: GGUF (by content: tokenizer.ggml.*) or llama2.c tokenizer.bin.
Vocab load_tokenizer_file(const std::string& path, int vocab_size);

// tok<vocab_size>.bin or tokenizer.bin beside a llama2.c checkpoint, or "".
std::string tokenizer_beside(const Model& m);

// The vocabulary for `model`: `path` (non-empty) wins, else the embedded one,
// else one found beside it; InputError(model, "tokenizer") when there is none and
// InputError(..., "vocab_size") when its size differs from the model's.
// *source is set to the file read, or "embedded".
Vocab resolve_vocab(const Model& model, const std::string& path, std::string* source);

}  // namespace oracle
