// oracle perplexity: one model's perplexity on a corpus, chunked like
// llama-perplexity (docs/certify.md#perplexity).
//   oracle perplexity -m MODEL -f CORPUS [-c CTX] [--protocol llamacpp|full] [--json]
// The chunks and the statistics are certify's (audit/certify/certify.h) with the
// model as its own candidate, so the numbers equal certify's "PPL reference".
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "audit/certify/certify.h"
#include "base/errors.h"
#include "base/sha256.h"
#include "tools/commands.h"
#include "tools/model_args.h"
#include "tools/progress.h"

namespace oracle::tools {

struct PerplexityOptions {
  ModelOptions model;
  std::string corpus;
  CertifyOptions options;
  std::string protocol = "llamacpp";  // --protocol (parsed into options.protocol)
  bool json = false, quiet = false;
};

static int run_perplexity(PerplexityOptions a) {
  a.options.protocol = parse_protocol(a.protocol);
  std::ifstream in(a.corpus, std::ios::binary);
  require_input(in.good(), a.corpus, "--corpus", "cannot open the corpus");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string corpus = ss.str();
  a.model.context = a.options.ctx;
  LoadedModel lm = load_model_and_tokenizer(a.model);
  lm.model.vocab = lm.tokenizer.vocab();
  a.options.greedy_prompts = 0;  // one model: no greedy agreement
  a.options.threads = a.model.threads;  // chunks in parallel (changes no number)
  Progress progress("perplexity", 0, !a.quiet && !a.json);
  a.options.progress = [&progress](int done, int total) { progress.update(done, total); };
  const CertifyResult r = certify(lm.model, lm.model, corpus, a.options);
  progress.finish();
  const MeanSe& ppl = r.summary.perplexity.ppl_ref;
  if (a.json) {
    const nlohmann::json j = {{"model", lm.model.path}, {"model_sha256", lm.model.sha256},
                              {"corpus", a.corpus}, {"corpus_sha256", sha256_hex(corpus.data(), corpus.size())},
                              {"protocol", protocol_name(r.protocol)}, {"ctx", r.ctx}, {"chunks", r.chunks},
                              {"tokens_scored", r.summary.n}, {"ppl", ppl.mean}, {"ppl_se", ppl.se}};
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("%s: protocol %s, ctx %d, %d chunks, %lld scored tokens\n", lm.model.path.c_str(), protocol_name(r.protocol),
                r.ctx, r.chunks, (long long)r.summary.n);
    std::printf("Final estimate: PPL = %.4f +/- %.5f\n", ppl.mean, ppl.se);
  }
  return kExitOk;
}

Command setup_perplexity(CLI::App& app) {
  auto a = std::make_shared<PerplexityOptions>();
  auto* sub = app.add_subcommand("perplexity", "Perplexity of one model on a corpus (llama-perplexity's chunks)");
  add_model_options(sub, a->model);
  sub->add_option("--corpus", a->corpus, "UTF-8 text to score")->required();
  sub->add_option("--ctx", a->options.ctx, "Tokens per chunk");
  sub->add_option("--protocol", a->protocol, "llamacpp (llama-perplexity: score the second half of each chunk) "
                  "or full (every position)");
  sub->add_option("--max-chunks", a->options.max_chunks, "Score at most this many chunks (0: all)");
  sub->add_flag("--json", a->json, "Print one JSON object");
  sub->add_flag("--quiet,-q", a->quiet, "No progress on stderr");
  return {sub, [a] { return run_perplexity(*a); }};
}

}  // namespace oracle::tools
