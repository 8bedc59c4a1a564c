/* SPDX-License-Identifier: MIT */
/**
 * @file baton/error.h
 * error codes shared by every baton module.
 *
 * Every public baton function that can fail returns an int: BATON_OK (0) on
 * success or one of the negative codes below. baton_strerror() turns a code
 * into a sentence fit for a log line, baton_err_name() into its name.
 *
 * @code
 *     int rc = baton_coro_resume(co, NULL, &out);
 *     if (rc != BATON_OK)
 *         fprintf(stderr, "resume: %s (%s)\n", baton_strerror(rc), baton_err_name(rc));
 * @endcode
 *
 * Rules:
 *  - Codes are stable: new ones are appended, none is renumbered.
 *  - A failed call changes nothing the caller can observe, unless its
 *    header says otherwise.
 *  - Any call that returns an error code may return BATON_ENOMEM, whether
 *    or not its header lists it (a wait may need a timer, a switch between
 *    copy-stack coroutines a save buffer, a server's step a buffer): the
 *    call then failed as above, and everything it was given stays usable.
 *    The test builds check this by failing each allocation of the library
 *    in turn (docs/testing.md).
 *  - Getters have one shape: a getter of one number returns it, and a
 *    negative return is an error code (baton_sem_value, baton_chan_len,
 *    baton_sched_workers...); a getter of a name returns a static string,
 *    "" for NULL; a getter of several values fills a struct the caller
 *    passes and returns an error code (the *_stats and *_snapshot calls).
 */
#ifndef BATON_ERROR_H
#define BATON_ERROR_H

#include <baton/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Every code once: X(NAME, value, description). The enum, baton_strerror()
 * and baton_err_name() are generated from this list, so they cannot
 * disagree; a program can expand it too (a table of its own, a binding).
 */
#define BATON_ERRORS(X)                                                          \
	X(OK, 0, "success")                                                      \
	X(EINVAL, -1, "invalid argument")                                        \
	X(ENOMEM, -2, "out of memory")                                           \
	X(EDEAD, -3, "the coroutine has finished and cannot be resumed")         \
	X(ERUNNING, -4, "the coroutine is running or is resuming another one")   \
	X(ENOTCORO, -5, "not called from inside a coroutine")                    \
	X(ETHREAD, -6, "the object belongs to another thread")                   \
	X(ELOCALADDR, -7,                                                        \
	  "the value points into the shared stack of copy-stack "                \
	  "coroutines (address of a local of a coroutine that "                  \
	  "will be switched out)")                                               \
	X(ESTACK, -8, "stack size out of range")                                 \
	X(EDONE, -9, "the generator is exhausted")                               \
	X(EBUSY, -10, "the object is in use")                                    \
	X(ETIMEDOUT, -11, "the deadline passed before the operation completed")  \
	X(ECLOSED, -12, "the channel or queue is closed")                        \
	X(EPERM, -13, "the caller does not hold what it tries to release")       \
	X(EAGAIN, -14, "the operation would block")                              \
	X(ENOSCHED, -15, "not called from a coroutine run by a baton scheduler") \
	X(EDEADLK, -16, "the call would deadlock")                               \
	X(ESYS, -17, "a system call failed (see errno)")                         \
	X(ESHUTDOWN, -18, "shutting down: no new work is accepted")              \
	X(ECANCELED, -19, "the task was cancelled (baton_task_cancel)")          \
	X(ENOTOWNER, -20,                                                        \
	  "only the channel's owner task may receive from it "                   \
	  "(a single-receiver channel)")

#define BATON_ERROR_ENUM_(name, value, text) BATON_##name = (value),
/** The codes: BATON_OK, and BATON_E* negative (the list above). */
enum baton_error { BATON_ERRORS(BATON_ERROR_ENUM_) };
#undef BATON_ERROR_ENUM_

/** A readable, static description of `code`; never NULL (an unknown code
 * gets "unknown baton error code").
 * @param code an error code (BATON_OK, BATON_E*)
 * @return the description, static, never NULL */
BATON_API const char *baton_strerror(int code);

/** The code's name without the prefix ("EINVAL", "OK"), for logs and
 * bindings; "UNKNOWN" for a code not in the list. Static, never NULL.
 * @param code an error code (BATON_OK, BATON_E*)
 * @return the name, static, never NULL */
BATON_API const char *baton_err_name(int code);

#ifdef __cplusplus
}
#endif

#endif /* BATON_ERROR_H */
