/* SPDX-License-Identifier: MIT */
/**
 * @file baton/io.h
 * blocking I/O for tasks: accept, read, write, connect and
 * wait on file descriptors, where "blocking" stops only the calling task
 * while its worker runs the others.
 *
 * Each worker of a scheduler has a reactor: epoll(7), or io_uring(7) where
 * the kernel has it and the program asks for it (baton_io_set_backend,
 * below).
 * A descriptor is wrapped in a handle once; operations on the handle try
 * the system call first and, when it would block, park the task until the
 * reactor reports the descriptor ready (or the timeout passes).
 *
 * @code
 *     static void echo(void *arg)
 *     {
 *         baton_io_t *conn = arg;
 *         char buf[4096];
 *         size_t n;
 *
 *         // read what comes, write it back, until EOF or 30 s of silence
 *         while (baton_io_read(conn, buf, sizeof buf, 30000000000LL, &n) ==
 *                    BATON_OK && n > 0)
 *             if (baton_io_write(conn, buf, n, -1, NULL) != BATON_OK)
 *                 break;
 *         baton_io_close(conn);
 *     }
 *
 *     static void server(void *arg)
 *     {
 *         baton_io_t *lis;
 *         int fd;
 *         baton_io_listen_tcp(&lis, "127.0.0.1", 8080, 128);
 *         while (baton_io_accept(lis, &fd, -1) == BATON_OK) {
 *             baton_io_t *conn;
 *             if (baton_io_open(&conn, fd, true) == BATON_OK)
 *                 baton_sched_spawn(baton_sched_self(), NULL, echo, conn);
 *         }
 *     }
 * @endcode
 *
 * Timeouts as everywhere in baton: < 0 waits forever, 0 only tries
 * (BATON_EAGAIN), > 0 waits at most that many nanoseconds
 * (BATON_ETIMEDOUT). A failed system call returns BATON_ESYS with errno
 * set.
 *
 * Rules a caller must keep:
 *  1. Open, accept, read, write, connect and wait are called from tasks
 *     (BATON_ENOSCHED otherwise). The descriptor becomes non-blocking.
 *  2. One reader and one writer at a time per handle: two tasks reading the
 *     same handle at once is allowed, but which one gets the data is not
 *     specified.
 *  3. baton_io_close() refuses (BATON_EBUSY) while a task waits on the
 *     handle; close it from the task that uses it. Do not close the
 *     descriptor behind the handle's back.
 *  4. A handle still open when its scheduler is destroyed is closed (its
 *     descriptor too, if owned) and freed by baton_sched_destroy(), like
 *     the tasks that used it: do not use it afterwards. A notification
 *     still armed then is never called.
 *  5. baton_io_notify() is for a handle nobody reads: no task may wait to
 *     read it while a notification is armed, and close refuses (EBUSY)
 *     until the notification has run or was disarmed. Its function runs
 *     on the handle's worker outside any task, in the reactor's turn: it
 *     must not block or wait; it typically spawns the task that reads.
 *
 * A connection that waits long for its next bytes need not keep a task
 * parked on it (a stack, however small): its task arms a notification and
 * returns, and the notification starts a new task when bytes arrive:
 *
 * @code
 *     static void on_readable(baton_io_t *io, void *arg)
 *     {
 *         baton_sched_spawn(sched, NULL, serve, arg);  // reads again
 *     }
 *     ...
 *     rc = baton_io_read(conn, buf, sizeof buf, 0, &n);   // only try
 *     if (rc == BATON_EAGAIN &&
 *         baton_io_notify(conn, BATON_IO_READABLE, on_readable, ctx) == BATON_OK)
 *         return;                      // no task until bytes arrive
 * @endcode
 */
#ifndef BATON_IO_H
#define BATON_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <baton/error.h>
#include <baton/sched.h>

