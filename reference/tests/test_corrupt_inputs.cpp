// Corrupt checkpoints: each one gives an InputError whose file() is the file
// and whose field() names the culprit; never a crash, bad_alloc or signal.
// The corrupt files are copies of the real fixtures, mutated in a scratch dir.
#include <catch2/catch.hpp>

#include <filesystem>
#include <functional>
#include <random>

#include "loader_fixtures.h"
#include "base/errors.h"
#include "reference/model/gguf.h"
#include "reference/model/gguf_writer.h"

using namespace oracle;
using namespace oracle::test;

namespace {

using Bytes = std::vector<uint8_t>;

// Runs `load` and checks it throws InputError naming `file` and a field containing `field`.
void expect_input_error(const std::function<void()>& load, const std::string& file, const std::string& field) {
  try {
    load();
    FAIL("no InputError for " << file << " (expected field " << field << ")");
  } catch (const InputError& e) {
    INFO("what(): " << e.what());
    CHECK(e.file() == file);
    CHECK(e.field().find(field) != std::string::npos);
    CHECK(std::string(e.what()).find(file) != std::string::npos);
  }
}

void expect_model_error(const std::string& path, const std::string& field) {
  expect_input_error([&] { load_model(path); }, path, field);
}

// Writes a mutated copy of fixture `rel` to dir/name and returns its path.
std::string mutated(const ScratchDir& dir, const std::string& rel, const std::string& name,
                    const std::function<void(Bytes&)>& mutate) {
  Bytes b = read_bytes(fixture(rel));
  mutate(b);
  const std::string path = dir.file(name);
  write_bytes(path, b.data(), b.size());
  return path;
}

template <class T>
void put(Bytes& b, size_t offset, T v) {
  std::memcpy(&b.at(offset), &v, sizeof(T));
}

size_t find_text(const Bytes& b, const std::string& s) {
  auto it = std::search(b.begin(), b.end(), s.begin(), s.end());
  REQUIRE(it != b.end());
  return static_cast<size_t>(it - b.begin());
}

// GGUF tensor info after the name: u32 n_dims, u64 dims[n_dims], u32 type, u64 offset.
size_t tensor_info_after_name(const Bytes& b, const std::string& name) {
  return find_text(b, name) + name.size();
}

const char* kBin = "stories260K/stories260K.bin";
const char* kGguf = "gguf/stories260K.gguf";

}  // namespace

// ---- llama2.c ---------------------------------------------------------------------------------------
TEST_CASE("corrupt: llama2.c file truncated inside a tensor names that tensor", "[corrupt]") {
  ScratchDir dir("corrupt_bin_trunc");
  // stories260K layout (dim 64, hidden 172, 5 layers, kv_dim 32, vocab 512):
  // header 28, embedding ends 131100, rms_att 132380, wq 214300, wk 255260,
  // wv 296220, wo 378140, rms_ffn 379420; w1 = 5 x 44032 bytes: byte 500000 is in layer 2.
  const std::string path = mutated(dir, kBin, "cut.bin", [](Bytes& b) { b.resize(500000); });
  expect_model_error(path, "blk.2.ffn_gate.weight");
}

TEST_CASE("corrupt: llama2.c file shorter than its header", "[corrupt]") {
  ScratchDir dir("corrupt_bin_header");
  expect_model_error(mutated(dir, kBin, "tiny.bin", [](Bytes& b) { b.resize(10); }), "header");
}

TEST_CASE("corrupt: llama2.c file with trailing bytes", "[corrupt]") {
  ScratchDir dir("corrupt_bin_long");
  expect_model_error(mutated(dir, kBin, "long.bin", [](Bytes& b) { b.resize(b.size() + 4, 0); }),
                     "file size");
}

TEST_CASE("corrupt: llama2.c header n_heads does not divide dim", "[corrupt]") {
  ScratchDir dir("corrupt_bin_heads");
  expect_model_error(mutated(dir, kBin, "heads.bin", [](Bytes& b) { put<int32_t>(b, 12, 7); }),
                     "n_heads");
}

