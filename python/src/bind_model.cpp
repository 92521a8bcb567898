// llm_oracle.Model and llm_oracle.Sampler (include/llm_oracle/model.h, sampler.h).
#include <chrono>
#include <map>

#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "arrays.h"
#include "bindings.h"
#include "llm_oracle/model.h"

namespace llm_oracle::py {

namespace {

void need(bool ok, const char* file, const std::string& field, const std::string& message) {
  if (!ok) throw InputError(file, field, message);
}

// Sampler keyword arguments -> SamplerConfig (the preset's defaults first);
// an unknown keyword is refused, never ignored.
SamplerConfig sampler_config(const nb::dict& kw) {
  Preset preset = Preset::LlamaCpp;
  if (kw.contains("preset")) {
    const std::string p = nb::cast<std::string>(kw["preset"]);
    need(p == "llamacpp" || p == "hf", "sampler", "preset", "'" + p + "': one of llamacpp, hf");
    preset = p == "hf" ? Preset::Hf : Preset::LlamaCpp;
  }
  SamplerConfig c = preset_config(preset);
  for (auto [key_h, value] : kw) {
    const std::string key = nb::cast<std::string>(key_h);
    if (key == "preset") continue;
    else if (key == "temperature") c.temperature = nb::cast<float>(value);
    else if (key == "top_k") c.top_k = nb::cast<int>(value);
    else if (key == "top_p") c.top_p = nb::cast<float>(value);
    else if (key == "min_p") c.min_p = nb::cast<float>(value);
    else if (key == "min_keep") c.min_keep = nb::cast<int>(value);
    else if (key == "repetition_penalty") c.repetition_penalty = nb::cast<float>(value);
    else if (key == "frequency_penalty") c.frequency_penalty = nb::cast<float>(value);
    else if (key == "presence_penalty") c.presence_penalty = nb::cast<float>(value);
    else if (key == "penalty_window") c.penalty_window = nb::cast<int>(value);
    else if (key == "seed") c.seed = nb::cast<uint64_t>(value);
    else if (key == "order") c.order = nb::cast<std::vector<std::string>>(value);
    else if (key == "banned_tokens") c.banned_tokens = nb::cast<std::vector<int>>(value);
    else if (key == "logit_bias") {
      c.logit_bias.clear();
      for (auto [id, bias] : nb::cast<nb::dict>(value)) c.logit_bias.push_back({nb::cast<int>(id), nb::cast<float>(bias)});
    } else {
      need(false, "sampler", key,
           "unknown sampler option (temperature, top_k, top_p, min_p, min_keep, repetition_penalty, "
           "frequency_penalty, presence_penalty, penalty_window, logit_bias, banned_tokens, order, seed, preset)");
    }
  }
  return c;
}

nb::dict info_dict(const ModelInfo& i) {
  nb::dict d;
  d["path"] = i.path, d["format"] = i.format, d["architecture"] = i.architecture, d["sha256"] = i.sha256;
  d["dim"] = i.dim, d["hidden_dim"] = i.hidden_dim, d["n_layers"] = i.n_layers, d["n_heads"] = i.n_heads;
  d["n_kv_heads"] = i.n_kv_heads, d["head_dim"] = i.head_dim, d["vocab_size"] = i.vocab_size;
  d["context"] = i.context, d["rope_theta"] = i.rope_theta, d["norm_eps"] = i.norm_eps;
  d["weight_type"] = dtype_name(i.weight_type), d["bos_id"] = i.bos_id, d["eos_id"] = i.eos_id;
  return d;
}

std::vector<ChatMessage> to_messages(const nb::handle& messages) {
  std::vector<ChatMessage> out;
  for (nb::handle m : messages) {
    if (nb::isinstance<nb::dict>(m)) {
      nb::dict d = nb::borrow<nb::dict>(m);
      need(d.contains("role") && d.contains("content"), "messages", "messages",
           "each message needs 'role' and 'content'");
      out.push_back({nb::cast<std::string>(d["role"]), nb::cast<std::string>(d["content"])});
    } else {
      auto [role, content] = nb::cast<std::pair<std::string, std::string>>(m);
      out.push_back({role, content});
    }
  }
  return out;
}

GenerateConfig generate_config(int max_tokens, const std::vector<std::string>& stop, uint32_t seq_id, int threads,
                               bool add_special, bool parse_special, const nb::kwargs& sampler) {
  GenerateConfig g;
  g.max_tokens = max_tokens, g.stop = stop, g.seq_id = seq_id, g.threads = threads;
  g.add_special = add_special, g.parse_special = parse_special;
  g.sampler = sampler_config(sampler);
  return g;
}

nb::dict generation_dict(Generation&& r) {
  nb::dict d;
  d["text"] = r.text, d["ids"] = r.output_ids, d["prompt_ids"] = r.prompt_ids;
  d["finish_reason"] = r.finish_reason, d["logits_sha256"] = r.logits_sha256;
  return d;
}

// Named traced tensors -> {name: (positions, width) float32}, first-emitted order.
nb::dict trace_dict(ForwardResult&& r, size_t n, size_t vocab) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<float>> values;
  std::map<std::string, size_t> width, rows;
  for (TraceTensor& t : r.trace) {
    if (!values.count(t.name)) order.push_back(t.name), width[t.name] = t.values.size();
    std::vector<float>& v = values[t.name];
    v.insert(v.end(), t.values.begin(), t.values.end());
    rows[t.name]++;
  }
  nb::dict d;
  for (const std::string& name : order)
    d[name.c_str()] = to_numpy(std::move(values[name]), {rows[name], width[name]});
  if (!d.contains("logits")) d["logits"] = to_numpy(std::move(r.logits), {n, vocab});
  return d;
}

}  // namespace

