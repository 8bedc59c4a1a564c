# The public contract's mechanical parts: error codes and version.
baton_add_test(test_error)
target_compile_definitions(test_error PRIVATE
  BATON_TEST_PROJECT_VERSION="${PROJECT_VERSION}")

# Every global symbol of the library is public API or baton__-prefixed.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_FOUND AND CMAKE_NM)
  add_test(NAME symbols
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/check_symbols.py
            ${CMAKE_NM} $<TARGET_FILE:baton> ${PROJECT_SOURCE_DIR}/include/baton)
  set_tests_properties(symbols PROPERTIES LABELS unit TIMEOUT 60)
endif()

# The switch's assembly says it supports no CET/BTI (readelf -n reads it).
if(Python3_FOUND AND CMAKE_READELF AND NOT BATON_SWITCH_UCONTEXT)
  add_test(NAME cet_notes
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/check_cet.py
            ${CMAKE_READELF} "$<TARGET_OBJECTS:baton>"
    COMMAND_EXPAND_LISTS)
  set_tests_properties(cet_notes PROPERTIES LABELS unit TIMEOUT 60)
endif()

# Above the coroutine layer, no function keeps a thread-local address
# across a wait after which its task may be on another thread (checked in
# the AArch64 and x86-64 disassembly).
if(CMAKE_SYSTEM_PROCESSOR MATCHES "aarch64|arm64")
  set(BATON_TLS_ARCH aarch64)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  set(BATON_TLS_ARCH x86_64)
endif()
if(Python3_FOUND AND CMAKE_OBJDUMP AND BATON_TLS_ARCH)
  add_test(NAME tls_after_wait
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/check_tls.py
            ${CMAKE_OBJDUMP} ${BATON_TLS_ARCH} "$<TARGET_OBJECTS:baton>"
    COMMAND_EXPAND_LISTS)
  set_tests_properties(tls_after_wait PROPERTIES LABELS unit TIMEOUT 60)
endif()

# Every allocation of the library goes through src/common/alloc.h, where
# the allocation-failure mode can reach it.
if(Python3_FOUND)
  add_test(NAME alloc_sites
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/check_alloc.py
            ${PROJECT_SOURCE_DIR}/src)
  set_tests_properties(alloc_sites PROPERTIES LABELS unit TIMEOUT 60)
endif()

# The allocation-failure mode (src/common/fault.h): every allocation of
# each scenario failed in turn, then every N-th (tests/fault_test.h).
if(BATON_FAULT_INJECTION)
  baton_add_test(test_faults LABELS threads TIMEOUT 600)
  baton_add_test(test_faults_stage LABELS threads TIMEOUT 600)
  # The server's reactor again on epoll (io_uring is tried first).
  add_test(NAME test_faults_stage_epoll COMMAND test_faults_stage)
  set_tests_properties(test_faults_stage_epoll PROPERTIES LABELS "unit;threads" TIMEOUT 600
    ENVIRONMENT "BATON_IO_BACKEND=epoll")
endif()
# The claims of baton/coro.h checked one by one (attributes, copy-stack
# costs); it starts a scheduler's worker thread.
baton_add_test(test_promise_coro LABELS threads)
