// oracle golden: golden transcripts (golden/README.md).
//   oracle golden update DIR [--force] [--model M [--tokenizer T] [--id NAME]]
//       regenerate DIR/<model>.jsonl for every fixture model, or for the one named
//   oracle golden verify DIR|FILE.jsonl [--backend reference] [--threads N] [--prefill-chunk N]
//       [--shared-dir S] [--json] [--quiet]
// A record holds the model and tokenizer SHA-256, the full sampling tuple, the
// prompt and generated ids, the text, the SHA-256 of every step's float32
// logits and an `oracle run` command line that reproduces it. verify re-runs
// each record and reports every mismatching record (first differing step of
// each) and their count; exit 1 if there is any.
//
// Where the models are: a record's "model"/"tokenizer" paths are relative to
// the shared fixtures folder: --shared-dir, else $ORACLE_SHARED_DIR, else
// ../shared beside the repository holding the transcripts (the transcript
// folder's parent's sibling: <repo>/golden/x.jsonl -> <repo>/../shared), so
// verify works from any directory. Records written for a model outside that
// folder (update --model) carry "model_base": "transcript": their paths are
// relative to the transcript's own folder.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <map>
#include <nlohmann/json.hpp>

#include "base/errors.h"
#include "reference/generate/generate.h"
#include "base/escape.h"
#include "base/file_io.h"
#include "base/json_util.h"
#include "base/numerics_version.h"
#include "reference/tokenizer/chat_template.h"
#include "tools/bench_support.h"
#include "tools/commands.h"
#include "tools/device_backend.h"
#include "tools/model_args.h"
#include "tools/numerics_arg.h"
#include "tools/progress.h"
#include "tools/shard.h"
#include "distributed/tensor_parallel.h"

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
  SamplerConfig g = preset_config(Preset::LlamaCpp);
  g.temperature = 0.0f;
  out.push_back({"greedy", g});
  SamplerConfig a = preset_config(Preset::LlamaCpp);
  a.temperature = 0.8f, a.top_k = 40, a.top_p = 0.95f, a.seed = 42;
  out.push_back({"llamacpp-topk-topp", a});
  SamplerConfig h = preset_config(Preset::Hf);
  h.temperature = 1.0f, h.top_p = 0.9f, h.top_k = 50, h.seed = 7;
  out.push_back({"hf-topk-topp", h});
  SamplerConfig m = preset_config(Preset::LlamaCpp);
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

// Quoted for the shell only when needed (fixture paths stay bare, as in the committed records).
static std::string shell_word(const std::string& s) {
  const bool plain = !s.empty() && s.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./+-") == std::string::npos;
  return plain ? s : shell_quote(s);
}

static std::string run_command(const json& r, const std::string& prefix) {
  const SamplerConfig s = r["sampler"].get<SamplerConfig>();
  std::string cmd = "oracle run --model " + shell_word(prefix + r["model"].get<std::string>());
  if (!r["tokenizer"].get<std::string>().empty())
    cmd += " --tokenizer " + shell_word(prefix + r["tokenizer"].get<std::string>());
  const bool simple_chat = r.contains("messages") && r["messages"].back()["role"] == "user" &&
                           (r["messages"].size() == 1 || (r["messages"].size() == 2 && r["messages"][0]["role"] == "system"));
  if (simple_chat) {  // --system/--chat: rebuilt from the messages with the model's template
    for (const json& m : r["messages"])
      cmd += (m["role"] == "system" ? " --system " : " --chat ") + shell_quote(m["content"].get<std::string>());
  } else {
    cmd += " --prompt " + shell_quote(r["prompt"].get<std::string>());
  }
  cmd += " --max-tokens " + std::to_string(r["max_tokens"].get<int>()) + " --preset " + preset_name(s.preset);
  char buf[256];
  std::snprintf(buf, sizeof buf,
                " --temperature %.9g --top-k %d --top-p %.9g --min-p %.9g --repeat-penalty %.9g"
                " --frequency-penalty %.9g --presence-penalty %.9g --penalty-window %d --seed %llu",
                s.temperature, s.top_k, s.top_p, s.min_p, s.repetition_penalty, s.frequency_penalty,
                s.presence_penalty, s.penalty_window, (unsigned long long)s.seed);
  cmd += buf;
  for (const auto& stop : r["stop_strings"]) cmd += " --stop " + shell_quote(stop.get<std::string>());
  if (r.value("numerics", std::string("canonical")) != "canonical") cmd += " --numerics " + r["numerics"].get<std::string>();
  return cmd + " --json";
}

