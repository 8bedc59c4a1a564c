/* SPDX-License-Identifier: MIT */
/*
 * baton_chicken.h - call CHICKEN Scheme from any number of threads.
 *
 * CHICKEN keeps its youngest generation of objects (the nursery) on the C
 * stack, so only one stack may ever run Scheme code. This binding gives the
 * runtime a dedicated stack owned by a call sequencer (baton/seq.h):
 * baton_chicken_start() boots the compiled Scheme program on that stack
 * until the program calls (return-to-host); from then on any thread calls
 * Scheme by running a function on that stack through the sequencer, one call
 * at a time, with flat combining when threads contend.
 *
 * The Scheme side declares its entry points with define-sequenced-callback
 * (bindings/chicken/baton-chicken.scm), which generates the C function and
 * its trip through the sequencer:
 *
 *     ;; square.scm, compiled with: csc -embedded -t -I <this dir> square.scm
 *     (include "baton-chicken.scm")
 *     (import baton-chicken (chicken platform))
 *     (define-sequenced-callback (square (int a)) int
 *       (* a a))
 *     (return-to-host)
 *
 *     // main.c
 *     #include <baton_chicken.h>
 *     int square(int a);            // generated; callable from any thread
 *
 *     int main(void)
 *     {
 *         if (baton_chicken_start(NULL) != BATON_OK)
 *             return 1;
 *         printf("%d\n", square(4));   // 16
 *         return 0;
 *     }
 *
 * For `(define-sequenced-callback (NAME (TYPE VAR) ...) RTYPE BODY ...)`
 * the macro generates two C functions, with TYPE and RTYPE translated to C
 * as define-external translates them:
 *
 *     RTYPE NAME(T1 a0, ...);            // aborts with a message on error
 *     int NAME_try(T1 a0, ..., RTYPE *ret); // BATON_OK or an error code
 *                                        // (no `ret` when RTYPE is void)
 *
 * A condition the Scheme body raises does not reach CHICKEN's toplevel
 * handler (which would end the process): NAME_try returns
 * BATON_CHICKEN_ERROR and baton_chicken_last_error() gives the condition's
 * message on the calling thread; NAME, which has no error channel, prints
 * it and aborts.
 *
 * Rules a caller must keep:
 *  1. One runtime per process (CHICKEN's state is global): start it once,
 *     before the first call, from any thread. It cannot be restarted after
 *     baton_chicken_stop().
 *  2. The compiled program must end its toplevel with (return-to-host);
 *     everything before it runs once, on the dedicated stack, inside
 *     baton_chicken_start().
 *  3. Every entry into Scheme goes through the sequencer: call the generated
 *     functions or baton_chicken_call(), never a define-external directly
 *     from a thread's own stack.
 *  4. A pointer a callback returns into Scheme data (a c-string result, a
 *     blob's address) is valid only until the next call into the runtime
 *     from any thread: the collector moves objects. Return scalars, or
 *     copy into malloc'd memory inside the callback.
 *  5. A callback that calls C that calls another sequenced callback on the
 *     same stack is fine (it runs directly, nested), as long as the C was
 *     entered through foreign-safe-lambda, as CHICKEN requires for any
 *     callback from C.
 *  6. Do not call baton_chicken_stop() while another thread may call in.
 */
#ifndef BATON_CHICKEN_H
#define BATON_CHICKEN_H

#include <stddef.h>

#include <baton/error.h>
#include <baton/seq.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A sequenced callback's Scheme body raised a condition (NAME_try); the
 * message is baton_chicken_last_error()'s. */
#define BATON_CHICKEN_ERROR (-101)

/* The nursery CHICKEN 5 uses on 64-bit hosts when not told otherwise. */
#define BATON_CHICKEN_NURSERY_DEFAULT (1024u * 1024u)
/* Room on the dedicated stack besides the nursery: the sequencer's and the
 * callback wrapper's frames, the collector (it runs where the nursery
 * check failed, below the nursery's limit) and C called from Scheme. */
#define BATON_CHICKEN_STACK_SLACK (1024u * 1024u)

