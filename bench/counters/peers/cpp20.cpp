/* SPDX-License-Identifier: MIT */
// cpp20.cpp - counters benchmark, impl "cpp20" (peer true).
//
// C++20 stackless coroutines (g++ -std=c++20 -O2, <coroutine>) with a minimal
// generator written here: the promise's initial_suspend is suspend_always (a
// counter does not run until its first resume), yield_value stores the
// yielded int and returns suspend_always, and the Generator owns the
// coroutine_handle.  Each counter is
//     for (int i = 0;;) { ++i; co_yield i; }
// whose `i` lives in the heap-allocated coroutine frame.  The timed loop calls
// counters[j].resume(), i.e. coroutine_handle::resume().
//
// Anti-optimisation: GCC compiles h.resume() into an indirect call through
// the resume pointer stored at the start of the frame (GCC 12 does not
// devirtualise or inline it, and the frames are created in main, outside
// run_all).  The yielded value is stored in the promise on every step and
// checked after the runs, so the work cannot be dropped.  `objdump -d
// counters-cpp20` shows run_all doing `call *(%rdi)` once per step.
#include <coroutine>
#include <cstdio>
#include <exception>
#include <new>
#include <utility>
#include <vector>

#include "peers_common.h"

namespace {

class Generator {
public:
    struct promise_type {
        int value = 0;

        Generator get_return_object() noexcept
        {
            return Generator(std::coroutine_handle<promise_type>::from_promise(*this));
        }
        std::suspend_always initial_suspend() noexcept { return {}; }
        std::suspend_always final_suspend() noexcept { return {}; }
        std::suspend_always yield_value(int v) noexcept
        {
            value = v;
            return {};
        }
        void return_void() noexcept {}
        void unhandled_exception() noexcept { std::terminate(); }
    };

    Generator() noexcept = default;
    explicit Generator(std::coroutine_handle<promise_type> h) noexcept : h_(h) {}
    Generator(Generator &&o) noexcept : h_(std::exchange(o.h_, {})) {}
    Generator &operator=(Generator &&o) noexcept
    {
        if (this != &o) {
            if (h_)
                h_.destroy();
            h_ = std::exchange(o.h_, {});
        }
        return *this;
    }
    Generator(const Generator &) = delete;
    Generator &operator=(const Generator &) = delete;
    ~Generator()
    {
        if (h_)
            h_.destroy();
    }

    void resume() const { h_.resume(); }
    bool done() const { return h_.done(); }
    int value() const { return h_.promise().value; }

private:
    std::coroutine_handle<promise_type> h_;
};

Generator counter()
{
    for (int i = 0;;) {
        ++i;
        co_yield i;
    }
}

// Kept out of main so that the timed region is exactly this loop.
__attribute__((noinline)) void run_all(std::vector<Generator> &counters, long m)
{
    const long n = static_cast<long>(counters.size());
    for (long r = 0; r < m; r++)
        for (long j = 0; j < n; j++)
            counters[j].resume();
}

} // namespace

int main(int argc, char **argv)
{
    pc_opts o;
    pc_parse_args(argc, argv, &o, 0);

    std::vector<double> samples(static_cast<std::size_t>(o.runs));
    const long want = o.runs * o.resumes;
    {
        // Construction: outside the timed region (allocates each frame).
        std::vector<Generator> counters;
        try {
            counters.reserve(static_cast<std::size_t>(o.counters));
            for (long j = 0; j < o.counters; j++)
                counters.push_back(counter());
        } catch (const std::bad_alloc &) {
            std::fprintf(stderr, "counters-cpp20: out of memory\n");
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
            const Generator &g = counters[static_cast<std::size_t>(j)];
            if (g.done() || g.value() != want) {
                std::fprintf(stderr, "counters-cpp20: counter %ld is %d, expected %ld\n", j,
                             g.value(), want);
                return 1;
            }
        }
    }

    pc_report("cpp20", 1, &o, samples.data(), nullptr);
    return 0;
}
