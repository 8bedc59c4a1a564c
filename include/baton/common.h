/* SPDX-License-Identifier: MIT */
/**
 * @file baton/common.h
 * what every public baton header shares: the export
 * marker, the version, and the error codes' definition (baton/error.h
 * holds the codes and the functions that describe them).
 *
 * @code
 *     #include <baton/common.h>
 *     #if BATON_VERSION_NUMBER >= BATON_VERSION_ENCODE(0, 2, 0)
 *         ...                            // compiled against 0.2.0 or later
 *     #endif
 *     printf("running %s\n", baton_version());   // the library loaded
 * @endcode
 *
 * Rules:
 *  1. The version follows semantic versioning: a program built against
 *     MAJOR.MINOR runs with any later MINOR of the same MAJOR.
 *  2. BATON_VERSION_* describe the headers compiled against; baton_version()
 *     the library linked (they differ when a newer shared library is
 *     installed under an older program).
 */
#ifndef BATON_COMMON_H
#define BATON_COMMON_H

/* Marks the functions libbaton exports; everything else stays hidden. */
#ifndef BATON_API
#define BATON_API __attribute__((visibility("default")))
#endif

/** The one place the version is written (CMakeLists.txt reads it here). @{ */
#define BATON_VERSION_MAJOR 0
#define BATON_VERSION_MINOR 1
#define BATON_VERSION_PATCH 0
/** @} */

/** A version as one number, to compare: MAJOR * 1000000 + MINOR * 1000 + PATCH. */
#define BATON_VERSION_ENCODE(major, minor, patch) ((major)*1000000L + (minor)*1000L + (patch))
/** The version of the headers compiled against, encoded. */
#define BATON_VERSION_NUMBER \
	BATON_VERSION_ENCODE(BATON_VERSION_MAJOR, BATON_VERSION_MINOR, BATON_VERSION_PATCH)

#define BATON_STRINGIFY_(x) #x
/** `x` expanded, as a string literal. */
#define BATON_STRINGIFY(x) BATON_STRINGIFY_(x)
/** The version of the headers compiled against, "MAJOR.MINOR.PATCH". */
#define BATON_VERSION_STRING                 \
	BATON_STRINGIFY(BATON_VERSION_MAJOR) \
	"." BATON_STRINGIFY(BATON_VERSION_MINOR) "." BATON_STRINGIFY(BATON_VERSION_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

/** "MAJOR.MINOR.PATCH" of the library linked; static, never NULL.
 * @return the version string, static */
BATON_API const char *baton_version(void);

/** BATON_VERSION_NUMBER of the library linked.
 * @return the library's version number */
BATON_API long baton_version_number(void);

#ifdef __cplusplus
}
#endif

#endif /* BATON_COMMON_H */
