/* SPDX-License-Identifier: MIT */
/**
 * @file baton/smr.h
 * safe memory reclamation: readers that look at shared data
 * without locks, and writers that free what they replaced only once no
 * reader can still hold it. Two flavours share a domain:
 *
 *  - Read sections (as RCU): a reader brackets its look-ups with
 *    baton_smr_read_lock / baton_smr_read_unlock; a writer unpublishes an
 *    object, then either waits (baton_smr_synchronize) or hands it over
 *    (baton_smr_retire) to be freed after a grace period: once every read
 *    section that began before has ended. A section may park the task
 *    and end on another worker. The read side costs two plain stores to
 *    memory of the calling thread and no fence; one stalled reader holds
 *    back every later free (memory grows without bound meanwhile).
 *  - Hazard pointers: a reader names the one object it uses in a slot it
 *    owns (baton_smr_hp_protect); the writer frees every retired object no
 *    slot names. A stalled reader holds back only what its slot names:
 *    unreclaimed objects stay below a bound (baton_smr_stats.hp_bound).
 *
 * @code
 *     static baton_smr_t *dom;                  // baton_smr_create(&dom)
 *     static struct config *cur;                // shared: __atomic loads/stores
 *
 *     // reader (task or thread)                // writer
 *                                               struct config *nc = build();
 *     int tok = baton_smr_read_lock(dom);       struct config *old =
 *     struct config *c = __atomic_load_n(           __atomic_exchange_n(&cur, nc,
 *         &cur, __ATOMIC_ACQUIRE);                       __ATOMIC_ACQ_REL);
 *     use(c);          // may park, move        baton_smr_retire(dom, old, free);
 *     baton_smr_read_unlock(dom, tok);          // or: baton_smr_synchronize(dom, -1);
 *                                               //     free(old);
 *     // hazard pointer
 *     baton_smr_hp_t *hp;                       // once per task
 *     baton_smr_hp_acquire(dom, &hp);
 *     void *c;
 *     baton_smr_hp_protect(hp, (void *const *)&cur, &c);
 *     use(c);
 *     baton_smr_hp_clear(hp);                   // writer: baton_smr_hp_retire(dom, old, free)
 * @endcode
 *
 * The mechanism (baton_smr_barrier_kind, chosen once per process): the
 * writer makes the readers' plain stores visible with an asymmetric
 * barrier, a full memory barrier run on every CPU that runs a thread of
 * the process: membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), else (x86-64
 * only) the TLB shoot-down of an mprotect, else none, in which case the
 * readers pay a full fence instead. BATON_BARRIER=membarrier|mprotect|fence
 * in the environment forces one (for tests); one that does not work here
 * falls to the next.
 *
 * Ordering, read sections. Each thread that reads owns a record of four
 * counters, lock[2] and unlock[2], written only by that thread (a load and
 * a store: no read-modify-write, since no other thread writes them). A
 * section reads the domain's index i, stores lock[i] + 1 in its thread's
 * record, then (compiler barrier only) loads the shared pointers; it ends
 * with a release store of unlock[i] + 1 in the record of the thread it
 * ends on, which may be another one. A grace period checks each index in
 * turn: it sums unlock[i] over every record (acquire loads), runs the
 * asymmetric barrier, sums lock[i], and the index is idle if the sums are
 * equal; between the two checks it flips the index so that new sections
 * stop adding to the one it waits for.
 *  - The barrier orders the reader's store of lock[i] against the
 *    writer's load of it, and the writer's store that unpublished the
 *    object (made before the grace period) against the reader's load of
 *    the shared pointer: a section whose lock store the writer does not
 *    see began after the barrier hit its CPU, so its loads see the
 *    object unpublished and it never holds it.
 *  - An unlock the writer sees implies the matching lock is seen: the
 *    release store of unlock follows the lock store in the section (even
 *    across a move to another worker: the scheduler's hop is a
 *    release/acquire pair), and the writer's unlock loads are acquires
 *    ordered before its lock loads. So equal sums mean every section seen
 *    has ended, and its loads happened before the writer frees (the
 *    unlock's release against the writer's acquire).
 *  - x86-64: the lock store, the compiler barrier and the release store
 *    of unlock are plain `mov`s: no locked instruction, no fence.
 *    AArch64: the lock side is the same (the interrupt-driven barrier is
 *    a `dmb ish` on the reader's CPU); the unlock's release store is an
 *    `stlr`, which orders the section's loads before it (AArch64 lets a
 *    load pass a later store; x86-64 does not). With the `fence`
 *    mechanism the lock side adds a full fence (`mfence` / `dmb ish`).
 * Ordering, hazard pointers: protect stores the pointer in the slot, then
 * (compiler barrier) re-reads the source; the writer unpublishes, runs the
 * barrier, then loads every slot. Either the slot store is seen and the
 * object is kept, or the re-read comes after the barrier and sees the
 * object gone, and protect tries again with the new value.
 *
 * Rules a caller must keep:
 *  1. Between read_lock and read_unlock a task may block, yield and move
 *    to another worker; pass the token from read_lock (a non-negative
 *    int) to read_unlock.
 *    Sections nest. Do not call synchronize or barrier inside a section
 *    of the same domain (it waits for itself: BATON_ETIMEDOUT, or forever
 *    with no timeout; a barrier with nothing retired returns at once).
 *    Nor wait inside a section for a task or thread that may be in
 *    synchronize or barrier of that domain: a grace period may also wait
 *    for a section that began after the call (one that read the epoch
 *    before a period already under way flipped it), so the two would
 *    wait for each other.
 *  2. Read the shared pointers with acquire loads (or consume), publish
 *    with release stores; unpublish an object before retiring it.
 *  3. The read side is not async-signal-safe: a signal handler must not
 *    enter a section on the thread it interrupts.
 *  4. A hazard slot belongs to whoever acquired it (a task, across parks
 *    and moves, or a thread) until released; it protects one object at a
 *    time. Protect only from a source that is unpublished before retire.
 *  5. A free function runs on whichever thread reclaims (retire, poll,
 *    synchronize, barrier, destroy); one passed to baton_smr_hp_retire
 *    must not call baton_smr_hp_* of the same domain.
 *  6. Retired objects of the read-section flavour are freed in batches of
 *    BATON_SMR_BATCH: a batch not yet full waits for the next
 *    baton_smr_poll, synchronize or barrier. Call baton_smr_barrier before
 *    destroying what the free functions need.
 *  7. Destroy a domain when no section is open and no slot is held
 *    (BATON_EBUSY otherwise); it frees everything still retired.
 *  8. Each thread that ever reads a domain leaves a record in it (one
 *    cache line) until the domain is destroyed; a later thread with the
 *    same pthread_t takes it over. A process that forks while another
 *    thread is inside a section leaves that section open in the child.
 */
