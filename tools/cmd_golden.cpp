// oracle golden: golden transcripts (golden/README.md).
//   oracle golden update DIR [--force]   regenerate DIR/<model>.jsonl for every model
//   oracle golden verify DIR [--backend reference] [--threads N] [--prefill-chunk N]
// A record holds the model and tokenizer SHA-256, the full sampling tuple, the
// prompt and generated ids, the text, the SHA-256 of every step's float32
// logits and an `oracle run` command line that reproduces it. verify re-runs
// each record and prints the first mismatching record and step.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "reference/base/errors.h"
#include "reference/generate/generate.h"
#include "reference/tokenizer/chat_template.h"
#include "tools/commands.h"
#include "tools/device_backend.h"
#include "tools/model_args.h"

namespace oracle::tools {

namespace fs = std::filesystem;
using nlohmann::json;

// ---- what the transcripts cover ----------------------------------------------------
struct GoldenModel {
  const char* id;
  const char* model;      // relative to the shared fixtures folder
  const char* tokenizer;  // "" = the GGUF's embedded vocabulary
  bool instruct = false;  // the instruct set (plain + chat prompts, vocabulary's BOS rule) instead of the 16
};

static const GoldenModel kModels[] = {
    {"stories260K", "models/stories260K/stories260K.bin", "models/stories260K/tok512.bin"},
    {"aidreams260K", "models/aidreams260K/aidreams260K.bin", "models/aidreams260K/tok512.bin"},
    {"llama2xs", "models/llama2xs/llama2xs.bin", "models/stories260K/tok512.bin"},
    {"stories260K.gguf", "models/gguf/stories260K.gguf", ""},
    {"stories260K-f16.gguf", "models/gguf/stories260K-f16.gguf", ""},
    {"aidreams260K.gguf", "models/gguf/aidreams260K.gguf", ""},
    {"llama2xs.gguf", "models/gguf/llama2xs.gguf", ""},
    {"llama2xs-q8_0.gguf", "models/gguf/llama2xs-q8_0.gguf", ""},
    {"llama2xs-q4_0.gguf", "models/gguf/llama2xs-q4_0.gguf", ""},
    {"smollm2", "models/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", "", true},
};

// Greedy, and seeded sampling with several processor mixes.
static std::vector<std::pair<std::string, SamplerConfig>> golden_samplers() {
  std::vector<std::pair<std::string, SamplerConfig>> out;
  SamplerConfig g = preset_config("llamacpp");
  g.temperature = 0.0f;
  out.push_back({"greedy", g});
  SamplerConfig a = preset_config("llamacpp");
  a.temperature = 0.8f, a.top_k = 40, a.top_p = 0.95f, a.seed = 42;
  out.push_back({"llamacpp-topk-topp", a});
  SamplerConfig h = preset_config("hf");
  h.temperature = 1.0f, h.top_p = 0.9f, h.top_k = 50, h.seed = 7;
  out.push_back({"hf-topk-topp", h});
  SamplerConfig m = preset_config("llamacpp");
  m.temperature = 0.7f, m.min_p = 0.05f, m.repetition_penalty = 1.1f, m.frequency_penalty = 0.2f;
  m.presence_penalty = 0.1f, m.penalty_window = 64, m.seed = 1234;
  out.push_back({"llamacpp-minp-penalties", m});
  return out;
}

// Whole words of a story, repeated, as long as the prompt stays <= limit tokens.
static std::string near_context_prompt(const Tokenizer& tok, int limit) {
  const std::string words =
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the park "
      "with her friends, and every day she saw a big red ball under the tall green tree. ";
  std::string prompt, next;
  for (size_t at = 0;; at = (at + 1) % words.size()) {
    next += words[at];
    if (words[at] != ' ') continue;
    if ((int)tok.encode(prompt + next, true).size() > limit) return prompt;
    prompt += next;
    next.clear();
  }
}

// ---- records ------------------------------------------------------------------------
static std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

static std::string run_command(const json& r) {
  const SamplerConfig s = r["sampler"].get<SamplerConfig>();
  std::string cmd = "oracle run --model ../shared/" + r["model"].get<std::string>();
  if (!r["tokenizer"].get<std::string>().empty()) cmd += " --tokenizer ../shared/" + r["tokenizer"].get<std::string>();
  const bool simple_chat = r.contains("messages") && r["messages"].back()["role"] == "user" &&
                           (r["messages"].size() == 1 || (r["messages"].size() == 2 && r["messages"][0]["role"] == "system"));
  if (simple_chat) {  // --system/--chat: rebuilt from the messages with the model's template
    for (const json& m : r["messages"])
      cmd += (m["role"] == "system" ? " --system " : " --chat ") + shell_quote(m["content"].get<std::string>());
  } else {
    cmd += " --prompt " + shell_quote(r["prompt"].get<std::string>());
  }
  cmd += " --max-tokens " + std::to_string(r["max_tokens"].get<int>()) + " --preset " + s.preset;
  char buf[256];
  std::snprintf(buf, sizeof buf,
                " --temperature %.9g --top-k %d --top-p %.9g --min-p %.9g --repeat-penalty %.9g"
                " --frequency-penalty %.9g --presence-penalty %.9g --penalty-window %d --seed %llu",
                s.temperature, s.top_k, s.top_p, s.min_p, s.repetition_penalty, s.frequency_penalty,
                s.presence_penalty, s.penalty_window, (unsigned long long)s.seed);
  cmd += buf;
  for (const auto& stop : r["stop_strings"]) cmd += " --stop " + shell_quote(stop.get<std::string>());
  return cmd + " --json";
}

static GenerateOptions options_of(const json& r, int threads, int prefill_chunk) {
  GenerateOptions o;
  o.max_tokens = r["max_tokens"].get<int>();
  o.sampler = r["sampler"].get<SamplerConfig>();
  o.stop_strings = r["stop_strings"].get<std::vector<std::string>>();
  o.threads = threads;
  o.prefill_chunk = prefill_chunk;
  o.logprobs_top_n = 0;
  o.add_bos = r.value("add_bos", true);  // older records: always BOS, plain text
  o.parse_special = r.value("parse_special", false);
  return o;
}

// Chat records: the prompt must still be what the model's template renders.
static std::string chat_mismatch(const json& r, const LoadedModel& lm) {
  if (!r.contains("messages")) return "";
  std::vector<ChatMessage> messages;
  for (const json& m : r["messages"]) messages.push_back({m["role"], m["content"]});
  const Vocab& v = lm.tokenizer.vocab();
  const ChatTemplate t = select_chat_template(lm.model.path, v.chat_template, "");
  if (chat_format_name(t.format) != r["chat_format"]) return "chat format differs: " + chat_format_name(t.format);
  if (render_chat(t, messages, true) != r["prompt"]) return "rendered chat prompt differs";
  return "";
}

static json finish_record(json r, const LoadedModel& lm);

static json make_record(const std::string& id, const GoldenModel& gm, const LoadedModel& lm,
                        const std::string& prompt, int max_tokens, const SamplerConfig& s,
                        const std::vector<std::string>& stops) {
  json r = {{"id", id}, {"model", gm.model}, {"model_sha256", lm.model.sha256},
            {"tokenizer", gm.tokenizer}, {"tokenizer_sha256", lm.tokenizer_sha256},
            {"prompt", prompt}, {"max_tokens", max_tokens}, {"sampler", s}, {"stop_strings", stops}};
  return finish_record(r, lm);
}

static json finish_record(json r, const LoadedModel& lm) {
  const GenerationResult g = generate(lm.model, lm.tokenizer, r["prompt"], options_of(r, 1, 0));
  r["prompt_ids"] = g.prompt_ids;
  r["output_ids"] = g.output_ids;
  r["text"] = g.text;
  r["finish_reason"] = g.stop_detail;
  json hashes = json::array();
  for (const GenerationStep& st : g.steps) hashes.push_back(st.logits_sha256);
  r["logits_sha256"] = hashes;
  r["command"] = "oracle golden update golden --force";
  r["run_command"] = run_command(r);
  return r;
}

static std::string shared_dir() {
  const char* env = std::getenv("ORACLE_SHARED_DIR");
  return env && *env ? env : "../shared";
}

static LoadedModel load(const std::string& model, const std::string& tokenizer, int threads) {
  ModelOptions a;
  a.model = shared_dir() + "/" + model;
  if (!tokenizer.empty()) a.tokenizer = shared_dir() + "/" + tokenizer;
  a.threads = threads;
  return load_model_and_tokenizer(a);
}

// Temp file + rename: a reader never sees a half-written transcript.
static void write_file_atomic(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << text;
    require_input(f.good(), tmp, "write", "cannot write the file");
  }
  fs::rename(tmp, path);
}

