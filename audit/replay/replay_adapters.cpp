// Engine log adapters: detection, model names, token strings (replay_adapters.h).
#include "audit/replay/replay_adapters.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "base/errors.h"
#include "reference/tokenizer/chat_template.h"

namespace oracle {

using nlohmann::json;

namespace {

const json* member(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && !j.at(key).is_null() ? &j.at(key) : nullptr;
}

// Request and response of a line: {"request", "response"} or a bare response.
std::pair<const json*, const json*> split(const json& line) {
  if (line.is_object() && line.contains("response")) return {member(line, "request"), &line.at("response")};
  return {nullptr, &line};
}

bool vllm_shaped(const json* req, const json& resp) {
  static const char* const resp_keys[] = {"prompt_token_ids", "prompt_logprobs", "kv_transfer_params"};
  for (const char* k : resp_keys)
    if (resp.contains(k)) return true;
  if (resp.contains("choices") && resp.at("choices").is_array())
    for (const json& c : resp.at("choices"))
      if (c.is_object() && (c.contains("token_ids") || c.contains("prompt_token_ids") || c.contains("stop_reason")))
        return true;
  static const char* const req_keys[] = {"top_k", "min_p", "repetition_penalty", "return_tokens_as_token_ids",
                                         "return_token_ids", "min_tokens", "stop_token_ids", "ignore_eos"};
  if (req)
    for (const char* k : req_keys)
      if (req->contains(k)) return true;
  return false;
}

// llama.cpp server's OpenAI endpoints: its timings block, or its content list
// whose entries carry token ids (server-task.cpp probs_vector_to_json).
bool llamacpp_oai(const json& resp) {
  if (resp.contains("timings")) return true;
  if (!resp.contains("choices") || !resp.at("choices").is_array()) return false;
  for (const json& c : resp.at("choices")) {
    const json* lp = c.is_object() ? member(c, "logprobs") : nullptr;
    const json* content = lp ? member(*lp, "content") : nullptr;
    if (content && content->is_array() && !content->empty() && (*content)[0].is_object() && (*content)[0].contains("id"))
      return true;
  }
  return false;
}

}  // namespace

std::string engine_of(const json& line) {
  if (!line.is_object() || line.contains("schema")) return "";
  const auto [req, resp] = split(line);
  if (!resp->is_object()) return "";
  if (resp->contains("generation_settings") || resp->contains("completion_probabilities") ||
      resp->contains("stop_type"))
    return "llamacpp-server";
  const json* object = member(*resp, "object");
  if (!object || !object->is_string()) return "";
  const std::string o = object->get<std::string>();
  const std::string family = llamacpp_oai(*resp) ? "llamacpp" : vllm_shaped(req, *resp) ? "vllm" : "openai";
  if (o == "text_completion") return family + "-completions";
  if (o == "chat.completion") return family + "-chat";
  return "";
}

std::string engine_model_name(const json& line) {
  const auto [req, resp] = split(line);
  for (const json* j : {req, resp}) {
    const json* m = j ? member(*j, "model") : nullptr;
    if (m && m->is_string() && !m->get<std::string>().empty()) return m->get<std::string>();
  }
  const json* gs = member(*resp, "generation_settings");
  const json* m = gs ? member(*gs, "model") : nullptr;
  return m && m->is_string() ? m->get<std::string>() : "";
}

AdaptedRecord adapt_engine_record(const json& line, const std::string& where, const Tokenizer& tok) {
  const std::string engine = engine_of(line);
  const auto [req, resp] = split(line);
  require_input(!engine.empty(), where, "record", "not a llama.cpp server, OpenAI or vLLM response");
  if (req) require_input(req->is_object(), where, "request", "expected a JSON object");
  AdaptedRecord r = engine == "llamacpp-server"        ? adapt_llamacpp_server(req, *resp, where, tok)
                    : engine.rfind("llamacpp-", 0) == 0 ? adapt_llamacpp_oai(req, *resp, engine == "llamacpp-chat", where, tok)
                                                         : adapt_openai(req, *resp, engine.rfind("vllm", 0) == 0, where, tok);
  r.engine = engine;
  r.model = engine_model_name(line);
  return r;
}

// ---- chat --------------------------------------------------------------------------------------
// The engines render the model's own template with Jinja (vLLM, SGLang and HF through
// transformers' apply_chat_template; llama-server since use_jinja became its default, as at the
// peer 0c1e570), so the replay does too (reference/tokenizer/jinja.h). A template the Jinja subset
// cannot parse falls back to the built-in formatter llama.cpp's --no-jinja path uses, and the
// record says so in prompt_from ("chat template chatml (builtin; ...)"), never silently.
static ChatTemplate replay_chat_template(const Vocab& v, const std::string& where, std::string* format) {
  std::string refused;
  try {
    ChatTemplate t = vocab_jinja_template(where, v);
    if (format) *format = "jinja";
    return t;
  } catch (const InputError& e) {
    refused = e.what();
  }
  ChatTemplate t;
  require_input(detect_chat_template(v.chat_template, &t), where, "tokenizer.chat_template",
                "neither the Jinja subset (" + refused + ") nor a built-in formatter renders it; log the prompt ids");
  if (format) *format = chat_format_name(t.format) + " (builtin; the Jinja subset refused the template)";
  return t;
}

std::vector<int> render_chat_prompt(const json& req, const Tokenizer& tok, const std::string& where, std::string* format) {
  const json* m = member(req, "messages");
  require_input(m && m->is_array() && !m->empty(), where, "request.messages", "expected a non-empty array of messages");
  std::vector<ChatMessage> messages;
  for (size_t k = 0; k < m->size(); k++) {
    const json& e = (*m)[k];
    const std::string f = "request.messages[" + std::to_string(k) + "]";
    require_input(e.is_object() && e.contains("role") && e.at("role").is_string(), where, f + ".role", "expected a role");
    require_input(e.contains("content") && e.at("content").is_string(), where, f + ".content",
                  "only string contents are rendered (no parts, tool calls or images)");
    for (const auto& [key, v] : e.items())
      require_input(key == "role" || key == "content", where, f + "." + key, "not rendered by the replay's chat templates");
    messages.push_back({e.at("role").get<std::string>(), e.at("content").get<std::string>()});
  }
  const json* gen = member(req, "add_generation_prompt");
  require_input(!gen || gen->is_boolean(), where, "request.add_generation_prompt", "expected a boolean");
  const Vocab& v = tok.vocab();
  require_input(!v.chat_template.empty(), where, "tokenizer.chat_template",
                "the model has no chat template, so the prompt the engine rendered is unknown (log its prompt ids)");
  const ChatTemplate t = replay_chat_template(v, where, format);
  const std::string text = render_chat(t, messages, !gen || gen->get<bool>());
  return tok.encode(text, EncodeOptions{v.add_bos, false, true});  // the engines' add_special + parse_special
}

// ---- token strings ---------------------------------------------------------------------------
int TokenIndex::resolve(const std::string& token, const std::string& where, const std::string& field) {
  if (token.rfind("token_id:", 0) == 0) {
    const std::string digits = token.substr(9);
    require_input(!digits.empty() && digits.size() <= 9 && digits.find_first_not_of("0123456789") == std::string::npos,
                  where, field, "malformed '" + token + "'");
    return std::stoi(digits);
  }
  if (by_text_.empty()) {  // pieces first ("▁Once", "<0x0A>"), then decoded bytes (" Once", "\n")
    const int other = tok_.eos_id() != tok_.bos_id() ? tok_.eos_id() : -1;  // not BOS: keeps SPM's leading space
    for (int id = 0; id < tok_.vocab_size(); id++) by_text_.push_back({"0" + tok_.vocab().tokens[(size_t)id], id});
    for (int id = 0; id < tok_.vocab_size(); id++) by_text_.push_back({"1" + tok_.token_bytes(other, id), id});
    std::sort(by_text_.begin(), by_text_.end());
  }
  std::vector<int> ids;
  for (const char* kind : {"0", "1"}) {  // an exact piece wins over a byte-level match
    const std::string key = kind + token;
    for (auto it = std::lower_bound(by_text_.begin(), by_text_.end(), std::make_pair(key, -1));
         it != by_text_.end() && it->first == key; ++it)
      if (std::find(ids.begin(), ids.end(), it->second) == ids.end()) ids.push_back(it->second);
    if (!ids.empty()) break;
  }
  require_input(ids.size() == 1, where, field,
                "token string '" + token + "' matches " + std::to_string(ids.size()) +
                    " vocabulary entries; log token ids (vLLM: return_tokens_as_token_ids)");
  return ids[0];
}

}  // namespace oracle
