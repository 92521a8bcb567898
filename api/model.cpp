// llm_oracle::Model over the reference: load_model + resolve_vocab (the CLI's
// tokenizer rules), forward() on a fresh contiguous KV cache per call,
// generate(), the chat templates. Immutable after load, so calls may overlap.
#include "llm_oracle/model.h"

#include "api/convert.h"
#include "api/model_access.h"
#include "audit/interop/tensor_compare.h"
#include "base/errors.h"
#include "reference/compute/forward.h"
#include "reference/generate/generate.h"
#include "reference/model/model.h"
#include "reference/tokenizer/chat_template.h"
#include "reference/tokenizer/tokenizer.h"
#include "reference/tokenizer/tokenizer_files.h"

namespace llm_oracle {


Model::Model(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
Model::~Model() = default;
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::Model(const Model&) = default;
Model& Model::operator=(const Model&) = default;

Model Model::load(const std::string& path, const LoadOptions& options) {
  oracle::LoadOptions lo;
  lo.context_length_override = options.context;
  lo.allow_context_extension = options.allow_context_extension;
  oracle::Model m = oracle::load_model(path, lo);
  oracle::Vocab vocab = oracle::resolve_vocab(m, options.tokenizer, nullptr);
  if (m.vocab.tokens.empty()) m.vocab = vocab;  // audit code (certify) reads the model's vocabulary
  oracle::Tokenizer tok(std::move(vocab));
  return Model(std::make_shared<const Impl>(Impl{std::move(m), std::move(tok)}));
}

ModelInfo Model::info() const {
  const oracle::Model& m = impl_->model;
  const oracle::Config& c = m.config;
  ModelInfo i;
  i.path = m.path, i.format = m.format, i.architecture = c.architecture, i.sha256 = m.sha256;
  i.dim = c.dim, i.hidden_dim = c.hidden_dim, i.n_layers = c.n_layers, i.n_heads = c.n_heads;
  i.n_kv_heads = c.n_kv_heads, i.head_dim = c.head_dim, i.vocab_size = c.vocab_size, i.context = c.seq_len;
  i.rope_theta = c.rope_theta, i.norm_eps = c.norm_eps;
  i.weight_type = m.weights.layers.empty() ? DType::F32 : static_cast<DType>((int)m.weights.layers[0].wq.type);
  i.bos_id = impl_->tokenizer.bos_id(), i.eos_id = impl_->tokenizer.eos_id();
  return i;
}

namespace {

// Teacher-forced: ids at positions 0..n-1 of sequence 0 in a cache sized for them.
std::vector<float> run_forward(const oracle::Model& m, std::span<const int> ids, int threads, oracle::Trace* trace) {
  oracle::require_input(!ids.empty(), "ids", "tokens", "at least one token id is needed");
  oracle::require_input((int64_t)ids.size() <= m.config.seq_len, "ids", "tokens",
                        std::to_string(ids.size()) + " ids exceed the context length " + std::to_string(m.config.seq_len));
  oracle::require_input(threads >= 1 && threads <= 1024, "forward", "threads", "must be in 1..1024");
  oracle::KvCacheOptions kvo;
  kvo.reserve_tokens = (int)ids.size();
  oracle::KvCache kv(m.config, kvo);
  oracle::ForwardOptions fo;
  fo.threads = threads, fo.all_logits = true, fo.trace = trace;
  return oracle::forward(m, kv, 0, ids, fo);
}

}  // namespace

std::vector<float> Model::logits(std::span<const int> ids, int threads) const {
  return run_forward(impl_->model, ids, threads, nullptr);
}

ForwardResult Model::trace(std::span<const int> ids, int threads) const {
  std::vector<oracle::TraceEntry> entries;
  oracle::Trace t = oracle::trace_recorder(entries);
  ForwardResult r;
  r.logits = run_forward(impl_->model, ids, threads, &t);
  r.trace.reserve(entries.size());
  for (oracle::TraceEntry& e : entries) r.trace.push_back({std::move(e.name), e.pos, std::move(e.values)});
  return r;
}

std::vector<int> Model::tokenize(const std::string& text, bool add_special, bool parse_special) const {
  const oracle::Vocab& v = impl_->tokenizer.vocab();
  return impl_->tokenizer.encode(text, oracle::EncodeOptions{add_special && v.add_bos, add_special && v.add_eos,
                                                             parse_special});
}

std::string Model::detokenize(std::span<const int> ids) const {
  const int n = impl_->tokenizer.vocab_size();
  for (size_t i = 0; i < ids.size(); i++)
    oracle::require_input(ids[i] >= 0 && ids[i] < n, "ids", "token",
                          "id " + std::to_string(ids[i]) + " at index " + std::to_string(i) + " is outside 0.." +
                              std::to_string(n - 1));
  return impl_->tokenizer.decode(std::vector<int>(ids.begin(), ids.end()));
}

std::string Model::chat_prompt(const std::vector<ChatMessage>& messages, const std::string& format) const {
  oracle::require_input(!messages.empty(), "messages", "messages", "the conversation is empty");
  std::vector<oracle::ChatMessage> m;
  for (const ChatMessage& x : messages) m.push_back({x.role, x.content});
  const oracle::ChatTemplate t =
      oracle::select_chat_template(impl_->model.path, impl_->tokenizer.vocab().chat_template, format);
  return oracle::render_chat(t, m, true);
}

Generation Model::generate(const std::string& prompt, const GenerateConfig& config) const {
  const oracle::Vocab& v = impl_->tokenizer.vocab();
  oracle::GenerateOptions g;
  g.max_tokens = config.max_tokens;
  g.sampler = detail::to_internal(config.sampler);
  g.seq_id = config.seq_id;
  g.stop_strings = config.stop;
  g.add_bos = config.add_special && v.add_bos;
  g.add_eos = config.add_special && v.add_eos;
  g.parse_special = config.parse_special;
  g.threads = config.threads;
  oracle::GenerationResult r = oracle::generate(impl_->model, impl_->tokenizer, prompt, g);
  Generation out;
  out.prompt_ids = std::move(r.prompt_ids), out.output_ids = std::move(r.output_ids);
  out.text = std::move(r.text), out.finish_reason = std::move(r.finish_reason);
  for (const oracle::GenerationStep& s : r.steps) out.logits_sha256.push_back(s.logits_sha256);
  return out;
}

}  // namespace llm_oracle
