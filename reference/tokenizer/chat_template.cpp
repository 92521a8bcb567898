// Chat templates: llama.cpp's detection heuristics and formatters (see
// chat_template.h), for the formats real models ship.
#include "reference/tokenizer/chat_template.h"

#include <cctype>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "base/errors.h"
#include "reference/tokenizer/jinja.h"

namespace oracle {

namespace {

const std::pair<const char*, ChatFormat> kNames[] = {
    {"chatml", ChatFormat::ChatMl},
    {"llama2", ChatFormat::Llama2},
    {"llama2-sys", ChatFormat::Llama2Sys},
    {"llama2-sys-bos", ChatFormat::Llama2SysBos},
    {"llama2-sys-strip", ChatFormat::Llama2SysStrip},
    {"mistral-v1", ChatFormat::MistralV1},
    {"mistral-v3", ChatFormat::MistralV3},
    {"mistral-v3-tekken", ChatFormat::MistralV3Tekken},
    {"mistral-v7", ChatFormat::MistralV7},
    {"phi3", ChatFormat::Phi3},
    {"zephyr", ChatFormat::Zephyr},
    {"gemma", ChatFormat::Gemma},
    {"llama3", ChatFormat::Llama3},
};

std::string trim(const std::string& s) {  // llama.cpp's trim: ASCII isspace both ends
  size_t a = 0, b = s.size();
  while (a < b && std::isspace((unsigned char)s[a])) a++;
  while (b > a && std::isspace((unsigned char)s[b - 1])) b--;
  return s.substr(a, b - a);
}

// The system text of `'<|im_start|>system\n...<|im_end|>` written as one
// literal in the template (the turn SmolLM2/Qwen insert when none is given).
std::string chatml_default_system(const std::string& src) {
  for (const char* open : {"'<|im_start|>system\n", "'<|im_start|>system\\n", "\"<|im_start|>system\n",
                           "\"<|im_start|>system\\n"}) {
    size_t at = src.find(open);
    if (at == std::string::npos) continue;
    size_t start = at + std::string(open).size();
    size_t end = src.find("<|im_end|>", start);
    if (end == std::string::npos) continue;
    std::string text = src.substr(start, end - start);
    if (text.find_first_of("'\"{}+") == std::string::npos) return text;
  }
  return "";
}

// llama.cpp's branch for templates containing [INST] (or named mistral*).
ChatTemplate builtin_template(ChatFormat f, std::string default_system) {
  ChatTemplate t;
  t.format = f, t.default_system = std::move(default_system);
  return t;
}

bool detect_inst(const std::string& src, ChatFormat* f) {
  auto has = [&](const char* s) { return src.find(s) != std::string::npos; };
  if (!(src.rfind("mistral", 0) == 0 || has("[INST]"))) return false;
  if (has("[SYSTEM_PROMPT]")) *f = ChatFormat::MistralV7;
  else if (has("' [INST] ' + system_message") || has("[AVAILABLE_TOOLS]"))
    *f = has(" [INST]") ? ChatFormat::MistralV1 : has("\"[INST]\"") ? ChatFormat::MistralV3Tekken : ChatFormat::MistralV3;
  else if (has("content.strip()")) *f = ChatFormat::Llama2SysStrip;
  else if (has("bos_token + '[INST]")) *f = ChatFormat::Llama2SysBos;
  else *f = has("<<SYS>>") ? ChatFormat::Llama2Sys : ChatFormat::Llama2;
  return true;
}

}  // namespace

bool chat_format_from_name(const std::string& name, ChatFormat* out) {
  for (const auto& [n, f] : kNames)
    if (name == n) return *out = f, true;
  return false;
}

std::string chat_format_name(ChatFormat format) {
  for (const auto& [n, f] : kNames)
    if (f == format) return n;
  return "?";
}

std::vector<std::string> chat_format_names() {
  std::vector<std::string> names;
  for (const auto& entry : kNames) names.push_back(entry.first);
  return names;
}

// The order of llama.cpp's llm_chat_detect_template; formats it would pick
// that we do not render (phi4, smolvlm, chatglm, falcon3, ...) are refused.
bool detect_chat_template(const std::string& src, ChatTemplate* out) {
  auto has = [&](const char* s) { return src.find(s) != std::string::npos; };
  ChatFormat f;
  if (chat_format_from_name(src, &f)) {  // llama.cpp also accepts a bare format name
    *out = builtin_template(f, "");
    return true;
  }
  if (has("<|im_start|>")) {
    if (has("<|im_sep|>") || has("<end_of_utterance>")) return false;  // phi4, smolvlm
    *out = builtin_template(ChatFormat::ChatMl, chatml_default_system(src));
    return true;
  }
  if (detect_inst(src, &f)) return *out = builtin_template(f, ""), true;
  if (has("<|assistant|>") && has("<|end|>")) return *out = builtin_template(ChatFormat::Phi3, ""), true;
  if (has("[gMASK]<sop>") || (has("<|assistant|>") && has("<|user|>"))) return false;  // chatglm4, exaone, falcon3, glmedge
  if (has("<|{{ item['role'] }}|>") && has("<|begin_of_image|>")) return false;        // glmedge
  if (has("<|user|>") && has("<|endoftext|>")) return *out = builtin_template(ChatFormat::Zephyr, ""), true;
  if (has("bos_token + message['role']")) return false;  // monarch
  if (has("<start_of_turn>")) return *out = builtin_template(ChatFormat::Gemma, ""), true;
  if (has("'\\n\\nAssistant: ' + eos_token") || has("GPT4 Correct ") || (has("USER: ") && has("ASSISTANT: ")) ||
      (has("### Instruction:") && has("<|EOT|>")) || (has("<|START_OF_TURN_TOKEN|>") && has("<|USER_TOKEN|>")))
    return false;  // orion, openchat, vicuna, deepseek, command-r
  if (has("<|start_header_id|>") && has("<|end_header_id|>")) return *out = builtin_template(ChatFormat::Llama3, ""), true;
  return false;
}

// ---- Rendering ------------------------------------------------------------------------
namespace {

void render_mistral(ChatFormat f, const std::vector<ChatMessage>& chat, std::ostringstream& ss) {
  if (f == ChatFormat::MistralV7) {
    for (const ChatMessage& m : chat) {
      if (m.role == "system") ss << "[SYSTEM_PROMPT] " << m.content << "[/SYSTEM_PROMPT]";
      else if (m.role == "user") ss << "[INST] " << m.content << "[/INST]";
      else ss << " " << m.content << "</s>";
    }
    return;
  }
  const std::string lead = f == ChatFormat::MistralV1 ? " " : "";
  const std::string trail = f == ChatFormat::MistralV3Tekken ? "" : " ";
  bool inside = false;
  for (const ChatMessage& m : chat) {
    if (!inside) ss << lead << "[INST]" << trail;
    inside = true;
    if (m.role == "system") ss << m.content << "\n\n";
    else if (m.role == "user") ss << m.content << lead << "[/INST]";
    else {
      ss << trail << (f == ChatFormat::MistralV3 ? trim(m.content) : m.content) << "</s>";
      inside = false;
    }
  }
}

void render_llama2(ChatFormat f, const std::vector<ChatMessage>& chat, std::ostringstream& ss) {
  const bool sys = f != ChatFormat::Llama2, bos_inside = f == ChatFormat::Llama2SysBos;
  const bool strip = f == ChatFormat::Llama2SysStrip;
  bool inside = true;  // the first [INST] is written before the loop
  ss << "[INST] ";
  for (const ChatMessage& m : chat) {
    const std::string content = strip ? trim(m.content) : m.content;
    if (!inside) ss << (bos_inside ? "<s>[INST] " : "[INST] ");
    inside = true;
    if (m.role == "system") ss << (sys ? "<<SYS>>\n" + content + "\n<</SYS>>\n\n" : content + "\n");
    else if (m.role == "user") ss << content << " [/INST]";
    else {
      ss << content << "</s>";
      inside = false;
    }
  }
}

void render_gemma(const std::vector<ChatMessage>& chat, bool gen, std::ostringstream& ss) {
  std::string system;
  for (const ChatMessage& m : chat) {
    if (m.role == "system") {
      system += trim(m.content);  // no system turn: merged into the next user turn
      continue;
    }
    const std::string role = m.role == "assistant" ? "model" : m.role;
    ss << "<start_of_turn>" << role << "\n";
    if (!system.empty() && role != "model") ss << system << "\n\n", system.clear();
    ss << trim(m.content) << "<end_of_turn>\n";
  }
  if (gen) ss << "<start_of_turn>model\n";
}

void render_tagged(ChatFormat f, const std::vector<ChatMessage>& chat, bool gen, std::ostringstream& ss) {
  for (const ChatMessage& m : chat) {
    if (f == ChatFormat::Phi3) ss << "<|" << m.role << "|>\n" << m.content << "<|end|>\n";
    else if (f == ChatFormat::Zephyr) ss << "<|" << m.role << "|>\n" << m.content << "<|endoftext|>\n";
    else ss << "<|start_header_id|>" << m.role << "<|end_header_id|>\n\n" << trim(m.content) << "<|eot_id|>";
  }
  if (gen) ss << (f == ChatFormat::Llama3 ? "<|start_header_id|>assistant<|end_header_id|>\n\n" : "<|assistant|>\n");
}

}  // namespace

static std::string render_jinja_chat(const ChatTemplate& t, const std::vector<ChatMessage>& messages, bool gen) {
  std::string text = render_jinja(t.file, t.source, JinjaContext{messages, gen, t.bos_token, t.eos_token});
  if (t.strip_bos && !t.bos_token.empty() && text.compare(0, t.bos_token.size(), t.bos_token) == 0)
    text.erase(0, t.bos_token.size());
  const size_t n = t.eos_token.size();
  if (t.strip_eos && n > 0 && text.size() >= n && text.compare(text.size() - n, n, t.eos_token) == 0)
    text.resize(text.size() - n);
  return text;
}

std::string render_chat(const ChatTemplate& t, const std::vector<ChatMessage>& messages, bool gen) {
  if (t.engine == ChatEngine::Jinja) return render_jinja_chat(t, messages, gen);
  std::ostringstream ss;
  switch (t.format) {
    case ChatFormat::ChatMl:
      if (!t.default_system.empty() && !messages.empty() && messages[0].role != "system")
        ss << "<|im_start|>system\n" << t.default_system << "<|im_end|>\n";
      for (const ChatMessage& m : messages) ss << "<|im_start|>" << m.role << "\n" << m.content << "<|im_end|>\n";
      if (gen) ss << "<|im_start|>assistant\n";
      break;
    case ChatFormat::Llama2: case ChatFormat::Llama2Sys: case ChatFormat::Llama2SysBos:
    case ChatFormat::Llama2SysStrip:
      render_llama2(t.format, messages, ss);
      break;
    case ChatFormat::MistralV1: case ChatFormat::MistralV3: case ChatFormat::MistralV3Tekken:
    case ChatFormat::MistralV7:
      render_mistral(t.format, messages, ss);
      break;
    case ChatFormat::Gemma: render_gemma(messages, gen, ss); break;
    case ChatFormat::Phi3: case ChatFormat::Zephyr: case ChatFormat::Llama3:
      render_tagged(t.format, messages, gen, ss);
      break;
  }
  return ss.str();
}

static std::string joined_names() {
  std::string s;
  for (const std::string& n : chat_format_names()) s += (s.empty() ? "" : ", ") + n;
  return s;
}

ChatTemplate select_chat_template(const std::string& source, const std::string& text, const std::string& name) {
  ChatTemplate t;
  if (!name.empty()) {
    require_input(chat_format_from_name(name, &t.format), name, "--chat-format",
                  "unknown chat format (known: " + joined_names() + ")");
    if (t.format == ChatFormat::ChatMl) t.default_system = chatml_default_system(text);
    return t;
  }
  require_input(!text.empty(), source, "tokenizer.chat_template",
                "the model has no chat template; name one with --chat-format (" + joined_names() + ")");
  require_input(detect_chat_template(text, &t), source, "tokenizer.chat_template",
                "unrecognised chat template; name its format with --chat-format (" + joined_names() + ")");
  return t;
}

bool chat_engine_from_name(const std::string& name, ChatEngine* out) {
  if (name == "builtin") return *out = ChatEngine::Builtin, true;
  if (name == "jinja") return *out = ChatEngine::Jinja, true;
  return false;
}

ChatTemplate jinja_chat_template(const std::string& file, const std::string& text, const std::string& bos,
                                 const std::string& eos, bool strip_bos, bool strip_eos) {
  require_input(!text.empty(), file, "tokenizer.chat_template",
                "the model has no chat template for --chat-template-engine jinja");
  ChatTemplate t;
  t.engine = ChatEngine::Jinja;
  t.file = file, t.source = text, t.bos_token = bos, t.eos_token = eos, t.strip_bos = strip_bos;
  t.strip_eos = strip_eos;
  check_jinja(file, text);  // syntax errors and refused statements surface before rendering
  return t;
}

ChatTemplate vocab_jinja_template(const std::string& file, const Vocab& v) {
  auto text = [&](int id) { return id >= 0 && id < (int)v.tokens.size() ? v.tokens[(size_t)id] : std::string(); };
  return jinja_chat_template(file, v.chat_template, text(v.bos_id), text(v.eos_id), v.add_bos, v.add_eos);
}

std::vector<ChatMessage> parse_chat_messages(const std::string& json_text, const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path, "messages", std::string("not JSON: ") + e.what());
  }
  if (j.is_object() && j.contains("messages")) j = j["messages"];  // also {"messages": [...]}
  require_input(j.is_array() && !j.empty(), path, "messages", "expected a non-empty array of messages");
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < j.size(); i++) {
    const std::string field = "messages[" + std::to_string(i) + "]";
    const nlohmann::json& m = j[i];
    require_input(m.is_object() && m.contains("role") && m["role"].is_string() && m.contains("content") &&
                      m["content"].is_string(),
                  path, field, "expected {\"role\": string, \"content\": string}");
    out.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
  }
  return out;
}

}  // namespace oracle
