/* SPDX-License-Identifier: MIT */
/*
 * src/common/alloc.h - every allocation of the library goes through here:
 * heap blocks (baton__malloc, baton__calloc, baton__realloc,
 * baton__aligned, baton__strdup, baton__free) and mappings (baton__mmap,
 * baton__munmap). tests/common/check_alloc.py fails on a call to the C library's
 * own functions anywhere else under src/.
 *
 * One door, so that a test can close it: in a build with
 * BATON_FAULT_INJECTION (fault.h) each allocation first asks
 * baton__alloc_fails() whether it is the one to fail, and then fails the
 * way the C library would (NULL or MAP_FAILED, errno ENOMEM). In every
 * other build that question is the constant false, and these are the C
 * library's calls, inlined: release builds pay nothing.
 */
#ifndef BATON_SRC_ALLOC_H
#define BATON_SRC_ALLOC_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "config.h"

#if BATON_FAULT_INJECTION
#include "fault.h"

/* Count one allocation; true if it must fail (errno is then ENOMEM). */
bool baton__alloc_fails(void);
#else
static inline bool baton__alloc_fails(void)
{
	return false;
}
#endif

static inline void *baton__malloc(size_t size)
{
	return baton__alloc_fails() ? NULL : malloc(size);
}

static inline void *baton__calloc(size_t n, size_t size)
{
	return baton__alloc_fails() ? NULL : calloc(n, size);
}

/* As realloc: on failure `p` is left as it was. */
static inline void *baton__realloc(void *p, size_t size)
{
	return baton__alloc_fails() ? NULL : realloc(p, size);
}

/* `size` bytes aligned to `align` (a power of two, a multiple of
 * sizeof(void *)), freed with baton__free; NULL without memory. */
static inline void *baton__aligned(size_t align, size_t size)
{
	void *p;

	if (baton__alloc_fails())
		return NULL;
	return posix_memalign(&p, align, size) == 0 ? p : NULL;
}

static inline char *baton__strdup(const char *s)
{
	return baton__alloc_fails() ? NULL : strdup(s);
}

static inline void baton__free(void *p)
{
	free(p);
}

static inline void *baton__mmap(size_t size, int prot, int flags)
{
	return baton__alloc_fails() ? MAP_FAILED
				    : mmap(NULL, size, prot, flags | MAP_ANONYMOUS, -1, 0);
}

static inline void baton__munmap(void *p, size_t size)
{
	munmap(p, size);
}

#endif /* BATON_SRC_ALLOC_H */