// A record's numerics profile: "numerics" (absent: canonical, every record before the ggml profile).
static num::NumericsProfile record_numerics(const json& r) {
  const json& n = r.contains("numerics") ? r["numerics"] : json("canonical");
  require_input(n.is_string(), "golden record", "numerics", "expected a string");
  return numerics_arg(n.get<std::string>(), "numerics");
}

static GenerateOptions options_of(const json& r, int threads, int prefill_chunk) {
  GenerateOptions o;
  o.max_tokens = int_from_json<int>(r["max_tokens"], "golden record", "max_tokens", 1, 1 << 24);
  o.sampler = r["sampler"].get<SamplerConfig>();
  o.stop_strings = r["stop_strings"].get<std::vector<std::string>>();
  o.threads = threads;
  o.prefill_chunk = prefill_chunk;
  o.logprobs_top_n = 0;
  o.add_bos = r.value("add_bos", true);  // older records: always BOS, plain text
  o.parse_special = r.value("parse_special", false);
  o.numerics = record_numerics(r);
  return o;
}

// A model to write transcripts for: a fixture (paths relative to the shared
// folder) or one the user names (paths relative to the transcript folder).
struct GoldenTarget {
  std::string id, model, tokenizer;  // tokenizer "" = the model's own
  bool transcript_base = false;      // "model_base": "transcript"
  const GoldenModel* fixture = nullptr;  // the fixture entry (instruct set), if any
  std::string numerics = "canonical";    // the records' profile ("numerics" written when not canonical)
};

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

static json make_record(const std::string& id, const GoldenTarget& gm, const LoadedModel& lm,
                        const std::string& prompt, int max_tokens, const SamplerConfig& s,
                        const std::vector<std::string>& stops) {
  json r = {{"id", id}, {"model", gm.model}, {"model_sha256", lm.model.sha256},
            {"tokenizer", gm.tokenizer}, {"tokenizer_sha256", lm.tokenizer_sha256},
            {"prompt", prompt}, {"max_tokens", max_tokens}, {"sampler", s}, {"stop_strings", stops}};
  if (gm.transcript_base) r["model_base"] = "transcript";
  if (gm.numerics != "canonical") r["numerics"] = gm.numerics;
  return finish_record(r, lm);
}

static json finish_record(json r, const LoadedModel& lm) {
  stamp_numerics_version(r);  // the contract the bits below were computed under (docs/numerics.md "Versioning")
  const GenerationResult g = generate(lm.model, lm.tokenizer, r["prompt"], options_of(r, 1, 0));
  r["prompt_ids"] = g.prompt_ids;
  r["output_ids"] = g.output_ids;
  r["text"] = g.text;
  r["finish_reason"] = g.stop_detail;
  json hashes = json::array();
  for (const GenerationStep& st : g.steps) hashes.push_back(st.logits_sha256);
  r["logits_sha256"] = hashes;
  const bool transcript_base = r.value("model_base", std::string()) == "transcript";
  const std::string numerics = r.value("numerics", std::string("canonical"));
  r["command"] = transcript_base ? "oracle golden update DIR --force --model " + shell_word(r["model"].get<std::string>())
                 : numerics != "canonical" ? "oracle golden update golden/" + numerics + " --force --numerics " + numerics
                                           : "oracle golden update golden --force";
  r["run_command"] = run_command(r, transcript_base ? "" : "../shared/");
  return r;
}

// The fixtures folder for transcripts in `transcript_dir` (see the top of this file).
static fs::path shared_dir(const std::string& flag, const fs::path& transcript_dir) {
  if (!flag.empty()) return flag;
  const char* env = std::getenv("ORACLE_SHARED_DIR");
  if (env && *env) return env;
  return fs::absolute(transcript_dir).lexically_normal().parent_path().parent_path() / "shared";
}

// Where a record's paths are relative to.
static fs::path base_of(const json& r, const fs::path& shared, const fs::path& transcript_dir) {
  return r.value("model_base", std::string()) == "transcript" ? transcript_dir : shared;
}

