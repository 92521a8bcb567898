// Chat templates (reference/tokenizer/chat_template.h) against two independent
// derivations: llama.cpp's own expected strings (tests/test-chat-template.cpp,
// extracted to data/llamacpp_chat_template_cases.json) and Jinja2's rendering
// of SmolLM2's real template (data/smollm2_chat_expected.json).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <iterator>
#include <nlohmann/json.hpp>

#include "reference/tokenizer/chat_template.h"
#include "reference/tokenizer/jinja.h"
#include "base/errors.h"
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

// Jinja2 as Hugging Face applies templates (data/gen_chat_jinja.py: the template strings
// themselves over generated conversations: roles, leading/trailing whitespace and newlines,
// empty contents, 1-5 turns, add_generation_prompt on and off), byte for byte, for every
// template we recognise. Templates we refuse are listed and skipped. Where a template's own
// text does what no per-format formatter can (docs/tokenizer.md "Chat templates against
// Jinja2"), the number of equal renderings is pinned: a change either way fails and is looked at
// (ORACLE_JINJA_VERBOSE=1 prints the first differences of pinned templates too).
namespace {
const std::map<std::string, int> kJinjaPinned = {
    {"TheBloke/FusionNet_34Bx2_MoE-AWQ", 14},  // no [INST] without a system turn; ' ' + content + ' ' + eos
    {"bofenghuang/vigogne-2-70b-chat", 2},      // the template's own default system prompt
    {"Llama-3", 63},                            // assistant header even with add_generation_prompt false
    {"Phi-3-mini", 32},                         // system turns dropped; assistant header always
    {"Phi-3-small", 63},                        // eos after the last turn without add_generation_prompt
    {"Phi-3-medium", 32},                       // as Phi-3-mini
    {"Phi-3-vision", 101},                      // no assistant header after an assistant-last conversation
    // system prompt only in the last user turn (gone when an assistant turn is last); contents trimmed
    {"Mistral-Large-Instruct-2407 (mistralai 'v3' template; modified to have system prompt at start)", 78},
    {"Mistral-Nemo-Instruct-2407 (mistralai 'v3-tekken' template; modified to have system prompt at start)", 78},
};
}  // namespace

TEST_CASE("every recognised template renders what Jinja2 renders from its own source", "[jinja]") {
  const json d = load_json("chat_jinja_expected.json");
  int renders = 0, equal = 0, templates = 0, full = 0;
  for (const json& t : d["templates"]) {
    const std::string name = t["name"];
    ChatTemplate tmpl;
    if (!detect_chat_template(t["template"], &tmpl)) {
      std::printf("jinja: %-70s refused (format not rendered)\n", name.c_str());
      continue;
    }
    templates++;
    int ok = 0, shown = 0;
    for (const json& r : t["renders"]) {
      const std::vector<ChatMessage> msgs = messages_of(d["conversations"][r["conversation"].get<size_t>()]);
      const std::string got = render_chat(tmpl, msgs, r["add_generation_prompt"]);
      const std::string want = r["expected"];
      renders++;
      ok += got == want;
      if (got != want && (!kJinjaPinned.count(name) || std::getenv("ORACLE_JINJA_VERBOSE")) && shown++ < 4)
        std::printf("jinja MISMATCH %s (%s) conversation %d agp %d\n  jinja %s\n  ours  %s\n", name.c_str(),
                    chat_format_name(tmpl.format).c_str(), r["conversation"].get<int>(),
                    (int)r["add_generation_prompt"].get<bool>(), json(want).dump().c_str(), json(got).dump().c_str());
    }
    equal += ok;
    full += ok == (int)t["renders"].size();
    std::printf("jinja: %-70s %-16s %3d / %3zu\n", name.c_str(), chat_format_name(tmpl.format).c_str(), ok,
                t["renders"].size());
    INFO(name);
    if (kJinjaPinned.count(name)) CHECK(ok == kJinjaPinned.at(name));
    else CHECK(ok == (int)t["renders"].size());
  }
  std::printf("jinja: %d templates (%d byte for byte on every rendering), %d of %d renderings equal\n", templates,
              full, equal, renders);
  CHECK(templates == 15);
  CHECK(renders >= 1000);
}

