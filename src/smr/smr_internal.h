/* SPDX-License-Identifier: MIT */
/*
 * src/smr/smr_internal.h - the domain shared by the read-section flavour
 * (smr.c) and hazard pointers (hp.c), and the heavy side both use.
 *
 * Grace-period state, one word `seq`: the number of grace periods
 * completed times four, plus the phase of the one in progress (0 idle,
 * 1 checking the index not in use, 2 checking the index just left). Only
 * the holder of `gp_busy` advances it; anyone reads it to know when its
 * own grace period is done (smr.c).
 */
#ifndef BATON_SRC_SMR_INTERNAL_H
#define BATON_SRC_SMR_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define BATON_SMR_NO_INLINE /* the library defines the calls themselves */
#include <baton/smr.h>

#include "../common/barrier.h"
#include "../common/prelude.h"
#include "../sched/sched_internal.h"

/* One thread's counters: written by that thread only (smr.h). */
struct smr_rec {
	uint64_t lock[2];   /* sections begun on this thread, per index */
	uint64_t unlock[2]; /* sections ended on this thread, per index */
	pthread_t owner;    /* set before the record is linked, then fixed */
	struct smr_rec *next;
} __attribute__((aligned(BATON_CACHELINE)));

struct baton_smr_hp {
	void *ptr;                 /* the object named (atomic) */
	int owned;                 /* acquired (atomic; claimed by CAS) */
	struct baton_smr *d;       /* its domain: fence or barrier */
	struct baton_smr_hp *next; /* d->hps, fixed once linked */
} __attribute__((aligned(BATON_CACHELINE)));

/* Retired objects of the read-section flavour. */
struct smr_obj {
	void *ptr;
	baton_smr_free_fn fn;
};
struct smr_batch {
	struct smr_batch *next;
	uint64_t target; /* freed once this many grace periods completed */
	unsigned n;
	struct smr_obj objs[BATON_SMR_BATCH];
};

struct baton_smr {
	/* Read by every section, inline ones too (baton/smr.h): first, one
	 * line, written only by the flips. id is unique, never reused: the
	 * thread cache's key. */
	struct baton_smr_head_ h;

	/* The writers' side. */
	struct smr_rec *recs __attribute__((aligned(BATON_CACHELINE)));
	uint64_t orphan_unlock[2];                   /* unlocks on a thread without a record
				      (its allocation failed) (atomic) */
	uint64_t seq;                                /* grace periods * 4 + phase (atomic) */
	uint64_t want;                               /* grace periods someone waits for (atomic) */
	int gp_busy;                                 /* a thread advances seq (atomic try-lock) */
	baton_spinlock_t lock;                       /* recs list, batches, counters */
	struct smr_batch *open;                      /* filling */
	struct smr_batch *closed_head, *closed_tail; /* by target */
	uint64_t retired, freed, pending, readers;

	/* Hazard pointers. */
	struct baton_smr_hp *hps; /* every slot made (atomic head) */
	uint64_t nhps;            /* H (atomic) */
	pthread_mutex_t hp_lock;  /* the retired array, scans */
	struct smr_obj *hp_objs;
	size_t hp_n, hp_cap;
	uint64_t hp_retired, hp_freed;
};

/* The heavy side: the asymmetric barrier, or a fence where readers fence. */
static inline void baton__smr_heavy(const struct baton_smr *d)
{
	if (d->h.fence)
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	else
		baton__barrier_heavy();
}

/* The light side, after a reader's store and before its loads. */
static inline void baton__smr_light(const struct baton_smr *d)
{
	if (BATON_UNLIKELY(d->h.fence))
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	else
		baton__barrier_light();
}

/* hp.c */
int baton__smr_hp_init(struct baton_smr *d);
bool baton__smr_hp_busy(struct baton_smr *d);
size_t baton__smr_hp_bound(struct baton_smr *d); /* max(2 H, BATON_SMR_BATCH) */
void baton__smr_hp_fini(struct baton_smr *d);

#endif /* BATON_SRC_SMR_INTERNAL_H */
