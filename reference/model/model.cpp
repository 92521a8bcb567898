// load_model: dispatch on the file's magic / extension, SHA-256 of the
// checkpoint, and the helpers shared by the three loaders (loaders.h).
#include <cstring>
#include <filesystem>
#include <fstream>

#include "reference/base/errors.h"
#include "reference/model/loaders.h"
#include "reference/base/sha256.h"

namespace oracle {

// ---- shared loader helpers -------------------------------------------------------------------
void validate_config(const Config& c, const std::string& path) {
  const std::pair<const char*, int> sizes[] = {{"dim", c.dim}, {"hidden_dim", c.hidden_dim},
      {"n_layers", c.n_layers}, {"n_heads", c.n_heads}, {"n_kv_heads", c.n_kv_heads},
      {"vocab_size", c.vocab_size}, {"seq_len", c.seq_len}};
  for (const auto& [name, v] : sizes)
    require_input(v > 0, path, name, "must be positive, got " + std::to_string(v));
  require_input(c.dim % c.n_heads == 0 && c.head_dim == c.dim / c.n_heads, path, "n_heads",
                "dim " + std::to_string(c.dim) + " is not n_heads " + std::to_string(c.n_heads) +
                    " x head_dim");
  require_input(c.head_dim % 2 == 0, path, "n_heads",
                "head_dim " + std::to_string(c.head_dim) + " must be even for RoPE pairs");
  require_input(c.n_kv_heads <= c.n_heads && c.n_heads % c.n_kv_heads == 0, path, "n_kv_heads",
                std::to_string(c.n_kv_heads) + " does not divide n_heads " + std::to_string(c.n_heads));
  require_input(c.norm_eps > 0.0f, path, "norm_eps", "must be positive");
  require_input(c.rope_theta > 0.0f, path, "rope_theta", "must be positive");
}

void apply_context_override(Config& c, const LoadOptions& options) {
  if (options.context_length_override > 0) c.seq_len = options.context_length_override;
}

const float* keep_owned(Weights& w, std::vector<float> data) {
  w.owned.push_back(std::move(data));
  return w.owned.back().data();  // the inner buffer does not move when `owned` grows
}

std::vector<float> unpermute_rotate_half(const float* w, int n_heads, int head_dim, int cols) {
  std::vector<float> out(size_t(n_heads) * head_dim * cols);  // (n_heads * head_dim, cols)
  const int half = head_dim / 2;
  for (int h = 0; h < n_heads; h++)
    for (int j = 0; j < half; j++)
      for (int i = 0; i < 2; i++) {
        const float* src = w + (size_t(h) * head_dim + size_t(i) * half + j) * cols;
        float* dst = out.data() + (size_t(h) * head_dim + 2 * size_t(j) + i) * cols;
        std::memcpy(dst, src, sizeof(float) * cols);
      }
  return out;
}

// ---- dispatch ------------------------------------------------------------------------------------
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string read_magic(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  require_input(in.good(), path, "file", "cannot open");
  char magic[4] = {0, 0, 0, 0};
  in.read(magic, 4);
  return std::string(magic, static_cast<size_t>(in.gcount()));
}

// llama2.c / GGUF: the file itself. safetensors: config.json, then every shard.
std::string checkpoint_sha256(const Model& m) {
  if (m.format != "safetensors") return sha256_hex(m.file->data(), m.file->size());
  Sha256 h;
  MappedFile config(m.path + "/config.json");
  h.update(config.data(), config.size());
  for (const auto& shard : m.extra_files) h.update(shard->data(), shard->size());
  return h.hex();
}

}  // namespace

Model load_model(const std::string& path, const LoadOptions& options) {
  namespace fs = std::filesystem;
  Model m;
  if (fs::is_directory(path) || ends_with(path, ".safetensors") || ends_with(path, "config.json"))
    m = load_safetensors(path, options);
  else if (read_magic(path) == "GGUF")
    m = load_gguf(path, options);
  else
    m = load_llama2c(path, options);
  if (options.compute_sha256) m.sha256 = checkpoint_sha256(m);
  return m;
}

}  // namespace oracle