// ---- the instruct set (SmolLM2) -------------------------------------------------------
struct InstructPrompt {
  const char* name;
  std::vector<ChatMessage> chat;  // empty: `plain` as it is
  const char* plain;
  int sampler;                    // index into golden_samplers()
  int max_tokens;
};

// A plain prompt and chat prompts rendered with the model's own template,
// tokenized as the vocabulary says (BOS only with add_bos_token) with special
// tokens parsed, as `oracle run` does.
static std::vector<json> instruct_records(const GoldenModel& gm, const LoadedModel& lm) {
  const auto samplers = golden_samplers();
  const Vocab& v = lm.tokenizer.vocab();
  const ChatTemplate t = select_chat_template(lm.model.path, v.chat_template, "");
  const std::vector<InstructPrompt> prompts = {
      {"plain", {}, "The capital of France is", 0, 16},
      {"chat", {{"user", "What is the capital of France?"}}, "", 0, 24},
      {"chat-system", {{"system", "You are a concise assistant."}, {"user", "Name three colours."}}, "", 1, 24},
      {"chat-turns", {{"user", "Hi!"}, {"assistant", "Hello! How can I help?"}, {"user", "Tell me a joke about cats."}},
       "", 3, 24},
  };
  std::vector<json> out;
  for (const InstructPrompt& p : prompts) {
    const auto& [sname, s] = samplers.at(p.sampler);
    json r = {{"id", std::string(gm.id) + "/" + sname + "/" + p.name}, {"model", gm.model},
              {"model_sha256", lm.model.sha256}, {"tokenizer", gm.tokenizer}, {"tokenizer_sha256", lm.tokenizer_sha256},
              {"prompt", p.plain}, {"max_tokens", p.max_tokens}, {"sampler", s},
              {"stop_strings", std::vector<std::string>{}}, {"add_bos", v.add_bos}, {"parse_special", true}};
    if (!p.chat.empty()) {
      json messages = json::array();
      for (const ChatMessage& m : p.chat) messages.push_back({{"role", m.role}, {"content", m.content}});
      r["messages"] = messages;
      r["chat_format"] = chat_format_name(t.format);
      r["prompt"] = render_chat(t, p.chat, true);
    }
    out.push_back(finish_record(r, lm));
  }
  return out;
}

