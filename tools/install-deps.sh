#!/bin/sh
# SPDX-License-Identifier: MIT
# Install the Debian packages baton's build, tests and benchmarks need, and
# skip those already present. Run as root (or with sudo available) on
# Debian 12. Usage: tools/install-deps.sh test|bench|httpd|deb|docs|soak
#   httpd  only what building and running baton-httpd takes (make httpd)
#   soak   and cmocka, for the native build of test_smr (make soak-smr)
#   deb    what building and checking the Debian packages takes (make deb)
#   docs   what building the man pages and HTML reference takes (make docs)
#   test   and the test toolchain: cmocka, valgrind, clang, the AArch64 cross
#          toolchain with qemu-user and arm64 cmocka, Spin, and Boost.Fiber,
#          CAF and Erlang for the ring peers' tests
#   bench  and the benchmarks' peers
set -eu
what=${1:-test}

# Build: compilers, CMake, and the runtimes of the handlers and bindings.
pkgs="build-essential cmake ninja-build pkg-config python3-venv
      chicken-bin libchicken-dev liblua5.4-dev lua5.4 liburing-dev"
# Test: cmocka, valgrind, clang (the fuzzer), clang-format (the format
# check), Spin, the AArch64 cross
# toolchain with qemu-user, arm64 cmocka (multiarch) for the cross tests,
# and what the ring peers checked by tools/tests/test_ring_peers.py build
# and run with (g++, Boost.Fiber, CAF, Erlang).
case $what in httpd | deb | docs) ;;
soak)
	pkgs="$pkgs libcmocka-dev" ;;
*)
	pkgs="$pkgs libcmocka-dev valgrind gcc-aarch64-linux-gnu libc6-dev-arm64-cross
	      qemu-user spin clang libclang-rt-14-dev clang-format g++ libboost-fiber-dev
	      libcaf-dev erlang-base" ;;
esac
# Packages (make deb, and make test's package tests): debhelper and
# dpkg-dev build them, help2man writes the man page, lintian checks them.
case $what in test | deb)
	pkgs="$pkgs debhelper dpkg-dev help2man lintian" ;;
esac
# Documentation (make docs, the docs target of every build, the manpages
# test, libbaton-dev's man pages): Doxygen writes them from the headers.
case $what in test | deb | docs)
	pkgs="$pkgs doxygen" ;;
esac
# Benchmarks: the peers of docs/ and bench/*/suite.json.
if [ "$what" = bench ]; then
	pkgs="$pkgs g++ libboost-context-dev libboost-fiber-dev libcaf-dev erlang-base luajit2
	      libck-dev liburcu-dev nginx libnginx-mod-http-lua guile-3.0 h2o wrk apache2-utils"
fi

missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
arm64_cmocka=yes
[ "$what" = httpd ] || [ "$what" = deb ] || [ "$what" = docs ] || [ "$what" = soak ] ||
dpkg-query -W -f='${Status}' libcmocka-dev:arm64 2>/dev/null | grep -q "ok installed" || arm64_cmocka=no

if [ -z "$missing" ] && [ "$arm64_cmocka" = yes ]; then
	exit 0
fi
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
if [ "$arm64_cmocka" = no ] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
	$SUDO dpkg --add-architecture arm64
fi
$SUDO apt-get update -qq
if [ -n "$missing" ]; then
	echo "install-deps: installing$missing"
	# shellcheck disable=SC2086
	$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
if [ "$arm64_cmocka" = no ]; then
	echo "install-deps: installing libcmocka-dev:arm64"
	$SUDO apt-get install -y -qq --no-install-recommends libcmocka-dev:arm64 >/dev/null
fi
