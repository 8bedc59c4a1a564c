/* SPDX-License-Identifier: MIT */
// ring-cpp20-pool: the ring benchmark (docs/ring.md) on C++20 stackless
// coroutines scheduled on a pool of worker threads, in the shape of
// cppcoro's static_thread_pool (which is not packaged for Debian):
//
//   --threads T   worker threads (default: one per online CPU)
//
// - A fixed pool of T worker threads. Each worker has a local queue, which
//   only coroutines running on that worker push to and which its owner pops
//   LIFO (the most recently woken coroutine runs next, while it is hot), and
//   a remote queue for wake-ups coming from threads outside the pool. An
//   idle worker takes its remote queue first, then steals the oldest entry
//   of another worker's queues, then sleeps on a condition variable.
// - A coroutine enters the pool with `co_await pool.schedule_on(w)`:
//   cppcoro's `co_await pool.schedule()` with the worker named, so that ring
//   r is started on worker r mod T, as ring-baton spawns ring r on worker r
//   mod W; the comparison is then between schedulers that both start each
//   ring on one thread and let it move only by stealing.
// - Each coroutine's inbox is a one-slot channel with one consumer:
//   `co_await in.recv()` takes the message or suspends the receiver;
//   `send(v)` stores the value and, if the receiver waits, schedules it on
//   the sending thread's local queue (or, from outside the pool, on the
//   remote queue of the worker it last ran on), as cppcoro schedules a
//   continuation on the thread that completes the awaited operation. Every
//   hop therefore goes through a queue: no symmetric transfer.
//
// The channel state is one atomic word (empty, full, or the waiting
// receiver's handle), so a ring that a steal moved to another thread stays
// correct; the queues are a mutex and a std::deque each.
#include "ring_common.h"

#include <atomic>
#include <condition_variable>
#include <coroutine>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <new>
#include <system_error>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

class thread_pool;

// A queue of ready coroutines; `size` mirrors the deque's size so that other
// threads can look without taking the lock (and so that the sleep check
// below pairs with a push, see worker::sleep).
struct ready_queue {
	std::mutex lock;
	std::deque<std::coroutine_handle<>> items;
	std::atomic<std::size_t> size{0};

	void push(std::coroutine_handle<> h, std::size_t *after = nullptr)
	{
		std::lock_guard<std::mutex> g(lock);
		items.push_back(h);
		std::size_t n = size.fetch_add(1, std::memory_order_seq_cst) + 1;
		if (after != nullptr)
			*after = n;
	}

	// Newest first (the owner of a local queue) or oldest first.
	std::coroutine_handle<> pop(bool newest)
	{
		if (size.load(std::memory_order_relaxed) == 0)
			return nullptr;
		std::lock_guard<std::mutex> g(lock);
		if (items.empty())
			return nullptr;
		std::coroutine_handle<> h;
		if (newest) {
			h = items.back();
			items.pop_back();
		} else {
			h = items.front();
			items.pop_front();
		}
		size.fetch_sub(1, std::memory_order_relaxed);
		return h;
	}
};

// Fewer entries than this in a worker's local queue are its own next steps
// (the coroutine it just woke): leave them to it. The wake-up rule in
// thread_pool::schedule_local uses the same bound.
constexpr std::size_t kStealMin = 2;

struct worker {
	ready_queue local, remote;
	std::mutex sleep_lock;
	std::condition_variable sleep_cond;
	std::atomic<bool> sleeping{false};
	bool woken = false;	// under sleep_lock
	unsigned index = 0;
	std::thread thread;
};

thread_local worker *tl_worker = nullptr;

class thread_pool {
public:
	explicit thread_pool(unsigned n) : workers_(n)
	{
		for (unsigned i = 0; i < n; i++) {
			workers_[i] = std::make_unique<worker>();
			workers_[i]->index = i;
		}
		try {
			for (unsigned i = 0; i < n; i++)
				workers_[i]->thread = std::thread([this, i] { run(i); });
		} catch (...) {
			shutdown();
			throw;
		}
	}
	~thread_pool() { shutdown(); }
	thread_pool(const thread_pool &) = delete;
	thread_pool &operator=(const thread_pool &) = delete;

