#pragma once
// ============================================================================
// Fault injection: the table of every deliberate bug the test suite must catch
// (docs/testing.md "Faults" is generated from it and checked by test_fault_table).
// Includes nothing of ours; every layer but numerics/ may include it (numerics
// includes only the standard library, so a new fault recompiles only the files
// that plant or test faults, never the numerics every kernel is built on).
//
//   if (fault::active(Fault::SPEC_BONUS_FROM_LAST_DRAFT_ROW)) { ...planted bug... }
//
// Normal builds: active() is `return false` behind `if constexpr`, so both
// branches compile in every build and the optimiser removes the planted one.
// The instrumented build (cmake -DORACLE_FAULT_INJECTION=ON, one build for all
// faults) plants the fault whose name is in the environment variable
// ORACLE_FAULT, read once. scripts/fault_check.sh runs, for every fault, the
// tests listed here with ORACLE_FAULT=<name>: a fault counts as caught only
// when one of them fails an assertion (not a crash, timeout or missing fixture).
// Device code (nvcc's device pass) never plants a fault: kernel faults are
// planted in the host emulation of the same .cu sources.
// ============================================================================
#include <cstdlib>
#include <cstring>

#ifndef ORACLE_FAULT_INJECTION
#define ORACLE_FAULT_INJECTION 0
#endif

#if defined(__CUDACC__) && !defined(ORACLE_CUDA_EMULATION)
#define ORACLE_FAULT_HD __host__ __device__ __forceinline__
#else
#define ORACLE_FAULT_HD inline
#endif

