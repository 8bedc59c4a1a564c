/* SPDX-License-Identifier: MIT */
/*
 * Response heads (src/http/http_parse.h): the status line, Date, Server,
 * framing and Connection headers, written with memcpy and hand-made digits
 * (no printf on the hot path), and the canned error responses.
 */
#include <string.h>
#include <time.h>

#include "http_ctype.h"
#include "http_parse.h"

const char *baton__http_reason(int status)
{
	switch (status) {
	case 100:
		return "Continue";
	case 101:
		return "Switching Protocols";
	case 200:
		return "OK";
	case 201:
		return "Created";
	case 202:
		return "Accepted";
	case 204:
		return "No Content";
	case 206:
		return "Partial Content";
	case 301:
		return "Moved Permanently";
	case 302:
		return "Found";
	case 303:
		return "See Other";
	case 304:
		return "Not Modified";
	case 307:
		return "Temporary Redirect";
	case 308:
		return "Permanent Redirect";
	case 400:
		return "Bad Request";
	case 401:
		return "Unauthorized";
	case 403:
		return "Forbidden";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 408:
		return "Request Timeout";
	case 409:
		return "Conflict";
	case 410:
		return "Gone";
	case 411:
		return "Length Required";
	case 412:
		return "Precondition Failed";
	case 413:
		return "Content Too Large";
	case 414:
		return "URI Too Long";
	case 415:
		return "Unsupported Media Type";
	case 416:
		return "Range Not Satisfiable";
	case 417:
		return "Expectation Failed";
	case 426:
		return "Upgrade Required";
	case 429:
		return "Too Many Requests";
	case 431:
		return "Request Header Fields Too Large";
	case 500:
		return "Internal Server Error";
	case 501:
		return "Not Implemented";
	case 502:
		return "Bad Gateway";
	case 503:
		return "Service Unavailable";
	case 504:
		return "Gateway Timeout";
	case 505:
		return "HTTP Version Not Supported";
	}
	return "";
}

/* IMF-fixdate (RFC 9110 5.6.7), C locale by construction. */
static void imf_fixdate(char d[29], time_t now)
{
	static const char days[] = "SunMonTueWedThuFriSat";
	static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
	struct tm tm;

	gmtime_r(&now, &tm);
	memcpy(d, days + 3 * tm.tm_wday, 3);
	d[3] = ',';
	d[4] = ' ';
	d[5] = (char)('0' + tm.tm_mday / 10);
	d[6] = (char)('0' + tm.tm_mday % 10);
	d[7] = ' ';
	memcpy(d + 8, months + 3 * tm.tm_mon, 3);
	d[11] = ' ';
	int y = tm.tm_year + 1900;
	d[12] = (char)('0' + y / 1000 % 10);
	d[13] = (char)('0' + y / 100 % 10);
	d[14] = (char)('0' + y / 10 % 10);
	d[15] = (char)('0' + y % 10);
	d[16] = ' ';
	d[17] = (char)('0' + tm.tm_hour / 10);
	d[18] = (char)('0' + tm.tm_hour % 10);
	d[19] = ':';
	d[20] = (char)('0' + tm.tm_min / 10);
	d[21] = (char)('0' + tm.tm_min % 10);
	d[22] = ':';
	d[23] = (char)('0' + tm.tm_sec / 10);
	d[24] = (char)('0' + tm.tm_sec % 10);
	memcpy(d + 25, " GMT", 4);
}

const char *baton__http_date(void)
{
	/* Per thread, so no synchronisation: each worker formats once a second. */
	static __thread time_t cached = (time_t)-1;
	static __thread char date[29];
	time_t now = time(NULL);

	if (now != cached) {
		imf_fixdate(date, now);
		cached = now;
	}
	return date;
}

/* A bounded writer: once something does not fit, every later put is a
 * no-op and the result is 0. */
struct out {
	char *p;
	size_t len, cap;
	int over;
};