	unsigned size() const { return (unsigned)workers_.size(); }

	// co_await pool.schedule_on(w): continue on worker w.
	struct schedule_awaiter {
		thread_pool *pool;
		unsigned w;
		bool await_ready() const noexcept { return false; }
		void await_suspend(std::coroutine_handle<> h) const { pool->schedule_remote(h, w); }
		void await_resume() const noexcept {}
	};
	schedule_awaiter schedule_on(unsigned w) { return schedule_awaiter{this, w % size()}; }

	// Makes h ready: on the calling worker's local queue, or from outside
	// the pool on the remote queue of worker `home`.
	void schedule(std::coroutine_handle<> h, unsigned home)
	{
		if (tl_worker != nullptr)
			schedule_local(h);
		else
			schedule_remote(h, home);
	}

	// The calling worker's index (0 outside the pool).
	static unsigned current() { return tl_worker != nullptr ? tl_worker->index : 0; }

private:
	void schedule_local(std::coroutine_handle<> h)
	{
		std::size_t n;

		tl_worker->local.push(h, &n);
		if (n >= kStealMin)	// more than this worker's next step: share it
			for (auto &w : workers_)
				if (w.get() != tl_worker && wake(*w))
					break;
	}

	void schedule_remote(std::coroutine_handle<> h, unsigned i)
	{
		workers_[i]->remote.push(h);
		wake(*workers_[i]);
	}

	// Wakes w if it sleeps; true if it did.
	static bool wake(worker &w)
	{
		if (!w.sleeping.load(std::memory_order_seq_cst))
			return false;
		{
			std::lock_guard<std::mutex> g(w.sleep_lock);
			w.woken = true;
		}
		w.sleep_cond.notify_one();
		return true;
	}

	std::coroutine_handle<> find_work(worker &self)
	{
		if (auto h = self.local.pop(true))
			return h;
		if (auto h = self.remote.pop(false))
			return h;
		for (auto &w : workers_) {
			if (w.get() == &self)
				continue;
			if (w->remote.size.load(std::memory_order_relaxed) != 0)
				if (auto h = w->remote.pop(false))
					return h;
			if (w->local.size.load(std::memory_order_relaxed) >= kStealMin)
				if (auto h = w->local.pop(false))
					return h;
		}
		return nullptr;
	}

	// Anything this worker could take? (The sleep check: seq_cst loads
	// after the seq_cst store of `sleeping`, against a pusher's seq_cst
	// size increment followed by its seq_cst load of `sleeping`: one of
	// the two sees the other, so no wake-up is lost.)
	bool work_visible(worker &self)
	{
		if (self.local.size.load(std::memory_order_seq_cst) != 0 ||
		    self.remote.size.load(std::memory_order_seq_cst) != 0)
			return true;
		for (auto &w : workers_)
			if (w.get() != &self &&
			    (w->remote.size.load(std::memory_order_seq_cst) != 0 ||
			     w->local.size.load(std::memory_order_seq_cst) >= kStealMin))
				return true;
		return false;
	}

	void run(unsigned i)
	{
		worker &self = *workers_[i];

		tl_worker = &self;
		for (;;) {
			if (auto h = find_work(self)) {
				h.resume();
				continue;
			}
			std::unique_lock<std::mutex> lk(self.sleep_lock);
			self.woken = false;
			self.sleeping.store(true, std::memory_order_seq_cst);
			if (stop_.load(std::memory_order_acquire)) {
				self.sleeping.store(false, std::memory_order_relaxed);
				return;
			}
			if (!work_visible(self))
				self.sleep_cond.wait(lk, [&] {
					return self.woken || stop_.load(std::memory_order_acquire);
				});
			self.sleeping.store(false, std::memory_order_relaxed);
		}
	}

