/* SPDX-License-Identifier: MIT */
/* The descriptions and names of the error codes, and the version: both
 * generated from the one list in include/baton/error.h and the macros of
 * include/baton/common.h. */
#include <baton/error.h>

const char *baton_strerror(int code)
{
	switch (code) {
#define TEXT_(name, value, text) \
	case (value):            \
		return text;
		BATON_ERRORS(TEXT_)
#undef TEXT_
	default:
		return "unknown baton error code";
	}
}

const char *baton_err_name(int code)
{
	switch (code) {
#define NAME_(name, value, text) \
	case (value):            \
		return #name;
		BATON_ERRORS(NAME_)
#undef NAME_
	default:
		return "UNKNOWN";
	}
}

const char *baton_version(void)
{
	return BATON_VERSION_STRING;
}

long baton_version_number(void)
{
	return BATON_VERSION_NUMBER;
}
