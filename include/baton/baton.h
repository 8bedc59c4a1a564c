/* SPDX-License-Identifier: MIT */
/**
 * @file baton/baton.h
 * every public baton header at once. Prefer the module
 * headers (baton/coro.h, baton/gen.h...) in library code; this one is for
 * programs that use several modules.
 */
#ifndef BATON_BATON_H
#define BATON_BATON_H

#include <baton/error.h>
#include <baton/coro.h>
#include <baton/gen.h>
#include <baton/ec.h>
#include <baton/sched.h>
#include <baton/chan.h>
#include <baton/sync.h>
#include <baton/seq.h>
#include <baton/smr.h>
#include <baton/io.h>
#include <baton/stage.h>
#include <baton/http.h>

#endif /* BATON_BATON_H */
