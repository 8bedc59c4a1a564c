/* SPDX-License-Identifier: MIT */
/*
 * tests/model/chan_bias.pml - Spin model of the biased channel lock
 * (src/chan/chan_internal.h, src/chan/chan.c, src/common/barrier.h).
 *
 * Two threads. W is the worker the channel is biased to: each of its
 * operations stores own = 1, then (a compiler barrier only) re-reads the
 * bias; if it is still W it runs its critical section and stores own = 0,
 * otherwise it stores own = 0, waits for SHARED and takes the spinlock. R
 * is another worker's task: it CASes the bias from W to REVOKING, runs the
 * asymmetric barrier, waits until it reads own = 0, stores SHARED and
 * takes the spinlock.
 *
 * Memory model: x86-64's TSO. W's stores go through a FIFO store buffer
 * (wsb) that drains to memory at any time (process drain); W's loads read
 * memory (W never loads what it stored). R's stores and every locked
 * instruction (the CAS, the spinlock's exchange) reach memory at once and
 * drain the issuer's buffer. The barrier (membarrier: an interrupt to
 * every CPU running the process) drains W's buffer at one point of R's
 * call, atomically.
 *
 * Property: mutual exclusion - the two critical sections never overlap
 * (assert in_cs <= 1), and both threads finish (no deadlock: Spin reports
 * an invalid end state otherwise).
 *
 * Variants (spin -D...):
 *   BIAS            the protocol as built (must pass)
 *   BROKEN_BARRIER  R skips the heavy barrier (must FAIL: W's own = 1 may
 *                   still sit in its store buffer when R reads own = 0)
 *   BROKEN_RECHECK  W does not re-read the bias after storing own (must
 *                   FAIL even with the barrier)
 */

#ifndef NOPS
#define NOPS 2
#endif

#define BIAS_W 1
#define REVOKING 2
#define SHARED 3

byte bias = BIAS_W;
byte own = 0;          /* memory */
byte lock = 0;         /* the spinlock, memory */
byte in_cs = 0;
chan wsb = [4] of { byte };   /* W's pending stores to own, oldest first */
bool wdone = false, rdone = false;

/* A pending store of W leaves its buffer: any time. */
active proctype drain()
{
	byte v;
end_drain:
	do
	:: atomic { wsb?v -> own = v }
	od
}

inline cs()
{
	in_cs++;
	assert(in_cs <= 1);
	in_cs--
}

/* The spinlock: an atomic exchange (a locked instruction drains the
 * issuer's store buffer first, which for W means everything pending). */
inline w_spin_lock()
{
	atomic { empty(wsb) && lock == 0 -> lock = 1 }
}

active proctype W()
{
	byte i = 0;
	byte b;

	do
	:: i < NOPS ->
		b = bias;
		if
		:: b == BIAS_W ->
			wsb!1;                  /* own = 1 (plain store) */
#ifdef BROKEN_RECHECK
			b = BIAS_W;
#else
			b = bias;               /* the re-check */
#endif
			if
			:: b == BIAS_W ->
				cs();
				wsb!0           /* own = 0 (release store) */
			:: else ->
				wsb!0;
				(bias == SHARED);
				w_spin_lock();
				cs();
				lock = 0
			fi
		:: b != BIAS_W ->
			(bias == SHARED);
			w_spin_lock();
			cs();
			lock = 0
		fi;
		i++
	:: else -> break
	od;
	wdone = true
}

active proctype R()
{
	atomic { bias == BIAS_W -> bias = REVOKING };   /* the CAS */
#ifndef BROKEN_BARRIER
	atomic {                                        /* the heavy barrier */
		do
		:: nempty(wsb) -> byte v; wsb?v; own = v
		:: empty(wsb) -> break
		od
	};
#endif
	(own == 0);                                     /* wait for own free */
	bias = SHARED;
	atomic { lock == 0 -> lock = 1 };
	cs();
	lock = 0;
	rdone = true
}
