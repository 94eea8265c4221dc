/*
 * libqtest for illan: starts the emulator as QEMU's libqtest starts QEMU,
 * acts as the guest over the qtest line protocol (memory, hcalls, IRQs,
 * the virtual clock) and checks a clean exit when the test ends.
 */
#ifndef LIBQTEST_H
#define LIBQTEST_H

#include <glib.h>
#include <json-glib/json-glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct QTestState QTestState;

/* Starts illan with libqtest's argument set plus @extra_args. */
QTestState *qtest_init(const char *extra_args);
QTestState *qtest_initf(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
/* The same, with illan run by @wrapper (a command line that ends by
 * running its arguments, e.g. setpriv with capabilities dropped); the
 * descriptors the test leaves open without FD_CLOEXEC reach illan. */
QTestState *qtest_init_wrapped(const char *wrapper, const char *extra_args);
pid_t qtest_pid(QTestState *s);
/* SIGTERM, then asserts the process exits with status 0. */
void qtest_quit(QTestState *s);
/* The same with another signal (SIGINT must end illan cleanly too). */
void qtest_quit_signal(QTestState *s, int sig);
/* Sends @sig and returns the exit status, which may be any. */
int qtest_quit_status(QTestState *s, int sig);
/* SIGKILL, as a crash would end it; asserts it died of the signal. */
void qtest_kill(QTestState *s);

/*
 * QMP: qtest_init() has read the greeting and negotiated.  Replies and
 * events are JSON objects the caller unrefs.  Events that arrive while a
 * reply is awaited are kept for qtest_qmp_eventwait().
 */
JsonObject *qtest_qmp(QTestState *s, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
JsonObject *qtest_qmp_reply(QTestState *s);
/* The same, or NULL when none came within @timeout_s. */
JsonObject *qtest_qmp_reply_within(QTestState *s, double timeout_s);
JsonObject *qtest_qmp_receive(QTestState *s);
JsonObject *qtest_qmp_eventwait(QTestState *s, const char *event);
/* The "return" of reply @rsp, owned by it; a reply without one fails
 * the test, printing it. */
JsonNode *qtest_qmp_return(JsonObject *rsp);
bool qtest_qmp_event_pending(QTestState *s, const char *event);
void qtest_qmp_send_raw(QTestState *s, const char *data, size_t len);

/* Sends one line and returns the reply line (IRQ lines are consumed). */
char *qtest_cmd(QTestState *s, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
/* Sends raw bytes, for tests of malformed input. */
void qtest_send_raw(QTestState *s, const char *data, size_t len);
/* Reads the next reply line (IRQ lines are consumed). */
char *qtest_recv_line(QTestState *s);
/* Reads the next line as sent, IRQ lines included. */
char *qtest_recv_raw_line(QTestState *s);
/* Whether bytes wait unread on the qtest socket, or come within
 * @timeout_s; reads none of them. */
bool qtest_reply_waiting(QTestState *s, double timeout_s);

/* Interrupt numbers on the qtest socket are 0 to 255, as QEMU's libqtest
 * tracks them: source 0x1100 + N is N (docs/devel/qtest.md). */
#define QTEST_IRQ_LINES 256

uint8_t qtest_readb(QTestState *s, uint64_t addr);
uint16_t qtest_readw(QTestState *s, uint64_t addr);
uint32_t qtest_readl(QTestState *s, uint64_t addr);
uint64_t qtest_readq(QTestState *s, uint64_t addr);
void qtest_writeb(QTestState *s, uint64_t addr, uint8_t val);
void qtest_writew(QTestState *s, uint64_t addr, uint16_t val);
void qtest_writel(QTestState *s, uint64_t addr, uint32_t val);
void qtest_writeq(QTestState *s, uint64_t addr, uint64_t val);
void qtest_memread(QTestState *s, uint64_t addr, void *buf, size_t size);
void qtest_memwrite(QTestState *s, uint64_t addr, const void *buf,
                    size_t size);
void qtest_memset(QTestState *s, uint64_t addr, uint8_t byte, size_t size);

/* Virtual clock; each returns the clock after the step. */
int64_t qtest_clock_step(QTestState *s, int64_t ns);
int64_t qtest_clock_step_next(QTestState *s);
int64_t qtest_clock_set(QTestState *s, int64_t ns);

void qtest_irq_intercept_out(QTestState *s, const char *path);
void qtest_irq_intercept_in(QTestState *s, const char *path);
void qtest_set_irq_in(QTestState *s, const char *path, int n, int level);
bool qtest_get_irq(QTestState *s, int n);
/* How many times line @n was raised since the test started. */
unsigned qtest_irq_raise_count(QTestState *s, int n);

/*
 * Issues an hcall with up to 9 arguments and returns r3; the output
 * registers the hcall defines are stored in @out (up to @max_out).
 */
int64_t qtest_hcall(QTestState *s, uint64_t opcode, unsigned nargs,
                    const uint64_t *args, uint64_t *out, unsigned max_out);
#define qtest_hcallv(s, opcode, ...)                                      \
    qtest_hcall((s), (opcode),                                            \
                sizeof((uint64_t[]){ __VA_ARGS__ }) / sizeof(uint64_t),   \
                (uint64_t[]){ __VA_ARGS__ }, NULL, 0)

/* A bump allocator of guest-physical memory for test structures. */
typedef struct QGuestAllocator {
    uint64_t next, end;
} QGuestAllocator;

void guest_alloc_init(QGuestAllocator *alloc, uint64_t start, uint64_t end);
uint64_t guest_alloc(QGuestAllocator *alloc, uint64_t size, uint64_t align);

/* Maps [ioba, ioba+len) to [gpa, gpa+len) with @perm via H_PUT_TCE. */
void qtest_tce_map(QTestState *s, uint32_t liobn, uint64_t ioba,
                   uint64_t gpa, uint64_t len, uint64_t perm);

/*
 * Waiting for something to have happened, never for a fixed time: polls
 * @cond (every millisecond at first, backing off to 10 ms) until it
 * returns true.  qtest_poll_until() returns false when @timeout_s passes
 * first; qtest_wait_until() fails the test instead, saying it waited for
 * @what_fmt.  QTEST_WAIT_S is the deadline a test gives anything that
 * must happen, generous so that only a real failure reaches it.
 */
#define QTEST_WAIT_S    30.0
/* The deadline of each QMP reply, QMP event awaited and qtest reply:
 * more than any test takes for one under the sanitizers, less than
 * meson's timeout of the shortest test program (120 s). */
#define QTEST_REPLY_S   90.0
typedef bool (*QTestCondFn)(void *opaque);
bool qtest_poll_until(QTestCondFn cond, void *opaque, double timeout_s);
void qtest_wait_until(QTestCondFn cond, void *opaque, double timeout_s,
                      const char *what_fmt, ...) G_GNUC_PRINTF(4, 5);

/* Runs illan with @args (split as a shell would) to completion; returns
 * its exit status and what it printed. */
int illan_run(const char *args, char **out, char **err);
const char *illan_binary(void);

/* A unix datagram socket bound to @path (removed first if it exists): the
 * far end of a dgram netdev in tests. */
int qtest_bind_dgram(const char *path);
/* Sends @len bytes from @fd as one datagram to the unix socket @path. */
void qtest_dgram_send(int fd, const char *path, const void *data,
                      size_t len);

#endif
