/* SPDX-License-Identifier: MIT */
// boost_context.cpp - counters benchmark, impl "boost-context" (peer true).
//
// Each counter is a boost::context::fiber (Boost.Context, the fcontext
// back end: hand-written assembly that saves the callee-saved registers on
// the current stack and switches the stack pointer).  The fiber body keeps
// its private integer `i` as a local on its own stack and loops
//     ++i; sink = std::move(sink).resume();
// The main loop resumes counter j with counters[j] = std::move(counters[j]).resume(),
// so one step is two stack switches (main -> fiber, fiber -> main).
//
// Stack: boost::context::fixedsize_stack of 16 KiB per fiber (malloc'ed,
// no guard page), changeable with --stack-kib K (K >= 8).  20000 counters x 16 KiB is
// 312 MiB of address space, but only the top of each stack is ever touched.
//
// Anti-optimisation: the switch is jump_fcontext in libboost_context, which
// the compiler cannot see into; the address of `i` is published to the main
// program (for the final check), so `++i` must be a real store before each
// switch.  `objdump -d counters-boost-context` shows run_all calling
// jump_fcontext once per step.
//
// Link with -lboost_context.
#include <boost/context/fiber.hpp>
#include <boost/context/fixedsize_stack.hpp>

#include <cstdio>
#include <memory>
#include <new>
#include <utility>
#include <vector>

#include "peers_common.h"

namespace ctx = boost::context;

namespace {

constexpr int kDefaultStackKiB = 16;
constexpr int kMinStackKiB = 8;

struct Counter {
    ctx::fiber f;
    int *i = nullptr; // points at the fiber's local, valid once it has started
};

// Kept out of main so that the timed region is exactly this loop.
__attribute__((noinline)) void run_all(std::vector<Counter> &counters, long m)
{
    const long n = static_cast<long>(counters.size());
    for (long r = 0; r < m; r++)
        for (long j = 0; j < n; j++)
            counters[j].f = std::move(counters[j].f).resume();
}

} // namespace

int main(int argc, char **argv)
{
    pc_opts o;
    pc_parse_args(argc, argv, &o, kDefaultStackKiB);
    if (o.stack_kib < kMinStackKiB) {
        // fixedsize_stack has no guard page: destroying a suspended fiber
        // throws forced_unwind through its stack, which needs ~5-6 KiB here,
        // and an overflow silently corrupts the heap.
        std::fprintf(stderr, "%s: --stack-kib must be at least %d\n", argv[0], kMinStackKiB);
        pc_usage(argv[0], kDefaultStackKiB);
        return 2;
    }
    const std::size_t stack_bytes = static_cast<std::size_t>(o.stack_kib) * 1024;

    std::vector<double> samples(static_cast<std::size_t>(o.runs));
    long want = o.runs * o.resumes;
    int rc = 0;
    {
        // Construction: outside the timed region.  A fiber does not run
        // until its first resume.
        std::vector<Counter> counters(static_cast<std::size_t>(o.counters));
        try {
            for (Counter &c : counters) {
                int **slot = &c.i;
                c.f = ctx::fiber(std::allocator_arg, ctx::fixedsize_stack(stack_bytes),
                                 [slot](ctx::fiber &&sink) {
                                     int i = 0;
                                     *slot = &i;
                                     for (;;) {
                                         ++i;
                                         sink = std::move(sink).resume();
                                     }
                                     return std::move(sink);
                                 });
            }
        } catch (const std::bad_alloc &) {
            std::fprintf(stderr, "counters-boost-context: out of memory creating %ld fibers of %ld KiB\n",
                         o.counters, o.stack_kib);
            return 1;
        }

        const double ops = static_cast<double>(o.counters) * static_cast<double>(o.resumes);
        for (long run = 0; run < o.runs; run++) {
            int64_t t0 = pc_now_ns();
            run_all(counters, o.resumes);
            int64_t t1 = pc_now_ns();
            samples[static_cast<std::size_t>(run)] = static_cast<double>(t1 - t0) / ops;
        }

        for (long j = 0; j < o.counters; j++) {
            const Counter &c = counters[static_cast<std::size_t>(j)];
            if (!c.f || c.i == nullptr || *c.i != want) {
                std::fprintf(stderr, "counters-boost-context: counter %ld is %d, expected %ld\n", j,
                             c.i ? *c.i : -1, want);
                rc = 1;
                break;
            }
        }
        // Destroying the vector unwinds every suspended fiber (Boost throws
        // forced_unwind through its stack) and frees the stacks.
    }
    if (rc != 0)
        return rc;

    char extra[64];
    const char *extra_params = nullptr;
    if (o.stack_kib != kDefaultStackKiB) {
        std::snprintf(extra, sizeof extra, "\"stack_kib\":%ld", o.stack_kib);
        extra_params = extra;
    }
    pc_report("boost-context", 1, &o, samples.data(), extra_params);
    return 0;
}