	void shutdown()
	{
		stop_.store(true, std::memory_order_release);
		for (auto &w : workers_) {
			{
				std::lock_guard<std::mutex> g(w->sleep_lock);
				w->woken = true;
			}
			w->sleep_cond.notify_one();
		}
		for (auto &w : workers_)
			if (w->thread.joinable())
				w->thread.join();
	}

	std::vector<std::unique_ptr<worker>> workers_;
	std::atomic<bool> stop_{false};
};

thread_pool *pool;

// A one-slot channel with one consumer. state: kEmpty, kFull, or the address
// of the waiting receiver's frame. In this benchmark a sender never finds the
// slot full (one message in flight per ring); that is a protocol error.
// One cache line each: the inboxes of rings that run on different workers
// would otherwise share lines (false sharing; measured slower at N = 2).
class alignas(64) channel {
public:
	void send(long v)
	{
		value_ = v;
		std::uintptr_t old = state_.exchange(kFull, std::memory_order_acq_rel);
		if (__builtin_expect(old == kFull, 0)) {
			std::fprintf(stderr, "ring-cpp20-pool: send to a full inbox\n");
			std::abort();
		}
		if (old != kEmpty)
			pool->schedule(std::coroutine_handle<>::from_address((void *)old), home_);
	}

	struct recv_awaiter {
		channel *ch;
		std::atomic<long> *blocked;	// counted once suspended (first receive)

		bool await_ready() const noexcept
		{
			return ch->state_.load(std::memory_order_acquire) == kFull;
		}
		bool await_suspend(std::coroutine_handle<> h) const noexcept
		{
			// Once the handle is published, a sender may resume this
			// coroutine on another thread and end it (this awaiter lives
			// in its frame): read what we need first.
			std::atomic<long> *count = blocked;
			ch->home_ = thread_pool::current();
			std::uintptr_t expected = kEmpty;
			if (!ch->state_.compare_exchange_strong(expected, (std::uintptr_t)h.address(),
								std::memory_order_acq_rel,
								std::memory_order_acquire))
				return false;	// a message came meanwhile: go on
			if (count != nullptr) {
				count->fetch_add(1, std::memory_order_release);
				count->notify_all();	// main waits for all of them
			}
			return true;
		}
		long await_resume() const noexcept
		{
			// The sender's exchange (release) made state kFull; whoever
			// resumed us (a queue, under its mutex) or await_ready/
			// await_suspend (acquire) ordered its value_ store before this.
			long v = ch->value_;
			ch->state_.store(kEmpty, std::memory_order_release);
			return v;
		}
	};
	recv_awaiter recv(std::atomic<long> *blocked = nullptr) { return recv_awaiter{this, blocked}; }

private:
	static constexpr std::uintptr_t kEmpty = 0, kFull = 1;
	std::atomic<std::uintptr_t> state_{kEmpty};
	long value_ = 0;
	unsigned home_ = 0;	// worker the receiver last suspended on
};

// A fire-and-forget coroutine: runs eagerly (to its first co_await, which
// moves it onto the pool) and frees its frame at the end.
struct task {
	struct promise_type {
		task get_return_object() noexcept { return {}; }
		std::suspend_never initial_suspend() noexcept { return {}; }
		std::suspend_never final_suspend() noexcept { return {}; }
		void return_void() noexcept {}
		void unhandled_exception() noexcept { std::abort(); }
	};
};

std::atomic<long> blocked{0};	// coroutines suspended in their first receive
std::atomic<long> finished{0};	// coroutines that returned
std::atomic<long> leaders_done{0};
std::atomic<long> errors{0};	// rounds whose message did not grow by exactly n

void count_done(std::atomic<long> &c)
{
	c.fetch_add(1, std::memory_order_release);
	c.notify_all();
}

void wait_for(std::atomic<long> &c, long target)
{
	for (long v = c.load(std::memory_order_acquire); v < target;
	     v = c.load(std::memory_order_acquire))
		c.wait(v, std::memory_order_acquire);
}

