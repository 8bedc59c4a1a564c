/* baton_strerror: one sentence per error code of include/baton/error.h. */
#include <baton/error.h>

const char *baton_strerror(int code)
{
	switch (code) {
	case BATON_OK:
		return "success";
	case BATON_EINVAL:
		return "invalid argument";
	case BATON_ENOMEM:
		return "out of memory";
	case BATON_EDEAD:
		return "the coroutine has finished and cannot be resumed";
	case BATON_ERUNNING:
		return "the coroutine is running or is resuming another one";
	case BATON_ENOTCORO:
		return "not called from inside a coroutine";
	case BATON_ETHREAD:
		return "the object belongs to another thread";
	case BATON_ELOCALADDR:
		return "the value points into the shared stack of copy-stack "
		       "coroutines (address of a local of a coroutine that "
		       "will be switched out)";
	case BATON_ESTACK:
		return "stack size out of range";
	case BATON_EDONE:
		return "the generator is exhausted";
	case BATON_EBUSY:
		return "the object is in use";
	case BATON_ETIMEDOUT:
		return "the deadline passed before the operation completed";
	case BATON_ECLOSED:
		return "the channel or queue is closed";
	case BATON_EPERM:
		return "the caller does not hold what it tries to release";
	case BATON_EAGAIN:
		return "the operation would block";
	case BATON_ENOSCHED:
		return "not called from a coroutine run by a baton scheduler";
	case BATON_EDEADLK:
		return "the call would deadlock";
	case BATON_ESYS:
		return "a system call failed";
	case BATON_ESHUTDOWN:
		return "shutting down: no new work is accepted";
	default:
		return "unknown baton error code";
	}
}
