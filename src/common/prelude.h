/* SPDX-License-Identifier: MIT */
/*
 * src/common/prelude.h - the small things every module of the library uses,
 * written once: branch hints, the cache line, the CPU's spin-wait hint, the
 * monotonic clock, which sanitizer is on, and the copy of a name.
 *
 * Internal names: what is shared between files but not public carries the
 * reserved prefix `baton__` when it is an extern symbol (it cannot collide
 * with a program's own names in a static libbaton.a); static inline helpers
 * here use it too, so that a reader knows they are not API.
 */
#ifndef BATON_SRC_PRELUDE_H
#define BATON_SRC_PRELUDE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define BATON_LIKELY(x) __builtin_expect(!!(x), 1)
#define BATON_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Fields written by different threads go this far apart. */
#define BATON_CACHELINE 64

/* Which sanitizer instruments this build (GCC defines __SANITIZE_*__,
 * Clang answers __has_feature). */
#if defined(__SANITIZE_ADDRESS__)
#define BATON_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BATON_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define BATON_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define BATON_TSAN 1
#endif
#endif
#ifndef BATON_ASAN
#define BATON_ASAN 0
#endif
#ifndef BATON_TSAN
#define BATON_TSAN 0
#endif

/* Inside a spin-wait loop: tell the CPU (a hyperthread sibling gets the
 * core, and the loop's exit does not mispredict a memory-order violation). */
static inline void baton__cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

/* CLOCK_MONOTONIC in nanoseconds: every deadline and duration in baton. */
static inline int64_t baton__clock_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Copy `src` into dst[cap] (cap >= 1), NUL-terminated, truncated to
 * cap - 1 bytes. Returns false if src was NULL or empty, or had to be
 * truncated: a label may be cut (a coroutine's name), an identifier is
 * refused (a stage's name) - the caller says which. */
/* Zero a small record on a hot path. For a memset of a few hundred bytes
 * of known size GCC emits `rep stos`, whose start-up alone costs tens of
 * cycles on the cores we measured: more than plain 16-byte stores. The
 * empty asm keeps the compiler from turning the loop back into a memset. */
static inline void baton__zero(void *p, size_t n)
{
	typedef long long v16 __attribute__((vector_size(16), aligned(1), may_alias));
	char *q = (char *)p;
	size_t i = 0;

	for (; i + 64 <= n; i += 64) {
		*(v16 *)(void *)(q + i) = (v16){ 0, 0 };
		*(v16 *)(void *)(q + i + 16) = (v16){ 0, 0 };
		*(v16 *)(void *)(q + i + 32) = (v16){ 0, 0 };
		*(v16 *)(void *)(q + i + 48) = (v16){ 0, 0 };
		__asm__("" : "+r"(q));
	}
	for (; i + 16 <= n; i += 16)
		*(v16 *)(void *)(q + i) = (v16){ 0, 0 };
	memset(q + i, 0, n - i);
}

static inline bool baton__name_copy(char *dst, size_t cap, const char *src)
{
	size_t n = src ? strnlen(src, cap) : 0;
	bool whole = n > 0 && n < cap;

	if (n >= cap)
		n = cap - 1;
	memcpy(dst, src ? src : "", n);
	dst[n] = '\0';
	return whole;
}

#endif /* BATON_SRC_PRELUDE_H */
