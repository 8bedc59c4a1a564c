/* SPDX-License-Identifier: MIT */
/*
 * tests/model/smr.pml - Spin model of safe memory reclamation
 * (include/baton/smr.h, src/smr/smr.c, src/smr/hp.c): both flavours'
 * read side against the writer that frees what it unpublished.
 *
 * One reader task runs two read sections (or one protect), each begun on
 * one thread and ended on the other (it parks and moves in between); one
 * writer replaces object 0 by object 1 (ptr = 1)
 * and frees object 0 once its grace period (read sections) or its scan
 * (hazard pointers) allows.
 *
 * Memory model: x86-64's TSO for the reader's threads. Each of A and B
 * has a FIFO store buffer of (address, value) pairs that drains to memory
 * at any time; loads read memory (the reader never loads what it stored:
 * it keeps its counters in locals, as the only thread that writes them).
 * The move from A to B goes through the scheduler's hand-off, a locked
 * instruction on A: A's buffer is empty before B runs the task. The
 * writer's stores reach memory at once (the heavy barrier begins with a
 * full fence of its own). The asymmetric barrier (an interrupt to every
 * CPU running the process) drains both buffers at one point, atomically.
 *
 * Read sections: the reader reads idx, stores lock[idx] + 1 in A's record,
 * loads ptr, moves, uses the object, stores unlock[idx] + 1 in B's
 * record. The writer's grace period: check the index not in use, flip,
 * check the one left; a check sums unlock over both records, runs the
 * barrier, sums lock, and passes when the sums are equal.
 * Hazard pointers: the reader loads ptr, stores it in its slot, re-reads
 * ptr (again if it changed), moves, uses, clears the slot from B. The
 * writer unpublishes, runs the barrier, reads the slot, and frees object
 * 0 unless the slot names it.
 *
 * Property: the reader never uses a freed object (assert), and both
 * finish (Spin reports an invalid end state otherwise).
 *
 * Variants (spin -D...):
 *   SMR                read sections as built (must pass)
 *   HP                 hazard pointers as built (must pass)
 *   BROKEN_BARRIER     the check without the barrier (must FAIL: the
 *                      lock store may sit in A's buffer while the writer
 *                      sums)
 *   BROKEN_UNLOCK      the unlock stored before the section's last use
 *                      (what a plain store would allow on AArch64, which
 *                      lets a load pass a later store: must FAIL)
 *   HP_BROKEN_BARRIER  the scan without the barrier (must FAIL)
 *   HP_BROKEN_RECHECK  protect without the re-read (must FAIL)
 */

#if defined(HP) || defined(HP_BROKEN_BARRIER) || defined(HP_BROKEN_RECHECK)
#define FLAVOUR_HP 1
#endif

/* Addresses in mem[]: each thread's record, and the hazard slot. */
#define LA 0   /* lock[0], lock[1] of A's record: 0, 1 */
#define UA 2   /* unlock[0], unlock[1] of A's record */
#define LB 4
#define UB 6
#define HPS 8  /* the slot: 0 names nothing, p + 1 names object p */
#define NMEM 9

byte mem[NMEM];
byte idx = 0;
byte ptr = 0;          /* the shared pointer: object 0, then 1 */
bool freed[2];
chan bufA = [3] of { byte, byte };
chan bufB = [3] of { byte, byte };

active proctype drainA()
{
	byte a, v;
end_drainA:
	do
	:: atomic { bufA?a,v -> mem[a] = v }
	od
}

active proctype drainB()
{
	byte a, v;
end_drainB:
	do
	:: atomic { bufB?a,v -> mem[a] = v }
	od
}

inline barrier()
{
	atomic {
		do
		:: nempty(bufA) -> bufA?ba,bv; mem[ba] = bv
		:: nempty(bufB) -> bufB?ba,bv; mem[ba] = bv
		:: empty(bufA) && empty(bufB) -> break
		od
	}
}

inline use(p)
{
	assert(!freed[p])
}

#ifndef FLAVOUR_HP

/* Two sections: the first from A to B, the second from B back to A. The
 * reader's own counters (it is their only writer) live in locals. */
active proctype R()
{
	byte i, p, k = 0;
	byte la[2], ub[2], lb[2], ua[2];

	do
	:: k == 2 -> break
	:: k == 0 ->
		i = idx;
		la[i]++; bufA!(LA + i),la[i];   /* lock[i] + 1, plain store */
		p = ptr;                         /* after a compiler barrier only */
		(empty(bufA));                   /* park, move to B (locked hand-off) */
#ifdef BROKEN_UNLOCK
		ub[i]++; bufB!(UB + i),ub[i];
		use(p);
#else
		use(p);
		ub[i]++; bufB!(UB + i),ub[i];   /* unlock[i] + 1, release store */
#endif
		k++
	:: k == 1 ->
		i = idx;
		lb[i]++; bufB!(LB + i),lb[i];
		p = ptr;
		(empty(bufB));                   /* move back to A */
		use(p);
		ua[i]++; bufA!(UA + i),ua[i];
		k++
	od
}

/* One check of index ci: unlocks, barrier, locks. */
inline check(ci)
{
	u = mem[UA + ci] + mem[UB + ci];
#ifndef BROKEN_BARRIER
	barrier();
#endif
	l = mem[LA + ci] + mem[LB + ci]
}

active proctype W()
{
	byte cur, u, l, ba, bv;

	ptr = 1;                /* unpublish object 0 */
	cur = idx;
	do                      /* phase 1: the index not in use */
	:: check(1 - cur); if :: u == l -> break :: else -> skip fi
	od;
	idx = 1 - cur;          /* flip */
	do                      /* phase 2: the index just left */
	:: check(cur); if :: u == l -> break :: else -> skip fi
	od;
	freed[0] = true
}

#else /* hazard pointers */

active proctype R()
{
	byte p, q;

	p = ptr;
	do
	:: bufA!HPS,(p + 1);    /* slot = p, plain store */
#ifdef HP_BROKEN_RECHECK
		break
#else
		q = ptr;        /* the re-read, after a compiler barrier */
		if
		:: q == p -> break
		:: else -> p = q
		fi
#endif
	od;
	(empty(bufA));          /* park, move to B */
	use(p);
	bufB!HPS,0              /* clear, release store */
}

active proctype W()
{
	byte ba, bv;

	ptr = 1;
#ifndef HP_BROKEN_BARRIER
	barrier();
#endif
	if
	:: mem[HPS] == 1 -> skip        /* named: kept for a later scan */
	:: else -> freed[0] = true
	fi
}

#endif
