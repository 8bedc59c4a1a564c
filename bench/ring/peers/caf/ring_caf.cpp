/* SPDX-License-Identifier: MIT */
// ring-caf: the ring benchmark (docs/ring.md) on the C++ Actor Framework
// (CAF 0.17, Debian's libcaf-dev), written as its manual writes actors:
// event-based actors (a function returning a `behavior`), spawned with
// actor_system::spawn, messages sent with send().
//
//   --threads 1   caf-1t: the scheduler runs on one thread
//   --threads 0   caf: one scheduler thread per core (hardware_concurrency)
//
// Each coroutine of the protocol is an actor; its inbox is its mailbox.
// Coroutine 0 of a ring (a stateful actor) takes the start token, sends
// v+1 to its right neighbour and checks that v+N comes back, M times; the
// others forward what they receive, plus one, and quit after M messages.
// Every actor counts itself (an atomic) when its behaviour is set up,
// which the scheduler does at spawn; main waits for the count, measures
// RSS, starts the clock, sends the R start tokens (anon_send) and waits in
// a scoped_actor for the R leaders' "done" messages, then stops the clock.
// The actors find their right neighbour in a vector of handles that main
// fills before any actor can receive a message. Each run spawns its own
// actors in one actor_system (made once: its threads are not timed).
#include "ring_common.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "caf/all.hpp"

namespace {

struct ring_run {
	std::vector<caf::actor> actors; // all C, ring by ring
	long n = 0, rounds = 0;
	caf::actor main;		// where the leaders say they are done
	std::atomic<long> ready{0};	// actors whose behaviour is set up
	std::atomic<long> errors{0};	// rounds whose message did not grow by n
};

struct leader_state {
	int64_t v = 0;
	long rounds_done = 0;
	bool started = false;
};

struct relay_state {
	long forwarded = 0;
};

long right_of(const ring_run *run, long k)
{
	long base = k - k % run->n;

	return base + (k - base + 1) % run->n;
}

caf::behavior leader(caf::stateful_actor<leader_state> *self, ring_run *run, long k)
{
	run->ready.fetch_add(1, std::memory_order_relaxed);
	return {
		[=](int64_t msg) {
			leader_state &st = self->state;

			if (st.started) {
				if (msg != st.v + run->n)
					run->errors.fetch_add(1, std::memory_order_relaxed);
				st.v = msg;
				if (++st.rounds_done == run->rounds) {
					self->send(run->main, int64_t(k));
					self->quit();
					return;
				}
			}
			st.started = true; // the first message is the start token
			self->send(run->actors[(size_t)right_of(run, k)], st.v + 1);
		},
	};
}

caf::behavior relay(caf::stateful_actor<relay_state> *self, ring_run *run, long k)
{
	run->ready.fetch_add(1, std::memory_order_relaxed);
	return {
		[=](int64_t v) {
			self->send(run->actors[(size_t)right_of(run, k)], v + 1);
			if (++self->state.forwarded == run->rounds)
				self->quit();
		},
	};
}

// One timed run; the actors and the scoped_actor main waits in are gone
// (and every actor has quit) when it returns.
double one_run(caf::actor_system &sys, const rc_opts &o, const char *impl,
	       double *rss_per_coro)
{
	ring_run run;
	int64_t t0, t1;
	long rss0 = rc_rss_bytes();

	run.n = o.n;
	run.rounds = o.rounds;
	run.actors.reserve((size_t)o.coroutines);
	{
		caf::scoped_actor self{sys};

		run.main = caf::actor_cast<caf::actor>(self);
		for (long k = 0; k < o.coroutines; k++)
			run.actors.push_back(k % o.n == 0 ? sys.spawn(leader, &run, k)
							  : sys.spawn(relay, &run, k));
		while (run.ready.load(std::memory_order_relaxed) < o.coroutines)
			std::this_thread::sleep_for(std::chrono::microseconds(100));
		if (rss_per_coro != nullptr)
			*rss_per_coro = (double)(rc_rss_bytes() - rss0) / (double)o.coroutines;

		t0 = rc_now_ns();
		for (long k = 0; k < o.coroutines; k += o.n)
			caf::anon_send(run.actors[(size_t)k], int64_t(0)); // the start tokens
		for (long r = 0; r < o.coroutines / o.n; r++)
			self->receive([](int64_t) {});
		t1 = rc_now_ns();
		run.main = nullptr;
	}
	run.actors.clear();
	sys.await_all_actors_done();
	if (run.errors.load() != 0) {
		char msg[128];
		std::snprintf(msg, sizeof(msg), "%ld rounds came back with a wrong message",
			      run.errors.load());
		rc_fail(impl, &o, msg);
	}
	return (double)o.coroutines * (double)o.rounds / ((double)(t1 - t0) / 1e9);
}

} // namespace

int main(int argc, char **argv)
{
	long threads = -1;
	char *rest[64];
	int nrest = 0;

	for (int i = 0; i < argc && nrest < 63; i++) {
		if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
			threads = std::atol(argv[++i]);
		else
			rest[nrest++] = argv[i];
	}
	rest[nrest] = nullptr;
	rc_opts o;
	rc_parse_args(nrest, rest, &o);
	if (threads != 0 && threads != 1)
		rc_bad(argv[0], "--threads 1|0 is required (0: one per core)");
	const char *impl = threads == 1 ? "caf-1t" : "caf";
	size_t nthreads = threads == 1 ? 1 : std::max(1u, std::thread::hardware_concurrency());

	caf::actor_system_config cfg;
	cfg.set("scheduler.max-threads", nthreads);
	std::vector<double> samples((size_t)o.runs);
	double rss = 0;
	{
		caf::actor_system sys{cfg};
		for (long r = 0; r < o.runs; r++)
			samples[(size_t)r] = one_run(sys, o, impl, r == 0 ? &rss : nullptr);
	}
	rc_report(impl, &o, samples.data(), rss);
	return 0;
}
