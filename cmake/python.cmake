# ORACLE_PYTHON (ON / OFF / AUTO): the nanobind module llm_oracle._core and the
# package llm_oracle (python/, docs/python.md). AUTO builds it when nanobind is
# importable and the Python headers are found; ON fails the configure otherwise.
set(ORACLE_HAVE_PYTHON OFF)
if(NOT ORACLE_PYTHON STREQUAL "OFF")
  find_package(Python 3.8 COMPONENTS Interpreter Development.Module QUIET)
  if(Python_FOUND)
    execute_process(COMMAND "${Python_EXECUTABLE}" -m nanobind --cmake_dir
                    OUTPUT_VARIABLE _nb_dir OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _nb_rc)
    if(_nb_rc EQUAL 0)
      set(nanobind_ROOT "${_nb_dir}")
      find_package(nanobind CONFIG QUIET)
      set(ORACLE_HAVE_PYTHON ${nanobind_FOUND})
    endif()
  endif()
  if(NOT ORACLE_HAVE_PYTHON AND ORACLE_PYTHON STREQUAL "ON")
    message(FATAL_ERROR "ORACLE_PYTHON=ON but Python headers or nanobind were not found (scripts/setup.sh: pip install nanobind)")
  endif()
endif()
message(STATUS "LLM Oracle: python module=${ORACLE_HAVE_PYTHON}")
if(ORACLE_HAVE_PYTHON)
  add_subdirectory(${PROJECT_SOURCE_DIR}/python ${CMAKE_BINARY_DIR}/python_build)
endif()