// A record's model and tokenizer paths are relative and, against the shared folder, stay inside
// it (`../../../etc/passwd` is refused). Records with "model_base": "transcript" were written
// by `golden update --model` for a model the user named wherever it lies, so their relative
// paths may leave the transcript's folder (docs/cli.md "golden").
static void check_record_paths(const json& r, const std::string& where) {
  const bool transcript = r.value("model_base", std::string()) == "transcript";
  for (const char* k : {"model", "tokenizer"}) {
    const fs::path p = fs::path(r[k].get<std::string>()).lexically_normal();
    require_input(p.is_relative(), where, k, "must be a path relative to the fixtures folder, got an absolute path");
    const bool leaves = !p.empty() && *p.begin() == "..";
    require_input(transcript || !leaves, where, k,
                  "'" + r[k].get<std::string>() + "' leaves the fixtures folder the record's paths are relative to");
  }
}

static LoadedModel load(const fs::path& base, const std::string& model, const std::string& tokenizer, int threads,
                        bool split) {
  ModelOptions a;
  if (split) a.residency = FileResidency::mapped;  // a rank drops the pages it does not read
  a.model = (base / model).string();
  require_input(fs::exists(a.model), a.model, "model",
                "golden model not found (fixture paths are relative to the shared folder: pass --shared-dir DIR "
                "or set ORACLE_SHARED_DIR)");
  if (!tokenizer.empty()) a.tokenizer = (base / tokenizer).string();
  a.threads = threads;
  return load_model_and_tokenizer(a);
}

