/*
 * The io_uring backend. Built only when liburing was found (config.h's
 * BATON_HAVE_LIBURING); without it, creating this poller fails and the
 * worker uses epoll.
 */
#include "poller.h"

#if !BATON_HAVE_LIBURING
static int ur_unavailable(struct baton_worker *w)
{
	(void)w;
	return BATON_ESYS;
}

const struct baton_poller_ops baton_poller_uring = {
	.name = "io_uring",
	.create = ur_unavailable,
};
#endif