// ---- update -------------------------------------------------------------------------
static int run_update(const std::string& dir, bool force, const std::string& only) {
  const std::vector<std::string> fixed = {"", "Once upon a time",
                                          "Lily said: \xE2\x80\x9E\xC3\x9Cn\xC3\xAF" "c\xC3\xB6" "d\xC3\xA9 "
                                          "\xE2\x80\x94 \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xF0\x9F\x99\x82 caf\xC3\xA9!\xE2\x80\x9C"};
  bool found = only.empty();
  for (const GoldenModel& gm : kModels) found = found || only == gm.id;
  require_input(found, only, "--model", "no golden model with this id");
  for (const GoldenModel& gm : kModels) {
    const fs::path out = fs::path(dir) / (std::string(gm.id) + ".jsonl");
    if (!only.empty() && only != gm.id) continue;
    require_input(force || !fs::exists(out), out.string(), "--force",
                  "golden transcript exists; regenerate only for a deliberate numerics change (golden/README.md)");
  }
  for (const GoldenModel& gm : kModels) {
    if (!only.empty() && only != gm.id) continue;
    const LoadedModel lm = load(gm.model, gm.tokenizer, 1);
    if (gm.instruct) {
      const fs::path out = fs::path(dir) / (std::string(gm.id) + ".jsonl");
      const std::vector<json> records = instruct_records(gm, lm);
      std::string text;
      for (const json& r : records) text += r.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
      write_file_atomic(out.string(), text);
      std::printf("%s: %zu records\n", out.c_str(), records.size());
      continue;
    }
    std::vector<std::pair<std::string, std::string>> prompts = {
        {"empty", fixed[0]}, {"once", fixed[1]}, {"unicode", fixed[2]}};
    const int near_limit = lm.model.config.seq_len - 8;
    prompts.push_back({"near-context", near_context_prompt(lm.tokenizer, near_limit)});
    std::ofstream f(fs::path(dir) / (std::string(gm.id) + ".jsonl"), std::ios::binary);
    int n = 0;
    for (const auto& [sname, s] : golden_samplers())
      for (const auto& [pname, prompt] : prompts) {
        const int max_tokens = pname == "near-context" ? 6 : 24;
        const std::vector<std::string> stops = sname == "hf-topk-topp" ? std::vector<std::string>{"."}
                                                                        : std::vector<std::string>{};
        const json r = make_record(std::string(gm.id) + "/" + sname + "/" + pname, gm, lm, prompt,
                                   max_tokens, s, stops);
        f << r.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
        n++;
      }
    std::printf("%s: %d records\n", (fs::path(dir) / (std::string(gm.id) + ".jsonl")).c_str(), n);
  }
  return kExitOk;
}

