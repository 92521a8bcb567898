// Streaming logs: a {"request", "response"} line whose response is the SSE body
// a proxy saw ("data: {...}\n\n" chunks, "data: [DONE]") is assembled into the
// response the same request would have had without streaming
// (replay_adapters.h, docs/replay.md "Streams"). Chunk shapes are those of
// llama.cpp's server (server_task_result_cmpl_partial / _final::to_json_*),
// OpenAI and vLLM: /completion chunks (content, completion_probabilities, the
// last with stop: true and the settings), text_completion chunks and
// chat.completion.chunk deltas (choices[].logprobs.content per chunk).
#include <map>

#include <nlohmann/json.hpp>

#include "audit/replay/replay_adapters.h"
#include "base/errors.h"
#include "base/json_util.h"

namespace oracle {

using nlohmann::json;

namespace {

// The JSON of every "data:" event, in order; "[DONE]" ends the stream.
std::vector<json> sse_chunks(const std::string& body, const std::string& where) {
  std::vector<json> out;
  size_t at = 0;
  int line_no = 0;
  while (at < body.size()) {
    size_t end = body.find('\n', at);
    if (end == std::string::npos) end = body.size();
    std::string l = body.substr(at, end - at);
    at = end + 1;
    line_no++;
    if (!l.empty() && l.back() == '\r') l.pop_back();
    if (l.empty() || l[0] == ':') continue;  // event separator, SSE comment (keep-alive)
    if (l.rfind("event:", 0) == 0 || l.rfind("id:", 0) == 0 || l.rfind("retry:", 0) == 0) continue;
    require_input(l.rfind("data:", 0) == 0, where, "response",
                  "SSE line " + std::to_string(line_no) + " is not a data: line");
    std::string data = l.substr(5);
    if (!data.empty() && data[0] == ' ') data.erase(0, 1);
    if (data == "[DONE]") break;
    const std::string field = "response.sse[" + std::to_string(out.size()) + "]";
    json chunk = parse_json_text(data, where, field);
    require_input(chunk.is_object(), where, field, "expected a JSON object");
    if (chunk.contains("error")) throw InputError(where, field + ".error", "the stream ended with an error: " + chunk.at("error").dump());
    out.push_back(std::move(chunk));
  }
  require_input(!out.empty(), where, "response", "an empty SSE stream");
  return out;
}

void append_array(json& into, const json& from, const char* key) {
  if (!from.contains(key) || !from.at(key).is_array()) return;
  if (!into.contains(key) || !into.at(key).is_array()) into[key] = json::array();
  for (const json& e : from.at(key)) into[key].push_back(e);
}

// llama.cpp /completion chunks: content and probabilities concatenated, the
// rest (stop_type, generation_settings, tokens_evaluated ...) from the last.
json assemble_native(const std::vector<json>& chunks) {
  json out = chunks.back();
  std::string content;
  json probs = json::array(), tokens = json::array();
  for (const json& c : chunks) {
    if (c.contains("content") && c.at("content").is_string()) content += c.at("content").get<std::string>();
    if (c.contains("completion_probabilities") && c.at("completion_probabilities").is_array())
      for (const json& p : c.at("completion_probabilities")) probs.push_back(p);
    if (c.contains("tokens") && c.at("tokens").is_array())
      for (const json& t : c.at("tokens")) tokens.push_back(t);
  }
  out["content"] = content;
  out["tokens"] = tokens;
  if (!probs.empty()) out["completion_probabilities"] = probs;
  return out;
}

// OpenAI-style chunks: per choice index, text / delta.content and
// logprobs.content concatenated, the last finish_reason kept; usage, model,
// id and timings from whichever chunk carries them.
json assemble_openai(const std::vector<json>& chunks, bool chat, const std::string& where) {
  json out = json::object();
  std::map<int, json> choices;
  for (size_t k = 0; k < chunks.size(); k++) {
    const json& c = chunks[k];
    for (const auto& [key, v] : c.items())
      if (key != "choices" && key != "object" && !v.is_null()) out[key] = v;
    if (!c.contains("choices")) continue;
    const std::string field = "response.sse[" + std::to_string(k) + "].choices";
    require_input(c.at("choices").is_array(), where, field, "expected an array");
    for (const json& ch : c.at("choices")) {
      require_input(ch.is_object(), where, field, "expected objects");
      const int index = ch.contains("index") ? int_from_json<int>(ch.at("index"), field + ".index") : 0;
      json& a = choices[index];
      if (a.is_null()) a = {{"index", index}, {"text", ""}, {"finish_reason", nullptr}};
      const json* piece = chat ? (ch.contains("delta") ? &ch.at("delta") : nullptr) : &ch;
      const char* text_key = chat ? "content" : "text";
      if (piece && piece->contains(text_key) && piece->at(text_key).is_string())
        a["text"] = a["text"].get<std::string>() + piece->at(text_key).get<std::string>();
      if (ch.contains("logprobs") && ch.at("logprobs").is_object()) {
        if (!a.contains("logprobs")) a["logprobs"] = json::object();
        for (const char* key : {"content", "tokens", "token_logprobs", "top_logprobs", "text_offset"})
          append_array(a["logprobs"], ch.at("logprobs"), key);
      }
      append_array(a, ch, "token_ids");
      if (ch.contains("finish_reason") && !ch.at("finish_reason").is_null()) a["finish_reason"] = ch.at("finish_reason");
      if (ch.contains("stop_reason") && !ch.at("stop_reason").is_null()) a["stop_reason"] = ch.at("stop_reason");
    }
  }
  out["object"] = chat ? "chat.completion" : "text_completion";
  out["choices"] = json::array();
  for (auto& [index, a] : choices) {
    if (chat) {
      a["message"] = {{"role", "assistant"}, {"content", a.at("text")}};
      a.erase("text");
    }
    out["choices"].push_back(a);
  }
  return out;
}

}  // namespace

bool is_stream_line(const json& line) {
  return line.is_object() && line.contains("response") && line.at("response").is_string();
}

json assemble_stream(const json& line, const std::string& where, int* n_chunks) {
  const std::vector<json> chunks = sse_chunks(line.at("response").get<std::string>(), where);
  if (n_chunks) *n_chunks = (int)chunks.size();
  const json& first = chunks.front();
  const std::string object = first.contains("object") && first.at("object").is_string() ? first.at("object").get<std::string>() : "";
  json out = line;
  if (object == "text_completion") out["response"] = assemble_openai(chunks, false, where);
  else if (object == "chat.completion.chunk") out["response"] = assemble_openai(chunks, true, where);
  else if (object.empty() && first.contains("content")) out["response"] = assemble_native(chunks);
  else
    throw InputError(where, object.empty() ? "response.sse[0]" : "response.sse[0].object",
                     "not a llama.cpp server, OpenAI or vLLM stream chunk" + (object.empty() ? "" : " ('" + object + "')"));
  return out;
}

}  // namespace oracle
