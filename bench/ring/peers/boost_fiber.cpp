/* SPDX-License-Identifier: MIT */
// ring-boost-fiber: the ring benchmark (docs/ring.md) on Boost.Fiber, the
// stackful runtime a C++ user would pick instead of baton.
//
//   --sched round-robin    boost-fiber-1t: the default round_robin scheduler,
//                          every fiber on the main thread
//   --sched work-stealing  boost-fiber: algo::work_stealing on every core
//                          (hardware_concurrency threads, main included)
//   --count-switches       also print on stderr how many fibers the scheduler
//                          resumed per hop in the timed part (round-robin
//                          only; a check of the protocol, not a timing)
//
// Each fiber's inbox is a boost::fibers::buffered_channel<long> of capacity
// 2 (the smallest Boost allows). Not unbuffered_channel: its push suspends
// the sender until the receiver has taken the value, even when the receiver
// is already waiting, so from N = 3 on every hop costs two switches (to the
// receiver, later back to the sender) where the protocol has one; at N = 2
// the receiver is still inside its own push when the message comes, and the
// hop costs one. With one message in flight per ring a buffer of 2 never
// fills, so a push never blocks, as a send to a waiting receiver does not in
// Go or baton. Stacks come from fixedsize_stack (one malloc each) with 16
// KiB (ring-baton's size) less 16 bytes: glibc puts a header before each
// block, so a 16 KiB request takes 16400 bytes and the stack tops of
// consecutive fibers drift by 16 bytes in the page; the ring at N = 8 ran
// at about half speed that way (docs/ring.md). 16 KiB - 16 makes the blocks
// 16 KiB apart, as pooled_fixedsize_stack does, without its pool touching a
// second page of every stack. All fibers are launched with launch::post and
// joined: the clock stops when the ring leaders are joined, the relays are
// joined after it. With work stealing, every thread installs the scheduler
// before any fiber exists and the helper threads park on a fiber condition
// variable until main says the runs are over, as in Boost.Fiber's
// work_stealing example.
#include "ring_common.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <boost/fiber/all.hpp>

namespace {

namespace bf = boost::fibers;

// An inbox: one message in flight per ring, so a capacity of 2 never fills.
struct inbox_t : bf::buffered_channel<long> {
	inbox_t() : bf::buffered_channel<long>(2) {}
};

// ring-baton's BATON_CORO_STACK_MIN, less malloc's block header (above).
constexpr std::size_t kStackBytes = 16 * 1024 - 16;

std::atomic<long> waiting{0};	// fibers that reached their first pop
std::atomic<long> errors{0};	// rounds whose message did not grow by n
std::atomic<long> hops{0};	// messages relayed, checked against C*M per run

// round_robin that counts the fibers it resumes (--count-switches).
std::atomic<long> picks{0};
struct counting_round_robin : bf::algo::round_robin {
	bf::context *pick_next() noexcept override
	{
		bf::context *c = round_robin::pick_next();
		if (c != nullptr)
			picks.fetch_add(1, std::memory_order_relaxed);
		return c;
	}
};

void pop_or_die(inbox_t *in, long &v)
{
	if (in->pop(v) != bf::channel_op_status::success)
		std::abort();
}

void push_or_die(inbox_t *out, long v)
{
	if (out->push(v) != bf::channel_op_status::success)
		std::abort();
}

// Coroutine 0 of a ring: waits for the start token, then sends the message
// round the ring `rounds` times, checking that it grew by n each time.
void leader(inbox_t *in, inbox_t *right, long n, long rounds)
{
	long v = 0, back = 0;

	waiting.fetch_add(1, std::memory_order_relaxed);
	pop_or_die(in, v);	// start token
	for (long r = 0; r < rounds; r++) {
		push_or_die(right, v + 1);
		pop_or_die(in, back);
		if (back != v + n)
			errors.fetch_add(1, std::memory_order_relaxed);
		v = back;
	}
	hops.fetch_add(rounds, std::memory_order_relaxed);
}

// Any other coroutine: relays what comes from the left, plus one, rightwards.
void relay(inbox_t *in, inbox_t *right, long rounds)
{
	long v = 0;

	waiting.fetch_add(1, std::memory_order_relaxed);
	for (long r = 0; r < rounds; r++) {
		pop_or_die(in, v);
		push_or_die(right, v + 1);
	}
	hops.fetch_add(rounds, std::memory_order_relaxed);
}

// One run on the calling (main) fiber: create the rings, wait until every
// fiber blocks in its first pop, then time all rings to completion.
double one_run(const rc_opts &o, double *rss_per_coro, double *switches_per_hop)
{
	long rss0 = rc_rss_bytes();
	std::vector<std::unique_ptr<inbox_t>> inbox;
	std::vector<bf::fiber> leaders, relays;
	bf::fixedsize_stack salloc(kStackBytes);

	waiting.store(0, std::memory_order_relaxed);
	hops.store(0, std::memory_order_relaxed);
	inbox.reserve((size_t)o.coroutines);
	leaders.reserve((size_t)(o.coroutines / o.n));
	relays.reserve((size_t)(o.coroutines - o.coroutines / o.n));
	for (long k = 0; k < o.coroutines; k++)
		inbox.emplace_back(new inbox_t());
	for (long k = 0; k < o.coroutines; k++) {
		long base = k - k % o.n, right = base + (k - base + 1) % o.n;

		if (k == base)
			leaders.emplace_back(bf::launch::post, std::allocator_arg, salloc,
					     leader, inbox[k].get(), inbox[right].get(), o.n, o.rounds);
		else
			relays.emplace_back(bf::launch::post, std::allocator_arg, salloc,
					    relay, inbox[k].get(), inbox[right].get(), o.rounds);
	}
	// round_robin: one yield runs every new fiber to its first pop; with
	// work stealing another thread may still be on its way there.
	while (waiting.load(std::memory_order_relaxed) < o.coroutines)
		boost::this_fiber::yield();
	if (rss_per_coro != nullptr)
		*rss_per_coro = (double)(rc_rss_bytes() - rss0) / (double)o.coroutines;

	long picks0 = picks.load(std::memory_order_relaxed);
	int64_t t0 = rc_now_ns();
	for (long k = 0; k < o.coroutines; k += o.n)
		push_or_die(inbox[(size_t)k].get(), 0); // the start token
	for (auto &f : leaders)
		f.join();
	int64_t t1 = rc_now_ns();
	long picked = picks.load(std::memory_order_relaxed) - picks0;

	for (auto &f : relays)	// each ended with its last push
		f.join();
	if (hops.load() != o.coroutines * o.rounds)
		errors.fetch_add(1, std::memory_order_relaxed);
	if (switches_per_hop != nullptr)
		*switches_per_hop = (double)picked / ((double)o.coroutines * (double)o.rounds);
	return (double)o.coroutines * (double)o.rounds / ((double)(t1 - t0) / 1e9);
}

// Work stealing: helper threads join the scheduler and wait for the end.
bf::mutex end_lock;
bf::condition_variable_any end_cond;
bool end_flag = false;

void helper_thread(unsigned nthreads)
{
	bf::use_scheduling_algorithm<bf::algo::work_stealing>(nthreads);
	std::unique_lock<bf::mutex> lk(end_lock);
	end_cond.wait(lk, [] { return end_flag; });
}

} // namespace

