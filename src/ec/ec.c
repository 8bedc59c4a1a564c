/* SPDX-License-Identifier: MIT */
/*
 * src/ec/ec.c - the slow paths of event counts: waiting (spin, set the
 * sleepers flag, FUTEX_WAIT) and waking (clear the flag, FUTEX_WAKE).
 * The increments are inline in include/baton/ec.h; docs/ec.md explains the
 * protocol and why it loses no wake-up.
 */
#include <limits.h>
#include <linux/futex.h>
#include <stdbool.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <baton/ec.h>

#include "../common/prelude.h"

enum {
	EC_SPIN = 128,      /* re-reads of the word before blocking */
	EC_SLICE_SCALE = 4, /* growth of the blocking slices */
};
#define EC_SLICE0_NS INT64_C(1000000)   /* first blocking slice: 1 ms */
#define EC_QUIET_NS INT64_C(1000000000) /* flag set 1 s: no inc_sp in flight */

/* Sleeps while *word == expect, at most ns nanoseconds (< 0: no limit). Any
 * return (woken, value differs, timeout, signal) sends the caller back to
 * re-read the word, so the result is not needed. */
static void futex_wait(uint32_t *word, uint32_t expect, int64_t ns)
{
	struct timespec ts, *tp = NULL;

	if (ns >= 0) {
		ts.tv_sec = ns / 1000000000;
		ts.tv_nsec = ns % 1000000000;
		tp = &ts;
	}
	syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expect, tp, NULL, 0);
}

int baton_ec_init(baton_ec_t *ec)
{
	if (!ec)
		return BATON_EINVAL;
	/* relaxed: initialisation happens before the ec is shared */
	__atomic_store_n(&ec->word, 0, __ATOMIC_RELAXED);
	return BATON_OK;
}

int baton_ec_wake(baton_ec_t *ec)
{
	if (!ec)
		return BATON_EINVAL;
	/* relaxed: the flag guards no data. An RMW, so no concurrent CAS of a
	 * waiter is lost; FUTEX_WAKE below is ordered after it by the kernel
	 * (a full barrier before it looks for sleepers). A waiter that set the
	 * flag and slept before this AND is queued, so the wake reaches it; one
	 * that sees the cleared flag sets it again before sleeping. */
	__atomic_fetch_and(&ec->word, ~BATON_EC_FLAG, __ATOMIC_RELAXED);
	syscall(SYS_futex, &ec->word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
	return BATON_OK;
}

static int ec_wait(baton_ec_t *ec, uint32_t old, int64_t timeout_ns, bool slices)
{
	const uint32_t flagged = old | BATON_EC_FLAG;
	int64_t now, deadline = -1, quiet_since = 0, slice = EC_SLICE0_NS, sleep;
	bool fresh = true; /* the flag was (re)set: restart the quiet second */
	uint32_t w;

	if (!ec || (old & BATON_EC_FLAG))
		return BATON_EINVAL;
	if (baton_ec_value(ec) != old)
		return BATON_OK;
	if (timeout_ns == 0)
		return BATON_EAGAIN; /* only a look, as in every module */
	if (timeout_ns > 0)
		deadline = baton__clock_now() + timeout_ns;

	for (int i = 0; i < EC_SPIN; i++) {
		baton__cpu_relax();
		if (baton_ec_value(ec) != old)
			return BATON_OK;
	}

	for (;;) {
		/* acquire: a new version returned as BATON_OK publishes the
		 * producer's data, as baton_ec_value() does */
		w = __atomic_load_n(&ec->word, __ATOMIC_ACQUIRE);
		if ((w & BATON_EC_VERSION) != old)
			return BATON_OK;
		if (w != flagged) {
			/* relaxed: the flag publishes nothing, the futex
			 * re-reads the word under its own lock, and a failure
			 * goes back to the acquire load above */
			if (!__atomic_compare_exchange_n(&ec->word, &w, flagged, false,
							 __ATOMIC_RELAXED, __ATOMIC_RELAXED))
				continue;
			fresh = true;
		}
		now = baton__clock_now();
		if (deadline >= 0 && now >= deadline)
			return BATON_ETIMEDOUT;
		if (fresh) {
			fresh = false;
			quiet_since = now;
			slice = EC_SLICE0_NS;
		}
		sleep = -1;
		if (slices && now - quiet_since < EC_QUIET_NS) {
			/* the last slice ends with the quiet second */
			sleep = EC_QUIET_NS - (now - quiet_since);
			if (slice < sleep)
				sleep = slice;
			slice *= EC_SLICE_SCALE;
		}
		if (deadline >= 0 && (sleep < 0 || sleep > deadline - now))
			sleep = deadline - now;
		futex_wait(&ec->word, flagged, sleep);
	}
}

int baton_ec_wait(baton_ec_t *ec, uint32_t old, int64_t timeout_ns)
{
	/* Only x86-64 has a non-atomic baton_ec_inc_sp() whose overwrite of
	 * the flag the slices must cover (whatever the caller's sanitizer). */
#if defined(__x86_64__)
	return ec_wait(ec, old, timeout_ns, true);
#else
	return ec_wait(ec, old, timeout_ns, false);
#endif
}

int baton_ec_wait_mp(baton_ec_t *ec, uint32_t old, int64_t timeout_ns)
{
	return ec_wait(ec, old, timeout_ns, false);
}