// X(name, layer, where, what it breaks, catching tests: "exe" or "exe:catch-filter", space separated)
#define ORACLE_FAULT_TABLE(X)                                                                                    \
  X(SOFTMAX_CANONICAL_NO_MAX, "reference/sampling", "compute_probs",                                            \
    "sampling softmax exponentiates unshifted logits (overflow -> NaN)", "prop_sampler:[compute_probs]")                         \
  X(SOFTMAX_NO_MAX, "reference/compute", "ops attention_chunk",                                                  \
    "attention exponentiates unshifted scores (m_c = 0)", "test_ops")                              \
  X(BATCH_DEPENDENT_REDUCTION, "reference/compute", "ops matmul",                                                \
    "calls with more than one token sum each output sequentially instead of in 16 lanes", "prop_forward")       \
  X(BATCH_ROPE_CONSECUTIVE, "reference/compute", "forward rope_rows",                                            \
    "RoPE position of row r taken as rows[0].pos + r (right for one prefill, wrong for batch-mates)",           \
    "prop_forward")                                                                                              \
  X(KV_ROLLBACK_OFF_BY_ONE, "reference/compute", "KvCache::truncate", "truncate keeps one token too many",      \
    "prop_kv_cache")                                                                                             \
  X(PAGED_TRUNCATE_KEEPS_EXTRA_BLOCK, "reference/compute", "KvBlocks::truncate",                                  \
    "paged truncate keeps n / bs + 1 blocks: a block leaks when n is a multiple of the block size (host and device)", \
    "prop_kv_cache prop_kv_blocks:[property] test_device_kv:[device_kv]")                                          \
  X(KV_COW_SHARED_WRITE, "reference/compute", "KvBlocks copy_on_write",                                          \
    "appending into a shared or cached KV block writes into it instead of copying it (host and device caches)", \
    "prop_kv_cache prop_kv_blocks:[property] test_device_kv:[device_kv]")                                        \
  X(KV_PREFIX_OWN_BLOCK_KEY, "reference/compute", "KvBlocks prefix_key",                                         \
    "the prefix cache keys a block by its own block_size tokens, not the whole prefix up to its end",           \
    "prop_kv_cache prop_kv_blocks:[property] test_device_kv:[device_kv]")                                        \
  X(PREFIX_COW_SKIPS_CACHED, "reference/compute", "KvBlocks must_copy",                                          \
    "a prefix-cached block with one owner is written in place after a rollback into it (host and device caches)",   \
    "prop_kv_cache prop_kv_blocks:[property]")                                                                   \
  X(SPEC_ACCEPT_BY_P, "reference/generate", "accept_draft",                                                      \
    "a draft is accepted with probability p(x) instead of min(1, p(x)/q(x))", "prop_speculative")               \
  X(SPEC_RESAMPLE_FROM_P, "reference/generate", "residual",                                                     \
    "after a rejection the replacement is drawn from p instead of normalise(max(0, p - q))", "prop_speculative")\
  X(SPEC_REJECT_NO_STOP, "reference/generate", "speculative_step loop",                                          \
    "after a rejection the step keeps testing the later drafts (conditioned on the rejected one)",             \
    "prop_speculative")                                                                                          \
  X(SPEC_RNG_SAME_POSITION, "reference/generate", "speculative_step keys",                                      \
    "every draft position draws its uniforms at first.position (the counter never advances)",                  \
    "prop_speculative")                                                                                          \
  X(SPEC_BONUS_FROM_LAST_DRAFT_ROW, "reference/generate", "speculative_step bonus",                             \
    "the bonus token is drawn from p_(k-1) instead of p_k", "prop_speculative")                                  \
  X(DRAFT_ROLLBACK_KEEPS_REJECTED, "reference/generate", "ModelDrafter::catch_up",                              \
    "the draft model's cache keeps its rejected drafts (prefix length compared, not tokens)",                  \
    "prop_speculative")                                                                                          \
  X(PENALTIES_TOUCH_UNSEEN, "reference/sampling", "Penalties", "the presence penalty is applied to unseen tokens",\
    "prop_sampler")                                                                                              \
  X(PENALTY_COUNT_ONCE, "reference/sampling", "Penalties",                                                       \
    "the frequency penalty counts a repeated token once", "prop_sampler")                                        \
  X(TOP_P_BOUNDARY_EXCLUSIVE, "reference/sampling", "TopP llamacpp",                                             \
    "top-p stops at cum > p: a prefix reaching p exactly keeps one more token", "prop_sampler")                 \
  X(MIN_P_BOUNDARY_EXCLUSIVE, "reference/sampling", "MinP llamacpp",                                             \
    "min-p drops a logit equal to the threshold max + log(min_p)", "prop_sampler")                               \
  X(STOP_SINGLE_TOKEN, "reference/generate", "StopMatcher::push", "stop strings are matched within one token only",\
    "prop_stop")                                                                                                 \
  X(STOP_IGNORES_EARLIER_PARTIAL, "reference/generate", "StopMatcher::release",                                  \
    "no hold-back: stops at the first completed match", "prop_stop")                                             \
  X(STOP_PARTIAL_WINDOW_SHORT, "reference/generate", "StopMatcher::earliest_partial",                            \
    "the hold-back window is one byte short: the longest partial match is released", "prop_stop")               \
  X(TOKENIZER_KEEP_DUMMY_PREFIX, "reference/tokenizer", "Tokenizer::token_bytes",                               \
    "the SentencePiece dummy-prefix space is never stripped", "prop_tokenizer")                                  \
  X(TOKENIZER_TIE_RIGHTMOST, "reference/tokenizer", "SPM BigramOrder", "equal scores merge the rightmost pair",  \
    "prop_tokenizer test_tokenizer_conformance")                                                                 \
  X(UTF8_DROP_INVALID, "base", "Utf8Decoder::push", "invalid lead bytes dropped silently",            \
    "test_detokenizer")                                                                           \
  X(DETOK_FLUSH_EACH_TOKEN, "reference/tokenizer", "StreamingDetokenizer::push",                                \
    "an incomplete UTF-8 sequence at the end of a token is replaced instead of held back",                     \
    "prop_tokenizer test_detokenizer")                                                                           \
  X(REPLAY_IGNORES_TOLERANCE, "audit", "replay support_verdict",                                                 \
    "every token outside the support with a finite margin is called borderline", "test_replay")                 \
  X(REPLAY_TIE_WITHIN_ONE_BOUND, "audit", "replay_engines engine_tolerances",                                    \
    "a support boundary of an engine record is a tie within b instead of 2b", "test_replay_engines")             \
  X(KERNEL_TREE_ORDER, "kernels", "lane_group.cuh group_tree_sum",                                               \
    "the shuffle tree adds in reverse order (1, 2, 4, 8)", "test_kernels_emu")                                   \
  X(KERNEL_ATTN_MERGE_ORDER, "kernels", "attention.cu merge",                                                    \
    "attention chunk partials merged last to first (differs once a query sees 2 chunks: the v2 merge fma rounds one product)", \
    "test_kernels_emu test_pipeline_emu")                                                                     \
  X(KERNEL_RANK_TIES_HIGHEST, "kernels", "sampler.cu ranks_before",                                              \
    "the device rank order breaks equal values by the highest index", "test_sampler_emu")       \
  X(KERNEL_BIAS_SKIPS_LAST, "kernels", "sampler_edit.cu logit_bias", "the last logit-bias entry is not applied", \
    "test_sampler_emu")                                                                          \
  X(KERNEL_BANNED_SKIPS_LAST, "kernels", "sampler_edit.cu banned_mark",                                          \
    "the binary search misses the largest banned id", "test_sampler_emu")                        \
  X(KERNEL_PENALTY_WINDOW_SHORT, "kernels", "sampler_edit.cu penalty_count",                                     \
    "the penalty window starts one token late", "test_sampler_emu")                              \
  X(KERNEL_TEMPERATURE_RECIPROCAL, "kernels", "sampler_edit.cu temperature_rows",                                \
    "temperature as x * (1/T): two roundings instead of one division", "test_sampler_emu")      \
  X(KERNEL_COMPACT_DROPS_LAST, "kernels", "sampler_filter.cu compact",                                           \
    "compaction loses the last surviving candidate", "test_sampler_emu")                         \
  X(KERNEL_COMPACT_BLOCK_WARP_OFFSET, "kernels", "sampler_filter.cu compact_block (version 2)",                   \
    "compaction v2 leaves the previous warp's survivors out of a survivor's slot", "test_kernels_emu:[compact]")  \
  X(KERNEL_TOP_K_TIES_DROPPED, "kernels", "sampler_filter.cu top_k",                                             \
    "hf top-k drops the logits tied with the k-th", "test_sampler_emu")                          \
  X(KERNEL_TOP_P_KEEPS_EXTRA, "kernels", "sampler_filter.cu top_p",                                              \
    "llamacpp top-p keeps one rank past the one that reaches p", "test_sampler_emu")             \
  X(KERNEL_MIN_P_FIRST_AS_MAX, "kernels", "sampler_filter.cu min_p",                                             \
    "the min-p threshold is taken from candidate 0 instead of the maximum", "test_sampler_emu")  \
  X(KERNEL_LOGPROB_SUM_SEQUENTIAL, "kernels", "logprobs.cu log_softmax",                                         \
    "the log-softmax sum is one sequential sum instead of the 16-lane order", "test_sampler_emu")              \
  X(KERNEL_RMSNORM_LAST_ULP, "kernels", "rmsnorm.cu rmsnorm_kernel",                                            \
    "the last output of every RMSNorm row is one ULP off (its bits + 1)", "test_kernels_emu:[rmsnorm]")         \
  X(KERNEL_Q5_HIGH_BIT_SHIFT, "kernels", "matmul.cu q5_value",                                                   \
    "Q5_0/Q5_1 elements 16..31 take their 5th bit from the wrong qh bit", "test_kernels_emu:[matmul_stored]")    \
  X(KERNEL_K_QUANT_SCALE_PAIR, "kernels", "matmul.cu RowStored Q4_K/Q5_K",                                       \
    "Q4_K/Q5_K high nibbles use the low nibbles' (scale, min) pair", "test_kernels_emu:[matmul_stored]") \
  X(KERNEL_GGML_ACT_ROUND_AWAY, "kernels", "matmul_ggml.cu quantize_block32",                                  \
    "the device ggml-profile Q8_0/Q8_1 activation quantizer rounds halves away from zero (roundf), not to even", \
    "test_kernels_emu:[matmul_ggml]")                                                                          \
  X(KERNEL_GGML_ACT_SCALE_128, "kernels", "matmul_ggml.cu quantize_block32",                                   \
    "the device ggml-profile activation block scale is amax/128 (id 128/amax) instead of amax/127",            \
    "test_kernels_emu:[matmul_ggml]")                                                                          \
  X(KERNEL_GGML_COMBINE_REVERSED, "kernels", "matmul_ggml.cu matmul_ggml32 / matmul_ggml_k kernels",           \
    "the device ggml-profile matmul combines the per-block scale products in decreasing block order",         \
    "test_kernels_emu:[matmul_ggml]")                                                                          \
  X(TP_RANK_SUM_ORDER, "reference/compute", "forward head (tensor parallel)",                                     \
    "the last of several tensor-parallel ranks sums its LM-head rows left to right, not in 16 lanes", "test_tp") \
  X(DEVICE_BATCH_SAMPLES_ROW0, "optimized", "DeviceBatchEngine::sample",                                         \
    "every running request of a device batch step samples logits row 0 (the first request's)", "test_device_batch") \
  X(DEVICE_SEQUENCE_TRUNCATE_KEEPS_ONE, "optimized", "DeviceSequence::truncate",                                 \
    "the device rollback after a speculative round keeps one rejected position", "test_device_batch")     \
  X(DEVICE_SEQUENCE_SAMPLER_KEPT_ON_NEW_CONFIG, "optimized", "DeviceSequence::sampler_for",                    \
    "a device target keeps the last run's sampler when a speculative run brings another sampler config",        \
    "test_device_batch")                                                                                         \
  X(BACKEND_GRAPH_KEY_IGNORES_BOUND, "optimized", "Backend::run_rows step graphs",                              \
    "decode-step graphs are keyed without the attention chunk bound, so a graph captured for short contexts "   \
    "is replayed when the context has grown past it", "test_backend_graphs")                                   \
  X(FAST_GEMM_DROPS_LAST_K, "kernels", "gemm_fast.cu emulated stand-in",                                       \
    "the fast-mode GEMM leaves out the last term of every dot product (close, but not within its bound)",      \
    "test_pipeline_emu:[fast]")                                                                             \
  X(KERNEL_SCATTER_INDEX_AS_ID, "kernels", "sampler_filter.cu scatter",                                        \
    "the greedy one-hot distribution is set at the selected candidate's index instead of its id",             \
    "test_sampler_emu")                                                                                      \
  X(DEVICE_VERIFY_ROWS_FROM_ZERO, "optimized", "DeviceSequence::verify_round",                                 \
    "the device verify takes p from the pass's first logits rows, not the rows that predict the drafts",       \
    "test_device_batch")                                                                                         \
  X(GGML_ACT_ROUND_AWAY, "reference/compute", "qmatmul_ggml quantize_block32",                                 \
    "the ggml profile's Q8_0/Q8_1 activation quantizer rounds halves away from zero (roundf), not to even",    \
    "test_qmatmul_ggml")                                                                                         \
  X(GGML_ACT_SCALE_128, "reference/compute", "qmatmul_ggml quantize_block32",                                  \
    "the ggml profile's activation block scale is amax/128 (id 128/amax) instead of amax/127",                 \
    "test_qmatmul_ggml")                                                                                         \
  X(GGML_COMBINE_REVERSED, "reference/compute", "qmatmul_ggml dot_blocks32 / dot_blocks_k",                    \
    "the ggml profile combines the per-block scale products in decreasing block order",                        \
    "test_qmatmul_ggml")                                                                                         \
  X(API_ROPE_NEOX_PAIRS, "api", "ops::rope neox_to_interleaved",                                                 \
    "the Neox layout's pair (i, i + head_dim/2) is read in swapped order (the rotation's sign flips)",           \
    "test_api")

