#pragma once
// ============================================================================
// Adapters from the logs real servers write to one replayable form
// (docs/replay.md, "Engine logs", with the field map of every engine).
// A log line is either a bare response or {"request": {...}, "response": {...}}:
//   llamacpp-server    llama.cpp server /completion (tools/server): request
//                      prompt/n_predict/..., response content, tokens,
//                      completion_probabilities[{id, logprob, top_logprobs}],
//                      generation_settings (the effective sampling settings)
//   llamacpp-completions / llamacpp-chat — llama.cpp server's /v1/completions
//                      and /v1/chat/completions: OpenAI's envelope with
//                      llama.cpp's content list choices[].logprobs.content
//                      [{id, token, bytes, logprob, top_logprobs[{id, ...}]}]
//                      and llama.cpp's sampling defaults and fields
//   openai-completions /v1/completions: choices[].logprobs {tokens,
//                      token_logprobs, top_logprobs}; prompt string or ids
//   openai-chat        /v1/chat/completions: choices[].logprobs.content
//                      [{token, logprob, top_logprobs}]; without prompt ids the
//                      messages are rendered with the model's chat template
//                      (reference/tokenizer/chat_template.h) as the server does
//   vllm-completions / vllm-chat — the same shapes with vLLM's extensions
//                      (prompt_token_ids, token_ids, "token_id:N" tokens from
//                      return_tokens_as_token_ids, top_k/min_p/repetition_penalty...)
// Streams: a response logged as the SSE body (a string of "data: {...}" chunks)
// is assembled first (replay_stream.cpp).
// Rules: every request field and every generation_settings field is either
// mapped, inert (cannot change which token is sampled) or accepted only at its
// "off" value; anything else — including a field we do not know — is an
// InputError naming the field, so the record is ERROR, never silently replayed
// under other parameters.
// ============================================================================
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "reference/generate/generate.h"
#include "reference/sampling/logprobs.h"
#include "reference/tokenizer/tokenizer.h"

namespace oracle {

struct AdaptedStep {
  int id = -1;
  std::optional<float> logprob;   // of the chosen token, as logged
  std::vector<TokenLogprob> top;  // logged alternatives (ids resolved), logged order
};

struct AdaptedChoice {
  int index = 0;
  std::vector<AdaptedStep> steps;  // (n_logged) including a logged stop token
  std::string finish_reason;       // "stop" | "length" | "" (not given)
};

struct AdaptedRecord {
  std::string engine;             // llamacpp-server, openai-completions, openai-chat, vllm-completions, vllm-chat
  std::string model;              // the model as the log names it ("" if not named)
  std::vector<int> prompt_ids;    // (n_prompt)
  GenerateOptions options;        // sampler (preset, order), stops, max_tokens
  bool processed_logprobs = false;  // logprobs of the processed distribution (llama.cpp post_sampling_probs)
  int top_n = 0;                  // alternatives requested per step (0: none)
  std::vector<AdaptedChoice> choices;  // n >= 1
  std::string prompt_from;        // "prompt" | "prompt ids" | "chat template <format>"
  std::vector<std::string> notes; // what the log leaves out (reported with the record)
};

// The engine of a parsed log line ("" when it is none of the engine shapes:
// our own log or the legacy foreign record).
std::string engine_of(const nlohmann::json& line);
// The model the line names (request.model, response.model, generation_settings.model...), "" if none.
std::string engine_model_name(const nlohmann::json& line);
// Adapts one line; InputError(where, field, ...) naming the first field that
// cannot be replayed faithfully. `tok` tokenizes string prompts and maps token strings.
AdaptedRecord adapt_engine_record(const nlohmann::json& line, const std::string& where, const Tokenizer& tok);

// A {"request", "response"} line whose response is a string: the SSE body of a stream.
bool is_stream_line(const nlohmann::json& line);
// The line with its SSE response assembled into the non-streaming response
// (content / logprob lists concatenated per choice, the last chunk's
// settings); n_chunks = the data: events read. InputError naming the first
// unreadable chunk ("response.sse[3]") or line.
nlohmann::json assemble_stream(const nlohmann::json& line, const std::string& where, int* n_chunks = nullptr);

// Chat messages of a request rendered with the model's template as the engine
// does (add_generation_prompt from the request, default true; the template's
// default system turn) and tokenized (BOS as the vocabulary says, special
// tokens parsed). InputError "tokenizer.chat_template" when the model has no
// template we render, "request.messages" when they are malformed.
std::vector<int> render_chat_prompt(const nlohmann::json& request, const Tokenizer& tok, const std::string& where,
                                    std::string* format = nullptr);

// ---- shared pieces (replay_adapters_*.cpp) ----------------------------------------------------
AdaptedRecord adapt_llamacpp_server(const nlohmann::json* request, const nlohmann::json& response,
                                    const std::string& where, const Tokenizer& tok);
// llama.cpp server's /v1/completions (chat = false) and /v1/chat/completions.
AdaptedRecord adapt_llamacpp_oai(const nlohmann::json* request, const nlohmann::json& response, bool chat,
                                 const std::string& where, const Tokenizer& tok);
AdaptedRecord adapt_openai(const nlohmann::json* request, const nlohmann::json& response, bool vllm,
                           const std::string& where, const Tokenizer& tok);
// Token strings of a log -> ids: "token_id:123" (vLLM return_tokens_as_token_ids)
// -> 123; otherwise the unique vocabulary id whose piece ("▁Once") or bytes
// (" Once") the string is. InputError(where, field) when none or several match.
class TokenIndex {
 public:
  explicit TokenIndex(const Tokenizer& tok) : tok_(tok) {}
  int resolve(const std::string& token, const std::string& where, const std::string& field);

 private:
  const Tokenizer& tok_;
  std::vector<std::pair<std::string, int>> by_text_;  // sorted (text, id), built on first use
};

}  // namespace oracle
