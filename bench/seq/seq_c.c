/* SPDX-License-Identifier: MIT */
/*
 * bench/seq/seq_c.c - the `c` runtime of the seq suite: foo(x) = x + 100 as
 * a plain C function, the floor under every other runtime (what the call
 * mechanism alone costs). Usage: see seq_harness.h.
 */
#include "seq_harness.h"

static int c_init(void)
{
	return 0;
}

/* noinline: a real call, as into a runtime's exported function */
static __attribute__((noinline)) long c_foo(long x)
{
	__asm__ volatile("" ::: "memory");
	return x + 100;
}

static const struct seq_runtime c_runtime = {
	.name = "c",
	.init = c_init,
	.call_foo = c_foo,
};

int main(int argc, char **argv)
{
	return seq_harness_main(argc, argv, &c_runtime);
}
