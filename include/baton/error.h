/*
 * baton/error.h - error codes shared by every baton module.
 *
 * Every public baton function that can fail returns an int: BATON_OK (0) on
 * success or one of the negative codes below. baton_strerror() turns a code
 * into a sentence fit for a log line.
 *
 *     int rc = baton_coro_resume(co, NULL, &out);
 *     if (rc != BATON_OK)
 *         fprintf(stderr, "resume: %s\n", baton_strerror(rc));
 *
 * Rules:
 *  - Codes are stable: new ones are appended, none is renumbered.
 *  - A failed call changes nothing the caller can observe, unless its
 *    header says otherwise.
 */
#ifndef BATON_ERROR_H
#define BATON_ERROR_H

/* Marks the functions libbaton exports; everything else stays hidden. */
#ifndef BATON_API
#define BATON_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

enum baton_error {
	BATON_OK = 0,
	BATON_EINVAL = -1,    /* an argument is NULL, out of range or inconsistent */
	BATON_ENOMEM = -2,    /* malloc or mmap failed */
	BATON_EDEAD = -3,     /* the coroutine has finished; it cannot be resumed */
	BATON_ERUNNING = -4,  /* the coroutine is running or is resuming another */
	BATON_ENOTCORO = -5,  /* the call must be made from inside a coroutine */
	BATON_ETHREAD = -6,   /* the object belongs to another thread */
	BATON_ELOCALADDR = -7,/* a value points into a copy-stack coroutine's stack */
	BATON_ESTACK = -8,    /* the requested stack is too small or too large */
	BATON_EDONE = -9,     /* a generator is exhausted */
	BATON_EBUSY = -10,    /* the object is in use and cannot be destroyed now */
	BATON_ETIMEDOUT = -11,/* the deadline passed before the operation could complete */
	BATON_ECLOSED = -12,  /* the channel (or queue) is closed */
	BATON_EPERM = -13,    /* the caller does not hold what the call releases */
	BATON_EAGAIN = -14,   /* the operation would block (try-variants, full queues) */
	BATON_ENOSCHED = -15, /* the call must be made from a coroutine run by a scheduler */
	BATON_EDEADLK = -16,  /* the call would deadlock (e.g. a re-entrant call) */
	BATON_ESYS = -17,     /* a system call failed (see errno) */
	BATON_ESHUTDOWN = -18,/* the object is shutting down and takes no new work */
};

/* A readable, static description of `code`; never NULL. */
BATON_API const char *baton_strerror(int code);

#ifdef __cplusplus
}
#endif

#endif /* BATON_ERROR_H */
