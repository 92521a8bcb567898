# CI-only test registrations, in one place (docs/testing.md): the labels the
# default run excludes (`fault`, `sanitize`, `fuzz`, `matrix`) — each builds its
# own copy of the project — run by .ci/run as separate steps.
# Included by the top-level CMakeLists.txt after every test folder.

# ---- fault injection (label "fault"; docs/testing.md has the table) ----------------
# fault_<NAME>: builds <test> with -DORACLE_FAULT=<NAME> in its own folder and
# passes iff the test FAILS. fault_NONE builds the same way without a fault and
# passes iff the test passes. The builds share a ccache, so they run one at a time.
function(oracle_fault name test)
  add_test(NAME fault_${name}
           COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/fault_check.sh ${name} ${test} ${ARGN})
  set_tests_properties(fault_${name} PROPERTIES LABELS "fault" TIMEOUT 1800 RESOURCE_LOCK fault_build
                       ENVIRONMENT "FAULT_ROOT=${CMAKE_BINARY_DIR}/fault;ORACLE_SHARED_DIR=${ORACLE_SHARED_DIR}")
endfunction()

oracle_fault(NONE prop_softmax)
oracle_fault(SOFTMAX_CANONICAL_NO_MAX prop_softmax)
oracle_fault(SOFTMAX_NO_MAX test_ops)
oracle_fault(BATCH_DEPENDENT_REDUCTION prop_forward)
oracle_fault(KV_ROLLBACK_OFF_BY_ONE prop_kv_cache)
oracle_fault(PAGED_COW_SHARED_WRITE prop_kv_cache)
oracle_fault(SPEC_RESAMPLE_FROM_P prop_speculative)
oracle_fault(SPEC_ACCEPT_BY_P prop_speculative)
oracle_fault(STOP_IGNORES_EARLIER_PARTIAL prop_stop)
oracle_fault(STOP_SINGLE_TOKEN prop_stop)
oracle_fault(PENALTIES_TOUCH_UNSEEN prop_sampler)
oracle_fault(TOKENIZER_KEEP_DUMMY_PREFIX prop_tokenizer)
oracle_fault(TOKENIZER_TIE_RIGHTMOST test_tokenizer_conformance)
oracle_fault(UTF8_DROP_INVALID test_detokenizer)
oracle_fault(KERNEL_TREE_ORDER test_kernels_emu)

# ---- sanitizers and fuzzing (own builds; CI runs them as extra steps) ---------------
add_test(NAME sanitize_asan_ubsan COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/sanitize.sh)
set_tests_properties(sanitize_asan_ubsan PROPERTIES LABELS "sanitize" TIMEOUT 5400
                     ENVIRONMENT "SANITIZE_DIR=${CMAKE_BINARY_DIR}/asan;ORACLE_SHARED_DIR=${ORACLE_SHARED_DIR}")
add_test(NAME fuzz_smoke COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/fuzz_smoke.sh)
set_tests_properties(fuzz_smoke PROPERTIES LABELS "fuzz" TIMEOUT 3600
                     ENVIRONMENT "FUZZ_DIR=${CMAKE_BINARY_DIR}/asan;ORACLE_SHARED_DIR=${ORACLE_SHARED_DIR}")

# Fault localisation: a planted kernel fault is named by `oracle diff` (own
# CUDA-less fault build of `oracle`, shared ccache with the fault_* tests).
function(oracle_diff_fault fault op min_pos)
  add_test(NAME diff_fault_${fault}
           COMMAND bash ${PROJECT_SOURCE_DIR}/tools/tests/diff_fault.sh ${fault} ${op} ${min_pos})
  set_tests_properties(diff_fault_${fault} PROPERTIES LABELS "fault" TIMEOUT 1800 RESOURCE_LOCK fault_build
                       ENVIRONMENT "FAULT_ROOT=${CMAKE_BINARY_DIR}/fault;ORACLE_SHARED_DIR=${ORACLE_SHARED_DIR}")
endfunction()
oracle_diff_fault(KERNEL_ATTN_MERGE_ORDER "blk\\.0\\.attn_out" 64)
oracle_diff_fault(KERNEL_TREE_ORDER "blk\\.0\\.attn_norm" 0)

# The determinism matrix builds the oracle three times (g++ -O3, g++ -O0,
# clang++ -O3): excluded from the default run, CI runs it as its own step.
add_test(NAME determinism_matrix
         COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/determinism_matrix.sh)
set_tests_properties(determinism_matrix PROPERTIES LABELS "matrix" TIMEOUT 3600
                     ENVIRONMENT "MATRIX_DIR=${CMAKE_BINARY_DIR}/matrix")
