// Chat templates (reference/tokenizer/chat_template.h) against two independent
// derivations: llama.cpp's own expected strings (tests/test-chat-template.cpp,
// extracted to data/llamacpp_chat_template_cases.json) and Jinja2's rendering
// of SmolLM2's real template (data/smollm2_chat_expected.json).
#include <catch2/catch.hpp>

#include <fstream>
#include <set>
#include <iterator>
#include <nlohmann/json.hpp>

#include "reference/tokenizer/chat_template.h"
#include "reference/base/errors.h"
#include "reference/model/gguf.h"
#include "fixture.h"

using namespace oracle;
using nlohmann::json;

namespace {

json load_json(const std::string& name) {
  std::ifstream in(std::string(ORACLE_TEST_DATA_DIR) + "/" + name, std::ios::binary);
  REQUIRE(in.good());
  return json::parse(std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()));
}

std::vector<ChatMessage> messages_of(const json& j) {
  std::vector<ChatMessage> out;
  for (const json& m : j) {
    if (m.is_array()) out.push_back({m[0], m[1]});
    else out.push_back({m["role"], m["content"]});
  }
  return out;
}

}  // namespace

TEST_CASE("every llama.cpp test template we recognise renders llama.cpp's expected output") {
  const json d = load_json("llamacpp_chat_template_cases.json");
  const std::vector<ChatMessage> conversation = messages_of(d["conversation"]);
  int rendered = 0, refused = 0;
  std::set<ChatFormat> formats;
  for (const json& c : d["cases"]) {
    const std::string name = c["name"], source = c["template_str"], expected = c["expected_output"];
    INFO(name);
    ChatTemplate t;
    if (!detect_chat_template(source, &t)) {
      refused++;
      continue;
    }
    CHECK(render_chat(t, conversation, true) == expected);
    formats.insert(t.format);
    rendered++;
  }
  // ChatML, Llama 2 (sys, sys-bos, sys-strip), Mistral v1/v3/v3-tekken/v7, Phi-3, Gemma, Llama 3.
  CHECK(formats.size() >= 11);
  CHECK(rendered >= 14);  // 14 of llama.cpp's 34 cases are formats we render
  CHECK(refused + rendered == (int)d["cases"].size());
}

TEST_CASE("templates of formats we do not render are not mistaken for one we do") {
  const json d = load_json("llamacpp_chat_template_cases.json");
  for (const json& c : d["cases"]) {
    const std::string name = c["name"];
    ChatTemplate t;
    bool ok = detect_chat_template(c["template_str"], &t);
    for (const char* other : {"Orion", "openchat", "vicuna", "Vicuna", "deepseek-coder", "command-r", "ChatGLM",
                              "GLMEdge", "MiniCPM", "DeepSeek-V2", "granite", "GigaChat", "Megrez", "phi-4",
                              "Yandex", "AlphaMonarch"})
      if (name.find(other) != std::string::npos) {
        INFO(name);
        CHECK_FALSE(ok);
      }
  }
}

TEST_CASE("SmolLM2's own template: detected as ChatML with its default system turn, rendered as Jinja2 does") {
  Vocab v = load_gguf_vocab(test::fixture("smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"));
  const json d = load_json("smollm2_chat_expected.json");
  REQUIRE(v.chat_template == d["template"].get<std::string>());
  const ChatTemplate t = select_chat_template(v.source, v.chat_template, "");
  CHECK(t.format == ChatFormat::ChatMl);
  CHECK(t.default_system == "You are a helpful AI assistant named SmolLM, trained by Hugging Face");
  for (const json& c : d["cases"]) CHECK(render_chat(t, messages_of(c["messages"]), true) == c["expected"]);
}

TEST_CASE("Zephyr and explicit format names") {
  // HuggingFaceH4/zephyr-7b-beta's template markers: <|user|> ... eos (<|endoftext|> in llama.cpp's detection).
  ChatTemplate t;
  REQUIRE(detect_chat_template("{{ '<|user|>\\n' + message['content'] + '<|endoftext|>' }}", &t));
  CHECK(t.format == ChatFormat::Zephyr);
  const std::vector<ChatMessage> m = {{"system", "S"}, {"user", "U"}};
  CHECK(render_chat(t, m, true) == "<|system|>\nS<|endoftext|>\n<|user|>\nU<|endoftext|>\n<|assistant|>\n");
  CHECK(render_chat(t, m, false) == "<|system|>\nS<|endoftext|>\n<|user|>\nU<|endoftext|>\n");
  for (const std::string& name : chat_format_names()) {
    ChatFormat f;
    REQUIRE(chat_format_from_name(name, &f));
    CHECK(chat_format_name(f) == name);
    CHECK(select_chat_template("m.gguf", "", name).format == f);  // --chat-format needs no template
  }
}

TEST_CASE("unrecognised or missing templates and bad format names are refused naming the field") {
  auto field_of = [](auto&& f) {
    try {
      f();
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK(field_of([] { select_chat_template("m.gguf", "", ""); }).find("tokenizer.chat_template") != std::string::npos);
  CHECK(field_of([] { select_chat_template("m.gguf", "{{ 'USER: ' }}{{ 'ASSISTANT: ' }}", ""); })
            .find("tokenizer.chat_template") != std::string::npos);
  CHECK(field_of([] { select_chat_template("m.gguf", "", "vicuna"); }).find("--chat-format") != std::string::npos);
  CHECK(field_of([] { parse_chat_messages("[{\"role\": \"user\"}]", "f.json"); }).find("messages[0]") !=
        std::string::npos);
  CHECK(field_of([] { parse_chat_messages("{", "f.json"); }).find("messages") != std::string::npos);
  CHECK(field_of([] { parse_chat_messages("[]", "f.json"); }).find("messages") != std::string::npos);
  const auto m = parse_chat_messages("{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}", "f.json");
  REQUIRE(m.size() == 1);
  CHECK(m[0].content == "x");
}
