/*
 * Static files: GET and HEAD of a path under the static directory. The
 * target's path (query dropped) must be plain: no "..", no "//", no NUL, no
 * percent-escapes (refused with 400 rather than decoded: nothing here needs
 * them, and decoding is where traversal bugs live). A directory serves its
 * index.html. Files are read whole, up to 64 MiB.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "server_internal.h"

#define STATIC_MAX ((size_t)64 << 20)

static const char *content_type(const char *path)
{
	static const struct { const char *ext, *type; } types[] = {
		{ ".html", "text/html; charset=utf-8" }, { ".htm", "text/html; charset=utf-8" },
		{ ".txt", "text/plain; charset=utf-8" }, { ".css", "text/css" },
		{ ".js", "text/javascript" }, { ".json", "application/json" },
		{ ".png", "image/png" }, { ".jpg", "image/jpeg" }, { ".svg", "image/svg+xml" },
	};
	const char *dot = strrchr(path, '.');

	for (size_t i = 0; dot && i < sizeof(types) / sizeof(types[0]); i++)
		if (strcmp(dot, types[i].ext) == 0)
			return types[i].type;
	return "application/octet-stream";
}

static bool plain_path(const char *p, size_t n)
{
	if (n == 0 || p[0] != '/')
		return false;
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '%' || p[i] == '\0' || p[i] == '\\')
			return false;
		if (p[i] == '/' && i + 1 < n && p[i + 1] == '/')
			return false;
		if (p[i] == '/' && i + 2 < n && p[i + 1] == '.' && p[i + 2] == '.' &&
		    (i + 3 == n || p[i + 3] == '/'))
			return false;
	}
	return true;
}

static void release_file(const void *body)
{
	baton__free((void *)body);
}

int baton__http_static(struct baton_http_server *srv, const struct baton_http_request *req,
		      struct baton_http_resp *resp)
{
	char path[PATH_MAX];
	const char *q = memchr(req->target, '?', req->target_len);
	size_t plen = q ? (size_t)(q - req->target) : req->target_len;
	struct stat st;
	char *buf;
	int fd, n;

	if (req->target_form != BATON_HTTP_ORIGIN_FORM)
		return 0;
	if (!plain_path(req->target, plen))
		return -400;
	n = snprintf(path, sizeof(path), "%s%.*s", srv->static_dir, (int)plen, req->target);
	if (n < 0 || (size_t)n >= sizeof(path) - 16)
		return -414;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		strcat(path, path[n - 1] == '/' ? "index.html" : "/index.html");
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 0; /* not a file here: the handler answers */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size > STATIC_MAX) {
		close(fd);
		return 0;
	}
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
	resp->content_type = content_type(path);
	resp->body = buf;
	resp->body_len = (size_t)st.st_size;
	resp->release = release_file;
	return 1;
}
