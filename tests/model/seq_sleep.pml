/* SPDX-License-Identifier: MIT */
/*
 * tests/model/seq_sleep.pml - Spin model of the sequencer's asymmetric
 * Dekker pair between a release and a waiter going to sleep
 * (src/seq/seq.c unlock, src/seq/wait.c, src/seq/seq_internal.h).
 *
 * H holds the lock and releases it: lock = 0 (a plain release store,
 * through H's store buffer), a compiler barrier only, then it loads
 * `sleepers` and, if it is not 0, wakes them (an event-count increment, a
 * locked instruction). S gives up spinning: sleepers++ (a locked
 * instruction), the heavy barrier (membarrier: H's store buffer drains at
 * that point), reads the event count's version, then the lock; if the lock
 * is still held it sleeps until the version moves, else it takes the lock.
 *
 * Memory model: x86-64's TSO; only H's release store is buffered (hsb),
 * and it drains at any time (process drain); locked instructions drain
 * their issuer's buffer first.
 *
 * Property: no lost wake-up - S never sleeps for good while the lock is
 * free: S must end holding the lock (Spin reports S blocked forever as an
 * invalid end state).
 *
 * Variants (spin -D...):
 *   SEQ               the protocol as built (must pass)
 *   BROKEN_BARRIER    S skips the heavy barrier (must FAIL)
 *   BROKEN_ORDER      S reads the lock before announcing itself in
 *                     sleepers (must FAIL)
 */

byte lock = 1;            /* H holds it */
byte sleepers = 0;
byte ec = 0;              /* the event count's version */
chan hsb = [2] of { byte };
bool s_got_it = false;

active proctype drain()
{
	byte v;
end_drain:
	do
	:: atomic { hsb?v -> lock = v }
	od
}

active proctype H()
{
	hsb!0;                                  /* lock = 0, release store */
	/* compiler barrier only */
	if
	:: sleepers != 0 ->
		atomic { empty(hsb) -> ec++ }   /* locked increment: drains */
	:: else -> skip
	fi
}

active proctype S()
{
	byte v, l;

	do
	::
#ifdef BROKEN_ORDER
		l = lock;
		sleepers++;
#else
		sleepers++;
#endif
#ifndef BROKEN_BARRIER
		atomic {                        /* the heavy barrier */
			do
			:: nempty(hsb) -> byte x; hsb?x; lock = x
			:: empty(hsb) -> break
			od
		};
#endif
		v = ec;
#ifndef BROKEN_ORDER
		l = lock;
#endif
		if
		:: l != 0 -> (ec != v)          /* asleep until woken */
		:: else -> skip
		fi;
		sleepers--;
		if
		:: atomic { lock == 0 -> lock = 1 }; break
		:: lock != 0 -> skip            /* retry the wait */
		fi
	od;
	s_got_it = true
}