TEST_CASE("corrupt: llama2.c header n_kv_heads does not divide n_heads", "[corrupt]") {
  ScratchDir dir("corrupt_bin_kv");
  expect_model_error(mutated(dir, kBin, "kv.bin", [](Bytes& b) { put<int32_t>(b, 16, 3); }),
                     "n_kv_heads");
}

TEST_CASE("corrupt: llama2.c header with a negative size", "[corrupt]") {
  ScratchDir dir("corrupt_bin_neg");
  expect_model_error(mutated(dir, kBin, "neg.bin", [](Bytes& b) { put<int32_t>(b, 8, -5); }),
                     "n_layers");
}

// Found by fuzz_llama2c: n_layers = 2^24 once allocated a slot per layer
// (gigabytes) before any tensor was read. The count is now checked against the
// bytes left first, and the error comes before the allocation.
TEST_CASE("corrupt: llama2.c header with a layer count the file cannot hold", "[corrupt]") {
  ScratchDir dir("corrupt_bin_layers");
  expect_model_error(mutated(dir, kBin, "layers.bin", [](Bytes& b) { put<int32_t>(b, 8, 1 << 24); }),
                     "header.n_layers");
}

// ---- GGUF: container -------------------------------------------------------------------------------
TEST_CASE("corrupt: GGUF wrong magic", "[corrupt]") {
  ScratchDir dir("corrupt_gguf_magic");
  // Not "GGUF" any more, so load_model takes it for llama2.c: use GgufFile directly.
  const std::string path = mutated(dir, kGguf, "magic.gguf", [](Bytes& b) { b[0] = 'X'; });
  expect_input_error([&] { GgufFile g(path); }, path, "magic");
}

TEST_CASE("corrupt: GGUF unsupported version", "[corrupt]") {
  ScratchDir dir("corrupt_gguf_version");
  expect_model_error(mutated(dir, kGguf, "v9.gguf", [](Bytes& b) { put<uint32_t>(b, 4, 9); }), "version");
}

TEST_CASE("corrupt: GGUF header promising 2^60 tensors", "[corrupt]") {
  ScratchDir dir("corrupt_gguf_ntensors");
  expect_model_error(mutated(dir, kGguf, "n.gguf", [](Bytes& b) { put<uint64_t>(b, 8, 1ull << 60); }),
                     "n_tensors");
}

TEST_CASE("corrupt: GGUF header promising 2^60 metadata entries", "[corrupt]") {
  ScratchDir dir("corrupt_gguf_nkv");
  expect_model_error(mutated(dir, kGguf, "kv.gguf", [](Bytes& b) { put<uint64_t>(b, 16, 1ull << 60); }),
                     "n_kv");
}

TEST_CASE("corrupt: GGUF header promising one tensor more than it lists", "[corrupt]") {
  ScratchDir dir("corrupt_gguf_extra");
  // The 49th tensor info is read from padding and data: its name length runs past the end.
  expect_model_error(mutated(dir, kGguf, "49.gguf", [](Bytes& b) { put<uint64_t>(b, 8, 49); }),
                     "tensor_info[48]");
}

TEST_CASE("corrupt: GGUF string length beyond the end of the file", "[corrupt]") {
  ScratchDir dir("corrupt_gguf_str");
  const std::string path = mutated(dir, kGguf, "str.gguf", [](Bytes& b) {
    // key "tokenizer.ggml.model", u32 type 8, u64 length, "llama"
    size_t value = tensor_info_after_name(b, "tokenizer.ggml.model") + 4;
    put<uint64_t>(b, value, 1ull << 40);
  });
  expect_model_error(path, "tokenizer.ggml.model");
}

