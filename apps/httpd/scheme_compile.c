/* SPDX-License-Identifier: MIT */
/*
 * The Scheme handler's file compiled at start-up: csc turns it into a
 * shared object in a temporary directory, which scheme_host.scm then loads.
 * Compiled code runs several times faster than CHICKEN's interpreter, and
 * a mistake csc can see (a syntax error, a bad macro use) stops the server
 * before it listens, with csc's own message.
 *
 * A compiled unit drops the value of its last toplevel form, while the
 * handler file's convention is that this value is the handler (the file
 * evaluates to it, as under --scheme-eval). So csc compiles a small wrapper
 * instead of the file: a macro that reads the file's forms when the wrapper
 * is expanded and splices them in as they are, except that the last one
 * becomes (define baton-httpd-handler <last form>). Definitions, imports and
 * macros in the file stay at toplevel, as in the file; an (include ...) in
 * it is looked up next to it too (-include-path).
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "handlers.h"

#ifndef BATON_HTTPD_CSC
#define BATON_HTTPD_CSC "csc"
#endif

extern char **environ;

/* The forms are read with the compiler's read-info hook and the file's name
 * as the current source file (as the r7rs egg reads library files), so
 * that csc's warnings and the call history of errors give lines of FILE,
 * not of the wrapper; without that internal hook they just have none. */
static const char wrapper_head[] =
	";; Written by baton-httpd: FILE's forms as they are, the last one's value\n"
	";; bound to baton-httpd-handler (the compiled toplevel drops it otherwise).\n"
	"(define-syntax baton-httpd-include\n"
	"  (er-macro-transformer\n"
	"   (lambda (form rename compare)\n"
	"     (let* ((path (cadr form))\n"
	"            (hook 'chicken.compiler.support#read-info-hook)\n"
	"            (forms (fluid-let ((##sys#default-read-info-hook\n"
	"                                (and (##sys#symbol-has-toplevel-binding? hook)\n"
	"                                     (##sys#slot hook 0)))\n"
	"                               (##sys#current-source-filename path))\n"
	"                     (with-input-from-file path\n"
	"                       (lambda ()\n"
	"                         (let loop ((acc '()))\n"
	"                           (let ((x (read)))\n"
	"                             (if (eof-object? x) acc (loop (cons x acc))))))))))\n"
	"       (if (null? forms)\n"
	"           (syntax-error 'baton-httpd \"the handler file has no expressions\" path)\n"
	"           `(,(rename 'begin) ,@(reverse (cdr forms))\n"
	"             (,(rename 'define) baton-httpd-handler ,(car forms))))))))\n"
	"(baton-httpd-include \"";

/* The wrapper, with the file's path as a Scheme string literal. */
static int write_wrapper(const char *wrapper, const char *path)
{
	FILE *f = fopen(wrapper, "w");
	int ok;

	if (f == NULL)
		return -1;
	fputs(wrapper_head, f);
	for (const char *p = path; *p; p++) {
		if (*p == '"' || *p == '\\')
			fputc('\\', f);
		fputc(*p, f);
	}
	fputs("\")\n", f);
	ok = !ferror(f);
	return fclose(f) == 0 && ok ? 0 : -1;
}

/* csc's stdout joins our stderr: its messages are the start-up error. */
static int run_csc(char *const argv[])
{
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int rc, status;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, STDERR_FILENO, STDOUT_FILENO);
	rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0) {
		fprintf(stderr, "baton-httpd: scheme: cannot run %s: %s\n", argv[0], strerror(rc));
		return -1;
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}

int httpd_scheme_compile(const char *path, char *dir, size_t dir_cap, char *so, size_t so_cap)
{
	const char *tmp = getenv("TMPDIR"), *csc = getenv("BATON_HTTPD_CSC");
	char wrapper[PATH_MAX], incdir[PATH_MAX], *slash;
	int rc;

	if (csc == NULL || *csc == '\0')
		csc = BATON_HTTPD_CSC;
	if ((size_t)snprintf(dir, dir_cap, "%s/baton-httpd-XXXXXX", tmp && *tmp ? tmp : "/tmp") >=
		    dir_cap ||
	    mkdtemp(dir) == NULL) {
		fprintf(stderr, "baton-httpd: scheme: cannot make a temporary directory: %s\n",
			strerror(errno));
		return -1;
	}
	snprintf(wrapper, sizeof(wrapper), "%s/handler.scm", dir);
	snprintf(so, so_cap, "%s/handler.so", dir);
	snprintf(incdir, sizeof(incdir), "%s", path);
	slash = strrchr(incdir, '/');
	if (slash)
		*(slash == incdir ? slash + 1 : slash) = '\0';
	if (write_wrapper(wrapper, path) != 0) {
		fprintf(stderr, "baton-httpd: scheme: cannot write %s: %s\n", wrapper,
			strerror(errno));
		httpd_scheme_clean(dir);
		return -1;
	}
	rc = run_csc((char *const[]){ (char *)csc, "-shared", "-O2", "-include-path", incdir, "-o",
				      so, wrapper, NULL });
	if (rc != 0) {
		if (rc > 0)
			fprintf(stderr,
				"baton-httpd: scheme: csc could not compile %s (exit status %d)\n",
				path, rc);
		httpd_scheme_clean(dir);
		return -1;
	}
	return 0;
}

/* The directory is ours (mkdtemp): whatever csc left in it goes. */
void httpd_scheme_clean(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (d != NULL) {
		while ((e = readdir(d)) != NULL)
			if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
				unlinkat(dirfd(d), e->d_name, 0);
		closedir(d);
	}
	rmdir(dir);
}