int main(int argc, char **argv)
{
	const char *sched = nullptr;
	bool count_switches = false;
	char *rest[64];
	int nrest = 0;

	for (int i = 0; i < argc && nrest < 63; i++) {
		if (std::strcmp(argv[i], "--sched") == 0 && i + 1 < argc)
			sched = argv[++i];
		else if (std::strcmp(argv[i], "--count-switches") == 0)
			count_switches = true;
		else
			rest[nrest++] = argv[i];
	}
	rest[nrest] = nullptr;
	rc_opts o;
	rc_parse_args(nrest, rest, &o);
	bool stealing;
	if (sched != nullptr && std::strcmp(sched, "round-robin") == 0)
		stealing = false;
	else if (sched != nullptr && std::strcmp(sched, "work-stealing") == 0)
		stealing = true;
	else
		rc_bad(argv[0], "--sched round-robin|work-stealing is required");
	if (stealing && count_switches)
		rc_bad(argv[0], "--count-switches works with --sched round-robin only");
	const char *impl = stealing ? "boost-fiber" : "boost-fiber-1t";

	unsigned nthreads = stealing ? std::max(1u, std::thread::hardware_concurrency()) : 1;
	std::vector<std::thread> helpers;
	if (stealing) {
		// The helpers first: work_stealing's constructor waits until
		// all `nthreads` threads have registered.
		for (unsigned i = 1; i < nthreads; i++)
			helpers.emplace_back(helper_thread, nthreads);
		bf::use_scheduling_algorithm<bf::algo::work_stealing>(nthreads);
	} else if (count_switches) {
		bf::use_scheduling_algorithm<counting_round_robin>();
	}

	std::vector<double> samples((size_t)o.runs);
	double rss = 0, switches = 0;
	try {
		for (long r = 0; r < o.runs; r++)
			samples[(size_t)r] = one_run(o, r == 0 ? &rss : nullptr,
						     count_switches ? &switches : nullptr);
	} catch (const std::exception &e) {
		char msg[256];
		std::snprintf(msg, sizeof(msg), "creating the fibers failed: %s", e.what());
		rc_fail(impl, &o, msg);
	}
	if (stealing) {
		{
			std::unique_lock<bf::mutex> lk(end_lock);
			end_flag = true;
		}
		end_cond.notify_all();
		for (auto &t : helpers)
			t.join();
	}
	if (errors.load() != 0) {
		char msg[128];
		std::snprintf(msg, sizeof(msg),
			      "%ld rounds came back with a wrong message (or hops went missing)",
			      errors.load());
		rc_fail(impl, &o, msg);
	}
	if (count_switches)
		std::fprintf(stderr, "switches_per_hop %.3f\n", switches);
	rc_report(impl, &o, samples.data(), rss);
	return 0;
}