struct baton_chicken_attr {
	void *toplevel; /* entry of the compiled program; NULL = C_toplevel,
			    the one csc -embedded generates for a program */
	size_t nursery; /* CHICKEN's stack-allocated nursery in bytes;
			    0 = BATON_CHICKEN_NURSERY_DEFAULT */
	size_t heap;    /* initial heap in bytes; 0 = CHICKEN's default */
	unsigned batch; /* flat-combining batch (baton_seq_attr.batch) */
};

#define BATON_CHICKEN_ATTR_INIT \
	{                       \
		NULL, 0, 0, 16  \
	}

/* Collections the runtime has made since it started (counted by CHICKEN's
 * post-GC hook; read through the sequencer, so the numbers are current). */
struct baton_chicken_gc_stats {
	unsigned long minor; /* nursery evacuations */
	unsigned long major; /* full heap collections, resizes included */
	unsigned long ms;    /* milliseconds CHICKEN reports spent in GC */
};

/* Create the sequencer and its stack (nursery + BATON_CHICKEN_STACK_SLACK)
 * and run the program's toplevel on it until (return-to-host). `attr` may be
 * NULL for the defaults.
 * Errors: BATON_EINVAL (no toplevel: attr->toplevel is NULL and the program
 * has no C_toplevel; nursery or heap too large for CHICKEN), BATON_EBUSY
 * (already started), BATON_ESHUTDOWN (stopped: CHICKEN cannot restart),
 * BATON_ESYS (CHICKEN could not allocate its heap), or what baton_seq_create
 * returns. */
BATON_API int baton_chicken_start(const struct baton_chicken_attr *attr);

/* Run fn(arg) on the runtime's stack, sequenced with every other call, and
 * store its result in *result if `result` is not NULL. fn may call Scheme
 * (define-external functions). Called on the runtime's stack (from inside a
 * callback) it runs fn directly.
 * Errors: BATON_EINVAL (NULL fn, or the runtime is not started), or what
 * baton_seq_call returns. */
BATON_API int baton_chicken_call(baton_seq_fn fn, void *arg, void **result);

/* baton_chicken_call for the generated functions, which have no error
 * channel: on failure prints "baton_chicken: <who>: <reason>" on stderr and
 * aborts. */
BATON_API void baton_chicken_call_or_die(baton_seq_fn fn, void *arg, const char *who);

/* The message of the condition behind the calling thread's last
 * BATON_CHICKEN_ERROR (as print-error-message writes it), or NULL if none;
 * valid until that thread's next failing call. */
BATON_API const char *baton_chicken_last_error(void);

/* For the generated code only (baton-chicken.scm): on the runtime's stack,
 * raise_ keeps a condition's message and take_error_ hands it to the
 * trampoline (NULL if none); on the caller's thread, fail_ makes it the
 * thread's last error and returns BATON_CHICKEN_ERROR, and die_on_error_
 * prints it and aborts. */
BATON_API void baton_chicken_raise_(const char *message);
BATON_API char *baton_chicken_take_error_(void);
BATON_API int baton_chicken_fail_(char *message);
BATON_API void baton_chicken_die_on_error_(char *message, const char *who);

/* Change the flat-combining batch (0 turns combining off).
 * Errors: BATON_EINVAL (not started), or what baton_seq_set_batch returns. */
BATON_API int baton_chicken_set_batch(unsigned k);

/* The sequencer that owns the runtime, or NULL when not started. */
BATON_API baton_seq_t *baton_chicken_seq(void);

/* Fill *out with the collections made so far.
 * Errors: BATON_EINVAL (NULL out, not started). */
BATON_API int baton_chicken_gc_stats(struct baton_chicken_gc_stats *out);

/* Destroy the sequencer and its stack. CHICKEN's heap stays allocated (the
 * runtime has no way to shut down) and the runtime cannot be started again.
 * Errors: BATON_EINVAL (not started), or what baton_seq_destroy returns. */
BATON_API int baton_chicken_stop(void);

#ifdef __cplusplus
}
#endif

#endif /* BATON_CHICKEN_H */
