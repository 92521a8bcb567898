// load_model: dispatch on the file's magic / extension, SHA-256 of the
// checkpoint, and the helpers shared by the three loaders (loaders.h).
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "base/errors.h"
#include "reference/model/loaders.h"
#include "base/sha256.h"
#include "base/escape.h"
#include "base/file_io.h"
#include "reference/model/finite_check.h"

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
  // std::isfinite first: +inf passes "> 0", NaN fails it silently in other checks.
  require_input(std::isfinite(c.norm_eps) && c.norm_eps > 0.0f, path, "norm_eps",
                "must be a finite number > 0, got " + std::to_string(c.norm_eps));
  require_input(std::isfinite(c.rope_theta) && c.rope_theta > 0.0f, path, "rope_theta",
                "must be a finite number > 0, got " + std::to_string(c.rope_theta));
}

void apply_context_override(Config& c, const LoadOptions& options, const std::string& path) {
  c.trained_context = c.seq_len;
  const int want = options.context_length_override;
  if (want <= 0) return;
  require_input(want <= c.seq_len || options.allow_context_extension, path, "context_length",
                "context " + std::to_string(want) + " exceeds the trained context " +
                    std::to_string(c.seq_len) +
                    " (positions past it were never trained; pass --allow-context-extension to run anyway)");
  c.context_extended = want > c.seq_len;
  c.seq_len = want;
}

const float* keep_owned(Weights& w, std::vector<float> data) {
  w.owned.push_back(std::move(data));
  return w.owned.back().data();  // the inner buffer does not move when `owned` grows
}

std::vector<uint8_t> unpermute_rotate_half_rows(const uint8_t* w, int n_heads, int head_dim,
                                                size_t row_bytes) {
  std::vector<uint8_t> out(size_t(n_heads) * head_dim * row_bytes);  // (n_heads * head_dim) rows
  const int half = head_dim / 2;
  for (int h = 0; h < n_heads; h++)
    for (int j = 0; j < half; j++)
      for (int i = 0; i < 2; i++) {
        const uint8_t* src = w + (size_t(h) * head_dim + size_t(i) * half + j) * row_bytes;
        uint8_t* dst = out.data() + (size_t(h) * head_dim + 2 * size_t(j) + i) * row_bytes;
        std::memcpy(dst, src, row_bytes);
      }
  return out;
}

std::vector<float> unpermute_rotate_half(const float* w, int n_heads, int head_dim, int cols) {
  std::vector<uint8_t> bytes = unpermute_rotate_half_rows(reinterpret_cast<const uint8_t*>(w), n_heads,
                                                          head_dim, sizeof(float) * cols);
  std::vector<float> out(bytes.size() / sizeof(float));  // (n_heads * head_dim, cols)
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

// ---- dispatch ------------------------------------------------------------------------------------
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The first 4 bytes, through the one regular-file check (a FIFO never blocks here).
std::string read_magic(const std::string& path) { return read_file_prefix(path, "file", 4); }

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

Model load_model(const std::string& path, const LoadOptions& requested) {
  namespace fs = std::filesystem;
  LoadOptions options = requested;
  if (options.residency == FileResidency::automatic) options.residency = residency_from_env(std::getenv("ORACLE_WEIGHTS"));
  Model m;
  std::error_code ec;
  if (fs::is_directory(path, ec) || ends_with(path, ".safetensors") || ends_with(path, "config.json")) {
    m = load_safetensors(path, options);
  } else {
    const std::string magic = read_magic(path);
    // A .gguf name with another magic is a damaged GGUF, not a llama2.c checkpoint.
    require_input(magic == "GGUF" || !ends_with(path, ".gguf"), path, "magic",
                  "not a GGUF file: the first bytes are '" + escape_bytes(magic) + "', expected \"GGUF\"");
    m = magic == "GGUF" ? load_gguf(path, options) : load_llama2c(path, options);
  }
  check_weights_finite(m, path);
  if (options.compute_sha256) m.sha256 = checkpoint_sha256(m);
  return m;
}

}  // namespace oracle
