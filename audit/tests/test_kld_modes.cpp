// The KLD-base modes of certify as a library call (audit/certify/certify_kld_modes.h):
// a C++ caller certifies against llama.cpp's own base file without the CLI.
// Expected values are llama-perplexity's printout for the same files
// (../shared/models/gguf/llamacpp_kld_llama2xs-q4_0_vs_llama2xs-samples.kld.txt,
// PROVENANCE.md), not our own output.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>

#include "audit/certify/certify_kld_modes.h"
#include "base/errors.h"
#include "fixture.h"

using namespace oracle;

namespace {

CertifyOptions llamacpp_options() {
  CertifyOptions o;
  o.protocol = Protocol::LlamaCpp;
  o.ctx = 128;
  o.threads = 2;
  o.greedy_prompts = 0;
  return o;
}

std::string refusal_field(const KldModeRequest& k, const CertifyOptions& o) {
  try {
    run_kld_mode(k, o);
  } catch (const InputError& e) {
    return e.file();
  }
  return "";
}

}  // namespace

TEST_CASE("run_kld_mode: llama.cpp's base as the reference gives llama-perplexity's statistics") {
  KldModeRequest k;
  k.reference_base = test::fixture("gguf/llama2xs-samples.kld");
  k.candidate = test::fixture("gguf/llama2xs-q4_0.gguf");
  const KldModeOutcome out = run_kld_mode(k, llamacpp_options());
  REQUIRE(out.scored);
  const Summary& s = out.result.summary;
  // PPL(base) depends only on the file's records: llama.cpp's printed digits.
  CHECK(std::fabs(s.perplexity.ppl_ref.mean - 7.688349) < 5e-7);
  // Our Q4_0 logits stand on the candidate side: llama.cpp's figures within 2 of its
  // printed standard errors (the CLI test cli_interop_kld_reference uses the same rule).
  CHECK(std::fabs(s.kld.mean - 0.149968) < 2 * 0.002916);
  CHECK(std::fabs(100 * s.same_top.mean - 74.166) < 2 * 0.528);
  CHECK(out.info.candidate_path == k.candidate);
  CHECK(out.info.reference_path == k.reference_base + " (llama.cpp KLD base)");
  CHECK(out.info.weight_type == "Q4_0");
  CHECK(out.info.reference_sha256.size() == 64);
}

TEST_CASE("run_kld_mode: modes and their inputs are checked, naming the option") {
  const CertifyOptions o = llamacpp_options();
  KldModeRequest two;
  two.write_base = "a.kld", two.cache = "b.kld";
  CHECK(refusal_field(two, o) == "--write-kld-base");
  KldModeRequest no_cand;
  no_cand.reference_base = test::fixture("gguf/llama2xs-samples.kld");
  CHECK(refusal_field(no_cand, o) == "--reference-kld-base");
  KldModeRequest write_no_corpus;
  write_no_corpus.write_base = "x.kld", write_no_corpus.reference = test::fixture("gguf/llama2xs.gguf");
  CHECK(refusal_field(write_no_corpus, o) == "--write-kld-base");
  CertifyOptions full = o;
  full.protocol = Protocol::Full;
  CHECK(refusal_field(no_cand, full) == "--protocol");
  KldModeRequest ctx;
  ctx.reference_base = test::fixture("gguf/llama2xs-samples.kld"), ctx.candidate = test::fixture("gguf/llama2xs-q4_0.gguf");
  ctx.ctx_given = true;
  CertifyOptions c64 = o;
  c64.ctx = 64;
  CHECK(refusal_field(ctx, c64) == ctx.reference_base);  // the file's n_ctx (128) wins, --ctx 64 refused
}

TEST_CASE("run_kld_mode: write mode writes the file atomically and reports its header") {
  const std::string path = (std::filesystem::temp_directory_path() / "oracle_test_kld_modes.kld").string();
  std::filesystem::remove(path);
  KldModeRequest k;
  k.write_base = path;
  k.reference = test::fixture("gguf/llama2xs.gguf");
  k.corpus = test::fixture("../corpus/llama2xs-samples.txt");
  CertifyOptions o = llamacpp_options();
  o.max_chunks = 2;
  const KldModeOutcome out = run_kld_mode(k, o);
  CHECK_FALSE(out.scored);
  CHECK(out.written.n_chunk == 2);
  CHECK(out.written.n_ctx == 128u);
  const KldBase back = read_kld_base(path);
  CHECK(back.tokens == out.written.tokens);
  CHECK(back.records.size() == (size_t)2 * back.scored_per_chunk() * back.nv());
  std::filesystem::remove(path);
}

// Both sides base files (no model): a file against itself is zero divergence exactly (every
// term is p (ln p - ln p)), ln PPL ratio 0 and the same top everywhere; PPL(base) is the file's,
// llama-perplexity's printed digits. A file whose header or tokens differ is refused naming the
// candidate file and field; a model beside the two files is refused naming the option.
TEST_CASE("run_kld_mode: two base files, statistics only") {
  const std::string base = test::fixture("gguf/llama2xs-samples.kld");
  KldModeRequest k;
  k.reference_base = base, k.candidate_base = base;
  const KldModeOutcome out = run_kld_mode(k, llamacpp_options());
  REQUIRE(out.scored);
  const Summary& s = out.result.summary;
  CHECK(s.n == 109 * 63);
  CHECK(s.kld.mean == 0.0);
  CHECK(s.kld_percentiles.front().second == 0.0);
  CHECK(s.same_top.mean == 1.0);
  CHECK(s.perplexity.ln_ratio.mean == 0.0);
  CHECK(std::fabs(s.perplexity.ppl_ref.mean - 7.688349) < 5e-7);
  CHECK(s.perplexity.ppl_cand.mean == s.perplexity.ppl_ref.mean);
  CHECK(out.info.weight_type == "KLD_BASE");
  CHECK(out.info.candidate_path == base + " (llama.cpp KLD base)");

  const std::string path = (std::filesystem::temp_directory_path() / "oracle_test_kld_modes_two.kld").string();
  KldBase shorter = read_kld_base(base);
  shorter.n_chunk = 2;
  shorter.tokens.resize((size_t)2 * shorter.n_ctx);
  shorter.records.resize((size_t)2 * shorter.scored_per_chunk() * shorter.nv());
  write_kld_base(path, shorter);
  KldModeRequest other = k;
  other.candidate_base = path;
  try {
    run_kld_mode(other, llamacpp_options());
    FAIL("a candidate file of 2 chunks against 109 was accepted");
  } catch (const InputError& e) {
    CHECK(e.file() == path);
    CHECK(e.field() == "n_chunk");
  }
  std::filesystem::remove(path);
  KldModeRequest with_model = k;
  with_model.candidate = test::fixture("gguf/llama2xs-q4_0.gguf");
  CHECK(refusal_field(with_model, llamacpp_options()) == "--candidate-kld-base");
}
