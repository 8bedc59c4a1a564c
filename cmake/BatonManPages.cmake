# SPDX-License-Identifier: MIT
# Run after Doxygen (cmake -DMAN_DIR=... -P BatonManPages.cmake; the docs
# target of BatonDocs.cmake) on its man3 directory, to leave a set of pages
# fit to install beside every other package's:
#  - a header's page is named baton_<module>.h.3, not <module>.h.3 (a
#    name such as error.h.3 is any project's), and the .so links of its
#    functions, types and macros point there;
#  - pages named after a struct's fields (name.3, flags.3...: MAN_LINKS
#    writes one per documented member) are removed: those names belong to
#    no baton symbol, and the struct's own page documents its fields;
#  - Doxygen 1.9.4 writes @code blocks without escaping backslashes (fixed
#    in 1.9.6), so "\n" in an example would read as a troff escape: within
#    .nf/.fi blocks a backslash becomes \e;
#  - Doxygen 1.9.4 writes text's double quotes as ' and leaves a line that
#    starts with one as it is, which troff takes for a control line (the
#    line is lost): such a line starts with \& instead.
if(NOT IS_DIRECTORY "${MAN_DIR}")
  message(FATAL_ERROR "BatonManPages: no directory MAN_DIR='${MAN_DIR}'")
endif()
file(GLOB _pages "${MAN_DIR}/*")
foreach(_page IN LISTS _pages)
  get_filename_component(_name "${_page}" NAME)
  if(_name MATCHES "^(baton|BATON)_.*\\.3$")
    continue()
  elseif(_name MATCHES "^([a-z0-9_]+)\\.h\\.3$")
    file(RENAME "${_page}" "${MAN_DIR}/baton_${_name}")
  else()
    file(REMOVE "${_page}")
  endif()
endforeach()
file(GLOB _pages "${MAN_DIR}/*.3")
execute_process(
  COMMAND sed -i
    -e "s|^\\.so man3/\\([a-z0-9_]*\\.h\\.3\\)$|.so man3/baton_\\1|"
    -e "/^\\.nf$/,/^\\.fi$/s/\\\\/\\\\e/g"
    -e "s/^'/\\\\\\&'/"
    ${_pages}
  RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "BatonManPages: sed failed (${_rc})")
endif()

# A function's, type's or macro's page is a symbolic link to its header's
# page rather than a ".so" request: man -l reads either path then, from any
# directory (a .so request is resolved against the manual's root), and
# packages ship links for aliases.
file(GLOB _pages "${MAN_DIR}/*.3")
foreach(_page IN LISTS _pages)
  if(IS_SYMLINK "${_page}")
    continue()
  endif()
  file(STRINGS "${_page}" _first LIMIT_COUNT 1)
  if(_first MATCHES "^\\.so man3/(baton_[a-z0-9_]+\\.h\\.3)$")
    set(_target "${CMAKE_MATCH_1}")
    if(NOT EXISTS "${MAN_DIR}/${_target}")
      message(FATAL_ERROR "BatonManPages: ${_page} names ${_target}, which is not there")
    endif()
    file(REMOVE "${_page}")
    file(CREATE_LINK "${_target}" "${_page}" SYMBOLIC)
  endif()
endforeach()