void bind_model(nb::module_& m) {
  using namespace nb::literals;
  nb::class_<Model>(m, "Model", "A checkpoint loaded as the reference loads it (docs/python.md, Model).")
      .def("__init__",
           [](Model* self, const std::string& path, int context, const std::string& tokenizer,
              bool allow_context_extension) {
             LoadOptions o;
             o.context = context, o.tokenizer = tokenizer, o.allow_context_extension = allow_context_extension;
             Model loaded = [&] {
               nb::gil_scoped_release release;
               return Model::load(path, o);
             }();
             new (self) Model(std::move(loaded));
           },
           "path"_a, "context"_a = 0, "tokenizer"_a = "", "allow_context_extension"_a = false)
      .def_prop_ro("info", [](const Model& self) { return info_dict(self.info()); })
      .def("logits",
           [](const Model& self, nb::handle ids_h, int threads) {
             const std::vector<int> ids = to_ids(ids_h, "ids");
             std::vector<float> v;
             {
               nb::gil_scoped_release release;
               v = self.logits(ids, threads);
             }
             const size_t vocab = (size_t)self.info().vocab_size;
             return to_numpy(std::move(v), {ids.size(), vocab});
           },
           "ids"_a, "threads"_a = 1, "Teacher-forced logits (len(ids), vocab) float32.")
      .def("trace",
           [](const Model& self, nb::handle ids_h, int threads) {
             const std::vector<int> ids = to_ids(ids_h, "ids");
             ForwardResult r;
             {
               nb::gil_scoped_release release;
               r = self.trace(ids, threads);
             }
             return trace_dict(std::move(r), ids.size(), (size_t)self.info().vocab_size);
           },
           "ids"_a, "threads"_a = 1, "{name: (positions, width)} of every traced tensor, and 'logits'.")
      .def("_time_cpp_logits",
           [](const Model& self, std::vector<int> ids, int iters, int threads) {
             nb::gil_scoped_release release;
             const auto t0 = std::chrono::steady_clock::now();
             for (int i = 0; i < iters; i++) self.logits(ids, threads);
             return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters;
           },
           "ids"_a, "iters"_a, "threads"_a = 1, "Seconds per C++ Model::logits call (binding-overhead baseline).")
      .def("tokenize", &Model::tokenize, "text"_a, "add_special"_a = true, "parse_special"_a = false)
      .def("detokenize",
           [](const Model& self, nb::handle ids_h) {
             const std::string bytes = self.detokenize(to_ids(ids_h, "ids"));
             return nb::steal<nb::str>(PyUnicode_DecodeUTF8(bytes.data(), (Py_ssize_t)bytes.size(), "replace"));
           },
           "ids"_a, "Text of the ids (an invalid UTF-8 cut shows as U+FFFD).")
      .def("chat_prompt",
           [](const Model& self, nb::handle messages, const std::string& format) {
             return self.chat_prompt(to_messages(messages), format);
           },
           "messages"_a, "format"_a = "")
      .def("generate",
           [](const Model& self, const std::string& prompt, int max_tokens, std::vector<std::string> stop,
              uint32_t seq_id, int threads, bool add_special, bool parse_special, nb::kwargs sampler) {
             const GenerateConfig g = generate_config(max_tokens, stop, seq_id, threads, add_special, parse_special, sampler);
             Generation r;
             {
               nb::gil_scoped_release release;
               r = self.generate(prompt, g);
             }
             return generation_dict(std::move(r));
           },
           "prompt"_a, "max_tokens"_a = 64, "stop"_a = std::vector<std::string>{}, "seq_id"_a = 0, "threads"_a = 1,
           "add_special"_a = true, "parse_special"_a = true, "sampler"_a,
           "Generate from a prompt; sampler keywords as SamplerConfig (temperature <= 0: greedy).")
      .def("chat",
           [](const Model& self, nb::handle messages, const std::string& format, int max_tokens,
              std::vector<std::string> stop, uint32_t seq_id, int threads, nb::kwargs sampler) {
             const std::string prompt = self.chat_prompt(to_messages(messages), format);
             const GenerateConfig g = generate_config(max_tokens, stop, seq_id, threads, true, true, sampler);
             Generation r;
             {
               nb::gil_scoped_release release;
               r = self.generate(prompt, g);
             }
             nb::dict d = generation_dict(std::move(r));
             d["prompt"] = prompt;
             return d;
           },
           "messages"_a, "format"_a = "", "max_tokens"_a = 64, "stop"_a = std::vector<std::string>{},
           "seq_id"_a = 0, "threads"_a = 1, "sampler"_a,
           "The assistant's reply to messages, rendered with the model's chat template.");

  nb::class_<Sampler>(m, "Sampler", "The sampler chain (docs/sampling.md) with its Philox key.")
      .def("__init__",
           [](Sampler* self, int vocab_size, nb::kwargs kw) { new (self) Sampler(sampler_config(kw), vocab_size); },
           "vocab_size"_a, "config"_a)
      .def_prop_ro("name", &Sampler::name)
      .def("sample",
           [](const Sampler& self, InArray logits, std::vector<int> history, uint32_t seq, uint32_t position) {
             const auto s = check_array(logits, "logits", Kind::F32, 1, 1);
             SampleResult r;
             {
               nb::gil_scoped_release release;
               r = self.sample({f32_data(logits), s[0]}, history, RngKey{seq, position});
             }
             nb::dict d;
             d["token"] = r.token, d["ids"] = r.ids;
             const size_t n = r.probs.size();
             d["probs"] = to_numpy(std::move(r.probs), {n});
             return d;
           },
           "logits"_a.noconvert(), "history"_a = std::vector<int>{}, "seq"_a = 0, "position"_a = 0,
           "One decision on logits (vocab,): {'token', 'ids', 'probs'}.");
}

}  // namespace llm_oracle::py
