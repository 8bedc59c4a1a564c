/* SPDX-License-Identifier: MIT */
// The ring as CAF's manual (0.17) writes actors: not a peer of the suite,
// the yardstick ring-caf is checked against (docs/ring.md). A config with
// custom options (the manual's "Configuring Actor Applications"), caf_main
// and CAF_MAIN(), event-based actors spawned with `spawn`, the leader told
// its right neighbour in a first message and then `become`-ing the ring's
// behaviour, relays that `quit` after their last message, and a
// scoped_actor that waits for the leaders. The clock runs from the first
// spawn to the last leader's "done".
//
//   ring-caf-plain --n=N --coroutines=C --rounds=M [--scheduler.max-threads=T]
//
// prints msgs/s on stdout.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "caf/all.hpp"

using namespace caf;

namespace {

struct config : actor_system_config {
	int64_t n = 8, coroutines = 4000, rounds = 1000;

	config()
	{
		opt_group{custom_options_, "global"}
			.add(n, "n", "actors per ring")
			.add(coroutines, "coroutines", "actors in all")
			.add(rounds, "rounds", "rounds of each ring");
	}
};

behavior relay(event_based_actor *self, actor next, int64_t rounds)
{
	auto left = std::make_shared<int64_t>(rounds);
	return {
		[=](int64_t v) {
			self->send(next, v + 1);
			if (--*left == 0)
				self->quit();
		},
	};
}

behavior leader(event_based_actor *self, int64_t n, int64_t rounds, actor done)
{
	return {
		[=](actor next) {
			auto v = std::make_shared<int64_t>(1), left = std::make_shared<int64_t>(rounds);
			self->send(next, *v);
			self->become([=](int64_t back) {
				if (back != *v + n - 1)
					std::abort();
				if (--*left == 0) {
					self->send(done, back);
					self->quit();
					return;
				}
				*v = back + 1;
				self->send(next, *v);
			});
		},
	};
}

} // namespace

void caf_main(actor_system &sys, const config &cfg)
{
	scoped_actor self{sys};
	auto t0 = std::chrono::steady_clock::now();
	for (int64_t base = 0; base < cfg.coroutines; base += cfg.n) {
		actor first = sys.spawn(leader, cfg.n, cfg.rounds, actor_cast<actor>(self));
		actor next = first;
		for (int64_t i = cfg.n - 1; i >= 1; i--)
			next = sys.spawn(relay, next, cfg.rounds);
		anon_send(first, next); // its right neighbour: the ring starts
	}
	for (int64_t r = 0; r < cfg.coroutines / cfg.n; r++)
		self->receive([](int64_t) {});
	double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	std::printf("%.1f\n", (double)cfg.coroutines * (double)cfg.rounds / s);
}

CAF_MAIN()
