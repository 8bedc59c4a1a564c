# SPDX-License-Identifier: MIT
# The CHICKEN runtime of the seq suite: {build}/bench/seq/seq-chicken
# (impls chicken-plain, chicken-pipe, chicken-ucontext, chicken-baton).
# Included by bench/seq/CMakeLists.txt; skipped with a message where the
# CHICKEN binding is (cross builds, no csc/libchicken).
if(CMAKE_CROSSCOMPILING)
  message(STATUS "baton: seq-chicken skipped: cross build (no libchicken for ${CMAKE_SYSTEM_PROCESSOR})")
  return()
endif()
include(${PROJECT_SOURCE_DIR}/bindings/chicken/chicken-tools.cmake)
if(NOT BATON_CHICKEN_FOUND)
  message(STATUS "baton: seq-chicken skipped: csc, chicken.h or libchicken not found (apt install chicken-bin libchicken-dev)")
  return()
endif()

add_executable(seq-chicken ${CMAKE_CURRENT_LIST_DIR}/seq_chicken.c)
baton_chicken_add_scheme(seq-chicken ${CMAKE_CURRENT_LIST_DIR}/seq_chicken.scm)
target_include_directories(seq-chicken PRIVATE ${CMAKE_CURRENT_LIST_DIR}
  ${PROJECT_SOURCE_DIR}/bindings/chicken)
target_link_libraries(seq-chicken PRIVATE seq_harness)
set_target_properties(seq-chicken PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench/seq)
