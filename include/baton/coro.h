/* SPDX-License-Identifier: MIT */
/**
 * @file baton/coro.h
 * coroutines: functions that can suspend themselves and be
 * resumed later where they left off, with their local state intact.
 *
 * A coroutine is created suspended. baton_coro_resume() runs it until it
 * calls baton_coro_yield() or returns; each direction carries one pointer.
 * Coroutines are asymmetric, as in Lua: yield always goes back to whoever
 * resumed, so coroutines nest (a coroutine may resume another).
 *
 * @code
 *     static void *count(void *arg, void *in)
 *     {
 *         int *n = arg;
 *         for (;;) {
 *             ++*n;
 *             baton_coro_yield(NULL, NULL);   // back to the resumer
 *         }
 *     }
 *
 *     int n = 0;
 *     baton_coro_t *co;
 *     if (baton_coro_create(&co, NULL, count, &n) != BATON_OK)
 *         abort();
 *     for (int i = 0; i < 3; i++)
 *         baton_coro_resume(co, NULL, NULL);  // n == 3 afterwards
 *     baton_coro_destroy(co);
 * @endcode
 *
 * Two models share this one type (choose with baton_coro_attr.model):
 *
 *  - BATON_CORO_STACKFUL: the coroutine owns a stack, committed page by
 *    page as it is touched, carved from large mappings shared by many
 *    stacks and recycled through a per-thread pool. A switch saves a few
 *    registers; nothing is copied. Below the stack lie two guard pages (so
 *    that a frame a little larger than a page still faults there): an
 *    overflow hits them and is reported on stderr (coroutine name, stack
 *    size) before the process aborts. Each guarded stack costs the process
 *    two of the kernel's mappings (vm.max_map_count, 65530 by default), so
 *    guard pages are used while the stacks' mappings stay within three
 *    quarters of that limit (about 24,500 stacks by default); stacks made
 *    beyond it, and stacks created with BATON_CORO_STACK_CANARY, have a
 *    canary word at their bottom instead, checked at every switch away
 *    from the coroutine, and an overflow is reported by name when it is
 *    found. So the number of live stackful coroutines is bounded by memory,
 *    not by the mapping limit: a million idle ones with 64 KiB stacks cost
 *    about one page of resident memory each.
 *
 *  - BATON_CORO_COPYSTACK ("stackswap"): all copy-stack coroutines of a
 *    thread run on one shared stack. When another copy-stack coroutine needs
 *    that stack, the part the previous one used is copied to a heap buffer
 *    sized to what it used, and copied back when it runs again. An idle
 *    coroutine costs its control block (under 200 bytes) and a buffer of
 *    the bytes it used when first saved plus 16, at the price of a copy
 *    per switch: a bare coroutine parked in a yield, under 400 bytes of
 *    heap in all. A scheduler task adds its record (one allocation with
 *    the control block) and the frames of the call it waits in: a
 *    copy-stack task parked in a channel receive saves about 220 bytes of
 *    stack and costs about 650 bytes of heap (under 1 KiB resident with a
 *    channel of its own), against about 4.7 KiB resident for a stackful
 *    one; deeper frames cost their bytes on top. These figures are for x86-64,
 *    the release build and the hand-written switch; the ucontext fallback
 *    saves its larger context (a ucontext_t, about 1 KiB) on the stack
 *    too. The shared stack (1 MiB) has one guard page below it.
 *
 * Rules a caller must keep:
 *  1. A coroutine is resumed on one thread at a time, and only while it is
 *     suspended. A copy-stack coroutine is resumed only on the thread that
 *     first resumed it (its frames live at that thread's stack addresses).
 *  2. Copy-stack: the address of a local variable of a copy-stack coroutine
 *     is valid only while that coroutine is running, or is resuming a
 *     stackful coroutine (whose frames are elsewhere). While it is
 *     suspended, and while it resumes another copy-stack coroutine of its
 *     thread, its frames are copied out and the memory there belongs to
 *     the other one. Pass heap memory, not &local, to other coroutines and
 *     out through yield. Debug builds (BATON_DEBUG) return
 *     BATON_ELOCALADDR for a resume or yield value, and for the argument of
 *     a copy-stack coroutine being created, that points into the shared
 *     stack, and fill the parts of the shared stack that the coroutine
 *     switched out left behind with 0xdb bytes, so a stale pointer reads
 *     obvious garbage.
 *  3. Do not keep a pointer to thread-local storage across a yield: a
 *     stackful coroutine may be resumed later by another thread.
 *  4. Destroying a suspended coroutine frees its stack without unwinding
 *     it: whatever its function still holds (memory, locks) is not released.
 *  5. The floating-point control state (rounding mode, exception masks) is
 *     per coroutine: a change made inside one stays with it. A coroutine
 *     created with BATON_CORO_SHARED_FPENV, and a thread's own context after
 *     baton_coro_thread_share_fpenv(1), have none of their own instead: they
 *     run in the state of whoever switched to them and must not change it.
 *     This stays the default for plain coroutines: a coroutine may be a
 *     generator that computes in its own rounding mode, and a program that
 *     wants switches without FP work says so with the flag. Scheduler tasks
 *     default to sharing their worker's state instead (baton/sched.h rule
 *     6); a task with BATON_TASK_OWN_FPENV keeps its own, and its state,
 *     unlike a plain coroutine's, never reaches the shared contexts it
 *     switches to (they find their worker's state again).
 *  6. Reporting a guard-page overflow by name takes a SIGSEGV handler. baton
 *     installs one when the first coroutine is created; it handles faults
 *     in baton's guard pages and passes every other fault to the handler
 *     that was installed before it. A program that installs its own
 *     SIGSEGV handler later must chain to the previous one itself, or call
 *     baton_coro_overflow_handler(0) before creating any coroutine: baton
 *     then installs nothing (an overflow still stops at the guard page, as
 *     a plain SIGSEGV; canaries still report).
 */
