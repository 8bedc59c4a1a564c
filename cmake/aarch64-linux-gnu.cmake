# SPDX-License-Identifier: MIT
# Cross-compiling for AArch64 with Debian's gcc-aarch64-linux-gnu; tests run
# under qemu-aarch64. Test programs link cmocka from Debian's multiarch
# libcmocka-dev:arm64, which brings libc6:arm64 into /lib/aarch64-linux-gnu,
# so qemu's library prefix is "/": the dynamic loader and libc then come from
# the same package. (With -L /usr/aarch64-linux-gnu the cross ld.so would
# load the multiarch libc of another version, and pthread_create spins.)
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_ASM_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /usr/lib/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /)
