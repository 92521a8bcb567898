// llama.cpp KL-divergence base files: the record encoding against exact
// log-softmax (within the format's own quantization), strict reading, byte
// round trips, llama.cpp's own file (its printed PPL(base) recomputed from the
// records), and the layout we write against llama.cpp's.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "audit/certify/certify_kld.h"
#include "audit/interop/kld_base.h"
#include "fixture.h"
#include "base/errors.h"
#include "reference/model/model.h"

using namespace oracle;

namespace {

std::string slurp(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void spit(const std::string& p, const std::string& b) {
  std::ofstream out(p, std::ios::binary);
  out << b;
}

std::string tmp(const char* name) { return (std::filesystem::temp_directory_path() / name).string(); }

}  // namespace

TEST_CASE("kld_nearest_int rounds to nearest, ties to even, like ggml's nearest_int") {
  CHECK(kld_nearest_int(0.0f) == 0);
  CHECK(kld_nearest_int(0.5f) == 0);
  CHECK(kld_nearest_int(1.5f) == 2);
  CHECK(kld_nearest_int(2.5f) == 2);
  CHECK(kld_nearest_int(65534.6f) == 65535);
  CHECK(kld_nearest_int(1234.49f) == 1234);
}

TEST_CASE("a record decodes to the exact log-softmax within half a quantization step") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; trial++) {
    const int n = 3 + trial * 37;
    std::normal_distribution<float> d(0.0f, trial % 2 ? 8.0f : 1.0f);  // some rows span more than 16 nats
    std::vector<float> x(n);
    for (float& v : x) v = d(rng);
    const int nv = 2 * ((n + 1) / 2) + 4;
    std::vector<uint16_t> rec(nv, 0xffff);
    encode_kld_record(x.data(), n, rec.data());
    float scale, min_lp;
    std::memcpy(&scale, rec.data(), 4);
    std::memcpy(&min_lp, rec.data() + 2, 4);
    const std::vector<double> exact = log_softmax_f64(x.data(), n);
    const std::vector<float> got = decode_kld_record(rec.data(), n);
    double mx = exact[0];
    for (double e : exact) mx = std::max(mx, e);
    for (int k = 0; k < n; k++) {
      if (exact[k] < mx - 16.0 + 1e-4) {  // below the clamp: stored as the floor
        CHECK(got[k] <= min_lp + scale * 1.01f);
        continue;
      }
      // half a step, plus float rounding of scale*q + min and of log_sum_exp (a few ulp of 16 nats)
      INFO("trial " << trial << " k " << k << " exact " << exact[k] << " got " << got[k] << " scale " << scale);
      CHECK(std::fabs((double)got[k] - exact[k]) <= 0.5 * scale + 1e-5);
    }
    if (n % 2) CHECK(rec[nv - 1] == 0);  // padding to an even count is zero
  }
}

TEST_CASE("a constant row has scale 0 and all-zero levels, as llama.cpp writes it") {
  std::vector<float> x(8, 1.25f);
  std::vector<uint16_t> rec(12, 7);
  encode_kld_record(x.data(), 8, rec.data());
  float scale, min_lp;
  std::memcpy(&scale, rec.data(), 4);
  std::memcpy(&min_lp, rec.data() + 2, 4);
  CHECK(scale == 0.0f);
  CHECK(std::fabs(min_lp + std::log(8.0f)) < 1e-6f);
  for (int k = 4; k < 12; k++) CHECK(rec[k] == 0);
}