// Temp file + fsync + rename (base/file_io.h): a reader never sees a
// half-written transcript, and a failed write leaves the old one intact.
static void write_transcript_atomic(const std::string& path, const std::string& text) {
  oracle::write_file_atomic(path, "DIR", text);
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
static std::vector<json> instruct_records(const GoldenModel& gm, const LoadedModel& lm, const std::string& numerics) {
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
    if (numerics != "canonical") r["numerics"] = numerics;
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
struct UpdateOptions {
  std::string dir, shared, model, tokenizer, id;  // model "": every fixture model
  bool force = false, json = false, quiet = false;
  std::string numerics = "canonical";  // --numerics ggml: the profile's records (golden/ggml), fixtures below
};

// The fixtures the ggml profile's records cover: the quantized files, the F16 file
// (activations rounded to F16) and SmolLM2 (Q4_1 with a Q8_0 embedding).
static bool ggml_fixture(const GoldenModel& gm) {
  const std::string id = gm.id;
  return id == "stories260K-f16.gguf" || id == "llama2xs-q8_0.gguf" || id == "llama2xs-q4_0.gguf" || id == "smollm2";
}

static std::vector<GoldenTarget> update_targets(const UpdateOptions& o) {
  std::vector<GoldenTarget> out;
  if (o.model.empty()) {
    const bool ggml = numerics_arg(o.numerics) == num::NumericsProfile::Ggml;
    for (const GoldenModel& gm : kModels)
      if (!ggml || ggml_fixture(gm)) out.push_back({gm.id, gm.model, gm.tokenizer, false, &gm});
    return out;
  }
  require_input(fs::exists(o.model), o.model, "--model", "cannot open the model");
  require_input(o.tokenizer.empty() || fs::exists(o.tokenizer), o.tokenizer, "--tokenizer", "cannot open the tokenizer");
  const fs::path dir = fs::absolute(o.dir);
  auto rel = [&](const std::string& p) { return p.empty() ? p : fs::absolute(p).lexically_relative(dir).string(); };
  out.push_back({o.id.empty() ? fs::path(o.model).filename().string() : o.id, rel(o.model), rel(o.tokenizer), true});
  return out;
}

static int write_transcript(const GoldenTarget& gm, const fs::path& base, const fs::path& out, Progress& progress,
                            int* done) {
  const std::vector<std::string> fixed = {"", "Once upon a time",
                                          "Lily said: \xE2\x80\x9E\xC3\x9Cn\xC3\xAF" "c\xC3\xB6" "d\xC3\xA9 "
                                          "\xE2\x80\x94 \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xF0\x9F\x99\x82 caf\xC3\xA9!\xE2\x80\x9C"};
  const LoadedModel lm = load(base, gm.model, gm.tokenizer, 1, false);
  if (gm.fixture && gm.fixture->instruct) {  // plain + chat prompts (instruct_records)
    std::string text;
    const std::vector<json> records = instruct_records(*gm.fixture, lm, gm.numerics);
    for (const json& r : records) text += r.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    write_transcript_atomic(out.string(), text);
    *done += 16;
    progress.update(*done);
    return (int)records.size();
  }
  std::vector<std::pair<std::string, std::string>> prompts = {
      {"empty", fixed[0]}, {"once", fixed[1]}, {"unicode", fixed[2]}};
  const int near_limit = lm.model.config.seq_len - 8;
  prompts.push_back({"near-context", near_context_prompt(lm.tokenizer, near_limit)});
  std::string text;
  int n = 0;
  for (const auto& [sname, s] : golden_samplers())
    for (const auto& [pname, prompt] : prompts) {
      const int max_tokens = pname == "near-context" ? 6 : 24;
      const std::vector<std::string> stops = sname == "hf-topk-topp" ? std::vector<std::string>{"."}
                                                                      : std::vector<std::string>{};
      const json r = make_record(gm.id + "/" + sname + "/" + pname, gm, lm, prompt, max_tokens, s, stops);
      text += r.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
      n++;
      progress.update(++*done);
    }
  write_transcript_atomic(out.string(), text);  // written whole, then renamed: never half a transcript
  return n;
}

static int run_update(const UpdateOptions& o) {
  numerics_arg(o.numerics);  // a bad --numerics is refused before anything is generated
  const std::vector<GoldenTarget> targets = update_targets(o);
  for (const GoldenTarget& gm : targets) {
    const fs::path out = fs::path(o.dir) / (gm.id + ".jsonl");
    require_input(o.force || !fs::exists(out), out.string(), "--force",
                  "golden transcript exists; regenerate only for a deliberate numerics change (golden/README.md)");
    check_output_path(out.string(), "DIR");  // a missing or unwritable DIR fails now, not after generating
  }
  require_input(fs::is_directory(o.dir), o.dir, "DIR", "not a directory");
  const fs::path shared = shared_dir(o.shared, o.dir);
  Progress progress("golden update", (int64_t)targets.size() * 16, !o.quiet && !o.json);
  int done = 0;
  json written = json::array();
  for (GoldenTarget gm : targets) {
    gm.numerics = o.numerics;
    const fs::path out = fs::path(o.dir) / (gm.id + ".jsonl");
    const int n = write_transcript(gm, gm.transcript_base ? fs::path(o.dir) : shared, out, progress, &done);
    written.push_back({{"file", out.string()}, {"records", n}});
  }
  progress.finish();
  if (o.json) std::printf("%s\n", json{{"written", written}}.dump().c_str());
  else
    for (const auto& w : written) std::printf("%s: %d records\n", w["file"].get<std::string>().c_str(), w["records"].get<int>());
  return kExitOk;
}

// ---- verify ---------------------------------------------------------------------------
// A record's shape, checked before it is used: a missing field, a wrong type, an
// integer out of range or output_ids shorter than logits_sha256 names the field
// (never an out-of-bounds read or nlohmann's exception text).
static void check_record(const json& r, const std::string& where) {
  require_input(r.is_object(), where, "record", "expected a JSON object");
  const std::string command = r.contains("command") && r["command"].is_string() ? r["command"].get<std::string>()
                                                                                 : "oracle golden update DIR --force";
  check_numerics_version(r, where, "regenerate it with `" + command + "` (golden/README.md)");
  for (const char* k : {"id", "model", "tokenizer", "model_sha256", "tokenizer_sha256", "prompt", "text",
                        "finish_reason", "run_command"})
    require_input(r.contains(k) && r[k].is_string(), where, k, "missing or not a string");
  for (const char* k : {"max_tokens", "prompt_ids", "output_ids", "logits_sha256", "sampler", "stop_strings"})
    require_input(r.contains(k), where, k, "missing");
  int_from_json<int>(r["max_tokens"], where, "max_tokens", 1, 1 << 24);
  const std::vector<int> out = ints_from_json(r["output_ids"], where, "output_ids");
  ints_from_json(r["prompt_ids"], where, "prompt_ids");
  const json& h = r["logits_sha256"];
  require_input(h.is_array(), where, "logits_sha256", "expected an array of SHA-256 strings");
  for (size_t i = 0; i < h.size(); i++)
    require_input(h[i].is_string(), where, "logits_sha256[" + std::to_string(i) + "]", "expected a string");
  require_input(out.size() == h.size(), where, "output_ids",
                std::to_string(out.size()) + " ids for " + std::to_string(h.size()) + " logits_sha256 steps");
  const json& stops = r["stop_strings"];
  require_input(stops.is_array(), where, "stop_strings", "expected an array of strings");
  for (size_t i = 0; i < stops.size(); i++)
    require_input(stops[i].is_string(), where, "stop_strings[" + std::to_string(i) + "]", "expected a string");
  try {
    (void)r["sampler"].get<SamplerConfig>();
  } catch (const InputError& e) {
    throw InputError(where, "sampler." + e.field(), input_error_message(e));
  } catch (const json::exception&) {
    throw InputError(where, "sampler", "wrong JSON type");
  }
}

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
  std::string dir;  // a folder of *.jsonl, or one .jsonl file
  std::string backend = "reference";
  int threads = 1;
  int prefill_chunk = 0;
  std::string mode = "deterministic";  // device backends (docs/diff.md)
  std::string shared;                  // --shared-dir
  bool json = false, quiet = false;
  int tp = 0;                          // --tp N: tensor-parallel ranks (0: none)
  ShardOptions shard;                  // --shard I/N --part FILE (tools/shard.h)
  const TensorSplit* split = nullptr;  // set per rank by run_verify_tp
};

struct VerifyTally {
  int records = 0, matched = 0, skipped = 0;
  json mismatches = json::array();  // {file, line, id, diff, reproduce}
};

static std::vector<json> read_records(const fs::path& file, std::vector<int>* lines) {
  std::istringstream f(read_regular_file(file.string(), "DIR"));
  std::vector<json> out;
  std::string line;
  for (int lineno = 1; std::getline(f, line); lineno++) {
    if (line.empty()) continue;
    const std::string at = file.string() + ":" + std::to_string(lineno);
    out.push_back(parse_json_text(line, at, "record"));
    check_record(out.back(), at);
    lines->push_back(lineno);
  }
  return out;
}

// Fast mode (not bit-exact): greedy records only (*skipped otherwise), their output ids
// teacher-forced on the device; the device argmax may differ from the golden id on at
// most steps * 2 / 128 steps (the bound of docs/cuda.md "Fast mode", as oracle diff).
static std::string fast_mismatch(const DevicePipeline& dev, const json& r, const LoadedModel& lm, DeviceMode mode,
                                 bool* skipped) {
  *skipped = !plain_greedy(r["sampler"].get<SamplerConfig>());
  if (*skipped) return "";
  const auto ids = r["output_ids"].get<std::vector<int>>();
  const int steps = (int)ids.size(), allowed = steps * 2 / 128;
  const int agree = dev.greedy_agreement(lm.model, r["prompt_ids"].get<std::vector<int>>(), ids, mode);
  if (steps - agree <= allowed) return "";
  return "fast mode: greedy id differs on " + std::to_string(steps - agree) + " of " + std::to_string(steps) +
         " teacher-forced steps (bound " + std::to_string(allowed) + ")";
}

// The first difference between record r and a fresh run, or "" (*skipped: not run on this backend).
static std::string check_record(const json& r, const LoadedModel& lm, const VerifyOptions& o, bool* skipped) {
  *skipped = false;
  if (lm.model.sha256 != r["model_sha256"]) return "model sha256 differs: " + lm.model.sha256;
  if (lm.tokenizer_sha256 != r["tokenizer_sha256"]) return "tokenizer sha256 differs: " + lm.tokenizer_sha256;
  if (std::string chat = chat_mismatch(r, lm); !chat.empty()) return chat;
  if (const DevicePipeline* dev = require_backend(o.backend)) {
    const DeviceMode mode = parse_mode(o.mode);
    require_input(record_numerics(r) == num::NumericsProfile::Canonical || !is_fast(mode), r["id"].get<std::string>(),
                  "numerics", "a ggml-profile record: the device runs the ggml profile in deterministic mode only");
    if (is_fast(mode)) return fast_mismatch(*dev, r, lm, mode, skipped);
    return first_mismatch(r, dev->generate(lm.model, lm.tokenizer, r["prompt"], options_of(r, 1, 0), mode));
  }
  GenerateOptions go = options_of(r, o.threads, o.prefill_chunk);
  go.split = o.split;
  return first_mismatch(r, generate(lm.model, lm.tokenizer, r["prompt"], go));
}

// The outcome of one record: {"skipped"} or {"diff", "file", "line", "id", "reproduce"} ("" diff: a match).
static json verify_one(const fs::path& file, const json& r, int line, const LoadedModel& lm, const VerifyOptions& o) {
  bool skipped = false;
  std::string diff;
  try {
    diff = check_record(r, lm, o, &skipped);
  } catch (const InputError& e) {  // the record's own values (sampler, stop strings): name its file and line
    if (e.file() != "sampler" && e.file() != "stop" && e.file() != "options") throw;
    throw InputError(file.string() + ":" + std::to_string(line), e.file() + "." + e.field(), input_error_message(e));
  }
  if (skipped) return {{"skipped", true}};
  if (diff.empty()) return {{"skipped", false}, {"diff", ""}};
  return {{"skipped", false}, {"diff", diff}, {"file", file.string()}, {"line", line}, {"id", r["id"]},
          {"reproduce", r["run_command"]}};
}

// Records `first`.. of this file that are this worker's (item i: shard.mine(i)); outcomes in `out`.
static void verify_file(const fs::path& file, const std::vector<json>& records, const std::vector<int>& lines,
                        const VerifyOptions& o, size_t first, const Shard& shard, std::vector<json>& out,
                        Progress& progress, int64_t* loaded_rss = nullptr) {
  const fs::path dir = file.parent_path().empty() ? fs::path(".") : file.parent_path();
  const fs::path shared = shared_dir(o.shared, dir);
  std::map<std::string, LoadedModel> cache;  // base + model + tokenizer -> loaded
  for (size_t i = 0; i < records.size(); i++) {
    if (!shard.mine(first + i)) continue;
    const json& r = records[i];
    const fs::path base = base_of(r, shared, dir);
    check_record_paths(r, file.string() + ":" + std::to_string(lines[i]));
    const std::string key = base.string() + "|" + r["model"].get<std::string>() + "|" + r["tokenizer"].get<std::string>();
    if (!cache.count(key)) {
      cache.emplace(key, load(base, r["model"], r["tokenizer"], o.threads, o.split));
      if (o.split && cache.at(key).model.file) cache.at(key).model.file->drop_resident();  // keep only the rows read
    }
    out.push_back({{"index", first + i}, {"result", verify_one(file, r, lines[i], cache.at(key), o)}});
    if (loaded_rss) *loaded_rss = std::max(*loaded_rss, (int64_t)read_process_memory().rss);  // models still mapped
    progress.update((int64_t)out.size());
  }
}

// The outcomes in record order -> the tally (and, without --json, each MISMATCH as it comes).
static VerifyTally tally(const std::vector<json>& results, bool print) {
  VerifyTally t;
  for (const json& r : results) {
    t.records++;
    if (r["skipped"].get<bool>()) { t.skipped++; continue; }
    if (r["diff"].get<std::string>().empty()) { t.matched++; continue; }
    t.mismatches.push_back({{"file", r["file"]}, {"line", r["line"]}, {"id", r["id"]}, {"diff", r["diff"]},
                            {"reproduce", r["reproduce"]}});
    if (print)
      std::printf("MISMATCH %s:%d %s: %s\n  reproduce: %s\n", r["file"].get<std::string>().c_str(),
                  r["line"].get<int>(), r["id"].get<std::string>().c_str(), r["diff"].get<std::string>().c_str(),
                  r["reproduce"].get<std::string>().c_str());
  }
  return t;
}

static std::vector<fs::path> transcript_files(const std::string& dir) {
  require_input(fs::exists(dir), dir, "DIR", "no such folder or file");
  if (!fs::is_directory(dir)) return {dir};
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".jsonl") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  require_input(!files.empty(), dir, "DIR", "no *.jsonl golden transcripts");
  return files;
}

