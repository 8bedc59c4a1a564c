/* SPDX-License-Identifier: MIT */
/**
 * @file baton/gen.h
 * generators: iterators whose values are produced by a
 * coroutine, written as an ordinary loop that yields.
 *
 * A generator body calls baton_gen_yield() for each value; the consumer
 * calls baton_gen_next() until it returns BATON_EDONE. Generators nest: a
 * body may create and iterate other generators (see examples/catalan.c,
 * which enumerates binary trees through a generator per subtree size).
 *
 * @code
 *     static void count_up(baton_gen_t *g, void *arg)
 *     {
 *         for (intptr_t i = 0; i < (intptr_t)arg; i++)
 *             baton_gen_yield(g, (void *)i);
 *     }
 *
 *     baton_gen_t *g;
 *     void *v;
 *     baton_gen_create(&g, NULL, count_up, (void *)3);
 *     while (baton_gen_next(g, &v) == BATON_OK)
 *         printf("%ld\n", (long)(intptr_t)v);   // 0 1 2
 *     baton_gen_destroy(g);
 * @endcode
 *
 * Rules a caller must keep:
 *  - baton_gen_yield(g, ...) is called only from g's own body.
 *  - The coroutine rules of baton/coro.h apply: with the copy-stack model,
 *    yield pointers to heap memory, never to the body's locals.
 *  - Destroying a generator that has not finished abandons its body where
 *    it stopped (nothing is unwound).
 */
#ifndef BATON_GEN_H
#define BATON_GEN_H

#include <baton/coro.h>
#include <baton/error.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A generator (opaque). */
typedef struct baton_gen baton_gen_t;

/** The body. It yields values with baton_gen_yield(g, v) and returns when
 * there are no more. */
typedef void (*baton_gen_fn)(baton_gen_t *g, void *arg);

/** Create a generator; `attr` chooses the coroutine model and stack (NULL:
 * stackful, default stack).
 * @param out receives the new generator
 * @param attr the attributes, or NULL for the defaults
 * @param fn the generator's body
 * @param arg passed to `fn`
 * @return BATON_OK, or an error:as baton_coro_create(). */
BATON_API int baton_gen_create(baton_gen_t **out, const struct baton_coro_attr *attr,
			       baton_gen_fn fn, void *arg);

/** Run the body to its next value and store it in *value (if not NULL).
 * @param g the generator
 * @param value receives the value, or NULL
 * @return BATON_OK with a value, BATON_EDONE once the body has returned (again
 * on every later call), BATON_EINVAL for a NULL generator, BATON_ERUNNING if
 * called from inside the generator's own body (or from a generator it is
 * resuming), or an error of baton_coro_resume(). */
BATON_API int baton_gen_next(baton_gen_t *g, void **value);

/** From g's body: hand `value` to the consumer and wait for the next
 * baton_gen_next().
 * @param g the generator
 * @param value the value handed to the consumer
 * @return BATON_OK, or an error: BATON_EINVAL (NULL g, or not called from g's
 * body), BATON_ELOCALADDR (debug builds, see baton/coro.h). */
BATON_API int baton_gen_yield(baton_gen_t *g, void *value);

/** From g's body: yield every value of `inner`, then return BATON_OK (or the
 * first error). The delegation of Python's "yield from".
 * @param g the generator
 * @param inner the generator
 * @return BATON_OK, or an error: BATON_EINVAL (NULL g or inner, inner == g, or
 * not called from g's body; inner is then untouched), an error of
 * baton_gen_next() on inner or of baton_gen_yield(). */
BATON_API int baton_gen_yield_from(baton_gen_t *g, baton_gen_t *inner);

/** The coroutine behind a generator (for its status or name); NULL for a
 * NULL g.
 * @param g the generator
 * @return the coroutine, or NULL */
BATON_API baton_coro_t *baton_gen_coro(const baton_gen_t *g);

/** Free the generator. NULL is a no-op.
 * @param g the generator
 * @return BATON_OK, or an error: BATON_EBUSY while its body runs (also while
 * it resumes another generator, and from inside it). */
BATON_API int baton_gen_destroy(baton_gen_t *g);

#ifdef __cplusplus
}
#endif

#endif /* BATON_GEN_H */
