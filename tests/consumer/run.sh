#!/bin/sh
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

cmake -S "$src" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/cmake" >/dev/null
"$work/cmake/consumer"

libdir=$(ls -d "$work"/prefix/lib*/pkgconfig | head -n 1)
PKG_CONFIG_PATH=$libdir
export PKG_CONFIG_PATH
# --static adds Libs.private, needed since libbaton is a static archive.
cc -o "$work/consumer-pc" "$src/consumer.c" $(pkg-config --cflags baton) \
	$(pkg-config --static --libs baton)
"$work/consumer-pc"
echo "install_consumer: find_package and pkg-config both ok"
