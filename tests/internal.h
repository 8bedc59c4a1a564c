/* SPDX-License-Identifier: MIT */
/*
 * tests/internal.h - the library's internal hooks (baton__*) a test may
 * call, declared by the library's own internal headers, so that a changed
 * signature breaks the test's build instead of linking. A test that needs
 * one includes this, never a prototype of its own:
 *
 *     #include "check.h"
 *     #include "internal.h"
 *
 *     TC_CHECK(baton__chan_bias_state(ch) == 2);
 *
 * The tests link the static libbaton, where these symbols are visible;
 * the shared one exports only BATON_API (hence the weak knob below).
 * baton_add_test puts the build's generated config.h on the include path
 * (src/arch/arch.h includes it).
 */
#ifndef BATON_TESTS_INTERNAL_H
#define BATON_TESTS_INTERNAL_H

/* src/seq/seq.c's mode, a knob: weak, so that a program linked with a
 * library that does not export it sees its address NULL and keeps to the
 * mode the library chose. Before seq_internal.h declares it. */
#pragma weak baton__seq_asym

#include "../src/common/barrier.h"     /* baton__barrier_available */
#include "../src/common/fault.h"       /* baton__fault_* (allocation failures) */
#include "../src/common/list.h"        /* baton__list_* (test_list) */
#include "../src/coro/coro_internal.h" /* baton__coro_create_headed, _thread_save_allocs */
#include "../src/chan/chan_internal.h" /* baton__chan_bias_state */
#include "../src/seq/seq_internal.h"   /* baton__seq_asym */

/* src/io/uring.c's test knobs, which no header of src/io declares (its
 * poller is reached only through src/io/poller.h's table): declared here
 * once, beside their definitions' types. */
extern unsigned baton__uring_sqe_failures;  /* the next n SQEs fail */
extern unsigned baton__uring_setup_refused; /* setup flags the "kernel" refuses */
unsigned baton__uring_setup_of_self(void);  /* the calling worker's ring's flags */

#endif