TEST_CASE("corrupt: GGUF array claiming 2^61 elements", "[corrupt]") {
  ScratchDir dir("corrupt_gguf_array");
  const std::string path = mutated(dir, kGguf, "arr.gguf", [](Bytes& b) {
    // key, u32 type 9 (array), u32 element type, u64 count
    size_t count = tensor_info_after_name(b, "tokenizer.ggml.tokens") + 8;
    put<uint64_t>(b, count, 1ull << 61);
  });
  expect_model_error(path, "tokenizer.ggml.tokens");
}

TEST_CASE("corrupt: GGUF tensor data offset beyond the file", "[corrupt]") {
  ScratchDir dir("corrupt_gguf_offset");
  const std::string path = mutated(dir, kGguf, "off.gguf", [](Bytes& b) {
    size_t info = tensor_info_after_name(b, "blk.0.attn_q.weight");  // n_dims 2
    put<uint64_t>(b, info + 4 + 16 + 4, uint64_t(1) << 32);
  });
  expect_model_error(path, "blk.0.attn_q.weight");
}

TEST_CASE("corrupt: GGUF truncated in the data section names the cut tensor", "[corrupt]") {
  ScratchDir dir("corrupt_gguf_trunc");
  GgufFile intact(fixture(kGguf));
  const GgufTensorInfo* last = &intact.tensors()[0];
  for (const GgufTensorInfo& t : intact.tensors())
    if (t.offset > last->offset) last = &t;
  const std::string path = mutated(dir, kGguf, "cut.gguf", [](Bytes& b) { b.resize(b.size() - 8); });
  expect_model_error(path, "tensor '" + last->name + "' data");
}

// ---- GGUF: model -------------------------------------------------------------------------------------
TEST_CASE("corrupt: GGUF tensor shape disagrees with the config", "[corrupt]") {
  ScratchDir dir("corrupt_gguf_shape");
  const std::string path = mutated(dir, kGguf, "shape.gguf", [](Bytes& b) {
    size_t info = tensor_info_after_name(b, "blk.0.attn_k.weight");
    put<uint64_t>(b, info + 4 + 8, 16);  // dims [64, 32] -> [64, 16]
  });
  expect_model_error(path, "blk.0.attn_k.weight");
}

TEST_CASE("corrupt: GGUF tensor of an unsupported ggml type", "[corrupt]") {
  ScratchDir dir("corrupt_gguf_type");
  const std::string path = mutated(dir, kGguf, "type.gguf", [](Bytes& b) {
    size_t info = tensor_info_after_name(b, "blk.0.attn_q.weight");
    put<uint32_t>(b, info + 4 + 16, 16);  // IQ2_XXS
  });
  expect_model_error(path, "blk.0.attn_q.weight");
}

namespace {
// Rewrites the fixture through GgufWriter, letting `edit` change metadata/tensors.
std::string rewritten(const ScratchDir& dir, const std::string& name,
                      const std::function<void(GgufWriter&)>& edit_meta, const std::string& drop_tensor) {
  GgufFile in(fixture(kGguf));
  GgufWriter w;
  w.copy_metadata(in);
  edit_meta(w);
  for (const GgufTensorInfo& t : in.tensors())
    if (t.name != drop_tensor)
      w.add_tensor(t.name, static_cast<DType>(t.ggml_type), t.dims, Bytes(t.data, t.data + t.n_bytes));
  w.write(dir.file(name));
  return dir.file(name);
}
}  // namespace

TEST_CASE("corrupt: GGUF tokenizer vocabulary size disagrees with the model", "[corrupt]") {
  ScratchDir dir("corrupt_gguf_vocab");
  GgufFile in(fixture(kGguf));
  const std::string path = rewritten(dir, "vocab.gguf", [&](GgufWriter& w) {
    std::vector<std::string> tokens = in.get_strings("tokenizer.ggml.tokens");
    tokens.pop_back();
    std::vector<float> scores(tokens.size(), 0.0f);
    w.add_strings("tokenizer.ggml.tokens", tokens);
    w.add_f32s("tokenizer.ggml.scores", scores);
    w.add_i32s("tokenizer.ggml.token_type", std::vector<int32_t>(tokens.size(), 1));
  }, "");
  expect_model_error(path, "tokenizer.ggml.tokens");
}

