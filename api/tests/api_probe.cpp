// api_probe: the public C++ API driven from the command line, for the pytest
// suite's bit-for-bit checks (python/tests/test_bindings.py): each op reads raw
// float32 (or byte) files, calls llm_oracle::, and writes the raw result, so a
// Python result can be compared with the C++ one byte for byte.
//   api_probe rmsnorm X W ROWS N EPS OUT          api_probe softmax X ROWS N OUT
//   api_probe swiglu G U N OUT                    api_probe attention Q K V N_POS N_HEADS N_KV HD OUT
//   api_probe rope X ROWS N_HEADS HD THETA LAYOUT SCALING FACTOR ORIG ATTN OUT POS...
//   api_probe matmul X W DTYPE T K N OUT          api_probe quantize X DTYPE ROWS N OUT
//   api_probe dequantize SRC DTYPE ROWS N OUT     api_probe logits MODEL OUT ID...
//   api_probe trace MODEL OUT ID... (prints "name pos" per tensor)  api_probe tokenize MODEL TEXT
//   api_probe sample LOGITS TEMPERATURE TOP_K TOP_P SEED SEQ POS
//   api_probe compare WANT GOT STEPS VOCAB TOKEN... api_probe certify REF CAND ROWS VOCAB NEXT...
// Exit 2 with the InputError's text on bad input.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "llm_oracle/llm_oracle.h"

using namespace llm_oracle;

namespace {

std::vector<char> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw InputError(path, "file", "cannot open");
  return {std::istreambuf_iterator<char>(f), {}};
}
std::vector<float> read_f32(const std::string& path) {
  std::vector<char> b = read_bytes(path);
  std::vector<float> v(b.size() / 4);
  std::copy(b.begin(), b.begin() + v.size() * 4, reinterpret_cast<char*>(v.data()));
  return v;
}
void write_bytes(const std::string& path, const void* data, size_t n) {
  std::ofstream f(path, std::ios::binary);
  f.write(static_cast<const char*>(data), (std::streamsize)n);
}
void write_f32(const std::string& path, const std::vector<float>& v) { write_bytes(path, v.data(), v.size() * 4); }
std::vector<int> ints_from(char** argv, int begin, int argc) {
  std::vector<int> v;
  for (int i = begin; i < argc; i++) v.push_back(std::stoi(argv[i]));
  return v;
}

int run_ops(const std::string& op, int argc, char** argv) {
  auto a = [&](int i) { return std::string(argv[i]); };
  if (op == "rmsnorm") {
    std::vector<float> x = read_f32(a(2)), w = read_f32(a(3)), out(x.size());
    ops::rmsnorm(out.data(), x.data(), w.data(), std::stoi(a(4)), std::stoi(a(5)), std::stof(a(6)));
    write_f32(a(7), out);
  } else if (op == "softmax") {
    std::vector<float> x = read_f32(a(2)), out(x.size());
    ops::softmax(out.data(), x.data(), std::stoi(a(3)), std::stoi(a(4)));
    write_f32(a(5), out);
  } else if (op == "swiglu") {
    std::vector<float> g = read_f32(a(2)), u = read_f32(a(3)), out(g.size());
    ops::swiglu(out.data(), g.data(), u.data(), std::stoll(a(4)));
    write_f32(a(5), out);
  } else if (op == "attention") {
    std::vector<float> q = read_f32(a(2)), k = read_f32(a(3)), v = read_f32(a(4)), out(q.size());
    ops::attention(out.data(), q.data(), k.data(), v.data(), std::stoi(a(5)), std::stoi(a(6)), std::stoi(a(7)),
                   std::stoi(a(8)));
    write_f32(a(9), out);
  } else if (op == "rope") {
    std::vector<float> x = read_f32(a(2));
    ops::RopeParams p;
    p.head_dim = std::stoi(a(5)), p.theta = std::stof(a(6));
    p.layout = a(7) == "neox" ? ops::RopeLayout::Neox : ops::RopeLayout::Interleaved;
    p.scaling = a(8) == "linear" ? ops::RopeScaling::Linear : a(8) == "yarn" ? ops::RopeScaling::Yarn : ops::RopeScaling::None;
    p.factor = std::stof(a(9)), p.original_context = std::stoi(a(10)), p.attn_factor = std::stof(a(11));
    const std::vector<int> pos = ints_from(argv, 13, argc);
    ops::rope(x.data(), pos.data(), std::stoi(a(3)), std::stoi(a(4)), p);
    write_f32(a(12), x);
  } else if (op == "matmul") {
    std::vector<float> x = read_f32(a(2));
    std::vector<char> w = read_bytes(a(3));
    const int T = std::stoi(a(5)), K = std::stoi(a(6)), N = std::stoi(a(7));
    std::vector<float> out((size_t)T * N);
    ops::matmul(out.data(), x.data(), w.data(), parse_dtype(a(4)), T, K, N);
    write_f32(a(8), out);
  } else if (op == "quantize") {
    std::vector<float> x = read_f32(a(2));
    const DType t = parse_dtype(a(3));
    const int64_t rows = std::stoll(a(4)), n = std::stoll(a(5));
    std::vector<char> out((size_t)(rows * row_bytes(t, n)));
    ops::quantize_rows(out.data(), x.data(), t, rows, n);
    write_bytes(a(6), out.data(), out.size());
  } else if (op == "dequantize") {
    std::vector<char> src = read_bytes(a(2));
    const int64_t rows = std::stoll(a(4)), n = std::stoll(a(5));
    std::vector<float> out((size_t)(rows * n));
    ops::dequantize_rows(out.data(), src.data(), parse_dtype(a(3)), rows, n);
    write_f32(a(6), out);
  } else {
    return -1;
  }
  return 0;
}

