/* SPDX-License-Identifier: MIT */
/*
 * Watches: what a higher layer built on a scheduler (a stage) hears of its
 * destroy (struct baton_sched_watch, sched_internal.h).
 */
#include <pthread.h>

#include "sched_internal.h"

/* Every scheduler's watch list: a stage's destroy may race its scheduler's,
 * and then only a lock that outlives both can say which came first. */
static pthread_mutex_t watch_lock = PTHREAD_MUTEX_INITIALIZER;

void baton__sched_watch(struct baton_sched *s, struct baton_sched_watch *w)
{
	pthread_mutex_lock(&watch_lock);
	w->sched = s;
	baton__list_push_head(&s->watches, &w->link);
	pthread_mutex_unlock(&watch_lock);
}

void baton__sched_unwatch(struct baton_sched_watch *w)
{
	pthread_mutex_lock(&watch_lock);
	if (w->sched) {
		baton__list_remove(&w->sched->watches, &w->link);
		w->sched = NULL;
	}
	pthread_mutex_unlock(&watch_lock);
}

/* Destroy, its tasks freed: tell the watchers. Under the lock, so that
 * none of them is freed (unwatched) while its `gone` runs. */
void baton__sched_watches_gone(struct baton_sched *s)
{
	struct baton_list_node *n;

	pthread_mutex_lock(&watch_lock);
	while ((n = baton__list_pop(&s->watches)) != NULL) {
		struct baton_sched_watch *w = BATON_LIST_ENTRY(n, struct baton_sched_watch, link);

		w->sched = NULL;
		w->gone(w);
	}
	pthread_mutex_unlock(&watch_lock);
}