// ---- verify ---------------------------------------------------------------------------
// The first difference between a record and a fresh run, or "" when they agree.
static std::string first_mismatch(const json& r, const GenerationResult& g) {
  if (r["prompt_ids"].get<std::vector<int>>() != g.prompt_ids) return "prompt ids differ";
  const auto want_ids = r["output_ids"].get<std::vector<int>>();
  const auto want_hash = r["logits_sha256"].get<std::vector<std::string>>();
  for (size_t i = 0; i < want_hash.size() || i < g.steps.size(); i++) {
    if (i >= want_hash.size() || i >= g.steps.size())
      return "step " + std::to_string(i) + ": length differs (golden " + std::to_string(want_hash.size()) +
             " steps, got " + std::to_string(g.steps.size()) + ")";
    if (want_hash[i] != g.steps[i].logits_sha256)
      return "step " + std::to_string(i) + ": logits sha256 golden " + want_hash[i] + ", got " +
             g.steps[i].logits_sha256;
    if (want_ids[i] != g.output_ids[i])
      return "step " + std::to_string(i) + ": token golden " + std::to_string(want_ids[i]) + ", got " +
             std::to_string(g.output_ids[i]);
  }
  if (r["text"].get<std::string>() != g.text) return "text differs";
  if (r["finish_reason"].get<std::string>() != g.stop_detail) return "finish reason differs";
  return "";
}

struct VerifyOptions {
  std::string dir;
  std::string backend = "reference";
  int threads = 1;
  int prefill_chunk = 0;
  std::string mode = "deterministic";  // device backends (docs/diff.md)
};

