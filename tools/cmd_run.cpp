// oracle run: generate text from a prompt with the bit-exact CPU reference, a
// thin layer over reference/generate/generate.h (docs/cli.md#run).
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "base/numerics_version.h"

#include "audit/interop/dumps.h"
#include "audit/replay/replay_log.h"
#include "base/errors.h"
#include "reference/generate/generate.h"
#include "audit/replay/replay_log.h"
#include "audit/interop/dumps.h"
#include "base/file_io.h"
#include "tools/commands.h"
#include "tools/device_backend.h"
#include "tools/model_args.h"
#include "tools/numerics_arg.h"
#include "tools/version.h"
#include "tools/sampler_args.h"
#include "tools/spec_args.h"
#include "tools/bench_support.h"
#include "reference/tokenizer/chat_template.h"

namespace oracle::tools {

struct RunOptions {
  ModelOptions model;
  std::string prompt = "Once upon a time";
  std::string file;  // --file F / -f F: the prompt from a file, "-" = stdin (verbatim, like llama.cpp's -f)
  bool echo = false;   // print the prompt before the generated text
  bool quiet = false;  // no timing line / notes on stderr
  SamplerOptions sampler; // --preset and the sampler options (tools/sampler_args.h)
  GenerateOptions gen;  // max_tokens, sampler, stops, threads (copied from model.threads)
  bool ignore_eos = false;
  bool json = false;
  std::string log;  // --log F.jsonl: append the sampling tuple (audit/replay/replay_log.h)
  DraftOptions spec;  // --draft-model / --spec-ngram (tools/spec_args.h)
  std::string backend = "reference";  // or cuda-emu / cuda (tools/device_backend.h)
  std::string mode = "deterministic"; // device backends: deterministic or fast
  std::string kv = "contiguous";      // --kv contiguous|paged (changes no bit)
  std::vector<std::string> logit_bias;  // --logit-bias ID:BIAS (repeatable)
  // Prompting (docs/cli.md#chat): chat messages rendered with the model's template.
  std::string chat;                     // --chat MESSAGE: one user turn
  std::string messages;                 // --messages FILE.json: OpenAI-style roles
  std::string system;                   // --system TEXT: a system turn first
  std::string chat_format;              // --chat-format NAME: overrides template detection
  std::string chat_engine = "builtin";  // --chat-template-engine builtin|jinja (docs/tokenizer.md)
  bool no_parse_special = false;        // --no-parse-special: control-token texts stay text
  std::string dump_logits, dump_trace;  // safetensors dumps (audit/interop/dumps.h)
  std::string numerics = "canonical";   // --numerics (tools/numerics_arg.h)
};

// --dump-logits / --dump-trace: one teacher-forced forward over prompt + output
// reproduces every step's logits bit for bit (their SHA-256 is the step's logits_sha256).
static void write_dumps(const LoadedModel& lm, const RunOptions& o, const GenerateOptions& gen,
                        const GenerationResult& r) {
  const DumpInfo info{lm.model.path, lm.model.sha256, lm.tokenizer_sha256, nlohmann::json(gen.sampler).dump(),
                      kOracleVersion, r.prompt_ids};
  std::vector<TraceEntry> trace;
  const std::vector<float> logits =
      teacher_forced_logits(lm.model, r.prompt_ids, r.output_ids, o.dump_trace.empty() ? nullptr : &trace, gen.numerics);
  if (!o.dump_logits.empty())
    write_safetensors(o.dump_logits, logits_dump(info, r.output_ids, logits, lm.model.config.vocab_size));
  if (!o.dump_trace.empty()) write_safetensors(o.dump_trace, trace_dump(info, r.output_ids, trace));
}

static std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  require_input(in.good(), path, "--messages", "cannot read the file");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// --chat / --messages / --system -> the conversation, or empty for a plain --prompt.
static std::vector<ChatMessage> chat_messages(const RunOptions& o) {
  require_input(o.chat.empty() || o.messages.empty(), "--chat", "--messages", "give one of --chat and --messages");
  std::vector<ChatMessage> m;
  if (!o.system.empty()) m.push_back({"system", o.system});
  if (!o.messages.empty()) {
    std::vector<ChatMessage> file = parse_chat_messages(read_text_file(o.messages), o.messages);
    m.insert(m.end(), file.begin(), file.end());
  } else if (!o.chat.empty()) {
    m.push_back({"user", o.chat});
  }
  bool chat = !o.chat.empty() || !o.messages.empty();
  require_input(chat || (o.system.empty() && o.chat_format.empty() && o.chat_engine == "builtin"), "--system",
                "--chat", "--system, --chat-format and --chat-template-engine need --chat or --messages");
  return chat ? m : std::vector<ChatMessage>{};
}

// The prompt text and how it is tokenized (BOS/EOS as the vocabulary says,
// special tokens parsed unless --no-parse-special), with the chat format used.
struct ResolvedPrompt {
  std::string text;
  std::string chat_format;  // empty: plain prompt
};

static ResolvedPrompt resolve_prompt(const LoadedModel& lm, RunOptions& o) {
  const Vocab& v = lm.tokenizer.vocab();
  o.gen.add_bos = v.add_bos;
  o.gen.add_eos = v.add_eos;
  o.gen.parse_special = !o.no_parse_special;
  const std::vector<ChatMessage> messages = chat_messages(o);
  if (messages.empty()) return {o.prompt, ""};
  ChatEngine engine = ChatEngine::Builtin;
  require_input(chat_engine_from_name(o.chat_engine, &engine), o.chat_engine, "--chat-template-engine",
                "expected builtin or jinja");
  if (engine == ChatEngine::Jinja) {  // the GGUF's own template, interpreted (reference/tokenizer/jinja.h)
    require_input(o.chat_format.empty(), o.chat_format, "--chat-format",
                  "names a built-in formatter; --chat-template-engine jinja renders the model's own template");
    const ChatTemplate t = vocab_jinja_template(lm.model.path, v);
    return {render_chat(t, messages, true), "jinja"};
  }
  const ChatTemplate t = select_chat_template(lm.model.path, v.chat_template, o.chat_format);
  return {render_chat(t, messages, true), chat_format_name(t.format)};
}

// "ID:BIAS" -> (id, bias); InputError naming --logit-bias otherwise.
static std::pair<int, float> parse_logit_bias(const std::string& text) {
  size_t colon = text.find(':');
  try {
    size_t used_id = 0, used_bias = 0;
    require_input(colon != std::string::npos, text, "--logit-bias", "expected ID:BIAS");
    int id = std::stoi(text.substr(0, colon), &used_id);
    float bias = std::stof(text.substr(colon + 1), &used_bias);
    require_input(used_id == colon && used_bias == text.size() - colon - 1, text, "--logit-bias",
                  "expected ID:BIAS");
    return {id, bias};
  } catch (const std::logic_error&) {  // stoi/stof: not a number or out of range
    throw InputError(text, "--logit-bias", "expected ID:BIAS with an integer id and a float bias");
  }
}

static nlohmann::json kv_json(const RunOptions& o, const GenerationResult& r) {
  const KvMemoryReport& m = r.kv_memory;
  return {{"mode", o.kv},
          {"block_size", o.gen.kv.block_size},
          {"bytes_per_token", m.bytes_per_token},
          {"bytes_allocated", m.bytes_allocated},
          {"bytes_formula", m.bytes_formula},
          {"blocks_total", m.blocks_total},
          {"blocks_used", m.blocks_used},
          {"blocks_free", m.blocks_free},
          {"internal_fragmentation", m.internal_fragmentation},
          {"prefix_hits", m.prefix_hits},
          {"tokens_stored", m.tokens_stored}};
}

// --file: the whole file (or stdin for "-") is the prompt, byte for byte.
static std::string read_prompt_file(const std::string& path) {
  if (path == "-") return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  std::ifstream in(path, std::ios::binary);
  require_input(in.good(), path, "--file", "cannot open the prompt file");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// "context" when generation stopped because the context was full before
// --max-tokens (the reference reports that as "length"), else the reference's reason.
static std::string finish_detail(const LoadedModel& lm, const RunOptions& o, const GenerationResult& r) {
  const bool full = r.prompt_ids.size() + r.output_ids.size() >= (size_t)lm.model.config.seq_len;
  return r.stop_detail == "length" && full && (int)r.output_ids.size() < o.gen.max_tokens ? "context" : r.stop_detail;
}

// llama.cpp's llama_perf_context_print lines, on stderr.
static void print_timing(const GenerationResult& r) {
  auto line = [](const char* what, double s, size_t n, const char* unit) {
    const double ms = s * 1e3;
    std::fprintf(stderr, "oracle run: %16s = %10.2f ms / %5zu %-6s (%8.2f ms per token, %8.2f tokens per second)\n", what,
                 ms, n, unit, n > 0 ? ms / (double)n : 0.0, s > 0 ? (double)n / s : 0.0);
  };
  line("prompt eval time", r.prefill_seconds, r.prompt_ids.size(), "tokens");
  line("eval time", r.decode_seconds, r.output_ids.empty() ? 0 : r.output_ids.size() - 1, "runs");
  std::fprintf(stderr, "oracle run: %16s = %10.2f ms / %5zu tokens\n", "total time",
               (r.prefill_seconds + r.decode_seconds) * 1e3, r.prompt_ids.size() + r.output_ids.size());
}

// The prompt must leave room in the context: checked here (naming the model and
// --context) before generate() would reject it.
static EncodeOptions encode_options(const GenerateOptions& g) {
  return EncodeOptions{g.add_bos, g.add_eos, g.parse_special};
}

static void check_prompt_fits(const LoadedModel& lm, const RunOptions& o) {
  const std::vector<int> ids = lm.tokenizer.encode(o.prompt, encode_options(o.gen));
  const int context = lm.model.config.seq_len;
  require_input((int)ids.size() < context, lm.model.path, "context_length",
                "the prompt is " + std::to_string(ids.size()) + " tokens but the context holds " +
                    std::to_string(context) + " positions (raise --context or shorten --prompt)");
}

static nlohmann::json run_json(const LoadedModel& lm, const RunOptions& o,
                               const GenerationResult& r) {
  nlohmann::json j = r;
  j["model"] = lm.model.path;
  j["model_format"] = lm.model.format;
  j["model_sha256"] = lm.model.sha256;
  j["tokenizer"] = lm.tokenizer_source;
  j["tokenizer_sha256"] = lm.tokenizer_sha256;
  j["prompt"] = o.prompt;
  j["add_bos"] = o.gen.add_bos;
  j["parse_special"] = o.gen.parse_special;
  if (!o.chat_format.empty()) j["chat_format"] = o.chat_format;
  j["max_tokens"] = o.gen.max_tokens;
  j["context"] = lm.model.config.seq_len;
  if (lm.model.config.context_extended)  // only present when the user asked for it
    j["context_extension"] = {{"trained_context", lm.model.config.trained_context},
                              {"context", lm.model.config.seq_len}};
  j["threads"] = o.gen.threads;
  j["numerics"] = std::string(num::numerics_profile_name(o.gen.numerics));
  stamp_numerics_version(j);  // docs/numerics.md "Versioning"
  j["kv"] = kv_json(o, r);
  const std::string detail = finish_detail(lm, o, r);
  if (detail == "context") j["finish_reason"] = j["stop_detail"] = "context";
  return j;
}

// Device backends (docs/cuda.md): the whole generation loop with every sampler
// option; what only the reference has is refused, naming the option.
static void refuse_on_device(const RunOptions& o) {
  auto refuse = [&](bool given, const std::string& value, const char* option, const char* why) {
    require_input(!given, value, option, std::string(why) + " (not on --backend " + o.backend + ")");
  };
  refuse(speculative_enabled(o.spec), "speculative", o.spec.draft_model.empty() ? "--spec-ngram" : "--draft-model",
         "speculative decoding is reference-only");
  refuse(o.kv != "contiguous", o.kv, "--kv", "the device KV cache is its own paged cache");
  refuse(o.gen.kv.block_size != 16, std::to_string(o.gen.kv.block_size), "--kv-block",
         "the device KV cache uses blocks of 16");
  refuse(o.gen.prefill_chunk != 0, std::to_string(o.gen.prefill_chunk), "--prefill-chunk",
         "the device prefills the prompt in one call");
  refuse(!o.dump_logits.empty(), o.dump_logits, "--dump-logits", "dumps are the reference's teacher-forced logits");
  refuse(!o.dump_trace.empty(), o.dump_trace, "--dump-trace", "dumps are the reference's teacher-forced logits");
  refuse(o.model.threads != 1, std::to_string(o.model.threads), "--threads", "threads are the reference's");
  require_input(o.gen.numerics == num::NumericsProfile::Canonical || !is_fast(parse_mode(o.mode)), o.numerics,
                "--numerics", "the ggml profile runs on the device in deterministic mode only (not --mode " + o.mode + ")");
}

int run_run(RunOptions o) {
  if (!o.file.empty()) o.prompt = read_prompt_file(o.file);
  const std::vector<int> banned = o.gen.sampler.banned_tokens;
  o.gen.sampler = resolve_sampler(o.sampler);
  o.gen.sampler.banned_tokens = banned;
  parse_mode(o.mode);                                 // --mode bogus is refused for every backend
  o.gen.numerics = numerics_arg(o.numerics);
  if (!o.log.empty()) check_output_path(o.log, "--log");  // before generating, not after
  const LoadedModel lm = load_model_and_tokenizer(o.model);
  const ResolvedPrompt resolved = resolve_prompt(lm, o);
  o.prompt = resolved.text;
  o.chat_format = resolved.chat_format;
  check_prompt_fits(lm, o);
  const DevicePipeline* dev = require_backend(o.backend);
  if (dev) refuse_on_device(o);
  require_input(o.gen.numerics == num::NumericsProfile::Canonical || !speculative_enabled(o.spec), o.numerics,
                "--numerics", "speculative runs use the canonical profile");
  require_input(o.log.empty() || !speculative_enabled(o.spec), o.log, "log",
                "speculative runs are not logged; drop --log or the speculative options");
  require_input((o.dump_logits.empty() && o.dump_trace.empty()) || !speculative_enabled(o.spec), "--dump-logits",
                "option", "speculative runs are not dumped; drop the dump or the speculative options");
  if (speculative_enabled(o.spec))
    return print_speculative_run(lm, o.spec, o.prompt, o.gen.sampler, o.gen.max_tokens, o.ignore_eos,
                                 o.gen.stop_strings, o.model.threads, o.json);
  GenerateOptions gen = o.gen;
  gen.threads = o.model.threads;
  gen.kv.paged = o.kv == "paged";
  for (const std::string& b : o.logit_bias) gen.sampler.logit_bias.push_back(parse_logit_bias(b));
  gen.stop_on_eos = !o.ignore_eos;
  if (!o.json && o.echo) std::fwrite(o.prompt.data(), 1, o.prompt.size(), stdout);
  if (!o.json)
    gen.on_text = [](const std::string& text) {
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
    };
  const GenerationResult r = dev ? dev->generate(lm.model, lm.tokenizer, o.prompt, gen, parse_mode(o.mode))
                                 : generate(lm.model, lm.tokenizer, o.prompt, gen);
  if (!o.log.empty()) {
    const ModelIdentity id{lm.model.path, lm.model.sha256, lm.tokenizer_source, lm.tokenizer_sha256,
                           lm.model.config.seq_len};
    append_log_record(o.log, make_log_record(kOracleVersion, id, o.prompt, gen, r));
  }
  if (!o.dump_logits.empty() || !o.dump_trace.empty()) write_dumps(lm, o, gen, r);
  if (o.json) {
    nlohmann::json j = run_json(lm, o, r);
    if (dev) {  // the reference's cache report means nothing here
      j.erase("kv");
      j["backend"] = o.backend, j["mode"] = o.mode;
    }
    const std::string out = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    std::printf("%s\n", out.c_str());
  } else {
    std::printf("\n");
    std::fflush(stdout);
    if (!o.quiet && finish_detail(lm, o, r) == "context")
      std::fprintf(stderr, "oracle run: the context (%d positions) ran out after %zu of %d tokens (--context raises it)\n",
                   lm.model.config.seq_len, r.output_ids.size(), o.gen.max_tokens);
    if (!o.quiet) print_timing(r);
  }
  return kExitOk;
}

// ---- options ------------------------------------------------------------------------
Command setup_run(CLI::App& app) {
  auto opts = std::make_shared<RunOptions>();
  auto* sub = app.add_subcommand("run", "Generate text with the bit-exact CPU reference");
  add_model_options(sub, opts->model);
  CLI::Option* prompt = sub->add_option("--prompt,-p", opts->prompt, "Prompt text");
  sub->add_option("--file,-f", opts->file, "Read the prompt from FILE, verbatim (-: stdin)")->excludes(prompt);
  sub->add_flag("--echo", opts->echo, "Print the prompt before the generated text (--json has it as \"prompt\")");
  sub->add_flag("--quiet,-q", opts->quiet, "No timing line or notes on stderr");
  sub->add_option("--max-tokens,-n", opts->gen.max_tokens, "Tokens to generate")
      ->check(int_in<int>(1, 1 << 24));
  add_sampler_options(sub, opts->sampler);
  sub->add_option("--stop", opts->gen.stop_strings, "Stop string (repeatable)");
  sub->add_option("--stop-token", opts->gen.stop_token_ids, "Stop token id (repeatable)")->check(int_in<int>(0));
  sub->add_flag("--ignore-eos", opts->ignore_eos, "Do not stop on EOS");
  sub->add_option("--logit-bias", opts->logit_bias, "ID:BIAS added to a token's logit (repeatable)");
  sub->add_option("--ban", opts->gen.sampler.banned_tokens, "Banned token id (repeatable)")->check(int_in<int>(0));
  sub->add_option("--kv", opts->kv, "KV cache: contiguous or paged (same bits)")
      ->check(CLI::IsMember({"contiguous", "paged"}));
  sub->add_option("--kv-block", opts->gen.kv.block_size, "Tokens per block with --kv paged")
      ->check(int_in<int>(1, 1 << 16));
  sub->add_option("--logprobs", opts->gen.logprobs_top_n, "Alternatives per step in --json")
      ->check(int_in<int>(0, 1000));
  sub->add_flag("--json", opts->json, "Print one JSON object instead of streaming text");
  sub->add_option("--log", opts->log, "Append the sampling tuple as one JSON line (oracle replay)");
  sub->add_option("--dump-logits", opts->dump_logits, "Write every step's float32 logits (safetensors)");
  sub->add_option("--dump-trace", opts->dump_trace, "Write every traced tensor, per position (safetensors)");
  add_speculative_options(sub, opts->spec);
  // Prompting: chat templates and special tokens (docs/cli.md#chat).
  sub->add_option("--chat", opts->chat, "One user message, rendered with the model's chat template");
  sub->add_option("--messages", opts->messages, "JSON file of OpenAI-style {role, content} messages");
  sub->add_option("--system", opts->system, "System message before --chat/--messages");
  sub->add_option("--chat-format", opts->chat_format, "Chat format when the template is not recognised (chatml, llama2, llama3, ...)");
  sub->add_option("--chat-template-engine", opts->chat_engine,
                  "builtin (llama.cpp's per-format formatters, default) or jinja (the model's own template interpreted)");
  sub->add_flag("--no-parse-special", opts->no_parse_special, "Special-token texts in the prompt stay plain text");
  sub->add_option("--backend", opts->backend, "reference, cuda-emu or cuda (device: the whole loop and sampler chain)");
  add_numerics_option(sub, opts->numerics);
  sub->add_option("--mode", opts->mode, "Device backends: deterministic, fast, fast-tf32 or fast-bf16");
  // Hidden (documented in docs/cli.md): the determinism matrix's chunked prefill.
  sub->add_option("--prefill-chunk", opts->gen.prefill_chunk, "Prefill in chunks of N tokens (0: one pass)")
      ->check(int_in<int>(0, std::numeric_limits<int>::max(), "--prefill-chunk"))
      ->group("");
  return {sub, [opts] { return run_run(*opts); }};
}

}  // namespace oracle::tools