// Everything the output depends on (every part of a sharded verify must agree).
static json verify_job(const VerifyOptions& o, const std::vector<fs::path>& files, int64_t total) {
  std::vector<std::string> names;
  for (const fs::path& f : files) names.push_back(f.string());
  return {{"dir", o.dir}, {"files", names}, {"records", total}, {"backend", o.backend}, {"mode", o.mode},
          {"threads", o.threads}, {"prefill_chunk", o.prefill_chunk}, {"json", o.json}, {"shared", o.shared},
          {"tp", o.tp}};
}

int finish_golden_verify_job(const json& job, const std::vector<json>& results, const json& ranks) {
  const bool as_json = job.at("json");
  const VerifyTally t = tally(results, !as_json);
  const int bad = (int)t.mismatches.size();
  const size_t n_files = job.at("files").size();
  const std::string backend = job.at("backend");
  if (as_json) {
    json out{{"pass", bad == 0}, {"records", t.records}, {"matched", t.matched}, {"skipped", t.skipped},
             {"mismatch_count", bad}, {"mismatches", t.mismatches}, {"files", n_files},
             {"backend", backend}, {"mode", job.at("mode")}, {"threads", job.at("threads")},
             {"prefill_chunk", job.at("prefill_chunk")}};
    if (job.at("tp").get<int>() > 0) out["tp"] = job.at("tp");
    if (!ranks.is_null()) out["tp_ranks"] = ranks;  // per rank: RSS, all-gathers, bytes received
    std::printf("%s\n", out.dump(-1, ' ', false, json::error_handler_t::replace).c_str());
    return bad == 0 ? kExitOk : kExitCheckFailed;
  }
  if (t.skipped > 0)
    std::printf("golden verify: %d non-greedy records skipped (fast mode checks greedy records only)\n", t.skipped);
  if (bad > 0) {
    std::printf("golden verify: %d of %d records MISMATCH in %zu files (backend %s)\n", bad, t.records - t.skipped,
                n_files, backend.c_str());
    return kExitCheckFailed;
  }
  std::printf("golden verify: %d records in %zu files match (backend %s, threads %d, prefill chunk %d", t.matched,
              n_files, backend.c_str(), job.at("threads").get<int>(), job.at("prefill_chunk").get<int>());
  if (job.at("tp").get<int>() > 0) std::printf(", tensor-parallel ranks %d", job.at("tp").get<int>());
  std::printf(")\n");
  return kExitOk;
}

