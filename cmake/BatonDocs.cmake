# SPDX-License-Identifier: MIT
# The reference manual from the public headers' comments, by Doxygen
# (docs/Doxyfile.in): a section-3 man page per public function and type in
# ${BATON_DOCS_DIR}/man/man3 and an HTML reference in ${BATON_DOCS_DIR}/html.
# Target `docs`, part of the default build when Doxygen is found
# (BATON_BUILD_DOCS); the man pages are installed into
# ${CMAKE_INSTALL_MANDIR}/man3. Without Doxygen there is no docs target and
# the test `manpages` is not registered.
option(BATON_BUILD_DOCS "build the man pages and HTML reference (if Doxygen is found)" ON)
# A public symbol left undocumented, a @param that names no parameter...
# fail the docs build.
option(BATON_DOCS_WERROR "Doxygen warnings fail the docs build" ON)
set(BATON_DOCS_DIR ${PROJECT_BINARY_DIR}/docs CACHE PATH
    "where the docs target writes man/ and html/ (make docs: build/docs)")
set(BATON_HAVE_DOCS OFF)
if(NOT BATON_BUILD_DOCS)
  return()
endif()
find_package(Doxygen QUIET)
if(NOT DOXYGEN_FOUND)
  message(STATUS "Doxygen not found: no docs target, no man pages")
  return()
endif()
set(BATON_HAVE_DOCS ON)

if(BATON_DOCS_WERROR)
  set(BATON_DOCS_WARN_AS_ERROR FAIL_ON_WARNINGS)
else()
  set(BATON_DOCS_WARN_AS_ERROR NO)
endif()
configure_file(${PROJECT_SOURCE_DIR}/docs/Doxyfile.in ${BATON_DOCS_DIR}/Doxyfile @ONLY)
file(GLOB _baton_public_headers CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/include/baton/*.h)
# Pages of a symbol since removed must not linger: each run starts afresh.
add_custom_command(
  OUTPUT ${BATON_DOCS_DIR}/docs.stamp
  COMMAND ${CMAKE_COMMAND} -E rm -rf ${BATON_DOCS_DIR}/man ${BATON_DOCS_DIR}/html
  COMMAND Doxygen::doxygen ${BATON_DOCS_DIR}/Doxyfile
  COMMAND ${CMAKE_COMMAND} -DMAN_DIR=${BATON_DOCS_DIR}/man/man3
          -P ${PROJECT_SOURCE_DIR}/cmake/BatonManPages.cmake
  COMMAND ${CMAKE_COMMAND} -E touch ${BATON_DOCS_DIR}/docs.stamp
  DEPENDS ${_baton_public_headers} ${BATON_DOCS_DIR}/Doxyfile
          ${PROJECT_SOURCE_DIR}/cmake/BatonManPages.cmake
  WORKING_DIRECTORY ${BATON_DOCS_DIR}
  COMMENT "Doxygen: man pages and HTML reference in ${BATON_DOCS_DIR}"
  VERBATIM)
add_custom_target(docs ALL DEPENDS ${BATON_DOCS_DIR}/docs.stamp)

install(DIRECTORY ${BATON_DOCS_DIR}/man/man3 DESTINATION ${CMAKE_INSTALL_MANDIR} OPTIONAL)