TEST_CASE("corrupt: GGUF tokenizer scores shorter than its tokens", "[corrupt]") {
  ScratchDir dir("corrupt_gguf_scores");
  const std::string path = rewritten(dir, "scores.gguf", [](GgufWriter& w) {
    w.add_f32s("tokenizer.ggml.scores", {0.0f, 1.0f});
  }, "");
  expect_model_error(path, "tokenizer.ggml.scores");
}

TEST_CASE("corrupt: GGUF missing tensor", "[corrupt]") {
  ScratchDir dir("corrupt_gguf_missing");
  expect_model_error(rewritten(dir, "missing.gguf", [](GgufWriter&) {}, "blk.1.ffn_up.weight"),
                     "blk.1.ffn_up.weight");
}

TEST_CASE("corrupt: GGUF block_count beyond the file's last block", "[corrupt]") {
  ScratchDir dir("corrupt_gguf_blocks");
  for (uint32_t count : {6u, 1u << 24}) {  // one layer too many; a damaged count
    const std::string path = rewritten(dir, "blocks.gguf", [&](GgufWriter& w) {
      w.add_u32("llama.block_count", count);
    }, "");
    expect_model_error(path, "llama.block_count");
  }
}

TEST_CASE("corrupt: GGUF head count that does not divide the width", "[corrupt]") {
  ScratchDir dir("corrupt_gguf_heads");
  const std::string path = rewritten(dir, "heads.gguf", [](GgufWriter& w) {
    w.add_u32("llama.attention.head_count", 7);
  }, "");
  expect_model_error(path, "llama.attention.head_count");
}

TEST_CASE("corrupt: vocabulary-only GGUF loaded as a model", "[corrupt]") {
  expect_model_error(fixture("vocab-only/ggml-vocab-llama-spm.gguf"), "token_embd.weight");
}

// ---- safetensors -----------------------------------------------------------------------------------------
namespace {
std::string hf_dir(const ScratchDir& dir, bool drop_up = false) {
  Model bin = load_model(fixture(kBin));
  write_hf_model(dir.path.string(), bin, "F32", true);
  if (drop_up) {
    auto tensors = hf_tensors(bin, false);
    tensors.erase(std::remove_if(tensors.begin(), tensors.end(),
                                 [](const HfTensor& t) { return t.name == "model.layers.1.mlp.up_proj.weight"; }),
                  tensors.end());
    write_safetensors(dir.file("model.safetensors"), tensors, "F32");
  }
  return dir.path.string();
}
}  // namespace

TEST_CASE("corrupt: safetensors header length beyond the file", "[corrupt]") {
  ScratchDir dir("corrupt_st_header");
  hf_dir(dir);
  Bytes b = read_bytes(dir.file("model.safetensors"));
  put<uint64_t>(b, 0, uint64_t(1) << 50);
  write_bytes(dir.file("model.safetensors"), b.data(), b.size());
  expect_input_error([&] { load_model(dir.path.string()); }, dir.file("model.safetensors"), "header length");
}

TEST_CASE("corrupt: safetensors header that is not JSON", "[corrupt]") {
  ScratchDir dir("corrupt_st_json");
  hf_dir(dir);
  Bytes b = read_bytes(dir.file("model.safetensors"));
  b[8] = '[';
  b[9] = '[';
  write_bytes(dir.file("model.safetensors"), b.data(), b.size());
  expect_input_error([&] { load_model(dir.path.string()); }, dir.file("model.safetensors"), "header");
}