// The Jinja engine (reference/tokenizer/jinja.h) over the same fixture: every rendering of
// every template, byte for byte, with the bos_token/eos_token gen_chat_jinja.py passed
// (llama.cpp's test case values, "<s>"/"</s>" where the case names none; SmolLM2's own) and
// its leading-BOS rule. A (conversation, add_generation_prompt) pair missing from a template's
// renders is one jinja2 refused (raise_exception or a TypeError): the engine must refuse it too.
namespace {
struct JinjaCase {
  std::string bos, eos;
};
std::map<std::string, JinjaCase> jinja_tokens() {
  std::map<std::string, JinjaCase> out;
  const json cases = load_json("llamacpp_chat_template_cases.json");
  for (const json& c : cases["cases"])
    out[c["name"].get<std::string>()] = {c.value("bos_token", std::string("<s>")), c.value("eos_token", std::string("</s>"))};
  out["HuggingFaceTB/SmolLM2-135M-Instruct"] = {"<|im_start|>", "<|im_end|>"};
  return out;
}
}  // namespace

TEST_CASE("the Jinja engine renders every template as Jinja2 does, and refuses what Jinja2 refuses", "[jinja]") {
  const json d = load_json("chat_jinja_expected.json");
  const std::map<std::string, JinjaCase> tokens = jinja_tokens();
  int templates = 0, full = 0, renders = 0, equal = 0, refusals = 0;
  for (const json& t : d["templates"]) {
    const std::string name = t["name"], source = t["template"];
    INFO(name);
    REQUIRE(tokens.count(name));
    const JinjaCase& tok = tokens.at(name);
    const ChatTemplate tmpl =
        jinja_chat_template("t.gguf", source, tok.bos, tok.eos, source.find("bos_token") != std::string::npos);
    std::set<std::pair<int, bool>> rendered;
    int ok = 0, shown = 0;
    for (const json& r : t["renders"]) {
      const int conv = r["conversation"];
      const bool agp = r["add_generation_prompt"];
      rendered.insert({conv, agp});
      const std::string want = r["expected"];
      std::string got;
      try {
        got = render_chat(tmpl, messages_of(d["conversations"][conv]), agp);
      } catch (const InputError& e) {
        got = std::string("InputError: ") + e.what();
      }
      ok += got == want;
      if (got != want && shown++ < 3)
        std::printf("jinja engine MISMATCH %s conversation %d agp %d\n  jinja2 %s\n  ours   %s\n", name.c_str(), conv,
                    (int)agp, json(want).dump().c_str(), json(got).dump().c_str());
    }
    for (int conv = 0; conv < (int)d["conversations"].size(); conv++)
      for (bool agp : {false, true}) {
        if (rendered.count({conv, agp})) continue;
        refusals++;
        INFO("conversation " << conv << " agp " << agp);
        CHECK_THROWS_AS(render_chat(tmpl, messages_of(d["conversations"][conv]), agp), InputError);
      }
    templates++, renders += (int)t["renders"].size(), equal += ok;
    full += ok == (int)t["renders"].size();
    std::printf("jinja engine: %-70s %3d / %3zu\n", name.c_str(), ok, t["renders"].size());
    CHECK(ok == (int)t["renders"].size());
  }
  std::printf("jinja engine: %d of %d templates byte for byte on every rendering, %d of %d renderings equal, "
              "%d refusals matched\n", full, templates, equal, renders, refusals);
  CHECK(templates == 15);
  CHECK(full == 15);
  CHECK(renders >= 1000);
}

// Adversarial templates (data/gen_jinja_synthetic.py: whitespace control, trim/lstrip_blocks,
// loop variables and filters, scoping, namespace, undefined, numbers, strings, filters, tests),
// rendered by jinja2 with Hugging Face's environment; "error" where jinja2 raises.
TEST_CASE("the Jinja engine on adversarial templates: jinja2's output or jinja2's refusal", "[jinja]") {
  const json d = load_json("jinja_synthetic_expected.json");
  int cases = 0, errors = 0;
  for (const json& t : d["templates"]) {
    const std::string name = t["name"], source = t["template"];
    for (const json& c : t["cases"]) {
      INFO(name << " " << c["messages"].dump());
      const JinjaContext ctx{messages_of(c["messages"]), c["add_generation_prompt"], c["bos_token"], c["eos_token"]};
      cases++;
      if (c.value("error", false)) {
        errors++;
        CHECK_THROWS_AS(render_jinja("t.gguf", source, ctx), InputError);
        continue;
      }
      std::string got;
      try {
        got = render_jinja("t.gguf", source, ctx);
      } catch (const InputError& e) {
        got = std::string("InputError: ") + e.what();
      }
      CHECK(json(got).dump() == json(c["expected"]).dump());
    }
  }
  CHECK(d["templates"].size() >= 60);
  std::printf("jinja synthetic: %d cases (%d refused by jinja2)\n", cases, errors);
}