namespace oracle::fault {

enum class Fault : int {
#define ORACLE_FAULT_ENUM(name, layer, where, what, tests) name,
  ORACLE_FAULT_TABLE(ORACLE_FAULT_ENUM)
#undef ORACLE_FAULT_ENUM
};

// Names only (the descriptions expand only in faults/fault_table.cpp, so
// editing a description or a test list changes no other translation unit).
inline constexpr const char* kFaultNames[] = {
#define ORACLE_FAULT_NAME(name, layer, where, what, tests) #name,
    ORACLE_FAULT_TABLE(ORACLE_FAULT_NAME)
#undef ORACLE_FAULT_NAME
};
inline constexpr int kFaultCount = (int)(sizeof kFaultNames / sizeof kFaultNames[0]);
inline constexpr bool kInjection = ORACLE_FAULT_INJECTION != 0;

// Index of the fault named `name`, -1 if none (empty or unknown).
inline int fault_index(const char* name) {
  if (!name) return -1;
  for (int i = 0; i < kFaultCount; i++)
    if (std::strcmp(kFaultNames[i], name) == 0) return i;
  return -1;
}

// The fault ORACLE_FAULT names, read once (instrumented build only).
inline int selected_fault() {
  static const int selected = fault_index(std::getenv("ORACLE_FAULT"));
  return selected;
}

// Whether fault f is planted in this run.
ORACLE_FAULT_HD bool active(Fault f) {
#if defined(__CUDA_ARCH__)
  (void)f;
  return false;  // nvcc device pass: faults are planted in the host emulation only
#else
  if constexpr (kInjection) return selected_fault() == (int)f;
  else return false;
#endif
}

}  // namespace oracle::fault