#ifndef BATON_CORO_H
#define BATON_CORO_H

#include <stddef.h>

#include <baton/error.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A coroutine (opaque). */
typedef struct baton_coro baton_coro_t;

/** The body of a coroutine. `arg` is the pointer given to create, `in` the
 * value passed by the first resume. Its return value is what the final
 * resume delivers; after it returns the coroutine is BATON_CORO_DEAD. */
typedef void *(*baton_coro_fn)(void *arg, void *in);

/** The two models (baton_coro_attr.model; see above). */
enum baton_coro_model {
	BATON_CORO_STACKFUL = 0,  /**< a stack of its own */
	BATON_CORO_COPYSTACK = 1, /**< the thread's shared stack, copied out */
};

/** What baton_coro_status() returns. */
enum baton_coro_status {
	BATON_CORO_SUSPENDED = 0, /**< created, or stopped in yield */
	BATON_CORO_RUNNING = 1,   /**< executing now */
	BATON_CORO_NORMAL = 2,    /**< it resumed another coroutine, waits for it */
	BATON_CORO_DEAD = 3,      /**< its function returned */
};

/** Stack sizes for stackful coroutines. The size is the usable stack; the
 * guard page and the coroutine's control block come on top. Pages are
 * committed only when touched, so a large size costs address space only. @{ */
#define BATON_CORO_STACK_DEFAULT (64u * 1024u)
#define BATON_CORO_STACK_MIN (16u * 1024u)
#define BATON_CORO_STACK_MAX (1024u * 1024u * 1024u)
/** @} */

/* Flags of baton_coro_attr.flags. */
/** The coroutine has no floating-point control state of its own (rule 5):
 * it runs in whatever state is current when it is switched to, and
 * promises neither to change nor to depend on the rounding mode and the
 * exception masks. A switch stores the state of the context it leaves only
 * if that context keeps its own, and loads the target's only if the target
 * keeps its own: between two such coroutines (or tasks) no FP work is done
 * at all, which is most of a switch's cost on CPUs where storing and
 * reloading MXCSR stalls (about 50 ns per round trip on the Intel Xeon of
 * docs/coroutines.md). Coroutines that keep their own state keep it
 * exactly, whatever the shared ones do. */