static void put(struct out *o, const void *s, size_t n)
{
	if (o->over || n > o->cap - o->len) {
		o->over = 1;
		return;
	}
	memcpy(o->p + o->len, s, n);
	o->len += n;
}

#define PUTS(o, lit) put((o), lit, sizeof(lit) - 1)

static void put_u64(struct out *o, uint64_t v)
{
	char d[20];
	size_t n = sizeof(d);

	do {
		d[--n] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	put(o, d + n, sizeof(d) - n);
}

static void status_line(struct out *o, int status)
{
	const char *reason = baton__http_reason(status);
	char code[4] = {
		(char)('0' + status / 100),
		(char)('0' + status / 10 % 10),
		(char)('0' + status % 10),
		' ',
	};

	PUTS(o, "HTTP/1.1 ");
	put(o, code, 4);
	put(o, reason, strlen(reason));
	PUTS(o, "\r\nDate: ");
	put(o, baton__http_date(), 29);
	PUTS(o, "\r\nServer: baton\r\n");
}

static int extra_ok(const struct baton_http_field *f)
{
	if (!f->name || !f->name_len || (!f->value && f->value_len))
		return 0;
	for (unsigned i = 0; i < f->name_len; i++)
		if (!http_is((unsigned char)f->name[i], HC_TOKEN))
			return 0;
	/* No CR, LF or NUL: a value must not end the line or start a field. */
	for (unsigned i = 0; i < f->value_len; i++)
		if (!http_is((unsigned char)f->value[i], HC_VALUE))
			return 0;
	return 1;
}

size_t baton__http_format_head(char *buf, size_t cap, int status, int64_t content_length,
			       int keep_alive, const struct baton_http_field *extra, size_t nextra)
{
	struct out o = { buf, 0, cap, 0 };

	if (!buf || status < 100 || status > 999 || (nextra && !extra) ||
	    content_length < BATON_HTTP_NO_BODY)
		return 0;
	status_line(&o, status);
	if (content_length >= 0) {
		PUTS(&o, "Content-Length: ");
		put_u64(&o, (uint64_t)content_length);
		PUTS(&o, "\r\n");
	} else if (content_length == BATON_HTTP_CHUNKED_BODY) {
		PUTS(&o, "Transfer-Encoding: chunked\r\n");
	}
	if (keep_alive)
		PUTS(&o, "Connection: keep-alive\r\n");
	else
		PUTS(&o, "Connection: close\r\n");
	for (size_t i = 0; i < nextra; i++) {
		if (!extra_ok(&extra[i]))
			return 0;
		put(&o, extra[i].name, extra[i].name_len);
		PUTS(&o, ": ");
		put(&o, extra[i].value, extra[i].value_len);
		PUTS(&o, "\r\n");
	}
	PUTS(&o, "\r\n");
	return o.over ? 0 : o.len;
}

int baton__http_status_bodiless(int status)
{
	return (status >= 100 && status < 200) || status == 204 || status == 304;
}

size_t baton__http_format_error(char *buf, size_t cap, int status, int head_only)
{
	struct out o = { buf, 0, cap, 0 };
	const char *reason;
	size_t rlen;
	char code[4];

	if (!buf || status < 100 || status > 999)
		return 0;
	reason = baton__http_reason(status);
	rlen = strlen(reason);
	code[0] = (char)('0' + status / 100);
	code[1] = (char)('0' + status / 10 % 10);
	code[2] = (char)('0' + status % 10);
	code[3] = ' ';
	status_line(&o, status);
	if (status == 503) /* busy, not broken: come back in a second */
		PUTS(&o, "Retry-After: 1\r\n");
	PUTS(&o, "Content-Type: text/plain\r\nContent-Length: ");
	put_u64(&o, 4 + rlen + 1);
	PUTS(&o, "\r\nConnection: close\r\n\r\n");
	if (!head_only) {
		put(&o, code, 4); /* body: "400 Bad Request\n" */
		put(&o, reason, rlen);
		PUTS(&o, "\n");
	}
	return o.over ? 0 : o.len;
}
