# Test helpers shared by every <layer>/tests/CMakeLists.txt.
# oracle_unit_test(<name> LIBS <libs...> SOURCES <files...> [LABELS <labels>])
# One executable per test, one CTest test, ORACLE_SHARED_DIR in its environment.
function(oracle_unit_test name)
  cmake_parse_arguments(T "" "" "LIBS;SOURCES;LABELS" ${ARGN})
  if(NOT T_LABELS)
    set(T_LABELS unit)
  endif()
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE oracle_catch_main ${T_LIBS})
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}"
                       ENVIRONMENT "ORACLE_SHARED_DIR=${ORACLE_SHARED_DIR}")
endfunction()