TEST_CASE("llama.cpp's base file: read strictly, PPL(base) as llama.cpp printed it, byte round trip") {
  const std::string path = test::fixture("gguf/llama2xs-samples.kld");
  const KldBase b = read_kld_base(path);
  CHECK(b.n_ctx == 128);
  CHECK(b.n_vocab == 512);
  CHECK(b.n_chunk == 109);
  CHECK(b.tokens[0] == 1);  // BOS of the tokenized corpus
  // llamacpp_kld_llama2xs-q4_0_vs_llama2xs-samples.kld.txt: "Mean PPL(base) : 7.688349 ± 0.184839",
  // computed by llama.cpp from the records alone: nll_base = -(scale q[next] + min_log_prob).
  double sum = 0.0, sum2 = 0.0;
  size_t n = 0;
  for (int c = 0; c < b.n_chunk; c++)
    for (int j = b.first_scored(); j + 1 < (int)b.n_ctx; j++) {
      const std::vector<float> lp = decode_kld_record(b.record(c, j), b.n_vocab);
      const float nll = -lp[b.tokens[(size_t)c * b.n_ctx + j + 1]];
      sum += nll, sum2 += (double)nll * nll, n++;
    }
  CHECK(n == 6867);
  const double mean = sum / n, se = std::sqrt((sum2 / n - mean * mean) / (n - 1));
  CHECK(std::fabs(std::exp(mean) - 7.688349) < 1e-6);
  CHECK(std::fabs(std::exp(mean) * se - 0.184839) < 1e-6);
  const std::string copy = tmp("oracle_kld_roundtrip.kld");
  write_kld_base(copy, b);
  CHECK(slurp(copy) == slurp(path));
  std::filesystem::remove(copy);
}

TEST_CASE("bad base files are refused naming the field") {
  const std::string bytes = slurp(test::fixture("gguf/llama2xs-samples.kld"));
  const std::string p = tmp("oracle_kld_bad.kld");
  auto field_of = [&](const std::string& b) {
    spit(p, b);
    try {
      read_kld_base(p);
    } catch (const InputError& e) {
      return e.field();
    }
    return std::string("accepted");
  };
  CHECK(field_of(bytes.substr(0, bytes.size() - 2)) == "records");  // one uint16 short
  CHECK(field_of(bytes + "x") == "records");
  CHECK(field_of("_logitz_" + bytes.substr(8)) == "magic");
  CHECK(field_of(bytes.substr(0, 10)) == "magic");
  std::string big = bytes;
  const int32_t huge = 1 << 30;
  std::memcpy(&big[16], &huge, 4);
  CHECK(field_of(big) == "n_chunk");
  std::string badtok = bytes;
  const int32_t t = 512;
  std::memcpy(&badtok[20 + 4 * 5], &t, 4);
  CHECK(field_of(badtok) == "tokens[5]");
  std::filesystem::remove(p);
}

