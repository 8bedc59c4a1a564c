// SPDX-License-Identifier: MIT
module baton/bench/ring

go 1.19
