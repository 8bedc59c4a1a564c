/* SPDX-License-Identifier: MIT */
/*
 * Static files: GET and HEAD of a path under the static directory, confined
 * to it (the policy is in baton/http.h, beside enum baton_http_symlinks).
 *
 * The directory is opened once (static_fd) and every path is resolved from
 * that descriptor, never from its name: with openat2() and RESOLVE_BENEATH
 * (plus RESOLVE_NO_SYMLINKS for the default policy) the kernel refuses any
 * step above the directory and, if asked, any link, on every component.
 * Without openat2 (Linux before 5.6) the default policy walks the path one
 * component at a time with O_NOFOLLOW; following links safely needs the
 * kernel's RESOLVE_BENEATH, so the other policies are refused at creation.
 *
 * The target's path (query dropped; the path of an absolute-form target)
 * is percent-decoded first, and refused with 400 where decoding is where
 * traversal bugs live: an encoded '/' or NUL, a "." or ".." segment (also
 * encoded), an empty segment ("//"), a backslash, a control byte. A
 * directory serves its index.html. Files are read whole, up to 64 MiB.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "http_ctype.h"
#include "server_internal.h"

#define STATIC_MAX ((size_t)64 << 20)
#define INDEX "index.html"

static const char *content_type(const char *path)
{
	static const struct {
		const char *ext, *type;
	} types[] = {
		{ ".html", "text/html; charset=utf-8" },
		{ ".htm", "text/html; charset=utf-8" },
		{ ".txt", "text/plain; charset=utf-8" },
		{ ".css", "text/css" },
		{ ".js", "text/javascript" },
		{ ".json", "application/json" },
		{ ".png", "image/png" },
		{ ".jpg", "image/jpeg" },
		{ ".svg", "image/svg+xml" },
	};
	const char *dot = strrchr(path, '.');

	for (size_t i = 0; dot && i < sizeof(types) / sizeof(types[0]); i++)
		if (strcmp(dot, types[i].ext) == 0)
			return types[i].type;
	return "application/octet-stream";
}

static int sys_openat2(int dirfd, const char *path, int flags, unsigned long long resolve)
{
	struct open_how how = { .flags = (unsigned long long)flags, .resolve = resolve };

	return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
}

int baton__http_static_init(struct baton_http_server *srv)
{
	int fd;

	srv->static_fd = open(srv->static_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (srv->static_fd < 0)
		return BATON_ESYS;
	fd = sys_openat2(srv->static_fd, ".", O_PATH | O_CLOEXEC, RESOLVE_BENEATH);
	srv->have_openat2 = fd >= 0 || errno != ENOSYS;
	if (fd >= 0)
		close(fd);
	if (!srv->have_openat2 && srv->a.static_symlinks != BATON_HTTP_SYMLINKS_OFF) {
		errno = ENOSYS; /* links cannot be followed safely without it */
		return BATON_ESYS;
	}
	return BATON_OK;
}

/* The path of the target (origin-form, or absolute-form's path; "" for
 * the other forms) in *n bytes, without its query. */
static const char *target_path(const struct baton_http_request *req, size_t *n)
{
	const char *t = req->target, *end = t + req->target_len, *q;

	if (req->target_form == BATON_HTTP_ABSOLUTE_FORM) {
		t = strstr(t, "://") + 3; /* the parser found it */
		while (t < end && *t != '/' && *t != '?')
			t++;
		if (t == end || *t == '?') {
			*n = 1;
			return "/";
		}
	} else if (req->target_form != BATON_HTTP_ORIGIN_FORM) {
		*n = 0;
		return "";
	}
	q = memchr(t, '?', (size_t)(end - t));
	*n = (size_t)((q ? q : end) - t);
	return t;
}

static int hex(unsigned char c)
{
	return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
}

/* Percent-decode the path p[0, n) (it starts with '/') into out, without
 * its leading '/', NUL-terminated: its length, or -400 (a refused path,
 * see the top of the file) or -414 (longer than cap). */
