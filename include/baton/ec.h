/* SPDX-License-Identifier: MIT */
/**
 * @file baton/ec.h
 * event counts: a version counter that threads can sleep on
 * until it changes, without lost wake-ups and without a system call on the
 * increment when nobody sleeps.
 *
 * A waiter reads the version, looks at the data the version guards, and if
 * there is nothing to do, sleeps until the version differs from the one it
 * read. A producer changes the data, then increments the version; only when
 * a waiter has announced itself (the sleepers flag) does the increment pay
 * for a futex wake.
 *
 * @code
 *     baton_ec_t ec = BATON_EC_INITIALIZER;
 *
 *     // consumer                              // producer
 *     for (;;) {                               push(queue, item);
 *         uint32_t v = baton_ec_value(&ec);    baton_ec_inc(&ec);
 *         if ((item = pop(queue)) != NULL)
 *             break;
 *         baton_ec_wait(&ec, v, -1);
 *     }
 * @endcode
 *
 * Layout: one 32-bit word. Bit 31 is the sleepers flag, bits 0..30 the
 * version. The version wraps from 0x7fffffff to 0; a waiter only compares
 * for equality, so wrap-around is harmless unless exactly 2^31 increments
 * happen between its read and its check (it then sleeps until the next
 * one).
 *
 * Rules a caller must keep:
 *  1. baton_ec_inc() may be called by any number of threads at once.
 *  2. baton_ec_inc_sp() may be called only while no other thread increments
 *     the same event count (one producer at a time, with a happens-before
 *     edge, e.g. a mutex, between successive producers). Do not mix it with
 *     concurrent baton_ec_inc() calls.
 *  3. An event count ever incremented with baton_ec_inc_sp() must be waited
 *     on with baton_ec_wait() (which copes with the single-producer
 *     increment), not with baton_ec_wait_mp().
 *  4. The futex is process-private: an event count in memory shared between
 *     processes does not wake the other process.
 *  5. Touch `word` only through these functions.
 *
 * Memory order: an increment is a release, baton_ec_value() and a wait that
 * returns BATON_OK are acquires, so what the producer wrote before
 * incrementing is visible to a waiter that sees the new version.
 */
#ifndef BATON_EC_H
#define BATON_EC_H

#include <stddef.h>
#include <stdint.h>

#include <baton/error.h>