static int verify_file(const fs::path& file, const VerifyOptions& o, int* n_records, int* n_skipped) {
  std::ifstream f(file, std::ios::binary);
  std::map<std::string, LoadedModel> cache;  // model + tokenizer -> loaded
  std::string line;
  for (int lineno = 1; std::getline(f, line); lineno++) {
    if (line.empty()) continue;
    json r;
    try {
      r = json::parse(line);
    } catch (const json::exception& e) {
      throw InputError(file.string(), "line " + std::to_string(lineno), e.what());
    }
    const std::string key = r["model"].get<std::string>() + "|" + r["tokenizer"].get<std::string>();
    if (!cache.count(key)) cache.emplace(key, load(r["model"], r["tokenizer"], o.threads));
    const LoadedModel& lm = cache.at(key);
    std::string where = file.string() + ":" + std::to_string(lineno) + " " + r["id"].get<std::string>();
    std::string diff;
    if (lm.model.sha256 != r["model_sha256"]) diff = "model sha256 differs: " + lm.model.sha256;
    else if (std::string chat = chat_mismatch(r, lm); !chat.empty()) diff = chat;
    else if (lm.tokenizer_sha256 != r["tokenizer_sha256"]) diff = "tokenizer sha256 differs: " + lm.tokenizer_sha256;
    else if (o.backend != "reference") {  // device backends: greedy records only (tools/device_backend.h)
      bool skipped = false;
      diff = device_golden_mismatch(r, lm.model, parse_mode(o.mode), &skipped);
      if (skipped) { (*n_skipped)++; continue; }
    } else diff = first_mismatch(r, generate(lm.model, lm.tokenizer, r["prompt"], options_of(r, o.threads, o.prefill_chunk)));
    if (!diff.empty()) {
      std::printf("MISMATCH %s: %s\n  reproduce: %s\n", where.c_str(), diff.c_str(), r["run_command"].get<std::string>().c_str());
      return kExitCheckFailed;
    }
    (*n_records)++;
  }
  return kExitOk;
}

static int run_verify(const VerifyOptions& o) {
  require_backend(o.backend);  // reference, or the device backend this binary links
  parse_mode(o.mode);
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(o.dir))
    if (e.path().extension() == ".jsonl") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  require_input(!files.empty(), o.dir, "DIR", "no *.jsonl golden transcripts");
  int n = 0, skipped = 0;
  for (const fs::path& file : files)
    if (int rc = verify_file(file, o, &n, &skipped); rc != kExitOk) return rc;
  if (skipped > 0) std::printf("golden verify: %d non-greedy records skipped (the device backends decode greedily)\n", skipped);
  std::printf("golden verify: %d records in %zu files match (backend %s, threads %d, prefill chunk %d)\n", n,
              files.size(), o.backend.c_str(), o.threads, o.prefill_chunk);
  return kExitOk;
}

Command setup_golden(CLI::App& app) {
  auto* sub = app.add_subcommand("golden", "Golden transcripts: verify a pipeline against them, or regenerate");
  sub->require_subcommand(1);
  auto v = std::make_shared<VerifyOptions>();
  auto* verify = sub->add_subcommand("verify", "Re-run every record in DIR/*.jsonl; print the first mismatch");
  verify->add_option("dir", v->dir, "Folder of golden transcripts")->required();
  verify->add_option("--backend", v->backend, "Pipeline to check: reference, cuda-emu or cuda (device: greedy records)");
  verify->add_option("--mode", v->mode, "Device backends: deterministic (fast mode is not bit-exact)");
  verify->add_option("--threads", v->threads, "Forward-pass threads (changes no bit)")->check(CLI::Range(1, 256));
  verify->add_option("--prefill-chunk", v->prefill_chunk, "Prefill in chunks of N tokens (0: one pass)")
      ->check(CLI::NonNegativeNumber);
  auto u = std::make_shared<std::pair<std::string, bool>>("", false);
  auto only = std::make_shared<std::string>();
  auto* update = sub->add_subcommand("update", "Regenerate DIR/<model>.jsonl for every model in the fixtures");
  update->add_option("dir", u->first, "Folder of golden transcripts")->required();
  update->add_flag("--force", u->second, "Overwrite existing transcripts");
  update->add_option("--model", *only, "Only this golden model id (e.g. smollm2)");
  return {sub, [verify, v, u, only] {
            if (verify->parsed()) return run_verify(*v);
            return run_update(u->first, u->second, *only);
          }};
}

}  // namespace oracle::tools