int run_model(const std::string& op, int argc, char** argv) {
  auto a = [&](int i) { return std::string(argv[i]); };
  if (op == "logits" || op == "trace") {
    const Model m = Model::load(a(2));
    const std::vector<int> ids = ints_from(argv, 4, argc);
    if (op == "logits") {
      write_f32(a(3), m.logits(ids));
    } else {
      std::vector<float> all;
      for (const TraceTensor& t : m.trace(ids).trace) {
        all.insert(all.end(), t.values.begin(), t.values.end());
        std::printf("%s %d\n", t.name.c_str(), t.pos);
      }
      write_f32(a(3), all);
    }
  } else if (op == "tokenize") {
    for (int id : Model::load(a(2)).tokenize(a(3))) std::printf("%d\n", id);
  } else if (op == "sample") {
    const std::vector<float> logits = read_f32(a(2));
    SamplerConfig c = preset_config(Preset::LlamaCpp);
    c.temperature = std::stof(a(3)), c.top_k = std::stoi(a(4)), c.top_p = std::stof(a(5)), c.seed = std::stoull(a(6));
    const Sampler s(c, (int)logits.size());
    std::printf("%d\n", s.sample(logits, {}, RngKey{(uint32_t)std::stoul(a(7)), (uint32_t)std::stoul(a(8))}).token);
  } else if (op == "compare") {
    const std::vector<float> want = read_f32(a(2)), got = read_f32(a(3));
    const std::vector<int> tokens = ints_from(argv, 6, argc);
    std::printf("%s\n", compare_logits(want, got, std::stoi(a(4)), std::stoi(a(5)), tokens).json.c_str());
  } else if (op == "certify") {
    const std::vector<float> ref = read_f32(a(2)), cand = read_f32(a(3));
    const CertifyStats s = certify_stats(ref, cand, std::stoi(a(4)), std::stoi(a(5)), ints_from(argv, 6, argc));
    std::printf("%.17g %.17g %.17g %.17g\n", s.kld.mean, s.kld.se, s.same_top.mean, s.ppl_ref.mean);
  } else {
    return -1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: api_probe OP ARGS... (see the source)\n");
    return 2;
  }
  try {
    const std::string op = argv[1];
    int rc = run_ops(op, argc, argv);
    if (rc < 0) rc = run_model(op, argc, argv);
    if (rc < 0) std::fprintf(stderr, "api_probe: unknown op %s\n", op.c_str());
    return rc < 0 ? 2 : rc;
  } catch (const InputError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}
