#!/bin/sh
# SPDX-License-Identifier: MIT
# ring-erlang: runs the ring benchmark's Erlang peer (ring_erlang.erl,
# compiled next to this script by CMake) on the Erlang emulator.
#   ring-erlang --schedulers 1 ...   erlang-1t: erl +S 1 (one scheduler)
#   ring-erlang --schedulers 0 ...   erlang: the default, one per core
# The other arguments go to ring_erlang:main/0 (--n --coroutines --rounds
# [--runs]). +P raises the process limit (262144 by default) for the
# largest rings.
set -eu
dir=$(dirname "$0")
case "${1:-}:${2:-}" in
--schedulers:1) shift 2; exec erl -noshell +S 1 +P 10000000 -pa "$dir" -run ring_erlang main -extra --impl erlang-1t "$@" ;;
--schedulers:0) shift 2; exec erl -noshell +P 10000000 -pa "$dir" -run ring_erlang main -extra --impl erlang "$@" ;;
*) echo "usage: ring-erlang --schedulers 1|0 --n N --coroutines C --rounds M [--runs K]" >&2; exit 2 ;;
esac