TEST_CASE("the base we write for llama2xs has llama.cpp's header and tokens, and close records") {
  const KldBase theirs = read_kld_base(test::fixture("gguf/llama2xs-samples.kld"));
  LoadOptions lo;
  lo.context_length_override = 128;
  const Model ref = load_model(test::fixture("gguf/llama2xs.gguf"), lo);
  std::ifstream in(test::fixture("../corpus/llama2xs-samples.txt"), std::ios::binary);
  const std::string corpus((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CertifyOptions o;
  o.ctx = 128;
  o.threads = 2;
  KldBase layout = kld_base_layout(ref, corpus, o);
  CHECK(layout.n_chunk == theirs.n_chunk);
  CHECK(layout.tokens == theirs.tokens);  // the whole token list, byte for byte
  o.max_chunks = 3;
  const KldBase ours = make_kld_base(ref, kld_base_layout(ref, corpus, o), o);
  REQUIRE(ours.n_chunk == 3);
  const std::string a = kld_base_bytes(ours), b = kld_base_bytes(theirs);
  CHECK(a.compare(0, 16, b, 0, 16) == 0);       // magic, n_ctx, n_vocab
  CHECK(a.compare(20, 3 * 128 * 4, b, 20, 3 * 128 * 4) == 0);
  // llama.cpp's logits for the F32 model differ from ours (F16 KV cache, other orders):
  // measured over the whole file KL(ours || theirs) = 1.5e-5 nats on average, same top-1
  // 99.91 %. Bound per record: KL below 0.02 and scales within 1 %.
  for (int c = 0; c < 3; c++)
    for (int j = ours.first_scored(); j + 1 < 128; j++) {
      const std::vector<float> x = decode_kld_record(ours.record(c, j), 512), y = decode_kld_record(theirs.record(c, j), 512);
      double kl = 0.0;
      for (int k = 0; k < 512; k++) kl += std::exp((double)x[k]) * ((double)x[k] - y[k]);
      float sx, sy;
      std::memcpy(&sx, ours.record(c, j), 4);
      std::memcpy(&sy, theirs.record(c, j), 4);
      INFO("chunk " << c << " pos " << j);
      CHECK(kl < 0.02);
      CHECK(std::fabs(sx / sy - 1.0f) < 0.01f);
    }
}

// docs/interop.md "KLD base files": the sidecar is a JSON object whose "format" is
// "oracle-kld-base-sidecar"; anything else beside a base file is refused naming "format",
// before its numerics version is read. The one write_kld_sidecar writes is accepted.
TEST_CASE("a sidecar that is not the oracle's is refused naming its format") {
  const KldBase base = read_kld_base(test::fixture("gguf/llama2xs-samples.kld"));
  const std::string p = tmp(("oracle_kld_sidecar_" + std::to_string(::getpid()) + ".kld").c_str());
  spit(p, kld_base_bytes(base));
  write_kld_sidecar(p, base);
  CHECK(check_kld_sidecar(p, true, "rebuild"));
  const nlohmann::json good = nlohmann::json::parse(slurp(kld_sidecar_path(p)));
  auto field_of = [&](const std::string& sidecar) {
    spit(kld_sidecar_path(p), sidecar);
    try {
      check_kld_sidecar(p, false, "rebuild");
    } catch (const InputError& e) {
      return e.field();
    }
    return std::string("accepted");
  };
  nlohmann::json other = good;
  other["format"] = "oracle-kld-base";
  CHECK(field_of(other.dump()) == "format");
  other.erase("format");
  CHECK(field_of(other.dump()) == "format");
  CHECK(field_of("[" + good.dump() + "]") == "format");
  CHECK(field_of(good.dump()) == "accepted");
  std::filesystem::remove(kld_sidecar_path(p));
  std::filesystem::remove(p);
}

// Both sides of KLD-base scoring against KL(P_ref || P_cand) = Σ p_ref (ln p_ref - ln p_cand)
// summed here in long double from the two float logit rows (no token below the -16 cut on
// the base's side). A record holds ln p within half a step (scale / 2, at most 16 / 65535
// nats), so the KLD moves by at most that much; the next token's Δp likewise.
TEST_CASE("KLD-base scoring: the base as reference or as candidate gives KL(P_ref || P_cand)") {
  std::mt19937 rng(29);
  std::normal_distribution<float> d(0.0f, 1.5f);
  for (int trial = 0; trial < 20; trial++) {
    const int n = 64 + 16 * trial, next = trial % n;
    std::vector<float> ref(n), cand(n);
    for (int k = 0; k < n; k++) ref[k] = d(rng), cand[k] = ref[k] + 0.3f * d(rng);
    auto log_softmax = [n](const std::vector<float>& x) {
      long double m = x[0], sum = 0;
      for (float v : x) m = std::max<long double>(m, v);
      for (float v : x) sum += std::exp((long double)v - m);
      std::vector<long double> out(n);
      for (int k = 0; k < n; k++) out[k] = (long double)x[k] - m - std::log(sum);
      return out;
    };
    const std::vector<long double> lr = log_softmax(ref), lc = log_softmax(cand);
    long double kl = 0;
    for (int k = 0; k < n; k++) kl += std::exp(lr[k]) * (lr[k] - lc[k]);
    const double dp = (double)(std::exp(lc[next]) - std::exp(lr[next]));
    std::vector<uint16_t> rec_ref(2 * ((n + 1) / 2) + 4), rec_cand(rec_ref.size());
    encode_kld_record(ref.data(), n, rec_ref.data());
    encode_kld_record(cand.data(), n, rec_cand.data());
    const double tol = 16.0 / 65535 + 1e-5;
    INFO("trial " << trial << " KL " << (double)kl);
    const TokenRecord as_ref = compare_base_logits(rec_ref.data(), cand.data(), n, next);
    CHECK(std::fabs(as_ref.kld - (double)kl) <= tol);
    CHECK(std::fabs(as_ref.dp_next - dp) <= tol);
    const TokenRecord as_cand = compare_logits_base(ref.data(), rec_cand.data(), n, next);
    CHECK(std::fabs(as_cand.kld - (double)kl) <= tol);
    CHECK(std::fabs(as_cand.dp_next - dp) <= tol);
    CHECK(std::fabs(as_cand.nll_ref + (double)lr[next]) <= 1e-6);
    CHECK(std::fabs(as_cand.nll_cand + (double)lc[next]) <= tol);
  }
}
