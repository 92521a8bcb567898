#pragma once
// ============================================================================
// Model = Config + Weights (+ the tokenizer vocabulary a file embeds).
// Loaders (llama2.c, GGUF, safetensors) all produce this one in-memory form:
// row-major matrices in their stored type (memory-mapped), float32 norms,
// RoPE in the interleaved-pairs layout (llama2.c/GGUF); HF rotate-half
// checkpoints have their q/k rows permuted at load.
// ============================================================================
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/mmap_file.h"
#include "numerics/dtype.h"  // DType: the weight type of every layer

namespace oracle {

// ---- Config -----------------------------------------------------------------
// RoPE scaling as llama.cpp applies it (docs/numerics.md "Scaled RoPE table").
enum class RopeScaling { None, Linear, Yarn };

struct RopeConfig {
  RopeScaling scaling = RopeScaling::None;
  float factor = 1.0f;          // rope.scaling.factor: freq_scale = 1 / factor (Linear, Yarn)
  int original_context = 0;     // rope.scaling.original_context_length (Yarn corr dims)
  float attn_factor = 1.0f;     // rope.scaling.attn_factor: multiplies every cos/sin
  float beta_fast = 32.0f;      // YaRN ramp ends (llama.cpp's defaults; other values refused)
  float beta_slow = 1.0f;
  std::vector<float> freq_factors;  // (head_dim / 2) rope_freqs.weight (Llama 3); empty: none
  // No scaling, no factors, attn_factor 1: the original float32 table (bit-identical).
  bool plain() const {
    return scaling == RopeScaling::None && freq_factors.empty() && attn_factor == 1.0f;
  }
};

struct Config {
  int dim = 0;          // residual stream width
  int hidden_dim = 0;   // FFN inner width
  int n_layers = 0;
  int n_heads = 0;      // query heads
  int n_kv_heads = 0;   // key/value heads (GQA: n_heads % n_kv_heads == 0)
  int head_dim = 0;     // per-head width (dim / n_heads for every model we load)
  int vocab_size = 0;
  int seq_len = 0;      // context length (overridable at load)
  float rope_theta = 10000.0f;
  RopeConfig rope;      // scaling / frequency factors on top of rope_theta
  float norm_eps = 1e-5f;
  bool qkv_bias = false;  // q/k/v projections add a bias (qwen2; optional in llama)
  // The context the file declares; seq_len > trained_context only with
  // LoadOptions::allow_context_extension (then context_extended is true).
  int trained_context = 0;
  bool context_extended = false;
  bool tied_classifier = true;  // LM head shares the token embedding
  // llama2.c models delimit stories with BOS: greedy generation stops on it.
  bool stop_on_bos = false;
  std::string architecture = "llama";
};

// ---- Weights ---------------------------------------------------------------------------
// A weight matrix (n_out, k) exactly as stored: `type` blocks, row-major, row r
// at data + r * dtype_row_bytes(type, k). Points into the mapped file (or into
// Weights::owned / owned_raw); never converted at load. The matmul
// (reference/compute/qmatmul.h) dequantizes blocks in registers in the order
// dequantize_row uses, so its bits equal dequantize-then-dot_canonical.
struct WeightMatrix {
  DType type = DType::F32;
  const uint8_t* data = nullptr;
  WeightMatrix() = default;
  WeightMatrix(DType t, const uint8_t* p) : type(t), data(p) {}
  WeightMatrix(const float* p)  // NOLINT: an F32 matrix is just its pointer
      : type(DType::F32), data(reinterpret_cast<const uint8_t*>(p)) {}
  // The float32 data when the matrix is stored as F32, else nullptr.
  const float* f32() const {
    return type == DType::F32 ? reinterpret_cast<const float*>(data) : nullptr;
  }
  bool operator==(const WeightMatrix&) const = default;
};

struct LayerWeights {
  const float* attn_norm = nullptr;  // (dim) float32 (dequantized at load if stored otherwise)
  WeightMatrix wq;                   // (n_heads * head_dim, dim)
  WeightMatrix wk;                   // (n_kv_heads * head_dim, dim)
  WeightMatrix wv;                   // (n_kv_heads * head_dim, dim)
  WeightMatrix wo;                   // (dim, n_heads * head_dim)
  const float* ffn_norm = nullptr;   // (dim)
  WeightMatrix w_gate;               // (hidden_dim, dim)   llama2.c w1
  WeightMatrix w_down;               // (dim, hidden_dim)   llama2.c w2
  WeightMatrix w_up;                 // (hidden_dim, dim)   llama2.c w3
  // Projection biases (Config::qkv_bias), null otherwise; rows permuted like wq/wk.
  const float* bq = nullptr;         // (n_heads * head_dim)
  const float* bk = nullptr;         // (n_kv_heads * head_dim)
  const float* bv = nullptr;         // (n_kv_heads * head_dim)
};

struct Weights {
  WeightMatrix token_embedding;            // (vocab_size, dim); rows dequantized on lookup
  std::vector<LayerWeights> layers;        // (n_layers)
  const float* final_norm = nullptr;       // (dim)
  WeightMatrix classifier;                 // (vocab_size, dim); == token_embedding when tied
  // Buffers for the few tensors that must be rebuilt: non-F32 norm vectors
  // (dequantized), and matrices whose rows the loader reorders (HF RoPE
  // permutation, rows copied in their stored type into owned_raw).
  std::vector<std::vector<float>> owned;
  std::vector<std::vector<uint8_t>> owned_raw;
};

// ---- Vocabulary embedded in (or loaded beside) a checkpoint ---------------------
enum class VocabType { SentencePiece, Gpt2 };

struct Vocab {
  VocabType type = VocabType::SentencePiece;
  std::vector<std::string> tokens;  // (n_vocab) raw piece bytes (SPM uses U+2581 for space)
  std::vector<float> scores;        // (n_vocab) BPE merge priority (SPM)
  std::vector<int> token_types;     // (n_vocab) GGUF token types (1 normal, 2 unknown, 3 control, 6 byte) or empty
  std::vector<std::string> merges;  // GPT-2 merges "a b", highest priority first
  int bos_id = 1;
  int eos_id = 2;
  int unk_id = 0;
  bool add_bos = true;
  bool add_bos_explicit = false;    // the file states add_bos (else the pre-tokenizer's default)
  bool add_eos = false;             // tokenizer.ggml.add_eos_token
  bool add_space_prefix = true;     // SentencePiece dummy prefix
  bool remove_extra_whitespaces = false;  // SentencePiece: collapse runs of spaces, trim
  int eot_id = -1;                  // tokenizer.ggml.eot_token_id (-1: found by text, as llama.cpp)
  int eom_id = -1;                  // tokenizer.ggml.eom_token_id (-1: found by text)
  // Fill-in-the-middle tokens (tokenizer.ggml.fim_{pre,suf,mid,pad,rep,sep}_token_id, and the
  // deprecated prefix/suffix/middle_token_id), in that order; -1: absent or outside the
  // vocabulary (llama.cpp warns and ignores such a key), then found by text as llama.cpp does.
  // pad, rep and sep end generation.
  int fim_ids[6] = {-1, -1, -1, -1, -1, -1};
  std::string pre;                  // GPT-2 pre-tokenizer name (GGUF tokenizer.ggml.pre)
  std::string chat_template;        // tokenizer.chat_template (Jinja source), or empty
  std::string name;                 // general.name (llama.cpp keys Phi-3's RSTRIP tokens on it)
  std::string source;               // file it came from (for error messages)
  int max_token_length = 0;         // llama2.c tokenizer.bin header
};

// ---- Raw tensor table (what the file holds) ---------------------------------------
struct TensorInfo {
  std::string name;
  DType type = DType::F32;
  std::vector<int64_t> shape;  // ggml order: shape[0] is the contiguous (row) length
  const uint8_t* data = nullptr;
  uint64_t n_bytes = 0;
};

// ---- Model ---------------------------------------------------------------------
struct Model {
  Config config;
  Weights weights;
  Vocab vocab;                    // empty tokens => use a separate tokenizer file
  std::vector<TensorInfo> tensors;  // as stored in the file (quantized types kept raw)
  std::string path;
  std::string format;             // "llama2c", "gguf", "safetensors", "synthetic"
  std::string sha256;             // of the checkpoint file(s)
  std::shared_ptr<MappedFile> file;  // keeps mapped weights alive
  std::vector<std::shared_ptr<MappedFile>> extra_files;  // safetensors shards
};

struct LoadOptions {
  int context_length_override = 0;  // 0 = keep the file's context length
  // An override above the file's context length is an InputError unless set.
  bool allow_context_extension = false;
  bool compute_sha256 = true;
  // Where the checkpoint's bytes live (base/mmap_file.h). automatic: the value
  // of $ORACLE_WEIGHTS (auto, mapped, huge_pages), else choose_residency's
  // rule. Callers that drop pages (tensor-parallel ranks) pass mapped.
  FileResidency residency = FileResidency::automatic;
};

// Dispatches on the file's magic (GGUF, safetensors directory/config.json, llama2.c).
// Throws InputError naming the file and field on any inconsistency.
Model load_model(const std::string& path, const LoadOptions& options = {});

}  // namespace oracle
