/* SPDX-License-Identifier: MIT */
// The ring as Boost.Fiber's documentation writes it: not a peer of the
// suite, the yardstick ring-boost-fiber is checked against (docs/ring.md).
// Channels as in the docs' "Channels" section (unbuffered_channel, push and
// pop), fibers as in "Fiber management" (a fiber per function, the default
// round_robin scheduler, a fixedsize_stack of 64 KiB through
// std::allocator_arg, every fiber joined). The clock runs from the first
// fiber created to the last joined.
//
//   ring-boost-fiber-plain N COROUTINES ROUNDS [start] [count]
//
// prints msgs/s on stdout. `start`: the protocol's start instead (every
// fiber first runs to its first pop, where it blocks; then main pushes a
// start token into each ring's first inbox). `count`: also print on stderr
// how many pops per hop found their inbox empty and blocked, read off a
// round_robin that counts the fibers it resumes (a check, not a timing).
#include <boost/fiber/all.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

typedef boost::fibers::unbuffered_channel<long> channel_t;

static long resumed = 0, blocked = 0;
struct counting_round_robin : boost::fibers::algo::round_robin {
	boost::fibers::context *pick_next() noexcept override
	{
		boost::fibers::context *c = round_robin::pick_next();
		resumed += c != nullptr;
		return c;
	}
};

// A pop during which another fiber was resumed had to wait for its value.
static long pop(channel_t &in)
{
	long before = resumed, v = in.value_pop();
	blocked += resumed != before;
	return v;
}

int main(int argc, char **argv)
{
	bool start = false, count = false;
	for (int i = 4; i < argc; i++) {
		start |= std::strcmp(argv[i], "start") == 0;
		count |= std::strcmp(argv[i], "count") == 0;
	}
	long n = argc >= 4 ? std::atol(argv[1]) : 0, c = argc >= 4 ? std::atol(argv[2]) : 0;
	long rounds = argc >= 4 ? std::atol(argv[3]) : 0;
	if (n < 2 || c < n || c % n != 0 || rounds < 1) {
		std::fprintf(stderr, "usage: %s N COROUTINES ROUNDS [start] [count]\n", argv[0]);
		return 2;
	}
	if (count)
		boost::fibers::use_scheduling_algorithm<counting_round_robin>();
	long bad = 0;
	std::vector<std::unique_ptr<channel_t>> chans;
	for (long k = 0; k < c; k++)
		chans.emplace_back(new channel_t());
	auto t0 = std::chrono::steady_clock::now();
	std::vector<boost::fibers::fiber> fibers;
	for (long k = 0; k < c; k++) {
		long base = k - k % n;
		channel_t &in = *chans[k], &out = *chans[base + (k - base + 1) % n];
		if (k == base)
			fibers.emplace_back(std::allocator_arg, boost::fibers::fixedsize_stack(64 * 1024),
					    [&in, &out, n, rounds, start, &bad] {
						    long v = start ? pop(in) : 0;
						    for (long r = 0; r < rounds; r++) {
							    out.push(v + 1);
							    long back = pop(in);
							    if (back != v + n)
								    bad++;
							    v = back;
						    }
					    });
		else
			fibers.emplace_back(std::allocator_arg, boost::fibers::fixedsize_stack(64 * 1024),
					    [&in, &out, rounds] {
						    for (long r = 0; r < rounds; r++)
							    out.push(pop(in) + 1);
					    });
	}
	if (start) {
		boost::this_fiber::yield(); // every fiber runs to its first pop
		resumed = blocked = 0;
		for (long k = 0; k < c; k += n)
			chans[k]->push(0);
	}
	for (auto &f : fibers)
		f.join();
	double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	if (bad) {
		std::fprintf(stderr, "%ld rounds came back wrong\n", bad);
		return 1;
	}
	std::printf("%.1f\n", (double)c * (double)rounds / s);
	if (count)
		std::fprintf(stderr, "fibers resumed per hop %.3f, pops that blocked per hop %.3f\n",
			     (double)resumed / ((double)c * rounds), (double)blocked / ((double)c * rounds));
	return 0;
}