static long decode_path(const char *p, size_t n, char *out, size_t cap)
{
	size_t o = 0, seg = 0;

	for (size_t i = 1; i <= n; i++) {
		unsigned char c = i < n ? (unsigned char)p[i] : '/';

		if (c == '%' && i < n) {
			if (i + 2 >= n || !http_is((unsigned char)p[i + 1], HC_HEX) ||
			    !http_is((unsigned char)p[i + 2], HC_HEX))
				return -400;
			c = (unsigned char)(hex((unsigned char)p[i + 1]) << 4 |
					    hex((unsigned char)p[i + 2]));
			if (c == '/')
				return -400; /* an encoded slash names no file */
			i += 2;
		} else if (c == '/') {
			/* a segment ends: refuse "", ".", ".." (but a final
			 * empty one: a directory's index) */
			size_t len = o - seg;

			if ((len == 0 && i < n) || (len == 1 && out[seg] == '.') ||
			    (len == 2 && out[seg] == '.' && out[seg + 1] == '.'))
				return -400;
			if (i == n)
				break;
		}
		if (c < 0x20 || c == 0x7f || c == '\\')
			return -400;
		if (o + 1 >= cap)
			return -414;
		out[o++] = (char)c;
		if (c == '/')
			seg = o;
	}
	out[o] = '\0';
	return (long)o;
}

/* Without openat2, the OFF policy: one component at a time from the root,
 * each opened with O_NOFOLLOW, so no link is ever followed. */
static int walk_nofollow(int root, char *rel, int flags)
{
	int dir = root, fd;
	char *comp = rel, *slash;

	while ((slash = strchr(comp, '/')) != NULL) {
		struct stat st;

		*slash = '\0';
		fd = openat(dir, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		*slash = '/';
		if (fd >= 0 && fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode)) {
			close(fd);
			errno = S_ISLNK(st.st_mode) ? ELOOP : ENOTDIR;
			fd = -1;
		}
		if (dir != root)
			close(dir);
		if (fd < 0)
			return -1;
		dir = fd;
		comp = slash + 1;
	}
	fd = openat(dir, *comp ? comp : ".", flags | O_NOFOLLOW | O_CLOEXEC);
	if (dir != root) {
		int e = errno;

		close(dir);
		errno = e;
	}
	return fd;
}

#define BENEATH (RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)

/* The OWNER policy, for the prefix of the path that ends at this
 * component: if the component is a link, it has the owner of what it
 * leads to (resolved beneath the root). 0, or -1 with errno (EACCES for
 * a mismatch). */
static int link_owner_ok(int root, char *prefix)
{
	char *name = strrchr(prefix, '/');
	struct stat lst, st;
	int parent = root, fd, rc = 0;

	if (name) {
		*name = '\0';
		parent = sys_openat2(root, prefix, O_PATH | O_DIRECTORY | O_CLOEXEC, BENEATH);
		*name++ = '/';
		if (parent < 0)
			return -1;
	} else {
		name = prefix;
	}
	if (fstatat(parent, name, &lst, AT_SYMLINK_NOFOLLOW) != 0) {
		rc = -1;
	} else if (S_ISLNK(lst.st_mode)) {
		fd = sys_openat2(root, prefix, O_PATH | O_CLOEXEC, BENEATH);
		if (fd < 0) {
			rc = -1;
		} else {
			if (fstat(fd, &st) != 0 || st.st_uid != lst.st_uid) {
				errno = EACCES;
				rc = -1;
			}
			close(fd);
		}
	}
	if (parent != root) {
		int e = errno;

		close(parent);
		errno = e;
	}
	return rc;
}

