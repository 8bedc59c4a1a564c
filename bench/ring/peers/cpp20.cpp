/* SPDX-License-Identifier: MIT */
// ring-cpp20: the ring benchmark (docs/ring.md) on C++20 stackless
// coroutines, one thread.  A minimal scheduler (a FIFO of ready coroutine
// handles, resumed one after the other by run()) and a one-slot channel per
// coroutine, its inbox: receiving from an empty inbox suspends the receiver;
// sending stores the value and pushes the waiting receiver onto the ready
// FIFO.  Every hop therefore goes through the ready queue: the sender carries
// on to its own receive and suspends, and run() pops the next handle.
#include "ring_common.h"

#include <coroutine>
#include <cstdio>
#include <cstdlib>
#include <new>

namespace {

// A FIFO of ready coroutine handles: a power-of-two ring buffer that doubles
// when full (it holds at most one handle per ring plus the start-up burst).
class ready_queue {
public:
	explicit ready_queue(size_t cap)
	{
		size_t c = 16;
		while (c < cap)
			c *= 2;
		buf_ = static_cast<std::coroutine_handle<> *>(std::malloc(c * sizeof(*buf_)));
		if (buf_ == nullptr)
			throw std::bad_alloc();
		mask_ = c - 1;
	}
	~ready_queue() { std::free(buf_); }
	ready_queue(const ready_queue &) = delete;
	ready_queue &operator=(const ready_queue &) = delete;

	void push(std::coroutine_handle<> h)
	{
		if (__builtin_expect(tail_ - head_ > mask_, 0))
			grow();
		buf_[tail_++ & mask_] = h;
	}

	// Resumes ready coroutines in FIFO order until none is ready.
	void run()
	{
		while (head_ != tail_)
			buf_[head_++ & mask_].resume();
	}

private:
	__attribute__((noinline)) void grow()
	{
		size_t cap = (mask_ + 1) * 2;
		auto *nb = static_cast<std::coroutine_handle<> *>(std::malloc(cap * sizeof(*buf_)));
		if (nb == nullptr)
			throw std::bad_alloc();
		for (size_t i = head_; i != tail_; i++)
			nb[i & (cap - 1)] = buf_[i & mask_];
		std::free(buf_);
		buf_ = nb;
		mask_ = cap - 1;
	}

	std::coroutine_handle<> *buf_;
	size_t mask_;
	size_t head_ = 0, tail_ = 0;
};

ready_queue *sched;

// A one-slot channel.  In this benchmark a sender never finds the slot full
// (one message in flight per ring); a general one-slot channel would make
// the sender wait there, here it is a protocol error.
struct channel {
	long value;
	bool full = false;
	std::coroutine_handle<> receiver;

	void send(long v)
	{
		if (__builtin_expect(full, 0)) {
			std::fprintf(stderr, "ring-cpp20: send to a full inbox\n");
			std::abort();
		}
		value = v;
		full = true;
		if (receiver) {
			sched->push(receiver);
			receiver = nullptr;
		}
	}

	struct recv_awaiter {
		channel *ch;
		bool await_ready() const noexcept { return ch->full; }
		void await_suspend(std::coroutine_handle<> h) const noexcept { ch->receiver = h; }
		long await_resume() const noexcept
		{
			ch->full = false;
			return ch->value;
		}
	};
	recv_awaiter recv() { return recv_awaiter{this}; }
};

// A fire-and-forget coroutine: starts suspended, frees its frame at the end.
struct task {
	struct promise_type {
		task get_return_object() { return task{std::coroutine_handle<promise_type>::from_promise(*this)}; }
		std::suspend_always initial_suspend() noexcept { return {}; }
		std::suspend_never final_suspend() noexcept { return {}; }
		void return_void() noexcept {}
		void unhandled_exception() noexcept { std::abort(); }
	};
	std::coroutine_handle<promise_type> h;
};

long errors;	// rounds whose message did not grow by exactly n

// Coroutine 0 of a ring: waits for the start token, then sends the message
// round the ring `rounds` times, checking it grew by n each time.
task leader(channel *in, channel *right, long n, long rounds)
{
	long v = co_await in->recv();	// start token
	for (long r = 0; r < rounds; r++) {
		right->send(v + 1);
		long back = co_await in->recv();
		if (__builtin_expect(back != v + n, 0))
			errors++;
		v = back;
	}
}

// Any other coroutine: relays what comes from the left, plus one, rightwards.
task relay(channel *in, channel *right, long rounds)
{
	for (long r = 0; r < rounds; r++) {
		long v = co_await in->recv();
		right->send(v + 1);
	}
}

// One run: creates the rings (each coroutine runs to its first receive),
// measures the RSS they added, then times all rings to completion.
double one_run(const rc_opts &o, double *rss_per_coro)
{
	long rss0 = rc_rss_bytes();
	auto *inbox = new channel[o.coroutines];

	for (long k = 0; k < o.coroutines; k++) {
		long base = k - k % o.n, right = base + (k - base + 1) % o.n;
		task t = k == base ? leader(&inbox[k], &inbox[right], o.n, o.rounds)
				   : relay(&inbox[k], &inbox[right], o.rounds);
		t.h.resume();	// to its first co_await: blocked on its inbox
	}
	if (rss_per_coro != nullptr)
		*rss_per_coro = (double)(rc_rss_bytes() - rss0) / (double)o.coroutines;

	int64_t t0 = rc_now_ns();
	for (long k = 0; k < o.coroutines; k += o.n)
		inbox[k].send(0);	// start token: makes coroutine 0 ready
	sched->run();
	int64_t t1 = rc_now_ns();

	// Every coroutine has returned (frames freed); the inboxes are empty.
	delete[] inbox;
	return (double)o.coroutines * (double)o.rounds / ((double)(t1 - t0) / 1e9);
}

} // namespace

int main(int argc, char **argv)
{
	rc_opts o;
	rc_parse_args(argc, argv, &o);
	double *samples = new double[o.runs];
	double rss = 0;

	try {
		ready_queue q((size_t)(o.coroutines / o.n) + 1);
		sched = &q;
		for (long r = 0; r < o.runs; r++)
			samples[r] = one_run(o, r == 0 ? &rss : nullptr);
	} catch (const std::bad_alloc &) {
		rc_fail("cpp20-1t", &o, "out of memory creating the coroutines");
	}
	if (errors != 0) {
		char msg[128];
		std::snprintf(msg, sizeof(msg), "%ld rounds came back with a wrong message", errors);
		rc_fail("cpp20-1t", &o, msg);
	}
	rc_report("cpp20-1t", &o, samples, rss);
	delete[] samples;
	return 0;
}
