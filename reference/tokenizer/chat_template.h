#pragma once
// ============================================================================
// Chat templates: a model's `tokenizer.chat_template` (Jinja source) is
// recognised by substring heuristics, as llama.cpp's built-in detection
// (src/llama-chat.cpp llm_chat_detect_template), and rendered by a
// hand-written formatter per format (llm_chat_apply_template). No Jinja is
// interpreted. An unrecognised template is an InputError unless the caller
// names a format. docs/tokenizer.md "Chat templates".
// ============================================================================
#include <string>
#include <vector>

#include "reference/model/model.h"

namespace oracle {

enum class ChatFormat {
  ChatMl,          // <|im_start|>role\n...<|im_end|>\n (SmolLM2, Qwen, OpenHermes)
  Llama2,          // [INST] ... [/INST] (no <<SYS>>)
  Llama2Sys,       // [INST] <<SYS>>\n...\n<</SYS>>\n\n... [/INST]
  Llama2SysBos,    //   ... with <s>[INST] inside the history
  Llama2SysStrip,  //   ... with stripped messages
  MistralV1,       //  [INST] ... [/INST] (leading spaces)
  MistralV3,       // [INST] ...[/INST] assistant trimmed
  MistralV3Tekken, // [INST]...[/INST]
  MistralV7,       // [SYSTEM_PROMPT] ...[/SYSTEM_PROMPT][INST] ...[/INST]
  Phi3,            // <|role|>\n...<|end|>\n
  Zephyr,          // <|role|>\n...<|endoftext|>\n
  Gemma,           // <start_of_turn>user\n...<end_of_turn>\n (assistant -> model)
  Llama3,          // <|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|>
};

struct ChatMessage {
  std::string role;     // system, user, assistant (others are passed through)
  std::string content;
};

// How a template is rendered: by the per-format formatter (llama.cpp's built-in
// templates) or by interpreting the template's own Jinja source (reference/tokenizer/jinja.h,
// as Hugging Face and llama.cpp's --jinja do).
enum class ChatEngine { Builtin, Jinja };

struct ChatTemplate {
  ChatFormat format = ChatFormat::ChatMl;
  // ChatML templates that insert a system turn when the conversation has none
  // (SmolLM2, Qwen2): its text, taken from the template; else empty.
  std::string default_system;
  // Jinja engine only: the model file (named in errors), the template source, the texts of
  // the vocabulary's BOS/EOS tokens (bos_token/eos_token), and whether a leading bos_token
  // / trailing eos_token is removed once from the rendering (when the tokenizer adds BOS /
  // EOS itself: llama.cpp's common_chat_template_direct_apply_impl).
  ChatEngine engine = ChatEngine::Builtin;
  std::string file, source, bos_token, eos_token;
  bool strip_bos = false, strip_eos = false;
};

// The format for a template's source, or false if no heuristic matches one we render.
bool detect_chat_template(const std::string& source, ChatTemplate* out);
// "chatml", "llama2", "llama2-sys", "llama2-sys-bos", "llama2-sys-strip",
// "mistral-v1", "mistral-v3", "mistral-v3-tekken", "mistral-v7", "phi3",
// "zephyr", "gemma", "llama3" (llama.cpp's names); false if unknown.
bool chat_format_from_name(const std::string& name, ChatFormat* out);
std::string chat_format_name(ChatFormat format);
std::vector<std::string> chat_format_names();

// The prompt text for `messages`; with add_generation_prompt the opening of
// the assistant's turn is appended. BOS is not written (the tokenizer adds it); with the
// Jinja engine, the template's output as written (less a leading BOS when strip_bos).
std::string render_chat(const ChatTemplate& tmpl, const std::vector<ChatMessage>& messages,
                        bool add_generation_prompt);

// Template selection for a model: `format_name` (non-empty) wins; else the
// model's template is detected. InputError(source, "tokenizer.chat_template")
// when the model has none or it is not recognised, or ("--chat-format") for an
// unknown name.
ChatTemplate select_chat_template(const std::string& source, const std::string& template_text,
                                  const std::string& format_name);

// "builtin" or "jinja" (--chat-template-engine); false if unknown.
bool chat_engine_from_name(const std::string& name, ChatEngine* out);
// The Jinja engine over the model's own template: InputError(file, "tokenizer.chat_template")
// when the model has none; the template is parsed here, so syntax errors surface before rendering.
ChatTemplate jinja_chat_template(const std::string& file, const std::string& template_text,
                                 const std::string& bos_token, const std::string& eos_token, bool strip_bos,
                                 bool strip_eos = false);

// The Jinja engine over a vocabulary's own template, as the engines call it: bos_token /
// eos_token are the texts of its BOS / EOS tokens, stripped once when the tokenizer adds them
// (add_bos / add_eos). The one place `run` and replay build it.
ChatTemplate vocab_jinja_template(const std::string& file, const Vocab& v);

// OpenAI-style [{"role": ..., "content": ...}, ...]; InputError(path, field) if malformed.
std::vector<ChatMessage> parse_chat_messages(const std::string& json_text, const std::string& path);

}  // namespace oracle
