#!/bin/sh
# SPDX-License-Identifier: MIT
# Install the build in $1 into a scratch prefix under $2, then build and run
# tests/consumer twice: with CMake's find_package(baton) and with
# pkg-config --cflags --libs baton.
set -eu
build=$1
work=$2
src=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" >/dev/null

# Configure, build and run the CMake consumer in $1 (under $src) as $2.
cmake_consumer() {
	cmake -S "$src/$1" -B "$work/cmake-$2" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
	cmake --build "$work/cmake-$2" >/dev/null
	"$work/cmake-$2/$2"
}

cmake_consumer . consumer

libdir=$(ls -d "$work"/prefix/lib*/pkgconfig | head -n 1)
PKG_CONFIG_PATH=$libdir
export PKG_CONFIG_PATH
# --static adds Libs.private, needed since libbaton is a static archive.
cc -o "$work/consumer-pc" "$src/consumer.c" $(pkg-config --cflags baton) \
	$(pkg-config --static --libs baton)
"$work/consumer-pc"
echo "install_consumer: find_package and pkg-config both ok"

# The bindings, where they were built: each with find_package(baton
# COMPONENTS ...) and with pkg-config.
if [ -f "$libdir/baton-lua.pc" ]; then
	cmake_consumer lua consumer_lua
	cc -o "$work/consumer-lua-pc" "$src/lua/consumer_lua.c" \
		$(pkg-config --cflags baton-lua) $(pkg-config --static --libs baton-lua)
	"$work/consumer-lua-pc"
	echo "install_consumer: the Lua binding both ways ok"
fi
if [ -f "$libdir/baton-chicken.pc" ]; then
	cmake_consumer chicken consumer_chicken
	csc=$(pkg-config --variable=csc baton-chicken)
	"$csc" -embedded -t -I "$(pkg-config --variable=scheme_dir baton-chicken)" \
		"$src/chicken/square.scm" -o "$work/square.c"
	cc -o "$work/consumer-chicken-pc" -DC_EMBEDDED -w "$src/chicken/consumer_chicken.c" \
		"$work/square.c" $(pkg-config --cflags baton-chicken) \
		$(pkg-config --static --libs baton-chicken)
	"$work/consumer-chicken-pc"
	echo "install_consumer: the CHICKEN binding both ways ok"
fi