#ifdef __cplusplus
extern "C" {
#endif

/** An I/O handle: a descriptor the reactor waits on (opaque). */
typedef struct baton_io baton_io_t;

/** Which readiness to wait for (baton_io_wait). @{ */
#define BATON_IO_READABLE 1
#define BATON_IO_WRITABLE 2
/** @} */

/** Wrap fd (made non-blocking) for this task's scheduler; with owns_fd, the
 * handle closes fd when it is closed.
 * @param out receives the new I/O object
 * @param fd the descriptor to wrap
 * @param owns_fd true: closing the handle closes fd
 * @return BATON_OK, or an error: BATON_EINVAL (fd < 0, NULL out),
 * BATON_ENOSCHED, BATON_ENOMEM, BATON_ESYS (fcntl, or the reactor refused the
 * descriptor). */
BATON_API int baton_io_open(baton_io_t **out, int fd, bool owns_fd);

/** Read up to len bytes; *n = bytes read (0 at end of file).
 * @param io the I/O object
 * @param buf receives the bytes
 * @param len the room in buf
 * @param timeout_ns < 0 waits forever, 0 only tries, > 0 waits at most
 * that many nanoseconds
 * @param n receives the number of bytes read (0 at end of file)
 * @return BATON_OK, or an error: BATON_EINVAL (NULL io or n, NULL buf with len
 * > 0), BATON_EAGAIN (timeout 0 and nothing to read), BATON_ETIMEDOUT,
 * BATON_ENOSCHED (it would wait, outside a task), BATON_ENOMEM (no timer for
 * the timeout), BATON_ESYS (read failed, errno set: ECONNRESET...). */
BATON_API int baton_io_read(baton_io_t *io, void *buf, size_t len, int64_t timeout_ns, size_t *n);

/** Write all len bytes (partial writes are continued); *n (may be NULL) =
 * bytes written, also when an error or the timeout cut it short.
 * @param io the I/O object
 * @param buf the bytes to write
 * @param len how many
 * @param timeout_ns < 0 waits forever, 0 only tries, > 0 waits at most
 * that many nanoseconds
 * @param n receives the number of bytes written, or NULL
 * @return BATON_OK, or an error: as read (EAGAIN: the socket's buffer is full
 * and timeout is 0), BATON_ESYS with errno EPIPE when the peer has gone, with
 * no SIGPIPE on a socket or a pipe alike (a pipe's write blocks SIGPIPE in the
 * calling thread for the call and takes back the one it raised). */
BATON_API int baton_io_write(baton_io_t *io, const void *buf, size_t len, int64_t timeout_ns,
			     size_t *n);

/** Accept a connection on a listening handle: *fd is non-blocking and
 * close-on-exec.
 * @param listener the I/O object
 * @param fd receives the connection's descriptor
 * @param timeout_ns < 0 waits forever, 0 only tries, > 0 waits at most
 * that many nanoseconds
 * @return BATON_OK, or an error: as read; BATON_ESYS with errno EMFILE/ENFILE
 * when the process is out of descriptors (the listener stays usable). */
BATON_API int baton_io_accept(baton_io_t *listener, int *fd, int64_t timeout_ns);

/** Connect a socket handle, waiting as long as the timeout allows: for a
 * TCP handshake, and for an AF_UNIX listener whose backlog is full (the
 * task then sleeps and tries again, from 100 us up to 10 ms apart, until
 * the listener accepts; nothing wakes it sooner).
 * @param io the I/O object
 * @param addr the address to connect to
 * @param len its length
 * @param timeout_ns < 0 waits forever, 0 only tries, > 0 waits at most
 * that many nanoseconds
 * @return BATON_OK, or an error: as read (BATON_EAGAIN at timeout 0 with the
 * handshake under way or the backlog full); BATON_ESYS with the connection's
 * errno (ECONNREFUSED...). */
BATON_API int baton_io_connect(baton_io_t *io, const struct sockaddr *addr, socklen_t len,
			       int64_t timeout_ns);

/** Wait until the handle is readable and/or writable (an OR of
 * BATON_IO_READABLE and BATON_IO_WRITABLE), or has an error or hang-up.
 * With timeout 0 it looks at the descriptor itself (a handle just opened
 * is ready before its reactor has reported it).
 * @param io the I/O object
 * @param events BATON_IO_READABLE, BATON_IO_WRITABLE or both
 * @param timeout_ns < 0 waits forever, 0 only tries, > 0 waits at most
 * that many nanoseconds
 * @return BATON_OK, or an error: BATON_EINVAL (NULL io, no or unknown events),
 * BATON_ENOSCHED (outside a task), BATON_EAGAIN (timeout 0, not ready),
 * BATON_ETIMEDOUT, BATON_ESYS. */
BATON_API int baton_io_wait(baton_io_t *io, int events, int64_t timeout_ns);

/** What baton_io_notify() calls, once (rule 5).
 * @param io the handle that became readable
 * @param arg the argument given to baton_io_notify() */
typedef void (*baton_io_notify_fn)(baton_io_t *io, void *arg);

/** Call fn(io, arg) once, on the handle's worker, when it next becomes
 * readable (or has an error, a hang-up or the peer's end of file), instead
 * of keeping a task waiting on it (rule 5). Arm it after a read found
 * nothing: it reacts to edges, as a waiting task does. events 0 with fn
 * NULL disarms instead. Any thread.
 * @param io the I/O object
 * @param events BATON_IO_READABLE to arm; 0 to disarm
 * @param fn the function to call; NULL to disarm
 * @param arg its second argument
 * @return BATON_OK (armed; disarming: it was armed and will not run),
 * BATON_EAGAIN (readable already, nothing armed: read again; disarming:
 * none was armed, it ran or is running), or an error: BATON_EINVAL (NULL
 * io, fn NULL with events or the reverse, events other than
 * BATON_IO_READABLE), BATON_EBUSY (a notification is armed already, or a
 * task waits to read). */
BATON_API int baton_io_notify(baton_io_t *io, int events, baton_io_notify_fn fn, void *arg);

/** The descriptor, or BATON_EINVAL.
 * @param io the I/O object
 * @return the descriptor, or BATON_EINVAL */
BATON_API int baton_io_fd(const baton_io_t *io);

/** Stop watching the descriptor, close it if owned, free the handle. NULL
 * is a no-op.
 * @param io the I/O object
 * @return BATON_OK, or an error: BATON_EBUSY (a task waits on it, or a
 * notification is armed: rules 3 and 5). */
BATON_API int baton_io_close(baton_io_t *io);

/** A listening TCP socket on host:port (host NULL = any IPv4 address),
 * SO_REUSEADDR, as a handle. From a task.
 * @param out receives the new I/O object
 * @param host an IPv4 address, or NULL for any
 * @param port the port
 * @param backlog listen()'s backlog
 * @return BATON_OK, or an error: BATON_EINVAL, BATON_ENOSCHED, BATON_ESYS
 * (socket/bind/listen). */
BATON_API int baton_io_listen_tcp(baton_io_t **out, const char *host, unsigned short port,
				  int backlog);

/** A non-blocking listening TCP socket on host:port (host NULL = any IPv4
 * address; port 0 = any), SO_REUSEADDR, as a bare descriptor: *port
 * receives the port bound and *fd the socket. Any thread, no scheduler
 * needed: a server binds before its scheduler runs, so that the error
 * reaches whoever creates it; baton_io_open() wraps it later, in a task.
 * @param host an IPv4 address, or NULL for any
 * @param port the port (0: any), receives the port bound
 * @param backlog listen()'s backlog (>= 1)
 * @param fd receives the socket
 * @return BATON_OK, or an error: BATON_EINVAL (NULL, backlog < 1, a host that
 * is not an IPv4 address), BATON_ESYS (socket/bind/listen, errno set). */
BATON_API int baton_io_listen_socket(const char *host, unsigned short *port, int backlog, int *fd);

/** The reactor behind the handles, per scheduler. AUTO is io_uring where
 * the kernel and the build have it, else epoll; the environment variable
 * BATON_IO_BACKEND (epoll or io_uring) overrides the choice. */
typedef enum baton_io_backend {
	BATON_IO_AUTO = 0,
	BATON_IO_EPOLL = 1,
	BATON_IO_URING = 2,
} baton_io_backend_t;

/** Choose the reactor of scheduler s's workers, before any of them has
 * one (a worker makes its reactor at its first handle): call it after
 * baton_sched_create() and before baton_sched_run(). From any thread.
 * @param s the scheduler
 * @param backend the reactor (baton_io_backend_t)
 * @return BATON_OK, or an error: BATON_EINVAL (NULL s, a value not in
 * baton_io_backend_t), BATON_EBUSY (s is running or a worker already has its
 * reactor; nothing changes). */
BATON_API int baton_io_set_backend(baton_sched_t *s, baton_io_backend_t backend);

/** The backend a worker of the calling task uses: "epoll", "io_uring", or
 * NULL outside tasks or before the first handle.
 * @return "epoll", "io_uring" or NULL */
BATON_API const char *baton_io_backend(void);

#ifdef __cplusplus
}
#endif

#endif /* BATON_IO_H */