TEST_CASE("corrupt: safetensors data past the end of the file", "[corrupt]") {
  ScratchDir dir("corrupt_st_trunc");
  hf_dir(dir);
  Bytes b = read_bytes(dir.file("model.safetensors"));
  b.resize(b.size() - 4);  // model.norm.weight is written last
  write_bytes(dir.file("model.safetensors"), b.data(), b.size());
  expect_input_error([&] { load_model(dir.path.string()); }, dir.file("model.safetensors"),
                     "tensor 'model.norm.weight' data_offsets");
}

TEST_CASE("corrupt: safetensors missing tensor", "[corrupt]") {
  ScratchDir dir("corrupt_st_missing");
  expect_model_error(hf_dir(dir, true), "model.layers.1.mlp.up_proj.weight");
}

TEST_CASE("corrupt: config.json disagrees with the tensor shapes", "[corrupt]") {
  ScratchDir dir("corrupt_st_config");
  hf_dir(dir);
  Config c = load_model(fixture(kBin)).config;
  c.hidden_dim = 100;
  write_hf_config(dir.file("config.json"), c, true);
  expect_input_error([&] { load_model(dir.path.string()); }, dir.file("model.safetensors"),
                     "model.layers.0.mlp.gate_proj.weight");
}

TEST_CASE("corrupt: config.json num_hidden_layers beyond the shards' last layer", "[corrupt]") {
  ScratchDir dir("corrupt_st_layers");
  hf_dir(dir);
  Config c = load_model(fixture(kBin)).config;
  for (int count : {6, 1 << 24}) {  // one layer too many; a damaged count
    c.n_layers = count;
    write_hf_config(dir.file("config.json"), c, true);
    expect_input_error([&] { load_model(dir.path.string()); }, dir.file("config.json"), "num_hidden_layers");
  }
}

TEST_CASE("corrupt: safetensors directory without config.json", "[corrupt]") {
  ScratchDir dir("corrupt_st_noconfig");
  hf_dir(dir);
  std::filesystem::remove(dir.file("config.json"));
  expect_input_error([&] { load_model(dir.path.string()); }, dir.file("config.json"), "file");
}

TEST_CASE("corrupt: model path that does not exist", "[corrupt]") {
  ScratchDir dir("corrupt_nofile");
  expect_model_error(dir.file("nothing.bin"), "file");
}

// ---- random mutations ----------------------------------------------------------------------------------
// Seeded byte flips and truncations of the GGUF metadata/tensor-info region and
// of the llama2.c header: every outcome is a successful parse or an InputError.
TEST_CASE("corrupt: random header mutations give InputError or a valid parse, never a crash", "[corrupt]") {
  ScratchDir dir("corrupt_random");
  const Bytes gguf = read_bytes(fixture(kGguf));
  const size_t header_bytes = GgufFile(fixture(kGguf)).data_offset();  // metadata + tensor infos
  std::mt19937 rng(12345);
  int errors = 0, parsed = 0;
  for (int iter = 0; iter < 300; iter++) {
    Bytes b(gguf.begin(), gguf.begin() + static_cast<long>(header_bytes));
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; k++) b[rng() % b.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
    if (rng() % 4 == 0) b.resize(rng() % b.size());
    const std::string path = dir.file("m.gguf");
    write_bytes(path, b.data(), b.size());
    try {
      GgufFile g(path);
      (void)vocab_from_gguf(g);
      parsed++;
    } catch (const InputError&) {
      errors++;
    }
  }
  const Bytes bin = read_bytes(fixture(kBin));
  for (int iter = 0; iter < 40; iter++) {
    Bytes b = bin;
    b[rng() % 28] ^= static_cast<uint8_t>(1u << (rng() % 8));
    const std::string path = dir.file("m.bin");
    write_bytes(path, b.data(), b.size());
    try {
      (void)load_model(path);
      parsed++;
    } catch (const InputError&) {
      errors++;
    }
  }
  INFO(parsed << " parsed, " << errors << " InputErrors");
  CHECK(parsed + errors == 340);
  CHECK(errors > 0);
}
