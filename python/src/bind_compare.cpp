// llm_oracle.compare / certify / ulp_distance (include/llm_oracle/compare.h, certify.h).
// _core.compare_logits returns `oracle compare --json`'s text and its markdown;
// llm_oracle/__init__.py wraps them in the dict-like Report.
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "arrays.h"
#include "bindings.h"
#include "llm_oracle/certify.h"
#include "llm_oracle/compare.h"

namespace llm_oracle::py {

namespace {

// (rows, vocab) of two float32 arrays of the same 1-D or 2-D shape.
std::pair<int, int> rows_vocab(const InArray& a, const InArray& b, const char* op, const char* a_name,
                               const char* b_name) {
  const auto as = check_array(a, a_name, Kind::F32, 1, 2);
  const auto bs = check_array(b, b_name, Kind::F32, 1, 2);
  if (as != bs) throw InputError(op, "shape", std::string(a_name) + " is " + shape_text(as) + " but " + b_name + " is " + shape_text(bs));
  return {as.size() == 2 ? (int)as[0] : 1, (int)as.back()};
}

nb::dict mean_se(const MeanSe& m) {
  nb::dict d;
  d["mean"] = m.mean, d["se"] = m.se;
  return d;
}

nb::dict stats_dict(const CertifyStats& s) {
  nb::dict d;
  d["n"] = s.n, d["kld"] = mean_se(s.kld), d["kld_percentiles"] = s.kld_percentiles;
  d["same_top"] = mean_se(s.same_top), d["dp_top"] = mean_se(s.dp_top), d["dp_next"] = mean_se(s.dp_next);
  d["rms_dp_top"] = mean_se(s.rms_dp_top), d["rms_dp_next"] = mean_se(s.rms_dp_next);
  d["ppl_ref"] = mean_se(s.ppl_ref), d["ppl_cand"] = mean_se(s.ppl_cand), d["ln_ratio"] = mean_se(s.ln_ratio);
  d["ratio"] = mean_se(s.ratio), d["difference"] = mean_se(s.difference), d["correlation"] = s.correlation;
  d["per_row_kld"] = s.per_row_kld;
  return d;
}

}  // namespace

void bind_compare(nb::module_& m) {
  using namespace nb::literals;
  m.def("ulp_distance", &ulp_distance, "a"_a, "b"_a, "Representable float32 values between a and b.");
  m.def("compare_tensor",
        [](InArray want, InArray got) {
          rows_vocab(want, got, "compare", "want", "got");
          const TensorStats s = compare_tensor({f32_data(want), want.size()}, {f32_data(got), got.size()});
          nb::dict d;
          d["bit_equal"] = s.bit_equal, d["first_diff"] = s.first_diff, d["max_abs"] = s.max_abs;
          d["max_ulp"] = s.max_ulp, d["nmse"] = s.nmse, d["max_abs_want"] = s.max_abs_want;
          return d;
        },
        "want"_a.noconvert(), "got"_a.noconvert());
  m.def("compare_logits",
        [](InArray want, InArray got, std::vector<int> tokens, double max_kld, int max_flips, double tie_rel,
           double max_abs, double max_nmse, int64_t max_ulp, const std::string& want_name, const std::string& got_name) {
          auto [steps, vocab] = rows_vocab(want, got, "compare", "want", "got");
          CompareReport r;
          {
            nb::gil_scoped_release release;
            r = compare_logits({f32_data(want), want.size()}, {f32_data(got), got.size()}, steps, vocab, tokens,
                               CompareThresholds{max_kld, max_flips, tie_rel, max_abs, max_nmse, max_ulp}, want_name,
                               got_name);
          }
          return std::make_pair(r.json, r.markdown);
        },
        "want"_a.noconvert(), "got"_a.noconvert(), "tokens"_a = std::vector<int>{}, "max_kld"_a = 1e-4,
        "max_flips"_a = 0, "tie_rel"_a = 1e-4, "max_abs"_a = -1.0, "max_nmse"_a = -1.0, "max_ulp"_a = -1,
        "want_name"_a = "reference", "got_name"_a = "candidate");
  m.def("certify_stats",
        [](InArray ref, InArray cand, std::vector<int> next) {
          auto [rows, vocab] = rows_vocab(ref, cand, "certify", "reference", "candidate");
          CertifyStats s;
          {
            nb::gil_scoped_release release;
            s = certify_stats({f32_data(ref), ref.size()}, {f32_data(cand), cand.size()}, rows, vocab, next);
          }
          return stats_dict(s);
        },
        "reference"_a.noconvert(), "candidate"_a.noconvert(), "next"_a);
  m.def("certify_models",
        [](const Model& reference, const Model& candidate, const std::string& corpus, const std::string& protocol,
           int ctx, int threads, int max_chunks, int greedy_prompts, int greedy_prompt_tokens, int greedy_steps) {
          CertifyConfig c{protocol, ctx, threads, max_chunks, greedy_prompts, greedy_prompt_tokens, greedy_steps};
          CertifyResult r;
          {
            nb::gil_scoped_release release;
            r = certify(reference, candidate, corpus, c);
          }
          nb::dict d = stats_dict(r.stats);
          d["chunks"] = r.chunks, d["corpus_tokens"] = r.corpus_tokens;
          nb::dict g;
          g["mean_first_divergence"] = r.greedy_mean_first_divergence;
          g["fraction_identical"] = r.greedy_fraction_identical;
          g["first_divergence"] = r.greedy_first_divergence;
          d["greedy"] = g;
          return d;
        },
        "reference"_a, "candidate"_a, "corpus"_a, "protocol"_a = "full", "ctx"_a = 128, "threads"_a = 1,
        "max_chunks"_a = 0, "greedy_prompts"_a = 16, "greedy_prompt_tokens"_a = 16, "greedy_steps"_a = 32);
}

}  // namespace llm_oracle::py