// Constructs outside the subset are refused naming them (never rendered differently); the
// message names the model file, tokenizer.chat_template and the line.
TEST_CASE("the Jinja engine refuses what it does not implement, naming the construct and the line", "[jinja]") {
  const JinjaContext ctx{{{"user", "hi"}}, true, "<s>", "</s>"};
  auto refusal = [&](const std::string& source) {
    try {
      render_jinja("m.gguf", source, ctx);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("rendered");
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{% macro f() %}x{% endmacro %}", "{% macro %}"},
      {"{% call f() %}x{% endcall %}", "{% call %}"},
      {"{% filter upper %}x{% endfilter %}", "{% filter %}"},
      {"{% include 'x' %}", "{% include %}"},
      {"{% extends 'x' %}", "{% extends %}"},
      {"{% with a = 1 %}{% endwith %}", "{% with %}"},
      {"{% raw %}{{ x }}{% endraw %}", "{% raw %}"},
      {"{% set x | trim %}body{% endset %}", "filtered block assignments"},
      {"{% for m in messages recursive %}{% endfor %}", "recursive"},
      {"{% frobnicate %}", "unknown statement {% frobnicate %}"},
      {"{{ messages|tojson }}", "tojson"},
      {"{{ messages|sort }}", "'sort'"},
      {"{{ messages|nosuchfilter }}", "no filter named 'nosuchfilter'"},
      {"{{ 1 is nosuchtest }}", "no test named 'nosuchtest'"},
      {"{{ messages }}", "printing a list"},
      {"{{ messages[0] }}", "printing a dict"},
      {"{{ messages.append }}", "'list.append' used as a value"},
      {"{{ messages.append(1) }}", "the list method 'append'"},
      {"{{ 'x'.format(1) }}", "the string method 'format'"},
      {"{{ 'é'|upper }}", "upper() of non-ASCII text"},
      {"{{ lipsum(2) }}", "'lipsum'"},
      {"{{ range }}", "'range' used as a value"},
      {"{{ 7.5 // 2 }}", "float operator //"},
      {"{{ '%s' % 1 }}", "string formatting with %"},
      {"{{ 2 ** 64 }}", "beyond 64 bits"},
      {"{{ 9223372036854775807 + 1 }}", "integer literal too large"},
      {"{{ 0x10 }}", "number literal"},
      {"{{ messages.__class__ }}", "attribute '__class__'"},
      {"\n\n{{ messages[0].content.nope() }}", "line 3"},
      {"{{ raise_exception('Roles must alternate') }}", "the template raised: Roles must alternate"},
      {"{% if true %}x", "unexpected end of template"},
      {"{{ 'unterminated }}", "unterminated string literal"},
      {"{% break %}", "break or continue outside a loop"},
      {"{{ " + std::string(300, '(') + "1" + std::string(300, ')') + " }}", "nesting deeper than 200"},
      {"{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "1 million loop"},
      {"{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}", "longer than 64 MiB"},
      {"{% set ns = namespace(l=[1]) %}{% for i in range(30) %}{% set ns.l = ns.l + ns.l %}{% endfor %}",
       "list longer than 2^20"},
  };
  for (const auto& [source, needle] : cases) {
    INFO(source);
    const std::string msg = refusal(source);
    CHECK(msg.find(needle) != std::string::npos);
    CHECK(msg.rfind("m.gguf: tokenizer.chat_template: ", 0) == 0);
  }
}

// The product path: --chat-template-engine jinja interprets the GGUF's own template; the
// leading BOS text is removed once when the tokenizer adds BOS (llama.cpp's rule).
TEST_CASE("jinja_chat_template: BOS removal, parse errors before rendering, no template", "[jinja]") {
  const std::string src = "{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}";
  ChatTemplate t = jinja_chat_template("m.gguf", src, "<s>", "</s>", true);
  CHECK(render_chat(t, {{"user", "a"}}, true) == "[user]a");
  t.strip_bos = false;
  CHECK(render_chat(t, {{"user", "a"}}, true) == "<s>[user]a");
  const std::string eos_src = "{{ bos_token }}{{ messages[0].content }}{{ eos_token }}";
  const ChatTemplate both = jinja_chat_template("m.gguf", eos_src, "<s>", "</s>", true, true);
  CHECK(render_chat(both, {{"user", "a"}}, true) == "a");  // llama.cpp: add_bos / add_eos strip once
  CHECK(render_chat(both, {{"user", "</s>"}}, true) == "</s>");
  CHECK_THROWS_AS(jinja_chat_template("m.gguf", "{% for %}", "<s>", "</s>", true), InputError);
  CHECK_THROWS_AS(jinja_chat_template("m.gguf", "", "<s>", "</s>", true), InputError);
  ChatEngine e;
  CHECK(chat_engine_from_name("jinja", &e));
  CHECK(e == ChatEngine::Jinja);
  CHECK(chat_engine_from_name("builtin", &e));
  CHECK(e == ChatEngine::Builtin);
  CHECK_FALSE(chat_engine_from_name("minja", &e));
}