#ifndef BATON_SMR_H
#define BATON_SMR_H

#include <stdint.h>

#include <baton/error.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A reclamation domain (opaque). */
typedef struct baton_smr baton_smr_t;
/** A hazard pointer slot (opaque). */
typedef struct baton_smr_hp baton_smr_hp_t;
/** Frees a retired object. */
typedef void (*baton_smr_free_fn)(void *ptr);

/** Objects per retire batch (read sections), and the least hazard scan
 * threshold. */
#define BATON_SMR_BATCH 64

/** The asymmetric barrier the process uses (baton_smr_barrier_kind). */
enum baton_smr_barrier {
	BATON_SMR_BARRIER_FENCE = 0,      /**< none: readers fence */
	BATON_SMR_BARRIER_MEMBARRIER = 1, /**< private expedited membarrier */
	BATON_SMR_BARRIER_MPROTECT = 2,   /**< mprotect TLB shoot-down (x86-64) */
};

/** A new domain.
 * @param out receives the new reclamation domain
 * @return BATON_OK, or an error: BATON_EINVAL (NULL out), BATON_ENOMEM. */
BATON_API int baton_smr_create(baton_smr_t **out);

/** Free the domain and everything still retired (after a grace period).
 * NULL is a no-op.
 * @param d the reclamation domain
 * @return BATON_OK, or an error: BATON_EBUSY (a read section open, a hazard
 * slot held); the domain is then unchanged. */
BATON_API int baton_smr_destroy(baton_smr_t *d);

/** Begin a read section.
 * @param d the reclamation domain
 * @return the token read_unlock needs (0 or 1), or an error: BATON_EINVAL
 * (NULL d), BATON_ENOMEM (the calling thread's first section in this domain
 * needs its record). */
