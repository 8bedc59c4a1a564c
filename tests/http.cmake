# The HTTP/1.1 request parser of baton-httpd (src/http/http_parse.h,
# docs/http-parser.md): unit tests, and a bounded libFuzzer run.
#
# The tests link the parser's object library (the library's own objects),
# so they reach its internal calls, hidden in libbaton.
baton_add_test(test_http_parse TIMEOUT 120 LIBS baton_http_parser)
baton_add_test(test_http_chunked TIMEOUT 120 LIBS baton_http_parser)
baton_add_test(test_http_uri TIMEOUT 60 LIBS baton_http_parser)

# libFuzzer needs clang; the project compiles with gcc, so the fuzzer is a
# custom command. Skipped when cross-compiling (no clang runtime for the
# target) and under the sanitizer builds (the fuzzer has its own ASan+UBSan).
find_program(BATON_CLANG NAMES clang clang-14)
if(CMAKE_CROSSCOMPILING)
  message(STATUS "http fuzzer: skipped (cross-compiling)")
elseif(NOT BATON_CLANG)
  message(STATUS "http fuzzer: skipped (no clang; apt-get install clang libclang-rt-14-dev)")
elseif(BATON_SANITIZE)
  message(STATUS "http fuzzer: skipped in the BATON_SANITIZE=${BATON_SANITIZE} build")
else()
  set(_fuzz_bin ${CMAKE_CURRENT_BINARY_DIR}/fuzz/fuzz_http)
  file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fuzz)
  set(_fuzz_dir ${CMAKE_CURRENT_SOURCE_DIR}/fuzz)
  add_custom_command(OUTPUT ${_fuzz_bin}
    COMMAND ${BATON_CLANG} -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined
            -fno-sanitize-recover=all -I${PROJECT_SOURCE_DIR}/src/http
            -I${PROJECT_SOURCE_DIR}/include
            -o ${_fuzz_bin} ${_fuzz_dir}/fuzz_http.c ${BATON_HTTP_PARSER_SOURCES}
    DEPENDS ${_fuzz_dir}/fuzz_http.c ${BATON_HTTP_PARSER_SOURCES}
            ${PROJECT_SOURCE_DIR}/src/http/http_parse.h ${PROJECT_SOURCE_DIR}/src/http/http_ctype.h
    COMMENT "Building the HTTP parser fuzzer with clang (libFuzzer)"
    VERBATIM)
  add_custom_target(fuzz_http ALL DEPENDS ${_fuzz_bin})
  # A bounded run over the seed corpus: new inputs go to a scratch corpus
  # in the build tree, the seeds stay untouched. Any crash fails the test.
  # A fixed seed keeps the test command reproducible; the documented long
  # run (docs/http-parser.md) explores with fresh seeds.
  set(_fuzz_work ${CMAKE_CURRENT_BINARY_DIR}/fuzz-corpus)
  file(MAKE_DIRECTORY ${_fuzz_work})
  add_test(NAME fuzz_http_bounded
    COMMAND ${_fuzz_bin} -seed=1 -max_total_time=20 -timeout=10 -rss_limit_mb=1024
            -dict=${_fuzz_dir}/http.dict -artifact_prefix=${CMAKE_CURRENT_BINARY_DIR}/fuzz-
            -print_final_stats=1 ${_fuzz_work} ${_fuzz_dir}/corpus)
  set_tests_properties(fuzz_http_bounded PROPERTIES LABELS fuzz TIMEOUT 120)
endif()

# The server's public calls without clients (the pytest suites in
# tests/http/ run it for real).
baton_add_test(test_http_server LABELS threads TIMEOUT 120)

# baton-httpd's /_stats writer, a file of the program (apps/httpd).
baton_add_test(test_httpd_json SOURCES test_httpd_json.c
  ${PROJECT_SOURCE_DIR}/apps/httpd/stats_json.c)
target_include_directories(test_httpd_json PRIVATE ${PROJECT_SOURCE_DIR}/apps/httpd)
