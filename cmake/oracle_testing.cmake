# Test helpers shared by every <layer>/tests/CMakeLists.txt.

# oracle_test_environment(<tests...>): the environment every test registered here
# runs with (ORACLE_SHARED_DIR: the models and fixtures), set in this one place.
function(oracle_test_environment)
  set_tests_properties(${ARGN} PROPERTIES ENVIRONMENT "ORACLE_SHARED_DIR=${ORACLE_SHARED_DIR}")
endfunction()

# oracle_unit_test(<name> LIBS <libs...> SOURCES <files...> [LABELS <labels>])
# One executable per test, one CTest test, with oracle_test_environment.
function(oracle_unit_test name)
  cmake_parse_arguments(T "" "" "LIBS;SOURCES;LABELS" ${ARGN})
  if(NOT T_LABELS)
    set(T_LABELS unit)
  endif()
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE oracle_catch_main ${T_LIBS})
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}")
  oracle_test_environment(${name})
endfunction()

# oracle_backend_test(<emu name> SOURCES <files...> EMU_LIBS <libs...> CUDA_LIBS <libs...>
#                     [CUDA_NAME <name>] [CUDA_SOURCES <files...>])
# One test source, registered once for every backend this build has, each test
# binary linking its own backend's library directly (docs/design.md "Backends"):
# <emu name> on the host emulation (labels emu;unit) and, when CUDA is on,
# <CUDA_NAME> (default: <emu name> with a trailing _emu replaced by _cuda, else
# + _cuda) on the real kernels (label gpu; exits 77, reported skipped, without a
# GPU). Both get oracle_test_environment; CUDA_SOURCES defaults to SOURCES.
function(oracle_backend_test name)
  cmake_parse_arguments(T "" "CUDA_NAME" "SOURCES;EMU_LIBS;CUDA_LIBS;CUDA_SOURCES" ${ARGN})
  oracle_unit_test(${name} LIBS ${T_EMU_LIBS} SOURCES ${T_SOURCES} LABELS "emu;unit")
  if(NOT ORACLE_HAVE_CUDA)
    return()
  endif()
  if(NOT T_CUDA_NAME)
    string(REGEX REPLACE "_emu$" "" base ${name})
    set(T_CUDA_NAME ${base}_cuda)
  endif()
  if(NOT T_CUDA_SOURCES)
    set(T_CUDA_SOURCES ${T_SOURCES})
  endif()
  add_executable(${T_CUDA_NAME} ${T_CUDA_SOURCES})
  target_link_libraries(${T_CUDA_NAME} PRIVATE oracle_catch_main ${T_CUDA_LIBS})
  add_test(NAME ${T_CUDA_NAME} COMMAND sh -c "nvidia-smi -L >/dev/null 2>&1 || exit 77; exec \"$0\""
                                        $<TARGET_FILE:${T_CUDA_NAME}>)
  set_tests_properties(${T_CUDA_NAME} PROPERTIES LABELS "gpu" SKIP_RETURN_CODE 77)
  oracle_test_environment(${T_CUDA_NAME})
endfunction()
