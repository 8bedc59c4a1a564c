/* SPDX-License-Identifier: MIT */
/*
 * A stack overflow lands on the guard page and is reported on stderr with
 * the coroutine's name and stack size, then the process aborts; any other
 * fault keeps its default action. Each case runs tests/overflow_child in a
 * fresh process (this test's arguments are the command that starts it,
 * e.g. "qemu-aarch64 -L /usr/aarch64-linux-gnu overflow_child" when cross
 * compiled); we read its stderr and how it ended.
 */
#include "check.h"

#include <stdio.h>
#include <sys/wait.h>

static char **child_cmd; /* NULL-terminated, one free slot for the mode */
static int child_argc;

static char *run_child(const char *mode, int *status)
{
	static char buf[4096];
	int fds[2];
	pid_t pid;
	ssize_t n, got = 0;

	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fds[1], STDERR_FILENO);
		close(fds[0]);
		child_cmd[child_argc] = (char *)mode;
		execvp(child_cmd[0], child_cmd);
		_exit(127);
	}
	close(fds[1]);
	while ((n = read(fds[0], buf + got, sizeof(buf) - 1 - (size_t)got)) > 0)
		got += n;
	buf[got] = '\0';
	close(fds[0]);
	assert_int_equal(waitpid(pid, status, 0), pid);
	return buf;
}

static void expect_abort_with(const char *mode, const char *s1, const char *s2)
{
	int status;
	char *err = run_child(mode, &status);

	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT)
		fail_msg("child did not abort (status %#x); stderr: %s", status, err);
	if (!strstr(err, s1) || !strstr(err, s2))
		fail_msg("unexpected report: %s", err);
}

static void stackful_overflow_is_reported(void **state)
{
	(void)state;
	expect_abort_with("stackful", "stack overflow in stackful coroutine 'deep-diver'",
			  "stack size 32768 bytes");
}

static void copystack_overflow_is_reported(void **state)
{
	(void)state;
	expect_abort_with("copystack", "stack overflow in copy-stack coroutine 'cs-diver'",
			  "stack size ");
}

/* The same for a copy-stack task that parked once before it dives. */
static void copystack_task_overflow_is_reported(void **state)
{
	(void)state;
	expect_abort_with("copystack-task",
			  "stack overflow in copy-stack coroutine 'cs-task-diver'", "stack size ");
}

static void canary_overflow_is_reported(void **state)
{
	(void)state;
	expect_abort_with("canary", "stack overflow in stackful coroutine 'canary-diver'",
			  "canary at the bottom of its stack overwritten");
}

/* Past the guard-page budget, a default stackful coroutine gets a canary
 * and its overflow is still reported by name. */
static void fallback_overflow_is_reported(void **state)
{
	(void)state;
	setenv("BATON_STACK_GUARD_BUDGET", "1", 1);
	expect_abort_with("fallback", "stack overflow in stackful coroutine 'fallback-diver'",
			  "canary at the bottom of its stack overwritten");
	unsetenv("BATON_STACK_GUARD_BUDGET");
}

static void other_faults_keep_default_action(void **state)
{
	int status;
	char *err;

	(void)state;
	err = run_child("null", &status);
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGSEGV)
		fail_msg("expected death by SIGSEGV, status %#x; stderr: %s", status, err);
	assert_null(strstr(err, "stack overflow"));
}

/* A program that keeps baton's reporter out gets the fault itself. */
static void own_handler_gets_the_overflow(void **state)
{
	int status;
	char *err;

	(void)state;
	err = run_child("own", &status);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 42)
		fail_msg("expected the program's handler (exit 42), status %#x; stderr: %s", status,
			 err);
	assert_non_null(strstr(err, "the program's own handler ran"));
	assert_null(strstr(err, "stack overflow"));
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(stackful_overflow_is_reported),
		cmocka_unit_test(copystack_overflow_is_reported),
		cmocka_unit_test(copystack_task_overflow_is_reported),
		cmocka_unit_test(canary_overflow_is_reported),
		cmocka_unit_test(fallback_overflow_is_reported),
		cmocka_unit_test(other_faults_keep_default_action),
		cmocka_unit_test(own_handler_gets_the_overflow),
	};

	if (argc < 2) {
		fprintf(stderr, "usage: test_overflow [EMULATOR...] PATH-TO-overflow_child\n");
		return 2;
	}
	child_argc = argc - 1;
	child_cmd = calloc((size_t)argc + 1, sizeof(char *));
	assert_non_null(child_cmd);
	memcpy(child_cmd, argv + 1, (size_t)child_argc * sizeof(char *));
	tc_watchdog(60);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
