// quantize_gguf vs llama-quantize's outputs, per tensor and per file, for every
// type and mix, from the digest table data/llamacpp_quantize_digests.txt made
// by scripts/quantize_digests.py generate --peer-bin: llama-quantize itself
// (llama.cpp 0c1e570), as the table's "# SOURCE" line says (docs/quantize.md).
// Committed so CI needs no peer.
//   [llama2xs]  llama2xs.gguf (F32), every run — default suite.
//   [smollm2]   SmolLM2's F32 export from its Q4_1 file (the export itself is
//               checked first), then every run on it — label "smollm2" (slow).
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "fixture.h"
#include "reference/model/gguf.h"
#include "reference/model/quant.h"
#include "audit/interop/quantize_gguf.h"
#include "reference/model/quantize_rows.h"
#include "base/sha256.h"

using namespace oracle;

namespace {

struct Run {
  std::string model, id;
  uint64_t bytes = 0;
  std::string sha256;
  std::vector<std::string> types;  // file order
};

struct DigestTable {
  std::map<std::string, std::vector<std::string>> order;  // model -> tensor names in file order
  std::vector<Run> runs;
  std::map<std::string, std::string> data;  // "model tensor type" -> sha256
};

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(item);
  return out;
}

const DigestTable& table() {
  static DigestTable t = [] {
    DigestTable t;
    std::ifstream in(std::string(ORACLE_TEST_DATA_DIR) + "/llamacpp_quantize_digests.txt");
    REQUIRE(in.good());
    for (std::string line; std::getline(in, line);) {
      std::istringstream ls(line);
      std::string kind, model, a, b, c;
      ls >> kind >> model >> a >> b >> c;
      if (kind == "order") t.order[model] = split_commas(a);
      if (kind == "file") t.runs.push_back(Run{model, a, std::stoull(b), c, {}});
      if (kind == "types") {
        for (Run& r : t.runs)
          if (r.model == model && r.id == a) r.types = split_commas(b);
      }
      if (kind == "data") t.data[model + " " + a + " " + b] = c;
    }
    return t;
  }();
  return t;
}

QuantizeOptions options_for(const Run& r) {
  QuantizeOptions o;
  size_t plus = r.id.find('+');
  o.type = r.id.substr(0, plus);
  o.pure = plus != std::string::npos && r.id.substr(plus) == "+pure";
  o.allow_requantize = r.model == "smollm2-export";
  o.threads = 2;
  return o;
}

// Quantizes `in` for run r and compares every tensor and the whole file.
// Returns the number of identical tensors; prints one summary line.
int check_run(const Run& r, const std::string& in, const std::string& out) {
  INFO(r.model << " " << r.id);
  auto t0 = std::chrono::steady_clock::now();
  quantize_gguf(in, out, options_for(r));
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::vector<std::string>& names = table().order.at(r.model);
  GgufFile g(out);
  REQUIRE(g.tensors().size() == names.size());
  REQUIRE(r.types.size() == names.size());
  int same = 0;
  for (size_t i = 0; i < names.size(); i++) {
    const GgufTensorInfo& t = g.tensors()[i];
    std::string type = dtype_name(static_cast<DType>(t.ggml_type));
    auto want = table().data.find(r.model + " " + names[i] + " " + r.types[i]);
    REQUIRE(want != table().data.end());
    bool ok = t.name == names[i] && type == r.types[i] && sha256_hex(t.data, t.n_bytes) == want->second;
    if (!ok) UNSCOPED_INFO(names[i] << ": ours " << t.name << " " << type << ", llama-quantize " << r.types[i]);
    same += ok ? 1 : 0;
  }
  bool file_same = sha256_file(out) == r.sha256 && std::filesystem::file_size(out) == r.bytes;
  std::printf("%-14s %-12s tensors %3d/%3zu identical, whole file %s (%.1f s)\n", r.model.c_str(), r.id.c_str(),
              same, names.size(), file_same ? "identical" : "DIFFERS", secs);
  CHECK(same == (int)names.size());
  CHECK(file_same);
  return same;
}

std::string temp_path(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / "oracle_test_quantize_llamacpp";
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

int check_model(const std::string& model, const std::string& in) {
  int n = 0;
  for (const Run& r : table().runs)
    if (r.model == model) {
      std::string out = temp_path(model + "-" + r.id + ".gguf");
      check_run(r, in, out);
      std::filesystem::remove(out);
      n++;
    }
  return n;
}

}  // namespace

TEST_CASE("llama2xs: every type and mix is byte-identical to llama-quantize", "[llama2xs]") {
  CHECK(check_model("llama2xs", oracle::test::fixture("gguf/llama2xs.gguf")) == 27);
}

TEST_CASE("SmolLM2: the F32 export and every type and mix from it match llama-quantize", "[.][smollm2]") {
  std::string f32 = temp_path("smollm2-f32.gguf");
  int exports = 0;
  for (const Run& r : table().runs)
    if (r.model == "smollm2-export") {
      check_run(r, oracle::test::fixture("smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"), f32);
      exports++;
    }
  REQUIRE(exports == 1);
  CHECK(check_model("smollm2", f32) == 27);
  std::filesystem::remove(f32);
}
