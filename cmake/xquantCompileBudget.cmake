# xquantCompileBudget.cmake — the compile-time budget check (tools/compile_budget.py; its
# docstring defines it, tools/README.md has the figures). Included from the top-level
# CMakeLists.txt when XQ_BUILD_TESTS is ON, before the tests and examples are added.
#
#   -DXQ_COMPILE_BUDGET=ON          registers the CTest test `compile_budget` (label
#                                   compile_budget, RUN_SERIAL): the umbrella header within
#                                   1.5x its dependencies, the README example and the
#                                   Fashion-MNIST QAT example within 3x theirs (+ one xtensor
#                                   expression), in CPU seconds: the median ratio of 3
#                                   paired runs (a TU over its budget gets up to 3 more: --confirm).
#   -DXQ_COMPILE_BUDGET_ARGS=...    extra arguments of the script, a ;-list
#                                   (--report-only;--repeat;5). `XQ_COMPILE_BUDGET_REPORT_ONLY=1
#                                   ctest -L compile_budget` reports without failing too.
#
# Each TU is compiled with the very command the build uses for it: CMake's
# compile_commands.json, which this module turns on (CMAKE_EXPORT_COMPILE_COMMANDS, read when
# a target is created: hence the include before add_subdirectory(tests) and (examples)).
# The test is added once the top-level directory is done, for the TUs whose targets exist.

option(XQ_COMPILE_BUDGET "Register the compile_budget test (tools/compile_budget.py)" OFF)
set(XQ_COMPILE_BUDGET_ARGS "" CACHE STRING
    "Extra arguments of tools/compile_budget.py in the compile_budget test (a ;-list, e.g. --report-only)")

if(XQ_COMPILE_BUDGET)
  find_package(Python3 COMPONENTS Interpreter REQUIRED)
  set(CMAKE_EXPORT_COMPILE_COMMANDS ON)

  # The first source of `target`, as an absolute path ("" when the target does not exist).
  function(_xq_budget_source target out)
    set(_src "")
    if(TARGET ${target})
      get_target_property(_sources ${target} SOURCES)
      get_target_property(_dir ${target} SOURCE_DIR)
      list(GET _sources 0 _src)
      cmake_path(ABSOLUTE_PATH _src BASE_DIRECTORY "${_dir}")
    endif()
    set(${out} "${_src}" PARENT_SCOPE)
  endfunction()

  function(_xq_add_compile_budget_test)
    set(_args
      --compile-commands "${PROJECT_BINARY_DIR}/compile_commands.json"
      --work-dir "${PROJECT_BINARY_DIR}/compile_budget"
      --umbrella "xquant/xquant.hpp:1.5")
    # The umbrella is compiled with the flags of its header-check TU in separate-compilation
    # mode (xq_add_header_check; XQ_SEPARATE_COMPILATION, as the programs measured below: they
    # link xquant::compiled).
    _xq_budget_source(xquant_header_check_separate _check)
    if(_check)
      get_filename_component(_check_dir "${_check}" DIRECTORY)
      list(APPEND _args --umbrella-flags-from "${_check_dir}/xquant_xquant_hpp.cpp")
    endif()
    set(_tus)
    foreach(_tu "readme=readme_example" "qat=fashion_mnist_qat")
      string(REPLACE "=" ";" _pair "${_tu}")
      list(GET _pair 0 _name)
      list(GET _pair 1 _target)
      _xq_budget_source(${_target} _src)
      if(_src)
        list(APPEND _args --tu "${_name}=${_src}:3")
        list(APPEND _tus ${_name})
      else()
        message(STATUS "xquant: compile_budget: no target ${_target}, TU ${_name} not measured")
      endif()
    endforeach()
    if(NOT _tus AND NOT _check)
      message(WARNING "xquant: compile_budget: nothing to take flags from; test not registered")
      return()
    endif()
    add_test(NAME compile_budget
             COMMAND "${Python3_EXECUTABLE}" "${PROJECT_SOURCE_DIR}/tools/compile_budget.py"
                     ${_args} ${XQ_COMPILE_BUDGET_ARGS})
    # Serial: a compile that shares the cores measures more CPU seconds than one alone.
    # About 6 minutes on 2 cores of an AMD EPYC today; the timeout leaves room for slower CI.
    set_tests_properties(compile_budget PROPERTIES
      LABELS compile_budget
      RUN_SERIAL TRUE
      TIMEOUT 3600)
    list(JOIN _tus " " _shown)
    message(STATUS "xquant: compile_budget test: umbrella ${_shown} ${XQ_COMPILE_BUDGET_ARGS}")
  endfunction()

  cmake_language(DEFER CALL _xq_add_compile_budget_test)
endif()