// --tp N: every record on N tensor-parallel ranks — the MPI world when mpirun
// started N ranks, else N threads of this process (docs/scale.md). Rank 0 reports.
static int run_verify_tp(const VerifyOptions& o, const std::vector<fs::path>& files,
                         const std::vector<std::vector<json>>& records, const std::vector<std::vector<int>>& lines,
                         int64_t total) {
  require_input(o.backend == "reference", "--tp", "tp", "tensor parallelism is the reference backend's");
  require_input(o.shard.shard.empty(), "--tp", "tp", "give --tp or --shard, not both");
  std::unique_ptr<dist::Communicator> world = dist::world();
  require_input(world->size() == 1 || world->size() == o.tp, "--tp", "tp",
                "--tp " + std::to_string(o.tp) + " under mpirun with " + std::to_string(world->size()) +
                    " ranks (give -np " + std::to_string(o.tp) + ")");
  std::vector<json> results;  // rank 0's outcomes, in record order
  json rank_stats = json::array();
  auto verify_all = [&](dist::Communicator& comm) {
    const TensorSplit split = dist::tensor_split(comm);
    VerifyOptions mine = o;
    mine.split = &split;
    std::vector<json> out;
    Progress progress("golden verify", total, comm.root() && !o.quiet && !o.json);
    int64_t loaded_rss = 0;  // the largest VmRSS after a record, its model still loaded
    for (size_t i = 0, first = 0; i < files.size(); first += records[i].size(), i++)
      verify_file(files[i], records[i], lines[i], mine, first, Shard{}, out, progress, &loaded_rss);
    progress.finish();
    const json stats{{"rank", comm.rank()}, {"rss_bytes", loaded_rss},
                     {"all_gathers", comm.stats().all_gathers}, {"bytes_received", comm.stats().bytes_received}};
    const std::vector<std::string> all = comm.gather(stats.dump());
    if (comm.root()) {
      results = std::move(out);
      for (const std::string& s : all) rank_stats.push_back(json::parse(s));
    }
  };
  if (world->size() > 1) verify_all(*world);
  else dist::run_in_process(o.tp, verify_all);
  std::vector<json> ordered;
  for (json& r : results) ordered.push_back(std::move(r["result"]));
  int code = 0;
  if (world->root()) code = finish_golden_verify_job(verify_job(o, files, total), ordered, rank_stats);
  return world->broadcast(code);
}