// Coroutine 0 of a ring: waits for the start token, then sends the message
// round the ring `rounds` times, checking that it grew by n each time.
task leader(unsigned home, channel *in, channel *right, long n, long rounds)
{
	co_await pool->schedule_on(home);
	long v = co_await in->recv(&blocked);	// start token
	for (long r = 0; r < rounds; r++) {
		right->send(v + 1);
		long back = co_await in->recv();
		if (__builtin_expect(back != v + n, 0))
			errors.fetch_add(1, std::memory_order_relaxed);
		v = back;
	}
	count_done(leaders_done);
	count_done(finished);
}

// Any other coroutine: relays what comes from the left, plus one, rightwards.
task relay(unsigned home, channel *in, channel *right, long rounds)
{
	co_await pool->schedule_on(home);
	for (long r = 0; r < rounds; r++) {
		long v = co_await in->recv(r == 0 ? &blocked : nullptr);
		right->send(v + 1);
	}
	count_done(finished);
}

// One run: creates the rings (ring r on worker r mod T, every coroutine
// blocked in its first receive), measures the RSS they added, then times
// all rings to completion.
double one_run(const rc_opts &o, double *rss_per_coro)
{
	long rss0 = rc_rss_bytes();
	auto inbox = std::make_unique<channel[]>((size_t)o.coroutines);

	blocked.store(0);
	finished.store(0);
	leaders_done.store(0);
	for (long k = 0; k < o.coroutines; k++) {
		long ring = k / o.n, base = ring * o.n, right = base + (k - base + 1) % o.n;
		unsigned home = (unsigned)(ring % pool->size());

		if (k == base)
			leader(home, &inbox[k], &inbox[right], o.n, o.rounds);
		else
			relay(home, &inbox[k], &inbox[right], o.rounds);
	}
	wait_for(blocked, o.coroutines);
	if (rss_per_coro != nullptr)
		*rss_per_coro = (double)(rc_rss_bytes() - rss0) / (double)o.coroutines;

	long rings = o.coroutines / o.n;
	int64_t t0 = rc_now_ns();
	for (long k = 0; k < o.coroutines; k += o.n)
		inbox[k].send(0);	// start token: onto the leader's worker
	wait_for(leaders_done, rings);
	int64_t t1 = rc_now_ns();

	// The relays end right after their last send; free the inboxes after.
	wait_for(finished, o.coroutines);
	return (double)o.coroutines * (double)o.rounds / ((double)(t1 - t0) / 1e9);
}

} // namespace

int main(int argc, char **argv)
{
	char *rest[64];
	int nrest = 0;
	long threads = 0;

	for (int i = 0; i < argc && nrest < 63; i++) {
		if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
			threads = rc_parse_pos(argv[++i], 4096);
			if (threads == 0)
				rc_bad(argv[0], "--threads wants an integer in [1, 4096]");
		} else {
			rest[nrest++] = argv[i];
		}
	}
	rest[nrest] = nullptr;
	rc_opts o;
	rc_parse_args(nrest, rest, &o);
	if (threads == 0) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		threads = cpus > 0 ? cpus : 1;
	}

	std::vector<double> samples((size_t)o.runs);
	double rss = 0;
	try {
		thread_pool tp((unsigned)threads);
		pool = &tp;
		for (long r = 0; r < o.runs; r++)
			samples[(size_t)r] = one_run(o, r == 0 ? &rss : nullptr);
		pool = nullptr;
	} catch (const std::bad_alloc &) {
		rc_fail("cpp20-pool", &o, "out of memory creating the coroutines");
	} catch (const std::system_error &e) {
		char msg[256];
		std::snprintf(msg, sizeof(msg), "starting the worker threads failed: %s", e.what());
		rc_fail("cpp20-pool", &o, msg);
	}
	if (errors.load() != 0) {
		char msg[128];
		std::snprintf(msg, sizeof(msg), "%ld rounds came back with a wrong message",
			      errors.load());
		rc_fail("cpp20-pool", &o, msg);
	}
	rc_report("cpp20-pool", &o, samples.data(), rss);
	return 0;
}