#define BATON_CORO_SHARED_FPENV 1u
/** Stackful: protect the stack with a canary word at its bottom, checked at
 * every switch away from the coroutine, instead of a guard page. An
 * overflow is reported after the fact (by name, then abort), once the
 * coroutine switches away, and may first have run through the two pages
 * of slack below the stack into whatever lies below them; in exchange the stack costs
 * no mapping of its own (see the model description above). */
#define BATON_CORO_STACK_CANARY 2u
/** Every flag this version knows. */
#define BATON_CORO_FLAGS_KNOWN (BATON_CORO_SHARED_FPENV | BATON_CORO_STACK_CANARY)

/** Attributes of a coroutine: baton_coro_attr_init() sets the defaults. */
struct baton_coro_attr {
	enum baton_coro_model model; /**< BATON_CORO_STACKFUL or BATON_CORO_COPYSTACK */
	size_t stack_size;           /**< stackful only (must be 0 for copy-stack: the
			      shared stack's size bounds them all); 0 means
			      BATON_CORO_STACK_DEFAULT */
	const char *name;            /**< for diagnostics; copied (truncated to 31 bytes) */
	unsigned flags;              /**< BATON_CORO_* flags above; 0 for the defaults */
};

/** The defaults of struct baton_coro_attr, as an initialiser. */
#define BATON_CORO_ATTR_INIT                    \
	{                                       \
		BATON_CORO_STACKFUL, 0, NULL, 0 \
	}

/** Attributes, the same in every module (docs/architecture.md): declare
 * the struct, fill it with its init function (the defaults), set the
 * fields wanted, pass its address; where nothing is required a NULL
 * attribute pointer means the defaults. The BATON_*_ATTR_INIT macros give
 * the same defaults as a constant initialiser, for existing code and
 * static tables. Here: a stackful coroutine with the default stack, no
 * name, no flags.
 * @param a the attributes to set to the defaults
 * @return BATON_OK, or an error: BATON_EINVAL (NULL a). */
static inline int baton_coro_attr_init(struct baton_coro_attr *a)
{
	const struct baton_coro_attr d = BATON_CORO_ATTR_INIT;

	if (a == NULL)
		return BATON_EINVAL;
	*a = d;
	return BATON_OK;
}

/** Create a suspended coroutine that will run fn(arg, in). `attr` may be NULL
 * for a stackful coroutine with the default stack.
 * @param out receives the new coroutine
 * @param attr the attributes, or NULL for the defaults
 * @param fn the coroutine's body
 * @param arg passed to `fn`
 * @return BATON_OK, or an error: BATON_EINVAL (NULL out or fn, unknown model
 * or flag, a stack_size given for a copy-stack coroutine), BATON_ESTACK (size
 * outside [STACK_MIN, STACK_MAX]), BATON_ELOCALADDR (debug builds: a
 * copy-stack coroutine's arg in the shared stack, rule 2), BATON_ENOMEM. */
BATON_API int baton_coro_create(baton_coro_t **out, const struct baton_coro_attr *attr,
				baton_coro_fn fn, void *arg);

/** Run `co` until it yields or returns. `in` becomes the value its pending
 * yield receives (or the `in` argument of its function, the first time); the
 * value it yields or returns is stored in *out if `out` is not NULL.
 * @param co the coroutine
 * @param in the value its pending yield receives
 * @param out receives what it yields or returns, or NULL
 * @return BATON_OK, or an error: BATON_EINVAL (NULL co), BATON_EDEAD (it has
 * returned), BATON_ERUNNING (it is running or resuming another), BATON_ETHREAD
 * (copy-stack coroutine resumed on another thread than its first),
 * BATON_ELOCALADDR (debug builds, see rule 2), BATON_ENOMEM (copy-stack: the
 * save buffer of the coroutine that must leave the shared stack could not
 * grow; nothing was switched). */
BATON_API int baton_coro_resume(baton_coro_t *co, void *in, void **out);

