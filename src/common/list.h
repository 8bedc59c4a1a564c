/* SPDX-License-Identifier: MIT */
/*
 * src/common/list.h - the library's one doubly-linked list: intrusive (a
 * record embeds a struct baton_list_node and may sit in as many lists as
 * it embeds nodes), typed back through BATON_LIST_ENTRY (container-of), and
 * NULL-terminated, so that a zeroed struct baton_list is an empty list and
 * a zeroed node is one in no list (records here come from calloc or are
 * cleared whole). Every operation is a few plain loads and stores, inline:
 * the wait queues of src/sched/wait.h are these lists, on the hop's path.
 * The caller owns the locking: nothing here is atomic.
 *
 *     struct conn {
 *             struct baton_list_node link;   // in server.conns
 *             int fd;
 *     };
 *     struct baton_list conns = BATON_LIST_INIT;
 *     struct conn *c = calloc(1, sizeof(*c)), *tmp;  // zeroed: in no list
 *
 *     baton__list_push_tail(&conns, &c->link);
 *     BATON_LIST_FOR_EACH(c, &conns, link)
 *             shutdown(c->fd, SHUT_RD);
 *     BATON_LIST_FOR_EACH_SAFE(c, tmp, &conns, link) {
 *             baton__list_remove(&conns, &c->link);
 *             free(c);
 *     }
 *
 * Rules:
 *  1. A node is in at most one list at a time; remove it from the list it
 *     is in (the list is an argument: a node does not know its list).
 *  2. A node's links are the list's: once removed they say nothing (a
 *     record that must know whether it is listed keeps a flag of its own,
 *     as struct baton_waiter's `linked`). Release builds leave them as
 *     they were; debug builds (BATON_DEBUG) poison them, so that a use
 *     after removal faults at a small address.
 *  3. Under BATON_DEBUG every insertion asserts that the node is in no
 *     list (zeroed or poisoned, and not the list's only node) and every
 *     removal that it is in this one (its neighbours point back at it, or
 *     the list's ends do): a node inserted twice or removed twice aborts.
 *     What is not caught: inserting a node that is another list's only
 *     node (its links are NULL, as a fresh node's).
 *  4. Only BATON_LIST_FOR_EACH_SAFE allows removing the current node
 *     during the walk (no other node may be removed meanwhile).
 *  5. No node points at its list, so a list moves by assignment: `mine =
 *     *l; baton__list_init(l);` takes every node at once (e.g. under a
 *     lock, to free them after it).
 */
#ifndef BATON_SRC_LIST_H
#define BATON_SRC_LIST_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h" /* BATON_DEBUG */

struct baton_list_node {
	struct baton_list_node *next, *prev; /* NULL at the ends */
};

struct baton_list {
	struct baton_list_node *head, *tail; /* both NULL when empty */
};

#define BATON_LIST_INIT    \
	{                  \
		NULL, NULL \
	}

/* The links of a removed node in a debug build: below the lowest address
 * Linux maps (vm.mmap_min_addr), so that following one faults. */
#define BATON_LIST_POISON_NEXT ((struct baton_list_node *)(uintptr_t)0x100)
#define BATON_LIST_POISON_PREV ((struct baton_list_node *)(uintptr_t)0x200)

/* The record of `type` whose member `member` is the node `node`. */
#define BATON_LIST_ENTRY(node, type, member) \
	((type *)(void *)((char *)(node)-offsetof(type, member)))

/* The same with `pos`'s type, NULL for a NULL node (the end of a walk). */
#define BATON_LIST_ENTRY_OF(node, pos, member)                                                   \
	((node) ? (__typeof__(pos))(void *)((char *)(node)-offsetof(__typeof__(*(pos)), member)) \
		: NULL)

/* Walk `list` from head to tail, `pos` (a pointer to the records, declared
 * by the caller) naming each record in turn through its node `member`. */
#define BATON_LIST_FOR_EACH(pos, list, member)                              \
	for ((pos) = BATON_LIST_ENTRY_OF((list)->head, pos, member); (pos); \
	     (pos) = BATON_LIST_ENTRY_OF((pos)->member.next, pos, member))

/* The same, `tmp` (of pos's type) holding the next record, so that the
 * body may remove (and free) `pos`. */