static int run_verify(const VerifyOptions& o) {
  const bool device = require_backend(o.backend) != nullptr;  // reference, or a device backend this binary can run here
  parse_mode(o.mode);
  require_input(!device || o.threads == 1, std::to_string(o.threads), "--threads",
                "the reference's forward-pass threads; not an option of the device backends");
  require_input(!device || o.prefill_chunk == 0, std::to_string(o.prefill_chunk), "--prefill-chunk",
                "the device backends prefill each prompt in one call");
  const std::vector<fs::path> files = transcript_files(o.dir);
  std::vector<std::vector<json>> records;
  std::vector<std::vector<int>> lines(files.size());
  int64_t total = 0;
  for (size_t i = 0; i < files.size(); i++) {
    records.push_back(read_records(files[i], &lines[i]));
    total += (int64_t)records.back().size();
  }
  if (o.tp > 0) return run_verify_tp(o, files, records, lines, total);
  ShardRun run("golden verify", o.shard);
  std::vector<json> results;  // {index, result} of this worker's records, in record order
  Progress progress("golden verify", (total + run.world().size() - 1) / run.world().size(),
                    run.root() && !o.quiet && !o.json);
  for (size_t i = 0, first = 0; i < files.size(); first += records[i].size(), i++)
    verify_file(files[i], records[i], lines[i], o, first, run.shard(), results, progress);
  progress.finish();
  const json job = verify_job(o, files, total);
  return run.finish(job, (size_t)total, std::move(results),
                    [&job](const std::vector<json>& all) { return finish_golden_verify_job(job, all, nullptr); });
}

