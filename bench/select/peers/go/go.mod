// SPDX-License-Identifier: MIT
module baton/bench/select

go 1.23