#define BATON_LIST_FOR_EACH_SAFE(pos, tmp, list, member)                                    \
	for ((pos) = BATON_LIST_ENTRY_OF((list)->head, pos, member);                        \
	     (pos) && ((tmp) = BATON_LIST_ENTRY_OF((pos)->member.next, pos, member), true); \
	     (pos) = (tmp))

static inline void baton__list_init(struct baton_list *l)
{
	l->head = l->tail = NULL;
}

/* A node in no list yet, for a record that is not zeroed. */
static inline void baton__list_node_init(struct baton_list_node *n)
{
	n->next = n->prev = NULL;
}

static inline bool baton__list_empty(const struct baton_list *l)
{
	return l->head == NULL;
}

/* The first node, or NULL. */
static inline struct baton_list_node *baton__list_first(const struct baton_list *l)
{
	return l->head;
}

/* --- the debug checks (rule 3); nothing in other builds -------------------- */
static inline void baton__list_check_out(const struct baton_list *l,
					 const struct baton_list_node *n)
{
#if BATON_DEBUG
	assert((n->next == NULL && n->prev == NULL) ||
	       (n->next == BATON_LIST_POISON_NEXT && n->prev == BATON_LIST_POISON_PREV));
	assert(l->head != n);
#else
	(void)l;
	(void)n;
#endif
}

static inline void baton__list_check_in(const struct baton_list *l, const struct baton_list_node *n)
{
#if BATON_DEBUG
	assert(n->next != BATON_LIST_POISON_NEXT && n->prev != BATON_LIST_POISON_PREV);
	assert(n->prev ? n->prev->next == n : l->head == n);
	assert(n->next ? n->next->prev == n : l->tail == n);
#else
	(void)l;
	(void)n;
#endif
}

static inline void baton__list_poison(struct baton_list_node *n)
{
#if BATON_DEBUG
	n->next = BATON_LIST_POISON_NEXT;
	n->prev = BATON_LIST_POISON_PREV;
#else
	(void)n;
#endif
}

/* --- insertion --------------------------------------------------------------- */
/* Link n between prev and next, neighbours in l (NULL: that end of l).
 * Every insertion is this one, with what it knows made constant. */
static inline void baton__list_link(struct baton_list *l, struct baton_list_node *prev,
				    struct baton_list_node *next, struct baton_list_node *n)
{
	n->prev = prev;
	n->next = next;
	if (prev)
		prev->next = n;
	else
		l->head = n;
	if (next)
		next->prev = n;
	else
		l->tail = n;
}

static inline void baton__list_push_head(struct baton_list *l, struct baton_list_node *n)
{
	baton__list_check_out(l, n);
	baton__list_link(l, NULL, l->head, n);
}

static inline void baton__list_push_tail(struct baton_list *l, struct baton_list_node *n)
{
	baton__list_check_out(l, n);
	baton__list_link(l, l->tail, NULL, n);
}

/* Into `l`, which the caller knows to be empty (asserted in a debug build):
 * `n` becomes its only node, with no load of the list. */
static inline void baton__list_push_only(struct baton_list *l, struct baton_list_node *n)
{
	baton__list_check_out(l, n);
#if BATON_DEBUG
	assert(l->head == NULL && l->tail == NULL);
#endif
	baton__list_link(l, NULL, NULL, n);
}

/* Insert `n` right after `pos`, a node of `l`. */
static inline void baton__list_insert_after(struct baton_list *l, struct baton_list_node *pos,
					    struct baton_list_node *n)
{
	baton__list_check_in(l, pos);
	baton__list_check_out(l, n);
	baton__list_link(l, pos, pos->next, n);
}

/* --- removal --------------------------------------------------------------- */
static inline void baton__list_remove(struct baton_list *l, struct baton_list_node *n)
{
	baton__list_check_in(l, n);
	if (n->prev)
		n->prev->next = n->next;
	else
		l->head = n->next;
	if (n->next)
		n->next->prev = n->prev;
	else
		l->tail = n->prev;
	baton__list_poison(n);
}

/* Remove and return the first node, or NULL if `l` is empty. */
static inline struct baton_list_node *baton__list_pop(struct baton_list *l)
{
	struct baton_list_node *n = l->head;

	if (n == NULL)
		return NULL;
	baton__list_check_in(l, n);
	l->head = n->next;
	if (n->next)
		n->next->prev = NULL;
	else
		l->tail = NULL;
	baton__list_poison(n);
	return n;
}

#endif /* BATON_SRC_LIST_H */
