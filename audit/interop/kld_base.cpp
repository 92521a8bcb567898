// llama.cpp's KL-divergence base file: reading, writing, one record's
// encoding, and the statistics against it (kld_base.h).
#include "audit/interop/kld_base.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "base/atomic_file.h"
#include "base/errors.h"
#include "base/file_io.h"
#include "base/numerics_version.h"
#include "numerics/numerics.h"

namespace oracle {

const uint16_t* KldBase::record(int chunk, int j) const {
  const size_t index = (size_t)chunk * scored_per_chunk() + (size_t)(j - first_scored());
  return records.data() + index * (size_t)nv();
}
uint16_t* KldBase::record(int chunk, int j) {
  return const_cast<uint16_t*>(static_cast<const KldBase*>(this)->record(chunk, j));
}

// ============================================================================
// One record
// ============================================================================
int kld_nearest_int(float x) {
  const float v = num::add_rn(x, 12582912.0f);
  int32_t i;
  std::memcpy(&i, &v, sizeof i);
  return (i & 0x007fffff) - 0x00400000;
}

// Writer side of perplexity.cpp's log_softmax: float max/min, the sum of
// e^(x - max) in double (our exp_canonical for expf), log_sum_exp rounded to float.
void encode_kld_record(const float* logits, int n_vocab, uint16_t* record) {
  float max_logit = logits[0], min_logit = logits[0];
  for (int i = 1; i < n_vocab; i++) {
    max_logit = std::max(max_logit, logits[i]);
    min_logit = std::min(min_logit, logits[i]);
  }
  min_logit = std::max(min_logit, num::sub_rn(max_logit, 16.0f));
  double sum_exp = 0.0;
  for (int i = 0; i < n_vocab; i++) sum_exp += (double)num::exp_canonical(num::sub_rn(logits[i], max_logit));
  const float log_sum_exp = (float)num::log_d(sum_exp);
  const float min_log_prob = num::sub_rn(num::sub_rn(min_logit, max_logit), log_sum_exp);
  const float scale = num::div_rn(num::sub_rn(max_logit, min_logit), 65535.0f);
  std::memcpy(record, &scale, 4);
  std::memcpy(record + 2, &min_log_prob, 4);
  uint16_t* q = record + 4;
  const int pad = 2 * ((n_vocab + 1) / 2) - n_vocab;
  for (int i = 0; i < n_vocab + pad; i++) q[i] = 0;
  if (scale == 0.0f) return;
  const float inv_scale = num::div_rn(1.0f, scale);
  for (int i = 0; i < n_vocab; i++)
    q[i] = logits[i] > min_logit
               ? (uint16_t)kld_nearest_int(num::mul_rn(inv_scale, num::sub_rn(logits[i], min_logit)))
               : 0;
}

std::vector<float> decode_kld_record(const uint16_t* record, int n_vocab) {
  float scale, min_log_prob;
  std::memcpy(&scale, record, 4);
  std::memcpy(&min_log_prob, record + 2, 4);
  std::vector<float> lp(n_vocab);  // (n_vocab)
  for (int i = 0; i < n_vocab; i++) lp[i] = num::add_rn(num::mul_rn(scale, (float)record[4 + i]), min_log_prob);
  return lp;
}

// ============================================================================
// Statistics against a record
// ============================================================================
namespace {

double exp_np(double v) { return v < -700.0 ? 0.0 : num::exp_d(v); }

int first_max(const std::vector<float>& x) {
  int best = 0;
  for (int i = 1; i < (int)x.size(); i++)
    if (x[i] > x[best]) best = i;
  return best;
}

}  // namespace

TokenRecord compare_base_logits(const uint16_t* base_record, const float* cand, int n_vocab, int next) {
  const std::vector<float> lb = decode_kld_record(base_record, n_vocab);  // (n_vocab)
  const std::vector<double> lc = log_softmax_f64(cand, n_vocab);         // (n_vocab)
  TokenRecord r;
  r.next = next;
  r.top_ref = first_max(lb);
  r.top_cand = num::argmax_lowest(cand, n_vocab);
  double kld = 0.0;  // increasing k, llama.cpp's cut at ln p_base = -16
  for (int k = 0; k < n_vocab; k++)
    if (lb[k] > -16.0f) kld += exp_np((double)lb[k]) * ((double)lb[k] - lc[k]);
  r.kld = kld;
  r.nll_ref = -(double)lb[next];
  r.nll_cand = -lc[next];
  r.dp_top = exp_np(lc[r.top_ref]) - exp_np((double)lb[r.top_ref]);
  r.dp_next = exp_np(lc[next]) - exp_np((double)lb[next]);
  return r;
}

TokenRecord compare_logits_base(const float* ref, const uint16_t* cand_record, int n_vocab, int next) {
  const std::vector<double> lr = log_softmax_f64(ref, n_vocab);           // (n_vocab)
  const std::vector<float> lq = decode_kld_record(cand_record, n_vocab);  // (n_vocab)
  TokenRecord r;
  r.next = next;
  r.top_ref = num::argmax_lowest(ref, n_vocab);
  r.top_cand = first_max(lq);
  double kld = 0.0;
  for (int k = 0; k < n_vocab; k++) {
    const double p = exp_np(lr[k]);
    if (p > 0.0) kld += p * (lr[k] - (double)lq[k]);
  }
  r.kld = kld;
  r.nll_ref = -lr[next];
  r.nll_cand = -(double)lq[next];
  r.dp_top = exp_np((double)lq[r.top_ref]) - exp_np(lr[r.top_ref]);
  r.dp_next = exp_np((double)lq[next]) - exp_np(lr[next]);
  return r;
}

TokenRecord compare_base_records(const uint16_t* ref_record, const uint16_t* cand_record, int n_vocab, int next) {
  const std::vector<float> lb = decode_kld_record(ref_record, n_vocab);   // (n_vocab)
  const std::vector<float> lq = decode_kld_record(cand_record, n_vocab);  // (n_vocab)
  TokenRecord r;
  r.next = next;
  r.top_ref = first_max(lb);
  r.top_cand = first_max(lq);
  double kld = 0.0;  // increasing k, llama.cpp's cut at ln p_base = -16
  for (int k = 0; k < n_vocab; k++)
    if (lb[k] > -16.0f) kld += exp_np((double)lb[k]) * ((double)lb[k] - (double)lq[k]);
  r.kld = kld;
  r.nll_ref = -(double)lb[next];
  r.nll_cand = -(double)lq[next];
  r.dp_top = exp_np((double)lq[r.top_ref]) - exp_np((double)lb[r.top_ref]);
  r.dp_next = exp_np((double)lq[next]) - exp_np((double)lb[next]);
  return r;
}

// ============================================================================
// Files
// ============================================================================
namespace {

template <class T>
T read_le(const std::string& bytes, size_t at) {
  T v;
  std::memcpy(&v, bytes.data() + at, sizeof v);
  return v;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  require_input(in.good(), path, "file", "cannot open the KLD base file");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  require_input(!in.bad(), path, "file", "read failed");
  return bytes;
}

void check_header(const KldBase& b, uint64_t size, const std::string& path) {
  require_input(b.n_ctx >= 4 && b.n_ctx <= (1u << 20), path, "n_ctx",
                "context " + std::to_string(b.n_ctx) + " outside [4, 2^20]");
  require_input(b.n_vocab > 0 && b.n_vocab <= (1 << 24), path, "n_vocab",
                "vocabulary " + std::to_string(b.n_vocab) + " outside [1, 2^24]");
  require_input(b.n_chunk > 0 && b.n_chunk <= (1 << 24), path, "n_chunk",
                "chunk count " + std::to_string(b.n_chunk) + " outside [1, 2^24]");
  const uint64_t tokens = (uint64_t)b.n_chunk * b.n_ctx;
  const uint64_t recs = (uint64_t)b.n_chunk * (uint64_t)b.scored_per_chunk() * (uint64_t)b.nv();
  const uint64_t want = kKldBaseHeaderBytes + 4 * tokens + 2 * recs;
  require_input(size == want, path, "records",
                "file is " + std::to_string(size) + " bytes; n_ctx " + std::to_string(b.n_ctx) + ", n_vocab " +
                    std::to_string(b.n_vocab) + ", n_chunk " + std::to_string(b.n_chunk) + " need " +
                    std::to_string(want));
}

}  // namespace

KldBase read_kld_base(const std::string& path) {
  const std::string bytes = read_all(path);
  require_input(bytes.size() >= kKldBaseHeaderBytes && bytes.compare(0, 8, "_logits_") == 0, path, "magic",
                "not a llama.cpp KL-divergence base file (no \"_logits_\" header)");
  KldBase b;
  b.n_ctx = read_le<uint32_t>(bytes, 8);
  b.n_vocab = read_le<int32_t>(bytes, 12);
  b.n_chunk = read_le<int32_t>(bytes, 16);
  check_header(b, bytes.size(), path);
  b.tokens.resize((size_t)b.n_chunk * b.n_ctx);
  std::memcpy(b.tokens.data(), bytes.data() + kKldBaseHeaderBytes, b.tokens.size() * 4);
  for (size_t i = 0; i < b.tokens.size(); i++)
    require_input(b.tokens[i] >= 0 && b.tokens[i] < b.n_vocab, path, "tokens[" + std::to_string(i) + "]",
                  "token id " + std::to_string(b.tokens[i]) + " outside the vocabulary");
  const size_t at = kKldBaseHeaderBytes + b.tokens.size() * 4;
  b.records.resize((bytes.size() - at) / 2);
  std::memcpy(b.records.data(), bytes.data() + at, b.records.size() * 2);
  return b;
}

std::string kld_base_bytes(const KldBase& b) {
  std::string out = "_logits_";
  out.append(reinterpret_cast<const char*>(&b.n_ctx), 4);
  out.append(reinterpret_cast<const char*>(&b.n_vocab), 4);
  out.append(reinterpret_cast<const char*>(&b.n_chunk), 4);
  out.append(reinterpret_cast<const char*>(b.tokens.data()), b.tokens.size() * 4);
  out.append(reinterpret_cast<const char*>(b.records.data()), b.records.size() * 2);
  return out;
}

void write_kld_base(const std::string& path, const KldBase& b) {
  require_input(b.tokens.size() == (size_t)b.n_chunk * b.n_ctx &&
                    b.records.size() == (size_t)b.n_chunk * b.scored_per_chunk() * b.nv(),
                path, "records", "inconsistent KLD base (internal sizes)");
  const std::string bytes = kld_base_bytes(b);
  write_file_atomic(path, [&](std::ostream& out) { out.write(bytes.data(), (std::streamsize)bytes.size()); });
}

// ---- sidecar -------------------------------------------------------------------------------------
std::string kld_sidecar_path(const std::string& base_path) { return base_path + ".oracle.json"; }

void write_kld_sidecar(const std::string& base_path, const KldBase& b) {
  nlohmann::json j = {{"format", "oracle-kld-base-sidecar"},
                      {"file", std::filesystem::path(base_path).filename().string()},
                      {"n_ctx", b.n_ctx},
                      {"n_vocab", b.n_vocab},
                      {"n_chunk", b.n_chunk}};
  stamp_numerics_version(j);
  write_file_atomic(kld_sidecar_path(base_path), "sidecar", j.dump(2) + "\n");
}

bool check_kld_sidecar(const std::string& base_path, bool ours, const std::string& regenerate) {
  const std::string path = kld_sidecar_path(base_path);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    if (ours) check_numerics_version(nlohmann::json::object(), base_path, regenerate);  // written before sidecars: v1
    return false;
  }
  const nlohmann::json j = parse_json_text(read_regular_file(path, "sidecar"), path, "sidecar");
  require_input(j.is_object() && j.value("format", std::string()) == "oracle-kld-base-sidecar", path, "format",
                "expected \"oracle-kld-base-sidecar\"");
  check_numerics_version(j, path, regenerate);
  return true;
}

}  // namespace oracle
