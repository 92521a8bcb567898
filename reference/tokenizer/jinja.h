#pragma once
// ============================================================================
// A deterministic interpreter for the subset of Jinja that chat templates use,
// with the semantics of Python's jinja2 3.1 as Hugging Face transformers
// configures it (ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks,
// the loopcontrols extension and raise_exception). Anything outside the subset
// is refused with an InputError naming the construct, never rendered
// differently. docs/tokenizer.md "Chat templates: the Jinja engine".
// ============================================================================
#include <string>
#include <vector>

#include "reference/tokenizer/chat_template.h"

namespace oracle {

// The variables a template sees (as transformers' apply_chat_template passes them).
struct JinjaContext {
  std::vector<ChatMessage> messages;  // messages: [{"role": ..., "content": ...}, ...]
  bool add_generation_prompt = false;
  std::string bos_token, eos_token;
};

// The text `source` renders to. InputError(file, "tokenizer.chat_template", "line N: ...")
// for a syntax error, an unsupported construct, a runtime error jinja2 would raise, or the
// template's own raise_exception(message).
std::string render_jinja(const std::string& file, const std::string& source, const JinjaContext& ctx);
// Lexes and parses only: the same InputError for syntax errors and refused statements/filters.
void check_jinja(const std::string& file, const std::string& source);

}  // namespace oracle
