/* SPDX-License-Identifier: MIT */
/*
 * tests/model/ec.pml - Spin model of the event-count wake-up protocol
 * (include/baton/ec.h, src/ec/ec.c, docs/ec.md).
 *
 * The control word is (ver, flag); every statement of the model is one
 * atomic step of the real code. Waiters: read the version, set the flag
 * with a CAS that fails if the version moved, FUTEX_WAIT if the word still
 * holds (old, flag). Producers: increment and look at the old flag in one
 * step (lock incl / fetch-add), and if it was set clear it (atomic AND) and
 * FUTEX_WAKE everybody.
 *
 * Property (no lost wake-up): when nothing in the system can move any more,
 * no waiter is asleep while the version differs from the one it waits on.
 * The monitor checks it on Spin's `timeout` (global block); a waiter asleep
 * on an unchanged version is a valid end state (label end_sleep).
 *
 * Variants (spin -D...):
 *   MP              two producers, baton_ec_inc (must pass)
 *   SP              one producer, baton_ec_inc_sp on x86-64: the load and
 *                   the store of a non-atomic incl are two steps, and the
 *                   store may overwrite a flag set in between; waiters use
 *                   the growing slices of baton_ec_wait (must pass)
 *   BROKEN_MP       the producer reads the flag, then increments in a
 *                   separate step (must FAIL: lost wake-up)
 *   BROKEN_ORDER    the producer wakes first and clears the flag after
 *                   (must FAIL)
 *   BROKEN_SP       single producer, waiters sleep without slices, as
 *                   baton_ec_wait_mp does (must FAIL)
 *
 * SP model of TSO: `inflight` is true between the incl's load and the
 * moment its store leaves the store buffer. The slices rest on the seed's
 * assumption that after one quiet second no such store is in flight (an
 * incl is one instruction, preemption and interrupts drain the store
 * buffer): a waiter's sleep is bounded ("timed") while a store it cannot
 * see may be in flight, unbounded otherwise. A load made after the
 * waiter's CAS sees the flag (the CAS is a locked instruction), so it wakes.
 * Several buffered increments act like one long load-to-store window.
 */

#ifndef NW
#define NW 2
#endif
#ifndef NINC
#define NINC 2
#endif

byte ver = 0;
bool flag = false;
bool asleep[NW];
bool timed[NW];
byte old[NW];
bool inflight = false;

inline wake_all()
{
	/* FUTEX_WAKE(INT_MAX): every queued sleeper becomes runnable */
	atomic {
		for (k : 0 .. NW - 1) {
			asleep[k] = false
		}
	}
}

inline slow_path()
{
#ifdef BROKEN_ORDER
	wake_all();
	flag = false;
#else
	flag = false;   /* atomic AND ~FLAG */
	wake_all();
#endif
}

proctype waiter(byte id)
{
	byte o;

	o = ver;               /* baton_ec_value */
	old[id] = o;
check:
	if
	:: ver != o -> goto out
	:: else
	fi;
	/* CAS(o, o|FLAG); finding the flag already set counts as success */
	atomic {
		if
		:: ver != o -> goto out
		:: else -> flag = true
		fi
	}
	/* FUTEX_WAIT(word, o|FLAG): the kernel compares and queues in one step */
	atomic {
		if
		:: ver == o && flag ->
			asleep[id] = true;
#ifdef SP
			timed[id] = inflight
#else
			timed[id] = false
#endif
		:: else -> goto check
		fi
	}
end_sleep:
	if
	:: !asleep[id]                         /* woken */
	:: timed[id] && asleep[id] -> asleep[id] = false  /* the slice ran out */
	fi;
	goto check;
out:
	skip
}

proctype producer_mp()
{
	bool f;
	byte k;

#ifdef BROKEN_MP
	f = flag;
	ver = ver + 1;
#else
	atomic { f = flag; ver = ver + 1 }   /* lock incl, "le" = old flag */
#endif
	if
	:: f -> slow_path()
	:: else
	fi
}

proctype producer_sp()
{
	byte rv, n, k;
	bool rf;

	for (n : 1 .. NINC) {
		/* incl without lock: the load ... */
		atomic { rv = ver; rf = flag; inflight = true };
		/* ... and the store, once it leaves the store buffer; it may
		 * overwrite a flag a waiter set in between */
		atomic { ver = rv + 1; flag = rf; inflight = false };
		if
		:: rf -> slow_path()
		:: else
		fi
	}
}

active proctype monitor()
{
	byte k;

	timeout ->
	for (k : 0 .. NW - 1) {
		assert(!(asleep[k] && ver != old[k]))   /* lost wake-up */
	}
}

init
{
	byte k;

	atomic {
		for (k : 0 .. NW - 1) {
			run waiter(k)
		}
#if defined(SP) || defined(BROKEN_SP)
		run producer_sp();
#else
		for (k : 1 .. NINC) {
			run producer_mp()
		}
#endif
	}
}
