#pragma once
// ============================================================================
// Stopping: stop strings matched on decoded text across token boundaries
// (StopMatcher), and TextStream = StreamingDetokenizer + StopMatcher + the
// token-level stops (EOS, stop token ids, max tokens) with a finish reason.
//
// StopMatcher rule (docs/tokenizer.md): the emitted text is exactly the prefix
// of the text before the earliest occurrence of any stop string, however the
// text was cut into chunks. Text that could still start a stop string is held
// back; a stop is declared once an occurrence is complete and no occurrence
// starting earlier is still possible. It works on bytes; fed complete UTF-8
// (the detokenizer's output) with valid UTF-8 stop strings, matches can only
// begin and end on character boundaries.
// ============================================================================
#include <optional>
#include <string>
#include <vector>

#include "reference/tokenizer/detokenizer.h"

namespace oracle {

// ---- Stop strings ----------------------------------------------------------------
class StopMatcher {
 public:
  // InputError("stop", "stop[i]", ...) for an empty or invalid-UTF-8 stop string.
  explicit StopMatcher(std::vector<std::string> stops);
  // Text that is now safe to emit (never any part of a stop string).
  std::string push(const std::string& chunk);
  // End of text: releases what was held back (or the text before a held match).
  std::string finish();
  bool stopped() const { return stop_index_ >= 0; }
  int stop_index() const { return stop_index_; }  // which stop string matched, -1 if none
  size_t n_held() const { return pending_.size(); }

 private:
  struct Complete {
    size_t at;  // start in pending_
    int which;  // index of the stop string
  };
  std::optional<Complete> earliest_complete() const;
  size_t earliest_partial() const;
  std::string release(bool at_end);

  std::vector<std::string> stops_;
  size_t max_len_ = 0;   // longest stop string, bytes
  std::string pending_;  // received, not yet emitted
  int stop_index_ = -1;
};

// ---- Finish reasons ----------------------------------------------------------------
enum class FinishReason { None, Eos, StopToken, StopString, Length };
// "none", "eos", "stop_token", "stop_string", "length".
const char* finish_reason_name(FinishReason reason);

struct StopConditions {
  bool stop_on_eos = true;                // every end-of-generation id (Tokenizer::eog_ids: EOS, EOT, EOM)
  std::vector<int> stop_token_ids;        // e.g. BOS for llama2.c models (Config::stop_on_bos)
  std::vector<std::string> stop_strings;
  int max_tokens = 0;                     // generated tokens; 0 = no limit
};

// One generated token in, the text to stream out.
struct StreamStep {
  std::string text;
  bool done = false;
  FinishReason reason = FinishReason::None;
};

class TextStream {
 public:
  // `prev` is the last prompt token (see StreamingDetokenizer).
  TextStream(Tokenizer tokenizer, StopConditions conditions, int prev = -1);
  // An EOS/stop token contributes no text. After done, push() is an error.
  StreamStep push(int token);
  // Caller ends early (e.g. context full): flushes, reason Length unless a held stop matches.
  StreamStep finish();
  int n_tokens() const { return n_tokens_; }
  int n_replaced() const { return detok_.n_replaced(); }  // U+FFFD substitutions
  bool done() const { return done_; }

 private:
  bool is_stop_token(int token) const;
  StreamStep flush(std::string text, FinishReason reason);

  std::vector<int> eog_ids_;  // sorted (Tokenizer::eog_ids)
  StopConditions conditions_;
  StreamingDetokenizer detok_;
  StopMatcher matcher_;
  int n_tokens_ = 0;
  bool done_ = false;
};

}  // namespace oracle
