#include "reference/tokenizer/detokenizer.h"

#include "faults/fault.h"

namespace oracle {

StreamingDetokenizer::StreamingDetokenizer(Tokenizer tokenizer, int prev)
    : tokenizer_(std::move(tokenizer)), prev_(prev) {}

std::string StreamingDetokenizer::push(int token) {
  std::string out;
  for (char c : tokenizer_.token_bytes(prev_, token)) decoder_.push((uint8_t)c, out);
  prev_ = token;
  if (fault::active(fault::Fault::DETOK_FLUSH_EACH_TOKEN)) decoder_.finish(out);  // FAULT: no hold-back
  return out;
}

std::string StreamingDetokenizer::finish() {
  std::string out;
  decoder_.finish(out);
  return out;
}

}  // namespace oracle
