#include "reference/generate/stop.h"

#include <algorithm>
#include <stdexcept>

#include "faults/fault.h"
#include "base/errors.h"
#include "base/utf8.h"

namespace oracle {

// ---- StopMatcher ---------------------------------------------------------------------
StopMatcher::StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
  for (size_t i = 0; i < stops_.size(); i++) {
    std::string field = "stop[" + std::to_string(i) + "]";
    require_input(!stops_[i].empty(), "stop", field, "empty stop string");
    require_input(utf8_valid(stops_[i]), "stop", field, "stop string is not valid UTF-8");
    if (stops_[i].size() > max_len_) max_len_ = stops_[i].size();
  }
}

// The earliest complete occurrence in pending_ (ties: the shortest stop string,
// then the lowest index); nothing if none.
std::optional<StopMatcher::Complete> StopMatcher::earliest_complete() const {
  std::optional<Complete> best;
  for (size_t i = 0; i < stops_.size(); i++) {
    size_t p = pending_.find(stops_[i]);
    if (p == std::string::npos) continue;
    if (!best || p < best->at || (p == best->at && stops_[i].size() < stops_[(size_t)best->which].size()))
      best = Complete{p, (int)i};
  }
  return best;
}

// Start of the earliest suffix of pending_ that is a proper prefix of a stop
// string (an occurrence that may still complete); npos if none.
size_t StopMatcher::earliest_partial() const {
  size_t n = pending_.size();
  size_t first = n >= max_len_ ? n - max_len_ + 1 : 0;
  if (fault::active(fault::Fault::STOP_PARTIAL_WINDOW_SHORT) && first < n) first++;  // FAULT: window too short
  for (size_t p = first; p < n; p++) {
    size_t len = n - p;
    for (const std::string& s : stops_)
      if (s.size() > len && s.compare(0, len, pending_, p, len) == 0) return p;
  }
  return std::string::npos;
}

// Emits what is safe; declares a stop when a complete occurrence can no longer
// be preceded by an earlier one (always, at the end of the text).
std::string StopMatcher::release(bool at_end) {
  const std::optional<Complete> complete = earliest_complete();
  size_t partial = at_end ? std::string::npos : earliest_partial();
  if (fault::active(fault::Fault::STOP_IGNORES_EARLIER_PARTIAL))
    partial = std::string::npos;  // FAULT: stops at the first completed match, releases held text
  std::string out;
  if (complete && (partial == std::string::npos || partial >= complete->at)) {
    out = pending_.substr(0, complete->at);
    pending_.clear();
    stop_index_ = complete->which;
    return out;
  }
  size_t cut = partial == std::string::npos ? pending_.size() : partial;  // partial < complete->at here
  out = pending_.substr(0, cut);
  pending_.erase(0, cut);
  return out;
}

std::string StopMatcher::push(const std::string& chunk) {
  if (stopped()) return "";
  if (fault::active(fault::Fault::STOP_SINGLE_TOKEN)) {
    std::string held = std::move(pending_);  // FAULT: stop strings are matched within one chunk only
    pending_ = chunk;
    return held + release(false);
  }
  pending_ += chunk;
  return release(false);
}

std::string StopMatcher::finish() {
  if (stopped()) return "";
  return release(true);
}

// ---- Finish reasons ----------------------------------------------------------------------
const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::Eos: return "eos";
    case FinishReason::StopToken: return "stop_token";
    case FinishReason::StopString: return "stop_string";
    case FinishReason::Length: return "length";
    default: return "none";
  }
}

// ---- TextStream ----------------------------------------------------------------------------
TextStream::TextStream(Tokenizer tokenizer, StopConditions conditions, int prev)
    : eog_ids_(tokenizer.eog_ids()),
      conditions_(std::move(conditions)),
      detok_(std::move(tokenizer), prev),
      matcher_(conditions_.stop_strings) {}

bool TextStream::is_stop_token(int token) const {
  for (int id : conditions_.stop_token_ids)
    if (id == token) return true;
  return false;
}

// Ends the stream: `text` so far plus everything held back.
StreamStep TextStream::flush(std::string text, FinishReason reason) {
  StreamStep step;
  step.text = std::move(text);
  if (!matcher_.stopped()) step.text += matcher_.push(detok_.finish());
  if (!matcher_.stopped()) step.text += matcher_.finish();
  step.done = done_ = true;
  step.reason = matcher_.stopped() ? FinishReason::StopString : reason;
  return step;
}

StreamStep TextStream::push(int token) {
  if (done_) throw std::logic_error("TextStream::push after the stream finished");
  n_tokens_++;
  if (conditions_.stop_on_eos && std::binary_search(eog_ids_.begin(), eog_ids_.end(), token))
    return flush("", FinishReason::Eos);
  if (is_stop_token(token)) return flush("", FinishReason::StopToken);
  StreamStep step;
  step.text = matcher_.push(detok_.push(token));
  if (matcher_.stopped()) {
    step.done = done_ = true;
    step.reason = FinishReason::StopString;
    return step;
  }
  if (conditions_.max_tokens > 0 && n_tokens_ >= conditions_.max_tokens)
    return flush(std::move(step.text), FinishReason::Length);
  return step;
}

StreamStep TextStream::finish() {
  if (done_) return StreamStep{"", true, FinishReason::None};
  return flush("", FinishReason::Length);
}

}  // namespace oracle
