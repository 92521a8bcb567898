// llama-quantize's per-tensor type choices (see quantize_policy.h). Each
// function names the llama.cpp function it transcribes; branches for file
// types we do not accept (IQ*, TQ*, MXFP4, Q2_K_S) are left out.
#include "audit/interop/quantize_policy.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "base/errors.h"
#include "reference/model/quant.h"

namespace oracle {
namespace {

// llama_ftype codes (llama.h).
enum Ftype {
  kAllF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ8_0 = 7, kQ5_0 = 8, kQ5_1 = 9, kQ2_K = 10,
  kQ3_K_S = 11, kQ3_K_M = 12, kQ3_K_L = 13, kQ4_K_S = 14, kQ4_K_M = 15, kQ5_K_S = 16,
  kQ5_K_M = 17, kQ6_K = 18, kBF16 = 32,
};

const QuantMix kMixes[] = {
    {"F32", kAllF32, DType::F32},     {"F16", kF16, DType::F16},        {"BF16", kBF16, DType::BF16},
    {"Q4_0", kQ4_0, DType::Q4_0},     {"Q4_1", kQ4_1, DType::Q4_1},     {"Q5_0", kQ5_0, DType::Q5_0},
    {"Q5_1", kQ5_1, DType::Q5_1},     {"Q8_0", kQ8_0, DType::Q8_0},     {"Q2_K", kQ2_K, DType::Q2_K},
    {"Q3_K_S", kQ3_K_S, DType::Q3_K}, {"Q3_K_M", kQ3_K_M, DType::Q3_K}, {"Q3_K_L", kQ3_K_L, DType::Q3_K},
    {"Q4_K_S", kQ4_K_S, DType::Q4_K}, {"Q4_K_M", kQ4_K_M, DType::Q4_K}, {"Q5_K_S", kQ5_K_S, DType::Q5_K},
    {"Q5_K_M", kQ5_K_M, DType::Q5_K}, {"Q6_K", kQ6_K, DType::Q6_K},     {"I8_ROW", -1, DType::I8_ROW},
};

std::string upper(std::string s) {
  for (char& c : s) c = (char)std::toupper((unsigned char)c);
  return s;
}

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// ---- tensor_get_category ----------------------------------------------------------------
enum class Cat { TokenEmbd, AttnQ, AttnV, AttnK, AttnQkv, AttnKvB, AttnOut, FfnUp, FfnGate, FfnDown, Output, Other };

Cat category(const std::string& n) {
  if (n == "output.weight") return Cat::Output;
  if (n == "token_embd.weight" || n == "per_layer_token_embd.weight") return Cat::TokenEmbd;
  if (contains(n, "attn_qkv.weight")) return Cat::AttnQkv;
  if (contains(n, "attn_kv_b.weight")) return Cat::AttnKvB;
  if (contains(n, "attn_v.weight")) return Cat::AttnV;
  if (contains(n, "attn_k.weight")) return Cat::AttnK;
  if (contains(n, "attn_q.weight")) return Cat::AttnQ;
  if (contains(n, "attn_output.weight")) return Cat::AttnOut;
  if (contains(n, "ffn_up")) return Cat::FfnUp;
  if (contains(n, "ffn_gate")) return Cat::FfnGate;
  if (contains(n, "ffn_down")) return Cat::FfnDown;
  return Cat::Other;
}

bool is_attn_v(Cat c) { return c == Cat::AttnV || c == Cat::AttnQkv || c == Cat::AttnKvB; }

// ---- tensor_allows_quantization (quantize_output_tensor = true, only_copy = false) ----------
const char* const kNeverQuantized[] = {
    "_norm.weight", "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup", "laurel",
    "per_layer_model_proj", "ssm_conv1d", "shortconv.conv.weight", "indexer.k_proj.weight",
    "indexer.q_proj.weight", "time_mix_first.weight", "time_mix_w0.weight", "time_mix_w1.weight",
    "time_mix_w2.weight", "time_mix_v0.weight", "time_mix_v1.weight", "time_mix_v2.weight",
    "time_mix_a0.weight", "time_mix_a1.weight", "time_mix_a2.weight", "time_mix_g1.weight",
    "time_mix_g2.weight", "time_mix_decay_w1.weight", "time_mix_decay_w2.weight",
    "time_mix_lerp_fused.weight", "attn_rel_b.weight", ".position_embd", "sam.pos_embd", "sam.neck.",
    "sam.net_", ".rel_pos", ".patch_embd", ".patch_merger", "a.rvq.codebook", "mm.a.code_embd",
};

bool allows_quantization(const QuantTensorIn& t) {
  if (t.dims.size() < 2) return false;
  const std::string& n = t.name;
  bool q = n.rfind("weight") == n.size() - 6;  // size_t arithmetic, as in llama.cpp
  for (const char* part : kNeverQuantized) q = q && !contains(n, part);
  return q && n != "position_embd.weight" && n != "token_types.weight";
}

// ---- llama_tensor_get_type_impl ----------------------------------------------------------
struct State {
  const QuantModelFacts& f;
  int ftype;
  bool tied = true;  // no output.weight: token_embd doubles as the output
  int n_attention_wv = 0, i_attention_wv = 0, i_ffn_down = 0, i_ffn_gate = 0, i_ffn_up = 0;
  bool falcon() const { return f.arch == "falcon"; }
  int n_gqa() const { return f.n_head_kv == 0 ? 0 : f.n_head / f.n_head_kv; }
};

bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

// layer_info: the counter, or for MoE models the layer parsed from "blk.N.".
int layer_of(const State& s, int counter, const std::string& name) {
  if (std::max(1, s.f.n_expert) <= 1) return counter;
  int layer = -1;
  require_input(std::sscanf(name.c_str(), "blk.%d.", &layer) == 1, name, "name",
                "failed to determine the layer of this tensor");
  require_input(layer >= 0 && layer < s.f.n_layer, name, "name", "layer outside [0, block_count)");
  return layer;
}

DType output_type(const State& s, DType t, const QuantTensorIn& in) {
  if (s.falcon() || in.dims[0] % dtype_block_elems(t) != 0) return DType::Q8_0;
  return t != DType::Q8_0 ? DType::Q6_K : t;
}

DType attn_v_type(State& s, DType t) {
  const int ft = s.ftype;
  if (ft == kQ2_K) t = s.n_gqa() >= 4 ? DType::Q4_K : DType::Q3_K;
  else if (ft == kQ3_K_M) t = s.i_attention_wv < 2 ? DType::Q5_K : DType::Q4_K;
  else if (ft == kQ3_K_L) t = DType::Q5_K;
  else if ((ft == kQ4_K_M || ft == kQ5_K_M) && use_more_bits(s.i_attention_wv, s.n_attention_wv)) t = DType::Q6_K;
  else if (ft == kQ4_K_S && s.i_attention_wv < 4) t = DType::Q5_K;
  if (s.f.is_70b && (t == DType::Q3_K || t == DType::Q4_K)) t = DType::Q5_K;
  if (s.f.n_expert == 8) t = DType::Q8_0;
  s.i_attention_wv++;
  return t;
}

DType ffn_down_type(State& s, DType t, const std::string& name) {
  const int ft = s.ftype, i = layer_of(s, s.i_ffn_down, name), n = s.f.n_layer;
  if (ft == kQ2_K) t = DType::Q3_K;
  else if (ft == kQ3_K_M) t = i < n / 16 ? DType::Q5_K : (!s.falcon() || use_more_bits(i, n)) ? DType::Q4_K : DType::Q3_K;
  else if (ft == kQ3_K_L) t = s.falcon() ? DType::Q4_K : DType::Q5_K;
  else if (ft == kQ4_K_M) {
    if (s.falcon()) t = i < n / 16 ? DType::Q6_K : use_more_bits(i, n) ? DType::Q5_K : DType::Q4_K;
    else if (use_more_bits(i, n)) t = DType::Q6_K;
  } else if (ft == kQ5_K_M && use_more_bits(i, n)) t = DType::Q6_K;
  else if (ft == kQ4_K_S && !s.falcon() && i < n / 8) t = DType::Q5_K;
  s.i_ffn_down++;
  return t;
}

DType attn_output_type(const State& s, DType t) {
  const int ft = s.ftype;
  if (s.falcon()) return ft == kQ3_K_L ? DType::Q4_K : t;
  if (s.f.n_expert == 8)
    return (ft == kQ2_K || ft == kQ3_K_S || ft == kQ3_K_M || ft == kQ4_K_S || ft == kQ4_K_M) ? DType::Q5_K : t;
  if (ft == kQ2_K) return DType::Q3_K;
  if (ft == kQ3_K_M) return DType::Q4_K;
  if (ft == kQ3_K_L) return DType::Q5_K;
  return t;
}

DType mix_type(State& s, DType t, const QuantTensorIn& in, Cat c) {
  if (c == Cat::Output || (s.tied && c == Cat::TokenEmbd)) return output_type(s, t, in);
  if (c == Cat::TokenEmbd) return t;
  if (is_attn_v(c)) return attn_v_type(s, t);  // (makes llama.cpp's later attn_qkv branch unreachable)
  if (c == Cat::AttnK) return s.f.n_expert == 8 ? DType::Q8_0 : t;
  if (c == Cat::FfnDown) return ffn_down_type(s, t, in.name);
  if (c == Cat::AttnOut) return attn_output_type(s, t);
  if (c == Cat::FfnGate) layer_of(s, s.i_ffn_gate++, in.name);
  if (c == Cat::FfnUp) layer_of(s, s.i_ffn_up++, in.name);
  return t;
}

// ---- tensor_type_fallback -----------------------------------------------------------------
DType fallback(const QuantTensorIn& in, DType t, bool* fell_back) {
  const int64_t ncols = in.dims[0];
  if (ncols % dtype_block_elems(t) == 0) return t;
  *fell_back = true;
  DType r = t;
  switch (t) {
    case DType::Q2_K: case DType::Q3_K: r = DType::Q4_0; break;
    case DType::Q4_K: r = DType::Q5_0; break;
    case DType::Q5_K: r = DType::Q5_1; break;
    case DType::Q6_K: r = DType::Q8_0; break;
    default: break;  // 32-blocks: no smaller block, F16 below
  }
  return ncols % dtype_block_elems(r) != 0 ? DType::F16 : r;
}

bool is_block_quantized(DType t) { return t != DType::F32 && t != DType::F16 && t != DType::BF16 && t != DType::I8_ROW; }

}  // namespace

std::string quant_mix_names() {
  std::string s;
  for (const QuantMix& m : kMixes) s += (s.empty() ? "" : ", ") + m.name;
  return s + " (and Q3_K, Q4_K, Q5_K = the _M mixes)";
}

QuantMix parse_quant_mix(const std::string& name) {
  std::string u = upper(name);
  if (u == "Q3_K" || u == "Q4_K" || u == "Q5_K") u += "_M";  // llama-quantize's aliases
  for (const QuantMix& m : kMixes)
    if (m.name == u) return m;
  if (u == "Q2_K_S" || u.rfind("IQ", 0) == 0 || u.rfind("TQ", 0) == 0 || u == "MXFP4_MOE" || u == "Q1_0" ||
      u == "Q2_0" || u == "COPY")
    throw InputError("--type", "type", "'" + name + "' is a llama-quantize type oracle does not write (" +
                                           "IQ/TQ/MXFP4 types and Q2_K_S, which needs an importance matrix)");
  throw InputError("--type", "type", "unknown type '" + name + "' (" + quant_mix_names() + ")");
}

void sort_llama_order(std::vector<QuantTensorIn>& tensors) {
  auto layer = [](const std::string& n) {
    int l = -1;
    std::sscanf(n.c_str(), "blk.%d.", &l);
    return l;
  };
  std::stable_sort(tensors.begin(), tensors.end(), [&](const QuantTensorIn& a, const QuantTensorIn& b) {
    int la = layer(a.name), lb = layer(b.name);
    return la != lb ? la < lb : a.name < b.name;
  });
}

std::vector<QuantChoice> choose_quant_types(const QuantModelFacts& facts, const QuantMix& mix, bool pure,
                                            const std::vector<QuantTensorIn>& tensors) {
  require_input(facts.arch != "glm5-next", "general.architecture", "general.architecture",
                "glm5-next has quantization rules oracle does not implement");
  State s{facts, mix.ftype};
  for (const QuantTensorIn& t : tensors) {
    if (is_attn_v(category(t.name))) s.n_attention_wv++;
    if (category(t.name) == Cat::Output) s.tied = false;
  }
  std::vector<QuantChoice> out;
  for (const QuantTensorIn& t : tensors) {
    QuantChoice c{t.type, allows_quantization(t), false};
    if (c.allowed) {
      c.type = mix.default_type;
      if (is_block_quantized(mix.default_type)) {
        if (!pure) c.type = mix_type(s, c.type, t, category(t.name));
        c.type = fallback(t, c.type, &c.fallback);
      }
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace oracle
