// ring-boost-fiber: the ring benchmark (docs/ring.md) on Boost.Fiber, the
// stackful runtime a C++ user would pick instead of baton.
//
//   --sched round-robin    boost-fiber-1t: the default round_robin scheduler,
//                          every fiber on the main thread
//   --sched work-stealing  boost-fiber: algo::work_stealing on every core
//                          (hardware_concurrency threads, main included)
//
// As Boost.Fiber's documentation and examples use it: each fiber's inbox is
// a boost::fibers::unbuffered_channel<long> (push hands the value straight
// to a waiting pop), fibers are launched with launch::post and a
// fixedsize_stack of the size ring-baton gives its tasks (16 KiB), the ring
// leaders are joined, the relays detached. With work stealing, every thread
// installs the scheduler before any fiber exists and the helper threads
// park on a fiber condition variable until main says the runs are over, as
// in Boost.Fiber's work_stealing example.
#include "ring_common.h"

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <boost/fiber/all.hpp>

namespace {

namespace bf = boost::fibers;
using inbox_t = bf::unbuffered_channel<long>;

constexpr std::size_t kStackBytes = 16 * 1024; // ring-baton's BATON_CORO_STACK_MIN

std::atomic<long> waiting{0};	// fibers that reached their first pop
std::atomic<long> errors{0};	// rounds whose message did not grow by n-1

void leader(inbox_t *in, inbox_t *right, long n, long rounds)
{
	long v = 0;

	waiting.fetch_add(1, std::memory_order_relaxed);
	if (in->pop(v) != bf::channel_op_status::success)
		std::abort();
	for (long r = 0; r < rounds; r++) {
		long sent = r * 1000;

		right->push(sent);
		if (in->pop(v) != bf::channel_op_status::success)
			std::abort();
		if (v != sent + n - 1)
			errors.fetch_add(1, std::memory_order_relaxed);
	}
}

void relay(inbox_t *in, inbox_t *right, long rounds)
{
	long v = 0;

	waiting.fetch_add(1, std::memory_order_relaxed);
	for (long r = 0; r < rounds; r++) {
		if (in->pop(v) != bf::channel_op_status::success)
			std::abort();
		right->push(v + 1);
	}
}

// One run on the calling (main) fiber: create the rings, wait until every
// fiber blocks in its first pop, then time all rings to completion.
double one_run(const rc_opts &o, double *rss_per_coro)
{
	long rss0 = rc_rss_bytes();
	std::vector<std::unique_ptr<inbox_t>> inbox;
	std::vector<bf::fiber> leaders;

	waiting.store(0, std::memory_order_relaxed);
	inbox.reserve((size_t)o.coroutines);
	for (long k = 0; k < o.coroutines; k++)
		inbox.emplace_back(new inbox_t());
	for (long k = 0; k < o.coroutines; k++) {
		long base = k - k % o.n, right = base + (k - base + 1) % o.n;
		bf::fixedsize_stack salloc(kStackBytes);

		if (k == base) {
			leaders.emplace_back(bf::launch::post, std::allocator_arg, salloc,
					     leader, inbox[k].get(), inbox[right].get(), o.n, o.rounds);
		} else {
			bf::fiber f(bf::launch::post, std::allocator_arg, salloc, relay,
				    inbox[k].get(), inbox[right].get(), o.rounds);
			f.detach();
		}
	}
	while (waiting.load(std::memory_order_relaxed) < o.coroutines)
		boost::this_fiber::yield();
	if (rss_per_coro != nullptr)
		*rss_per_coro = (double)(rc_rss_bytes() - rss0) / (double)o.coroutines;

	int64_t t0 = rc_now_ns();
	for (long k = 0; k < o.coroutines; k += o.n)
		inbox[k]->push(0); // the start token
	for (auto &f : leaders)
		f.join();
	int64_t t1 = rc_now_ns();
	// The relays end with their last push, taken by the leader: all done.
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
	char *rest[64];
	int nrest = 0;

	for (int i = 0; i < argc && nrest < 63; i++) {
		if (std::strcmp(argv[i], "--sched") == 0 && i + 1 < argc)
			sched = argv[++i];
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
	const char *impl = stealing ? "boost-fiber" : "boost-fiber-1t";

	unsigned nthreads = stealing ? std::max(1u, std::thread::hardware_concurrency()) : 1;
	std::vector<std::thread> helpers;
	if (stealing) {
		// The helpers first: work_stealing's constructor waits until
		// all `nthreads` threads have registered.
		for (unsigned i = 1; i < nthreads; i++)
			helpers.emplace_back(helper_thread, nthreads);
		bf::use_scheduling_algorithm<bf::algo::work_stealing>(nthreads);
	}

	std::vector<double> samples((size_t)o.runs);
	double rss = 0;
	try {
		for (long r = 0; r < o.runs; r++)
			samples[(size_t)r] = one_run(o, r == 0 ? &rss : nullptr);
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
		std::snprintf(msg, sizeof(msg), "%ld rounds came back with a wrong message",
			      errors.load());
		rc_fail(impl, &o, msg);
	}
	rc_report(impl, &o, samples.data(), rss);
	return 0;
}