BATON_API int baton_smr_read_lock(baton_smr_t *d);

/** End a read section begun with `token`, on any thread.
 * @param d the reclamation domain
 * @param token what baton_smr_read_lock() returned
 * @return BATON_OK, or an error: BATON_EINVAL (NULL d, a token read_lock did
 * not give). */
BATON_API int baton_smr_read_unlock(baton_smr_t *d, int token);

/**
 * The read side inline, on x86-64: the calls above, without the call.
 * What the inline code may read of a domain (its first fields) and of the
 * calling thread (the record of the domain it read last). A thread-local
 * variable is read afresh at each use with one %fs-relative load, so a
 * section that moved to another thread finds that thread's record; other
 * architectures may keep a thread pointer in a register across the park
 * (AArch64's GCC reads TPIDR_EL0 once per function) and call the library.
 * A domain with the `fence` mechanism, a thread's first section and any
 * bad argument take the call too. BATON_SMR_NO_INLINE turns this off.
 */
struct baton_smr_head_ {
	uint64_t id;         /**< the domain's unique number */
	unsigned idx;        /**< the index new sections use (atomic) */
	unsigned char fence; /**< readers fence: no asymmetric barrier */
};
struct baton_smr_tls_ {
	uint64_t id;   /**< the domain whose record ctr is, 0 for none */
	uint64_t *ctr; /**< that record: lock[2], then unlock[2] */
};
#if defined(__x86_64__) && !defined(BATON_SMR_NO_INLINE)
BATON_API extern __thread struct baton_smr_tls_ baton__smr_tls
	__attribute__((tls_model("initial-exec")));

