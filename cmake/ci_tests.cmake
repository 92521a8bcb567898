# CI-only test registrations, in one place (docs/testing.md): the labels the
# default run excludes (`fault`, `sanitize`, `fuzz`, `matrix`) — each builds its
# own copy of the project — run by .ci/run as separate steps.
# Included by the top-level CMakeLists.txt after every test folder.

# ---- fault injection (label "fault"; docs/testing.md "Faults") -------------------------
# One instrumented build (build/fault/build, -DORACLE_FAULT_INJECTION=ON) of every
# catching test in faults/fault.h; a clean control run of each, then each fault's
# tests with ORACLE_FAULT=<name>. Passes iff the control passes and every fault
# is caught by a failed assertion (scripts/fault_check.sh).
add_test(NAME fault_injection COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/fault_check.sh)
set_tests_properties(fault_injection PROPERTIES LABELS "fault" TIMEOUT 5400 RESOURCE_LOCK fault_build
                     ENVIRONMENT "FAULT_ROOT=${CMAKE_BINARY_DIR}/fault;ORACLE_SHARED_DIR=${ORACLE_SHARED_DIR};FAULT_EXTRA_TARGETS=oracle")

# ---- sanitizers and fuzzing (own builds; CI runs them as extra steps) ---------------
add_test(NAME sanitize_asan_ubsan COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/sanitize.sh)
set_tests_properties(sanitize_asan_ubsan PROPERTIES LABELS "sanitize" TIMEOUT 5400
                     ENVIRONMENT "SANITIZE_DIR=${CMAKE_BINARY_DIR}/asan;ORACLE_SHARED_DIR=${ORACLE_SHARED_DIR}")
add_test(NAME fuzz_smoke COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/fuzz_smoke.sh)
set_tests_properties(fuzz_smoke PROPERTIES LABELS "fuzz" TIMEOUT 3600
                     ENVIRONMENT "FUZZ_DIR=${CMAKE_BINARY_DIR}/asan;ORACLE_SHARED_DIR=${ORACLE_SHARED_DIR}")

# Fault localisation: a planted kernel fault is named by `oracle diff` (the
# instrumented build of fault_injection, scripts/fault_check.sh --build-only oracle).
function(oracle_diff_fault fault op min_pos)
  add_test(NAME diff_fault_${fault}
           COMMAND bash ${PROJECT_SOURCE_DIR}/tools/tests/diff_fault.sh ${fault} ${op} ${min_pos})
  set_tests_properties(diff_fault_${fault} PROPERTIES LABELS "fault" TIMEOUT 1800 RESOURCE_LOCK fault_build
                       ENVIRONMENT "FAULT_ROOT=${CMAKE_BINARY_DIR}/fault;ORACLE_SHARED_DIR=${ORACLE_SHARED_DIR}")
endfunction()
oracle_diff_fault(KERNEL_ATTN_MERGE_ORDER "blk\\.0\\.attn_out" 32)
oracle_diff_fault(KERNEL_TREE_ORDER "blk\\.0\\.attn_norm" 0)

# The determinism matrix builds the oracle three times (g++ -O3, g++ -O0,
# clang++ -O3): excluded from the default run, CI runs it as its own step.
add_test(NAME determinism_matrix
         COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/determinism_matrix.sh)
set_tests_properties(determinism_matrix PROPERTIES LABELS "matrix" TIMEOUT 3600
                     ENVIRONMENT "MATRIX_DIR=${CMAKE_BINARY_DIR}/matrix")