Command setup_golden(CLI::App& app) {
  auto* sub = app.add_subcommand("golden", "Golden transcripts: verify a pipeline against them, or regenerate");
  sub->require_subcommand(1);
  auto v = std::make_shared<VerifyOptions>();
  auto* verify = sub->add_subcommand("verify", "Re-run every record in DIR/*.jsonl (or one FILE.jsonl); report every mismatch");
  verify->add_option("dir", v->dir, "Folder of golden transcripts, or one .jsonl file")->required();
  verify->add_option("--backend", v->backend, "Pipeline to check: reference, cuda-emu or cuda (every record on the device)");
  verify->add_option("--mode", v->mode, "Device backends: deterministic (every record, bit for bit) or fast, fast-tf32, fast-bf16 (greedy records, within the bound)");
  verify->add_option("--threads,-t", v->threads, "Forward-pass threads (changes no bit)")->check(int_in<int>(1, 256));
  verify->add_option("--prefill-chunk", v->prefill_chunk, "Prefill in chunks of N tokens (0: one pass)")
      ->check(int_in<int>(0));
  verify->add_option("--shared-dir", v->shared,
                     "Fixtures folder the records' model paths are relative to (default: $ORACLE_SHARED_DIR, "
                     "else ../shared beside the transcripts' repository)");
  verify->add_flag("--json", v->json, "Print one JSON object (every mismatch, the counts)");
  verify->add_flag("--quiet,-q", v->quiet, "No progress on stderr");
  verify->add_option("--tp", v->tp, "Tensor-parallel ranks: mpirun -np N, or N threads without mpirun (changes no bit)")
      ->check(int_in<int>(1, 1024));
  add_shard_options(verify, v->shard);
  auto u = std::make_shared<UpdateOptions>();
  auto* update = sub->add_subcommand("update", "Regenerate DIR/<model>.jsonl for every fixture model, or for --model");
  update->add_option("dir", u->dir, "Folder of golden transcripts")->required();
  update->add_flag("--force", u->force, "Overwrite existing transcripts");
  update->add_option("--model,-m", u->model, "Write transcripts for this model only (any path; stored relative to DIR)");
  update->add_option("--tokenizer,-z", u->tokenizer, "Its tokenizer, when the model embeds none");
  update->add_option("--id", u->id, "Transcript name: DIR/<id>.jsonl (default: the model's file name)");
  update->add_option("--shared-dir", u->shared, "Fixtures folder (default as for verify)");
  add_numerics_option(update, u->numerics, "--numerics",
                      "Records of this profile: canonical (default) or ggml (the quantized fixtures, stories260K-f16 and "
                      "SmolLM2; written to golden/ggml)");
  update->add_flag("--json", u->json, "Print one JSON object");
  update->add_flag("--quiet,-q", u->quiet, "No progress on stderr");
  return {sub, [verify, v, u] {
            if (verify->parsed()) return run_verify(*v);
            return run_update(*u);
          }};
}

}  // namespace oracle::tools