static inline int baton__smr_read_lock_inline(baton_smr_t *d)
{
	const struct baton_smr_head_ *h = (const struct baton_smr_head_ *)(void *)d;
	uint64_t *c;
	unsigned i;

	if (__builtin_expect(d == NULL || h->fence || baton__smr_tls.id != h->id, 0))
		return baton_smr_read_lock(d);
	c = baton__smr_tls.ctr;
	/* Relaxed: a stale index only makes a grace period wait for this
	 * section too (see the ordering above). */
	i = __atomic_load_n(&h->idx, __ATOMIC_RELAXED) & 1;
	/* Relaxed load and store: only this thread writes its record; the
	 * heavy side's barrier orders the store before the loads below. */
	__atomic_store_n(&c[i], __atomic_load_n(&c[i], __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	return (int)i;
}

static inline int baton__smr_read_unlock_inline(baton_smr_t *d, int token)
{
	const struct baton_smr_head_ *h = (const struct baton_smr_head_ *)(void *)d;
	uint64_t *c;

	if (__builtin_expect(d == NULL || (unsigned)token > 1 || baton__smr_tls.id != h->id, 0))
		return baton_smr_read_unlock(d, token);
	c = baton__smr_tls.ctr + 2;
	/* Release: the section's loads come before a writer that sees the
	 * count frees anything. */
	__atomic_store_n(&c[token], __atomic_load_n(&c[token], __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELEASE);
	return BATON_OK;
}

#define baton_smr_read_lock(d) baton__smr_read_lock_inline(d)
#define baton_smr_read_unlock(d, token) baton__smr_read_unlock_inline((d), (token))
#endif

/** Wait for a grace period: every read section that began before the call
 * has ended. Parks the calling task (polling with growing sleeps), or
 * sleeps the calling thread outside tasks. Then frees the retired batches
 * that are due. timeout_ns < 0: no limit; 0: only tries, without
 * sleeping.
 * @param d the reclamation domain
 * @param timeout_ns < 0 waits forever, 0 only tries, > 0 waits at most
 * that many nanoseconds
 * @return BATON_OK, or an error: BATON_EINVAL, BATON_EAGAIN (timeout 0 and a
 * reader is still in its section), BATON_ETIMEDOUT, BATON_ECANCELED (the task
 * was cancelled). */
BATON_API int baton_smr_synchronize(baton_smr_t *d, int64_t timeout_ns);

/** Free `ptr` with free_fn(ptr) after a grace period; never blocks.
 * @param d the reclamation domain
 * @param ptr the object to free
 * @param free_fn frees it: free_fn(ptr)
 * @return BATON_OK, or an error: BATON_EINVAL (NULL d or free_fn),
 * BATON_ENOMEM (nothing was retired: the caller still owns ptr). */
BATON_API int baton_smr_retire(baton_smr_t *d, void *ptr, baton_smr_free_fn free_fn);

/** Without blocking: close the open batch, advance the grace period as far
 * as the readers allow, free what is due.
 * @param d the reclamation domain
 * @return BATON_OK, or an error: BATON_EINVAL. */
BATON_API int baton_smr_poll(baton_smr_t *d);

/** For shutdown: wait until everything retired (read-section flavour)
 * before the call is freed.
 * @param d the reclamation domain
 * @param timeout_ns < 0 waits forever, 0 only tries, > 0 waits at most
 * that many nanoseconds
 * @return BATON_OK, or an error:as baton_smr_synchronize. */
BATON_API int baton_smr_barrier(baton_smr_t *d, int64_t timeout_ns);

/* --- hazard pointers ------------------------------------------------------ */

/** A hazard slot for the caller (rule 4), naming nothing.
 * @param d the reclamation domain
 * @param out receives the new hazard pointer slot
 * @return BATON_OK, or an error: BATON_EINVAL, BATON_ENOMEM. */
BATON_API int baton_smr_hp_acquire(baton_smr_t *d, baton_smr_hp_t **out);

/** Load *src and protect what it points to: *out receives a pointer that
 * *src held while the slot named it, safe to use until the slot is
 * cleared, protects another or is released.
 * @param hp the hazard pointer slot
 * @param src where the pointer to protect is loaded from
 * @param out receives the protected pointer
 * @return BATON_OK, or an error: BATON_EINVAL. */
BATON_API int baton_smr_hp_protect(baton_smr_hp_t *hp, void *const *src, void **out);

/** Name nothing.
 * @param hp the hazard pointer slot
 * @return BATON_OK, or an error: BATON_EINVAL. */
BATON_API int baton_smr_hp_clear(baton_smr_hp_t *hp);

/** Give the slot back (cleared) for reuse.
 * @param hp the hazard pointer slot
 * @return BATON_OK, or an error: BATON_EINVAL. */
BATON_API int baton_smr_hp_release(baton_smr_hp_t *hp);

/** Free `ptr` with free_fn(ptr) once no slot names it. Scans the slots
 * when hp_bound objects are pending (in the calling thread, with the
 * asymmetric barrier), so at most hp_bound objects are ever pending.
 * @param d the reclamation domain
 * @param ptr the object to free
 * @param free_fn frees it: free_fn(ptr)
 * @return BATON_OK, or an error: BATON_EINVAL, BATON_ENOMEM (nothing retired). */
BATON_API int baton_smr_hp_retire(baton_smr_t *d, void *ptr, baton_smr_free_fn free_fn);

/* --- introspection ---------------------------------------------------------- */

/** Counters of a domain (baton_smr_stats()). */
struct baton_smr_stats {
	uint64_t grace_periods; /**< completed */
	uint64_t retired;       /**< objects retired, both flavours */
	uint64_t freed;         /**< of those, freed */
	uint64_t pending;       /**< read-section flavour: retired, not freed */
	uint64_t hp_pending;    /**< hazard flavour: retired, not freed */
	uint64_t hp_slots;      /**< hazard slots made (H) */
	uint64_t hp_bound;      /**< hp_pending never exceeds this:
				   max(2 H, BATON_SMR_BATCH) */
	uint64_t readers;       /**< threads with a reader record */
};

/** A snapshot of the counters.
 * @param d the reclamation domain
 * @param out filled with the statistics
 * @return BATON_OK, or an error: BATON_EINVAL. */
BATON_API int baton_smr_stats(baton_smr_t *d, struct baton_smr_stats *out);

/** The mechanism chosen (enum baton_smr_barrier); chooses on first use.
 * @return an enum baton_smr_barrier */
BATON_API int baton_smr_barrier_kind(void);

/** "fence", "membarrier", "mprotect"; "" for an unknown kind.
 * @param kind an enum baton_smr_barrier value
 * @return the name, static; "" for an unknown kind */
BATON_API const char *baton_smr_barrier_name(int kind);

#ifdef __cplusplus
}
#endif

#endif /* BATON_SMR_H */