#ifdef __cplusplus
extern "C" {
#endif

/** An event count: one 32-bit word, embedded by value. */
typedef struct baton_ec {
	uint32_t word; /**< accessed only with __atomic builtins (or the x86 asm below) */
} baton_ec_t;

/** Version 0, no sleepers: a static initialiser. */
#define BATON_EC_INITIALIZER \
	{                    \
		0            \
	}

#define BATON_EC_FLAG UINT32_C(0x80000000)    /**< sleepers flag */
#define BATON_EC_VERSION UINT32_C(0x7fffffff) /**< version bits */

/** Sets `ec` to version 0 with no sleepers. Not concurrent-safe.
 * @param ec the event count
 * @return BATON_OK, or BATON_EINVAL for a NULL ec */
BATON_API int baton_ec_init(baton_ec_t *ec);

/** Waits until the version differs from `old`. Spins briefly, then sets
 * the sleepers flag and blocks in FUTEX_WAIT. For its first second of
 * blocking it sleeps in growing slices (1 ms, x4 each time) and re-checks,
 * so that a flag lost to a concurrent baton_ec_inc_sp() costs at most one
 * slice; an increment that sees the flag wakes it at once in every case.
 * @param ec the event count
 * @param old the version last seen (bit 31 clear)
 * @param timeout_ns < 0 waits forever, 0 only tries, > 0 waits at most
 * that many nanoseconds
 * @return BATON_OK as soon as it does; with timeout_ns < 0 it waits forever,
 * with 0 it only looks (BATON_EAGAIN if the version is still `old`, as a
 * timeout of 0 answers in every module of baton), with > 0 it gives up after
 * that many nanoseconds (BATON_ETIMEDOUT); BATON_EINVAL for a NULL ec or an
 * `old` with bit 31 set (not a version). */
BATON_API int baton_ec_wait(baton_ec_t *ec, uint32_t old, int64_t timeout_ns);

/** As baton_ec_wait() but blocks without the growing slices: for event counts
 * that are only ever incremented with baton_ec_inc() (rule 3).
 * @param ec the event count
 * @param old the version last seen (bit 31 clear)
 * @param timeout_ns < 0 waits forever, 0 only tries, > 0 waits at most
 * that many nanoseconds
 * @return as baton_ec_wait() */
BATON_API int baton_ec_wait_mp(baton_ec_t *ec, uint32_t old, int64_t timeout_ns);

/** The slow path of an increment that saw the sleepers flag: clears it and
 * wakes every sleeper. Harmless at any time (a spurious wake-up).
 * @param ec the event count
 * @return BATON_OK, or BATON_EINVAL for a NULL ec */
BATON_API int baton_ec_wake(baton_ec_t *ec);

/** Is the sleepers flag set (someone is, or was about to be, asleep)?
 * @param ec the event count
 * @return non-zero if the flag is set, else 0 (also for NULL) */
static inline int baton_ec_has_waiters(const baton_ec_t *ec)
{
	/* relaxed: a hint; it orders nothing */
	return ec && (__atomic_load_n(&ec->word, __ATOMIC_RELAXED) & BATON_EC_FLAG);
}

/** The current version (0 for a NULL ec).
 * @param ec the event count
 * @return the version */
static inline uint32_t baton_ec_value(const baton_ec_t *ec)
{
	if (__builtin_expect(ec == NULL, 0))
		return 0;
	/* acquire: pairs with the increment's release, so the data published
	 * before the increment is visible once its version is seen */
	return __atomic_load_n(&ec->word, __ATOMIC_ACQUIRE) & BATON_EC_VERSION;
}

/*
 * The fast paths. "flagged" is the x86 "le" condition of the incremented
 * word (SF != OF or ZF): true exactly when the old word had the flag (new
 * word negative without signed overflow, or zero after 0xffffffff). When
 * the version wraps 0x7fffffff -> 0x80000000 the carry sets bit 31 and OF
 * hides it: the version reads 0 and the next increment clears the bit with
 * one spurious wake. The portable form tests "new word <= 0" and clears it
 * at once. ThreadSanitizer cannot see inline asm, so TSan builds take the
 * __atomic form for both increments, as do compilers without asm flag
 * outputs (GCC < 6, clang < 9) and -DBATON_EC_PORTABLE.
 */
#if defined(__SANITIZE_THREAD__)
#define BATON_EC_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define BATON_EC_TSAN 1
#endif
#endif
#if defined(__x86_64__) && defined(__GCC_ASM_FLAG_OUTPUTS__) && !defined(BATON_EC_TSAN) && \
	!defined(BATON_EC_PORTABLE)
#define BATON_EC_X86_SP 1
#endif

/*
 * A NULL ec makes an increment return BATON_EINVAL; to keep that check off
 * the fast path, a NULL ec increments a private word instead (nobody reads
 * it). On x86-64 the select is a cmov in a non-volatile asm, which the
 * compiler hoists out of loops and cannot turn back into a branch.
 */
#ifdef BATON_EC_X86_SP
static inline baton_ec_t *baton__ec_nonnull(baton_ec_t *ec, baton_ec_t *sink)
{
	__asm__("test %1, %1\n\tcmovz %2, %0" : "=r"(ec) : "r"(ec), "r"(sink), "0"(ec) : "cc");
	return ec;
}
#define BATON_EC_NONNULL(ec, sink) baton__ec_nonnull((ec), (sink))
#else
#define BATON_EC_NONNULL(ec, sink) ((ec) ? (ec) : (sink))
#endif

/** Increment the version (a release) and wake the sleepers if the flag was
 * set; any number of threads at once (rule 1).
 * @param ec the event count
 * @return BATON_OK, or BATON_EINVAL for a NULL ec */
static inline int baton_ec_inc(baton_ec_t *ec)
{
	static baton_ec_t null_sink;
	baton_ec_t *p = BATON_EC_NONNULL(ec, &null_sink);
	int flagged;

#ifdef BATON_EC_X86_SP
	/* lock incl: a full barrier on x86, so a release for the data; the
	 * "memory" clobber keeps the compiler from sinking earlier stores */
	__asm__ volatile("lock incl %0" : "+m"(p->word), "=@ccle"(flagged)::"memory");
#else
	/* release: publishes the data written before the increment; being an
	 * RMW, it reads the latest flag any waiter's CAS put in the word */
	flagged = (int32_t)__atomic_add_fetch(&p->word, 1, __ATOMIC_RELEASE) <= 0;
#endif
	if (__builtin_expect(flagged, 0))
		baton_ec_wake(p);
	return ec ? BATON_OK : BATON_EINVAL;
}

/** Single-producer increment (rule 2). x86-64: a plain, non-atomic "incl" on
 * the word: x86-TSO keeps stores in order (a release), the single producer
 * always reads its own latest version, and the only thing it can overwrite
 * is a sleepers flag a waiter set between its load and its store; the
 * version then changed, and baton_ec_wait()'s growing slices notice it
 * (docs/ec.md has the argument). Elsewhere it is baton_ec_inc(): a plain
 * load/add/store can be preempted between load and store for any time, so
 * no time bound could make a lost flag safe.
 * @param ec the event count
 * @return BATON_OK, or BATON_EINVAL for a NULL ec */
static inline int baton_ec_inc_sp(baton_ec_t *ec)
{
#ifdef BATON_EC_X86_SP
	static baton_ec_t null_sink;
	baton_ec_t *p = BATON_EC_NONNULL(ec, &null_sink);
	int flagged;

	/* not atomic, on purpose (see above); TSO makes it a release, the
	 * "memory" clobber stops the compiler from moving stores past it */
	__asm__ volatile("incl %0" : "+m"(p->word), "=@ccle"(flagged)::"memory");
	if (__builtin_expect(flagged, 0))
		baton_ec_wake(p);
	return ec ? BATON_OK : BATON_EINVAL;
#else
	return baton_ec_inc(ec);
#endif
}

#ifdef __cplusplus
}
#endif

#endif /* BATON_EC_H */
