#!/bin/sh
# SPDX-License-Identifier: MIT
# Write baton-httpd's configuration file for its systemd unit from the
# server's own --help, so that it lists every option the binary takes.
# Usage: tools/httpd-conf.sh BATON-HTTPD [DEFAULT-OPTIONS] > baton-httpd.conf
# The file is an EnvironmentFile: BATON_HTTPD_OPTIONS is the command line
# baton-httpd.service starts the server with (DEFAULT-OPTIONS, shipped as
# loopback on port 8080 so a fresh install serves no other host).
set -eu
httpd=$1
defaults=${2:---address 127.0.0.1 --port 8080}
help=$("$httpd" --help)
case $help in
*--port*) ;;
*) echo "httpd-conf: $httpd --help lists no --port: not baton-httpd?" >&2; exit 1 ;;
esac

cat <<'HEAD'
# /etc/baton-httpd/baton-httpd.conf: how baton-httpd.service starts
# baton-httpd(8). systemd reads it as an EnvironmentFile: the server's
# command line is BATON_HTTPD_OPTIONS at the end, options separated by
# spaces (so a value, such as a file name, cannot hold a space).
# Apply a change with: systemctl restart baton-httpd (it drains first).
# The server logs on stderr, kept by the journal: journalctl -u baton-httpd.
# With a larger --drain-timeout, raise the unit's TimeoutStopSec to match
# (systemctl edit baton-httpd).
#
# Every option baton-httpd takes (its --help):
#
HEAD
# An option line is "  --name ARG   text"; deeper-indented lines go on with
# its text; unindented lines after the options are notes.
printf '%s\n' "$help" | awk '
	/^usage:/ { next }
	/^  --/ {
		line = substr($0, 3)
		split(line, parts, /  +/)
		opt = parts[1]
		text = substr(line, length(opt) + 1)
		sub(/^ +/, "", text)
		print "#   " opt
		if (text != "") print "#       " text
		next
	}
	/^      / { t = $0; sub(/^ +/, "", t); print "#       " t; next }
	/^$/ { next }
	{ if (!notes++) print "#"; print "# " $0 }
'
cat <<TAIL
#
BATON_HTTPD_OPTIONS="$defaults"
TAIL