/* Every component of rel through link_owner_ok, the first one first. */
static int owners_match(int root, char *rel)
{
	for (char *end = rel, *comp = rel;; end++) {
		char keep = *end;

		if (keep != '/' && keep != '\0')
			continue;
		if (end > comp) {
			int rc;

			*end = '\0';
			rc = link_owner_ok(root, rel);
			*end = keep;
			if (rc != 0)
				return -1;
		}
		if (keep == '\0')
			return 0;
		comp = end + 1;
	}
}

/* Open rel (relative to the static root, "" for the root itself) under
 * the server's policy: the descriptor, or -1 with errno. */
static int open_beneath(struct baton_http_server *srv, char *rel, int flags)
{
	const char *path = *rel ? rel : ".";

	switch (srv->a.static_symlinks) {
	case BATON_HTTP_SYMLINKS_ON:
		return sys_openat2(srv->static_fd, path, flags | O_CLOEXEC, BENEATH);
	case BATON_HTTP_SYMLINKS_OWNER:
		if (*rel && owners_match(srv->static_fd, rel) != 0)
			return -1;
		return sys_openat2(srv->static_fd, path, flags | O_CLOEXEC, BENEATH);
	default:
		if (!srv->have_openat2)
			return walk_nofollow(srv->static_fd, rel, flags);
		return sys_openat2(srv->static_fd, path, flags | O_CLOEXEC,
				   BENEATH | RESOLVE_NO_SYMLINKS);
	}
}

/* The file at rel (a directory: its index.html), opened for reading and
 * a regular file: its descriptor and *st, 0 if there is none (the handler
 * answers), or -status (403: the policy refused a link or the way out). */
static int open_file(struct baton_http_server *srv, char *rel, size_t len, size_t cap,
		     struct stat *st)
{
	/* O_NONBLOCK: opening a FIFO must not wait for a writer. */
	int fd = open_beneath(srv, rel, O_RDONLY | O_NONBLOCK);

	if (fd >= 0 && fstat(fd, st) == 0 && S_ISDIR(st->st_mode)) {
		close(fd);
		if (len + sizeof("/" INDEX) > cap)
			return -414;
		strcpy(rel + len, len == 0 || rel[len - 1] == '/' ? INDEX : "/" INDEX);
		fd = open_beneath(srv, rel, O_RDONLY | O_NONBLOCK);
		if (fd >= 0 && fstat(fd, st) != 0) {
			close(fd);
			fd = -1;
		}
	}
	if (fd < 0)
		return errno == ELOOP || errno == EXDEV || errno == EACCES || errno == EPERM ? -403
											     : 0;
	if (!S_ISREG(st->st_mode) || (size_t)st->st_size > STATIC_MAX) {
		close(fd);
		return 0;
	}
	return fd;
}

static void release_file(const void *body)
{
	baton__free((void *)body);
}

int baton__http_static(struct baton_http_server *srv, const struct baton_http_request *req,
		       struct baton_http_resp *resp)
{
	char rel[PATH_MAX];
	size_t plen;
	const char *p = target_path(req, &plen);
	struct stat st;
	long len;
	char *buf;
	int fd;

	if (plen == 0)
		return 0; /* no path: the handler's */
	if ((len = decode_path(p, plen, rel, sizeof(rel))) < 0)
		return (int)len;
	fd = open_file(srv, rel, (size_t)len, sizeof(rel), &st);
	if (fd <= 0)
		return fd;
	buf = baton__malloc(st.st_size ? (size_t)st.st_size : 1);
	if (buf == NULL) {
		close(fd);
		return -500;
	}
	for (size_t got = 0; got < (size_t)st.st_size;) {
		ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);

		if (r <= 0) {
			if (r < 0 && errno == EINTR)
				continue;
			baton__free(buf);
			close(fd);
			return -500;
		}
		got += (size_t)r;
	}
	close(fd);
	resp->status = 200;
	resp->content_type = content_type(rel);
	resp->body = buf;
	resp->body_len = (size_t)st.st_size;
	resp->release = release_file;
	return 1;
}