/** Suspend the running coroutine and return to its resumer, which receives
 * `out`. When the coroutine is resumed again, the resumer's `in` is stored in
 * *in if `in` is not NULL.
 * @param out the value the resumer receives
 * @param in receives the next resumer's value, or NULL
 * @return BATON_OK, or an error: BATON_ENOTCORO (called outside any
 * coroutine), BATON_ELOCALADDR (debug builds, see rule 2), BATON_ENOMEM
 * (copy-stack: no room to save its frames, or those of the one that must leave
 * the shared stack for its resumer; nothing was switched). */
BATON_API int baton_coro_yield(void *out, void **in);

/** The status of `co` (enum baton_coro_status), or BATON_EINVAL if NULL.
 * @param co the coroutine
 * @return an enum baton_coro_status, or BATON_EINVAL */
BATON_API int baton_coro_status(const baton_coro_t *co);

/** The model `co` was created with, or BATON_EINVAL if NULL.
 * @param co the coroutine
 * @return an enum baton_coro_model, or BATON_EINVAL */
BATON_API int baton_coro_model(const baton_coro_t *co);

/** The coroutine running on this thread, or NULL on the thread's own stack.
 * @return the running coroutine, or NULL */
BATON_API baton_coro_t *baton_coro_self(void);

/** The name given at creation ("" if none); "" for NULL.
 * @param co the coroutine
 * @return the name, static for the coroutine's life; never NULL */
BATON_API const char *baton_coro_name(const baton_coro_t *co);

/** Usable stack size in bytes: the stackful stack, or for copy-stack the
 * bytes of the shared stack it used when it last left it.
 * @param co the coroutine
 * @return the size in bytes */
BATON_API size_t baton_coro_stack_size(const baton_coro_t *co);

/** Free a coroutine that is suspended or dead (see rule 4). NULL is a no-op.
 * @param co the coroutine
 * @return BATON_OK, or an error: BATON_EBUSY (it is running or resuming
 * another), BATON_ETHREAD (a copy-stack coroutine that has run, destroyed from
 * another thread than the one it ran on: its frames live in that thread's
 * shared stack). */
BATON_API int baton_coro_destroy(baton_coro_t *co);

/** Choose whether baton installs its SIGSEGV overflow reporter (rule 6):
 * 1 installs it now (it is installed on the first create anyway), 0 keeps
 * it out for the life of the process. Any thread.
 * @param install 1 to install the reporter now, 0 to keep it out
 * @return BATON_OK, or an error: BATON_EINVAL (not 0 or 1), BATON_EBUSY (0
 * asked after it was installed, or 1 after 0: the choice is made once). */
BATON_API int baton_coro_overflow_handler(int install);

/** Declare whether the calling thread's own context (its stack outside any
 * coroutine) keeps its floating-point control state across switches (the
 * default, shared = 0) or shares it (shared = 1: it neither changes nor
 * depends on the rounding mode and exception masks while coroutines run,
 * see BATON_CORO_SHARED_FPENV). With shared coroutines, a shared thread
 * context makes resume/yield round trips free of FP work. A shared context
 * runs in the state of whoever switched to it: after a coroutine that keeps
 * its own state (and changed it) yields or returns to the thread, the
 * thread goes on in that coroutine's rounding mode and masks until it
 * resumes another own-state coroutine. A thread that shares must set what
 * it depends on itself (fesetenv) after resuming such coroutines.
 * @param shared 0 to keep the thread's own state (the default), 1 to share
 * @return BATON_OK, or an error: BATON_EBUSY (called from inside a coroutine). */
BATON_API int baton_coro_thread_share_fpenv(int shared);

/** Give the stacks this thread keeps for reuse back to the process's
 * arenas (also done when the thread exits), then release the memory of
 * every free stack of the process and unmap the arenas left empty. Freed
 * stacks otherwise keep their pages while there are few of them (up to
 * 8192), so that a burst of coroutines ending costs no system call. The
 * control blocks of destroyed copy-stack coroutines that this thread keeps
 * for reuse (up to 256, with save buffers up to 4 KiB) are freed too.
 * @return the number of bytes released. */
BATON_API size_t baton_coro_pool_trim(void);

#ifdef __cplusplus
}
#endif

#endif /* BATON_CORO_H */
