/*
 * The qtest server.  Every non-empty line gets exactly one OK/FAIL/ERR
 * reply; input is parsed strictly and checked before use, so nothing a
 * client sends can crash or wedge the process.
 *
 * Memory verbs act as QEMU's do on a machine's address space: the part of
 * an access inside guest RAM reaches it, reads elsewhere give zeros and
 * writes elsewhere are dropped.  Without a machine (-M none) no address
 * has RAM.
 */
#include "system/qtest.h"
#include "hw/ppc/spapr_vio.h"
#include "qemu/bswap.h"
#include "qemu/option.h"
#include "qemu/pause.h"
#include "qemu/thread.h"
#include "qemu/unix-socket.h"
#include "qemu/timer.h"

#include <errno.h>
#include <glib-unix.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

/* Bounds on what one request may move, so a request cannot make the
 * process allocate without limit. */
#define QTEST_MAX_TRANSFER  (16u << 20)
#define QTEST_MAX_LINE      (4 * QTEST_MAX_TRANSFER)
#define QTEST_READ_CHUNK    65536
/*
 * Unsent output past which a client counts as not reading: its requests
 * wait and IRQ lines are coalesced, so what waits for it stays bounded.
 */
#define QTEST_OUT_BOUND     65536
/*
 * At the end of the run what is owed goes out while the client takes
 * it, but a client that takes nothing for QTEST_EXIT_STALL_MS, or is
 * still reading after QTEST_EXIT_FLUSH_MS, holds up the exit no longer.
 */
#define QTEST_EXIT_STALL_MS 200
#define QTEST_EXIT_FLUSH_MS 5000
#define XICS_PATH           "xics"
/*
 * QEMU's libqtest tracks interrupt numbers 0 to 255 only.  Where a
 * device's number follows its unit address it is in the VIO range, 0x1100
 * to 0x11ff, so qtest numbers source 0x1100 + N as N.  With QEMU's legacy
 * numbering devices start low (0x1006 on pseries-2.5), so qtest numbers
 * source 0x1000 + N as N, as QEMU's XICS numbers its inputs there; N
 * passes 255 only for a device that adopted a number above 0x10ff from a
 * stream (illan 0.1.0 wrote 0x1100 and up).
 */
#define QTEST_IRQ_LINES     SPAPR_IRQ_NR

/* What a client knows of a line. */
enum { IRQ_UNSEEN, IRQ_LOW, IRQ_HIGH };

struct QTestServer {
    SpaprMachineState *spapr;   /* NULL: no machine, no RAM (-M none) */
    int in_fd, out_fd;
    bool owns_fd;
    guint watch;
    GString *inbuf;
    size_t scanned;             /* inbuf up to here holds no newline */
    bool discarding;            /* skipping the rest of an overlong line */
    FILE *log;
    uint32_t max_transfer;      /* read/write sizes, QTEST_MAX_TRANSFER */
    int64_t start_us;
    QTestClosedFn closed;
    void *closed_opaque;
    bool input_held;            /* requests wait for the output to drain */
    bool hung_up;               /* no more input; closed() once all is out */
    bool closed_told;
    /* One interception per connection, as in QEMU. */
    SpaprVioDevice *intercept_dev;
    bool intercept_xics;
    guint flush_watch, out_watch;
    /*
     * Output.  Interrupts are raised on af-xdp I/O threads too, and a
     * thread that blocked on the socket would hold up every pause: any
     * thread adds lines to outbuf under out_lock, only the main loop
     * writes the socket, and it never blocks on it.  A thread that adds
     * lines kicks flush_fd (an eventfd) once until the next flush.
     */
    QemuMutex out_lock;
    GString *outbuf;
    size_t out_head;            /* outbuf before here is sent */
    bool out_broken;            /* the client takes no more: drop output */
    bool flush_kicked;
    int flush_fd;
    /* Per qtest line: the latest level, and the last one sent as a line.
     * While the output is over QTEST_OUT_BOUND changes are held (counted
     * per line) and only the latest level goes out. */
    uint32_t irq_first;         /* the source qtest numbers 0 */
    unsigned irq_lines;         /* how many it numbers */
    uint8_t irq_level[QTEST_IRQ_LINES];
    uint8_t irq_sent[QTEST_IRQ_LINES];
    uint32_t irq_held[QTEST_IRQ_LINES];
    bool irqs_held;
    uint64_t irq_coalesced;     /* changes that never became a line */
};

typedef struct QTestCmd {
    const char *name;
    int min_args, max_args;
    void (*fn)(QTestServer *qs, char **argv, int argc, GString *reply);
} QTestCmd;

static double elapsed(QTestServer *qs)
{
    return (g_get_monotonic_time() - qs->start_us) / 1e6;
}

static void qtest_log(QTestServer *qs, char kind, const char *text)
{
    if (qs->log) {
        fprintf(qs->log, "[%c +%f] %s\n", kind, elapsed(qs), text);
        fflush(qs->log);
    }
}

static size_t out_pending_locked(QTestServer *qs)
{
    return qs->outbuf->len - qs->out_head;
}

static size_t out_pending(QTestServer *qs)
{
    size_t pending;

    qemu_mutex_lock(&qs->out_lock);
    pending = out_pending_locked(qs);
    qemu_mutex_unlock(&qs->out_lock);
    return pending;
}

static void append_line_locked(QTestServer *qs, const char *line)
{
    qtest_log(qs, 'S', line);
    if (qs->out_fd >= 0 && !qs->out_broken) {
        g_string_append(qs->outbuf, line);
        g_string_append_c(qs->outbuf, '\n');
    }
}

static void append_irq_locked(QTestServer *qs, int n)
{
    g_autofree char *line = g_strdup_printf(
        "IRQ %s %d", qs->irq_level[n] == IRQ_HIGH ? "raise" : "lower", n);

    qs->irq_sent[n] = qs->irq_level[n];
    append_line_locked(qs, line);
}

/* Held changes go out, as each line's latest level, before anything
 * else is added: a reply still comes after every change made before
 * it. */
static void release_held_irqs_locked(QTestServer *qs)
{
    if (!qs->irqs_held) {
        return;
    }
    for (unsigned n = 0; n < qs->irq_lines; n++) {
        uint32_t held = qs->irq_held[n];

        if (!held) {
            continue;
        }
        qs->irq_held[n] = 0;
        if (qs->irq_level[n] != qs->irq_sent[n]) {
            append_irq_locked(qs, n);
            held--;
        }
        qs->irq_coalesced += held;
    }
    qs->irqs_held = false;
}

/*
 * At most what @fd takes without blocking, without changing flags that
 * others sharing the descriptor (stdio) see: a socket is sent to with
 * MSG_DONTWAIT; anything else gets at most PIPE_BUF bytes once poll()
 * says it is writable, which a pipe then takes whole.
 */
static ssize_t write_some(int fd, const char *buf, size_t len)
{
    struct pollfd p = { .fd = fd, .events = POLLOUT };
    ssize_t n = send(fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);

    if (n >= 0 || errno != ENOTSOCK) {
        return n;
    }
    if (poll(&p, 1, 0) == 0) {
        errno = EAGAIN;
        return -1;
    }
    return write(fd, buf, MIN(len, PIPE_BUF));
}

static gboolean qtest_writable(gint fd, GIOCondition cond, gpointer opaque);

/* Writes what the client takes now (main loop only); the rest waits for
 * the socket to be writable. */
static void flush_output(QTestServer *qs)
{
    size_t pending;

    qemu_mutex_lock(&qs->out_lock);
    qs->flush_kicked = false;
    while ((pending = out_pending_locked(qs)) && !qs->out_broken) {
        ssize_t n = write_some(qs->out_fd, qs->outbuf->str + qs->out_head,
                               pending);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 && errno == EAGAIN) {
            break;
        }
        if (n <= 0) {
            qs->out_broken = true;  /* gone; the read side will see it */
            break;
        }
        qs->out_head += n;
        if (out_pending_locked(qs) < QTEST_OUT_BOUND) {
            release_held_irqs_locked(qs);
        }
    }
    if (qs->out_broken) {
        release_held_irqs_locked(qs);
        g_string_truncate(qs->outbuf, qs->out_head);
    }
    /* Sent bytes are dropped once they are half the buffer: linear in
     * what passes, even for a reply of many megabytes sent in pieces. */
    if (qs->out_head * 2 >= qs->outbuf->len) {
        g_string_erase(qs->outbuf, 0, qs->out_head);
        qs->out_head = 0;
    }
    pending = out_pending_locked(qs);
    qemu_mutex_unlock(&qs->out_lock);
    if (pending && !qs->out_watch) {
        qs->out_watch = g_unix_fd_add(qs->out_fd, G_IO_OUT | G_IO_ERR,
                                      qtest_writable, qs);
    } else if (!pending && qs->out_watch) {
        g_source_remove(qs->out_watch);
        qs->out_watch = 0;
    }
}

static bool output_full(QTestServer *qs)
{
    bool full;

    qemu_mutex_lock(&qs->out_lock);
    full = out_pending_locked(qs) >= QTEST_OUT_BOUND;
    qemu_mutex_unlock(&qs->out_lock);
    return full;
}

/* A reply, or a FAIL not tied to a request: after every change made so
 * far, written at once as far as the client takes it. */
static void qtest_send(QTestServer *qs, const char *line)
{
    qemu_mutex_lock(&qs->out_lock);
    release_held_irqs_locked(qs);
    append_line_locked(qs, line);
    qemu_mutex_unlock(&qs->out_lock);
    flush_output(qs);
}

/* Level changes on an intercepted line, reported as QEMU does, under
 * the qtest number of source @irq.  Any thread: the line waits in the
 * buffer, and the main loop is kicked to write it. */
static void report_irq(QTestServer *qs, int irq, int level)
{
    int n = irq - (int)qs->irq_first;
    uint8_t now = level ? IRQ_HIGH : IRQ_LOW;

    /* Only what qtest numbers can be driven: devices and set_irq_in. */
    g_assert(n >= 0 && (unsigned)n < qs->irq_lines);
    qemu_mutex_lock(&qs->out_lock);
    if (qs->irq_level[n] != now) {
        qs->irq_level[n] = now;
        if (qs->irqs_held || out_pending_locked(qs) >= QTEST_OUT_BOUND) {
            qs->irq_held[n]++;
            qs->irqs_held = true;
        } else {
            append_irq_locked(qs, n);
        }
        if (!qs->flush_kicked && qs->flush_fd >= 0) {
            qs->flush_kicked = true;
            eventfd_write(qs->flush_fd, 1);
        }
    }
    qemu_mutex_unlock(&qs->out_lock);
}

/* Forwarded by number, the device's: a device that adopts a stream's
 * number tells its line the new one (spapr_vio_commit()). */
static void intercept_out_handler(void *opaque, int n, int level)
{
    QTestServer *qs = opaque;

    irq_set_level(spapr_irq_input(qs->spapr, n), level);
    report_irq(qs, n, level);
}

static void intercept_in_handler(void *opaque, int n, int level)
{
    report_irq(opaque, n, level);
}

static bool parse_u64(const char *word, uint64_t *out)
{
    char *end;

    if (!g_ascii_isdigit(word[0])) {
        return false;
    }
    errno = 0;
    *out = strtoull(word, &end, 0);
    return !errno && !*end;
}

/* Hcall arguments are registers: a leading '-' gives two's complement. */
static bool parse_reg(const char *word, uint64_t *out)
{
    if (word[0] == '-') {
        if (!parse_u64(word + 1, out)) {
            return false;
        }
        *out = -*out;
        return true;
    }
    return parse_u64(word, out);
}

static bool parse_args(char **argv, int argc, uint64_t *vals, GString *reply)
{
    for (int i = 0; i < argc; i++) {
        if (!parse_u64(argv[i], &vals[i])) {
            g_string_printf(reply, "FAIL bad number '%s'", argv[i]);
            return false;
        }
    }
    return true;
}

static GuestRam *qtest_ram(QTestServer *qs)
{
    return qs->spapr ? spapr_ram(qs->spapr) : NULL;
}

/* How many bytes from @addr on, up to @len, are guest RAM (which starts
 * at 0); addresses past the top of the address space are none. */
static uint64_t ram_part(QTestServer *qs, uint64_t addr, uint64_t len)
{
    GuestRam *ram = qtest_ram(qs);
    uint64_t size = ram ? guest_ram_size(ram) : 0;

    return addr < size ? MIN(len, size - addr) : 0;
}

/* Reads as a CPU would: zeros where there is no RAM. */
static void mem_read(QTestServer *qs, uint64_t addr, void *buf, uint64_t len)
{
    uint64_t inside = ram_part(qs, addr, len);

    memset(buf, 0, len);
    if (inside) {
        guest_ram_cpu_read(qtest_ram(qs), addr, buf, inside);
    }
}

/* Writes as a CPU would: what falls outside RAM is dropped. */
static void mem_write(QTestServer *qs, uint64_t addr, const void *buf,
                      uint64_t len)
{
    uint64_t inside = ram_part(qs, addr, len);

    if (inside) {
        guest_ram_cpu_write(qtest_ram(qs), addr, buf, inside);
    }
}

static bool transfer_size_ok(QTestServer *qs, uint64_t size, GString *reply)
{
    if (size == 0 || size > qs->max_transfer) {
        g_string_printf(reply, "FAIL size must be 1 to %u bytes",
                        qs->max_transfer);
        return false;
    }
    return true;
}

static unsigned access_size(const char *name)
{
    switch (name[strlen(name) - 1]) {
    case 'b': return 1;
    case 'w': return 2;
    case 'l': return 4;
    default: return 8;
    }
}

static void cmd_readx(QTestServer *qs, char **argv, int argc, GString *reply)
{
    unsigned size = access_size(argv[0]);
    uint8_t buf[8];
    uint64_t addr;

    (void)argc;
    if (!parse_args(argv + 1, 1, &addr, reply)) {
        return;
    }
    mem_read(qs, addr, buf, size);
    g_string_printf(reply, "OK 0x%016" PRIx64, ldn_be_p(buf, size));
}

static void cmd_writex(QTestServer *qs, char **argv, int argc, GString *reply)
{
    unsigned size = access_size(argv[0]);
    uint8_t buf[8];
    uint64_t v[2];

    (void)argc;
    if (!parse_args(argv + 1, 2, v, reply)) {
        return;
    }
    if (size < 8 && v[1] >> (size * 8)) {
        g_string_printf(reply, "FAIL value 0x%" PRIx64 " does not fit in "
                        "%u bytes", v[1], size);
        return;
    }
    stn_be_p(buf, size, v[1]);
    mem_write(qs, v[0], buf, size);
    g_string_assign(reply, "OK");
}

/* A table, not a printf per byte: a 16 MiB read took seconds (the
 * fuzzer's hang), longer than the transfer itself. */
static void append_hex(GString *s, const uint8_t *p, uint64_t n)
{
    static const char digits[] = "0123456789abcdef";
    gsize at = s->len;

    g_string_set_size(s, at + 2 * n);
    for (uint64_t i = 0; i < n; i++) {
        s->str[at + 2 * i] = digits[p[i] >> 4];
        s->str[at + 2 * i + 1] = digits[p[i] & 15];
    }
}

static void cmd_read(QTestServer *qs, char **argv, int argc, GString *reply)
{
    uint64_t v[2];
    g_autofree uint8_t *p = NULL;

    (void)argc;
    if (!parse_args(argv + 1, 2, v, reply) || !transfer_size_ok(qs, v[1], reply)) {
        return;
    }
    p = g_malloc(v[1]);
    mem_read(qs, v[0], p, v[1]);
    g_string_assign(reply, "OK 0x");
    append_hex(reply, p, v[1]);
}

static void cmd_b64read(QTestServer *qs, char **argv, int argc, GString *reply)
{
    uint64_t v[2];
    g_autofree uint8_t *p = NULL;
    g_autofree char *enc = NULL;

    (void)argc;
    if (!parse_args(argv + 1, 2, v, reply) || !transfer_size_ok(qs, v[1], reply)) {
        return;
    }
    p = g_malloc(v[1]);
    mem_read(qs, v[0], p, v[1]);
    enc = g_base64_encode(p, v[1]);
    g_string_printf(reply, "OK %s", enc);
}

static int hex_digit(char c)
{
    return g_ascii_isxdigit(c) ? g_ascii_xdigit_value(c) : -1;
}

/* Missing trailing digits read as zero, as in QEMU. */
static void cmd_write(QTestServer *qs, char **argv, int argc, GString *reply)
{
    const char *data = argv[3];
    size_t len = strlen(data);
    uint64_t v[2];
    g_autofree uint8_t *p = NULL;

    (void)argc;
    if (!parse_args(argv + 1, 2, v, reply) || !transfer_size_ok(qs, v[1], reply)) {
        return;
    }
    if (len < 3) {
        g_string_assign(reply, "ERR invalid argument size");
        return;
    }
    if (data[0] != '0' || (data[1] != 'x' && data[1] != 'X')) {
        g_string_assign(reply, "FAIL data must start with 0x");
        return;
    }
    for (size_t i = 2; i < len; i++) {
        if (hex_digit(data[i]) < 0) {
            g_string_printf(reply, "FAIL bad hex digit '%c' in data",
                            data[i]);
            return;
        }
    }
    p = g_malloc(v[1]);
    for (uint64_t i = 0; i < v[1]; i++) {
        size_t j = 2 + 2 * i;
        uint8_t hi = j < len ? hex_digit(data[j]) : 0;
        uint8_t lo = j + 1 < len ? hex_digit(data[j + 1]) : 0;
        p[i] = hi << 4 | lo;
    }
    mem_write(qs, v[0], p, v[1]);
    g_string_assign(reply, "OK");
}

static bool is_base64(const char *s)
{
    for (; *s; s++) {
        if (!g_ascii_isalnum(*s) && *s != '+' && *s != '/' && *s != '=') {
            return false;
        }
    }
    return true;
}

static void cmd_b64write(QTestServer *qs, char **argv, int argc,
                         GString *reply)
{
    const char *data = argv[3];
    g_autofree guchar *bytes = NULL;
    g_autofree uint8_t *p = NULL;
    uint64_t v[2];
    gsize n;

    (void)argc;
    if (!parse_args(argv + 1, 2, v, reply) || !transfer_size_ok(qs, v[1], reply)) {
        return;
    }
    if (strlen(data) < 3) {
        g_string_assign(reply, "ERR invalid argument size");
        return;
    }
    if (!is_base64(data)) {
        g_string_assign(reply, "FAIL data is not base64");
        return;
    }
    bytes = g_base64_decode(data, &n);
    if (n != v[1]) {
        g_autofree char *note = g_strdup_printf(
            "b64write: decoded %zu bytes, size %" PRIu64, (size_t)n, v[1]);
        qtest_log(qs, 'I', note);
    }
    p = g_malloc0(v[1]);
    memcpy(p, bytes, MIN(n, v[1]));
    mem_write(qs, v[0], p, v[1]);
    g_string_assign(reply, "OK");
}

static void cmd_memset(QTestServer *qs, char **argv, int argc, GString *reply)
{
    uint64_t v[3], inside;

    (void)argc;
    if (!parse_args(argv + 1, 3, v, reply)) {
        return;
    }
    if (v[2] > 0xff) {
        g_string_printf(reply, "FAIL byte 0x%" PRIx64 " is not 0..0xff",
                        v[2]);
        return;
    }
    inside = ram_part(qs, v[0], v[1]);
    if (inside) {
        guest_ram_cpu_fill(qtest_ram(qs), v[0], v[2], inside);
    }
    g_string_assign(reply, "OK");
}

static void cmd_endianness(QTestServer *qs, char **argv, int argc,
                           GString *reply)
{
    (void)qs, (void)argv, (void)argc;
    g_string_assign(reply, "OK big");
}

static void cmd_clock_step(QTestServer *qs, char **argv, int argc,
                           GString *reply)
{
    int64_t now = virtual_clock_ns(), target;
    uint64_t ns;

    (void)qs;
    if (argc == 1) {
        target = virtual_clock_deadline();
        if (target < 0) {
            g_string_assign(reply, "FAIL cannot advance clock to the next "
                            "deadline because there is no pending deadline");
            return;
        }
    } else {
        if (!parse_args(argv + 1, 1, &ns, reply)) {
            return;
        }
        if (ns > (uint64_t)(INT64_MAX - now)) {
            g_string_assign(reply, "FAIL step would overflow the clock");
            return;
        }
        target = now + (int64_t)ns;
    }
    virtual_clock_advance_to(target);
    g_string_printf(reply, "OK %" PRId64, virtual_clock_ns());
}

static void cmd_clock_set(QTestServer *qs, char **argv, int argc,
                          GString *reply)
{
    uint64_t ns;

    (void)qs, (void)argc;
    if (!parse_args(argv + 1, 1, &ns, reply)) {
        return;
    }
    if (ns <= INT64_MAX) {
        virtual_clock_advance_to((int64_t)ns);
    }
    g_string_printf(reply, "%s %" PRId64,
                    virtual_clock_ns() == (int64_t)ns ? "OK" : "FAIL",
                    virtual_clock_ns());
}

static bool is_xics(const char *path)
{
    return !strcmp(path, XICS_PATH) || !strcmp(path, "/machine/" XICS_PATH);
}

static bool intercept_taken(QTestServer *qs, SpaprVioDevice *dev, bool xics,
                            GString *reply)
{
    if (!qs->intercept_dev && !qs->intercept_xics) {
        return false;
    }
    if (qs->intercept_dev == dev && qs->intercept_xics == xics) {
        g_string_assign(reply, "OK");
    } else {
        g_string_assign(reply, "FAIL IRQ intercept already enabled");
    }
    return true;
}

/* The VIO device at @path, or NULL (always, without a machine). */
static SpaprVioDevice *find_device(QTestServer *qs, const char *path)
{
    return qs->spapr ? spapr_vio_find_by_path(spapr_vio_bus(qs->spapr), path)
                     : NULL;
}

/* The interrupt controller is the machine's. */
static bool is_xics_of(QTestServer *qs, const char *path)
{
    return qs->spapr && is_xics(path);
}

static void cmd_irq_intercept_out(QTestServer *qs, char **argv, int argc,
                                  GString *reply)
{
    SpaprVioDevice *dev = find_device(qs, argv[1]);

    if (argc > 2) {
        g_string_assign(reply, "FAIL Interception of named out-GPIOs is "
                        "not supported: devices have one interrupt line");
        return;
    }
    if (!dev) {
        g_string_assign(reply, is_xics_of(qs, argv[1]) ? "FAIL No intercepts "
                        "installed" : "FAIL Unknown device");
        return;
    }
    if (intercept_taken(qs, dev, false, reply)) {
        return;
    }
    /* I/O threads pulse the line: swap its three fields while they are
     * parked. */
    pause_all();
    qs->intercept_dev = dev;
    dev->irq_out = (IrqLine){ intercept_out_handler, qs, dev->irq };
    resume_all();
    g_string_assign(reply, "OK");
}

static void cmd_irq_intercept_in(QTestServer *qs, char **argv, int argc,
                                 GString *reply)
{
    (void)argc;
    if (!is_xics_of(qs, argv[1])) {
        g_string_assign(reply, find_device(qs, argv[1]) ?
                        "FAIL No intercepts installed" : "FAIL Unknown device");
        return;
    }
    if (intercept_taken(qs, NULL, true, reply)) {
        return;
    }
    qs->intercept_xics = true;
    pause_all();
    spapr_irq_intercept(qs->spapr, intercept_in_handler, qs);
    resume_all();
    g_string_assign(reply, "OK");
}

static void cmd_set_irq_in(QTestServer *qs, char **argv, int argc,
                           GString *reply)
{
    uint64_t num;
    int64_t level;
    IrqLine *line;

    (void)argc;
    if (!is_xics_of(qs, argv[1])) {
        g_string_assign(reply, "FAIL Unknown device");
        return;
    }
    if (strcmp(argv[2], "unnamed-gpio-in")) {
        g_string_printf(reply, "FAIL Unknown input '%s'", argv[2]);
        return;
    }
    if (!parse_args(argv + 3, 1, &num, reply)) {
        return;
    }
    if (!qemu_parse_int64("level", argv[4], &level, NULL)) {
        g_string_printf(reply, "FAIL bad level '%s'", argv[4]);
        return;
    }
    line = num < qs->irq_lines ?
           spapr_irq_input(qs->spapr, qs->irq_first + num) : NULL;
    if (!line) {
        g_string_printf(reply, "FAIL no interrupt source %s: qtest numbers "
                        "sources 0x%x to 0x%x as 0 to %d", argv[3],
                        qs->irq_first, qs->irq_first + qs->irq_lines - 1,
                        qs->irq_lines - 1);
        return;
    }
    irq_set_level(line, level != 0);
    g_string_assign(reply, "OK");
}

static void cmd_hcall(QTestServer *qs, char **argv, int argc, GString *reply)
{
    uint64_t opcode, args[HCALL_NARGS] = { 0 };
    unsigned nout;
    int64_t ret;

    if (!parse_args(argv + 1, 1, &opcode, reply)) {
        return;
    }
    if (!qs->spapr) {
        g_string_assign(reply, "FAIL no machine to call: -M none has no "
                        "hypervisor");
        return;
    }
    for (int i = 2; i < argc; i++) {
        if (!parse_reg(argv[i], &args[i - 2])) {
            g_string_printf(reply, "FAIL bad number '%s'", argv[i]);
            return;
        }
    }
    ret = spapr_hypercall(qs->spapr, opcode, args, &nout);
    g_string_printf(reply, "OK %" PRId64, ret);
    for (unsigned i = 0; i < nout; i++) {
        g_string_append_printf(reply, " 0x%" PRIx64, args[i]);
    }
}

/* The count as of this reply: the held changes go out first. */
static void cmd_irq_coalesced(QTestServer *qs, char **argv, int argc,
                              GString *reply)
{
    (void)argv, (void)argc;
    qemu_mutex_lock(&qs->out_lock);
    release_held_irqs_locked(qs);
    g_string_printf(reply, "OK %" PRIu64, qs->irq_coalesced);
    qemu_mutex_unlock(&qs->out_lock);
}

static const QTestCmd qtest_cmds[] = {
    { "readb", 1, 1, cmd_readx },
    { "readw", 1, 1, cmd_readx },
    { "readl", 1, 1, cmd_readx },
    { "readq", 1, 1, cmd_readx },
    { "writeb", 2, 2, cmd_writex },
    { "writew", 2, 2, cmd_writex },
    { "writel", 2, 2, cmd_writex },
    { "writeq", 2, 2, cmd_writex },
    { "read", 2, 2, cmd_read },
    { "write", 3, 3, cmd_write },
    { "b64read", 2, 2, cmd_b64read },
    { "b64write", 3, 3, cmd_b64write },
    { "memset", 3, 3, cmd_memset },
    { "endianness", 0, 0, cmd_endianness },
    { "clock_step", 0, 1, cmd_clock_step },
    { "clock_set", 1, 1, cmd_clock_set },
    { "irq_intercept_out", 1, 2, cmd_irq_intercept_out },
    { "irq_intercept_in", 1, 1, cmd_irq_intercept_in },
    { "set_irq_in", 4, 4, cmd_set_irq_in },
    { "irq_coalesced", 0, 0, cmd_irq_coalesced },
    { "hcall", 1, 1 + HCALL_NARGS, cmd_hcall },
};

static void process_line(QTestServer *qs, const char *line, GString *reply)
{
    g_auto(GStrv) argv = g_strsplit(line, " ", -1);
    int argc = g_strv_length(argv);

    for (int i = 0; i < argc; i++) {
        if (!*argv[i]) {
            g_string_assign(reply, "FAIL empty word: separate words with "
                            "exactly one space");
            return;
        }
    }
    for (size_t i = 0; i < G_N_ELEMENTS(qtest_cmds); i++) {
        const QTestCmd *cmd = &qtest_cmds[i];

        if (strcmp(cmd->name, argv[0])) {
            continue;
        }
        if (argc - 1 < cmd->min_args || argc - 1 > cmd->max_args) {
            g_string_printf(reply, "FAIL %s takes %d to %d arguments, not %d",
                            cmd->name, cmd->min_args, cmd->max_args, argc - 1);
            return;
        }
        cmd->fn(qs, argv, argc, reply);
        return;
    }
    g_string_printf(reply, "FAIL Unknown command '%s'", argv[0]);
}

static void handle_line(QTestServer *qs, char *line, size_t len)
{
    g_autoptr(GString) reply = g_string_new(NULL);

    if (len && line[len - 1] == '\r') {
        line[--len] = '\0';
    }
    if (len == 0) {
        return;
    }
    if (memchr(line, '\0', len)) {
        g_string_assign(reply, "FAIL line contains a NUL byte");
    } else {
        qtest_log(qs, 'R', line);
        process_line(qs, line, reply);
    }
    qtest_send(qs, reply->str);
}

static gboolean qtest_readable(gint fd, GIOCondition cond, gpointer opaque);

/* A client that does not read its replies gets no more requests served,
 * or read, until it does: what waits for it stays bounded. */
static void hold_input(QTestServer *qs)
{
    qs->input_held = true;
    if (qs->watch) {
        g_source_remove(qs->watch);
        qs->watch = 0;
    }
}

static void watch_input(QTestServer *qs)
{
    qs->watch = g_unix_fd_add(qs->in_fd, G_IO_IN | G_IO_HUP | G_IO_ERR,
                              qtest_readable, qs);
}

/* Handles every complete line while the client reads its replies, then
 * drops them from the buffer at once; the search resumes where the last
 * one stopped, so neither a flood of short lines nor one long line costs
 * more than linear time. */
static void consume_input(QTestServer *qs)
{
    size_t start = 0;
    bool full;
    char *nl;

    while (!(full = output_full(qs)) &&
           (nl = memchr(qs->inbuf->str + qs->scanned, '\n',
                        qs->inbuf->len - qs->scanned))) {
        char *line = qs->inbuf->str + start;
        size_t len = nl - line;

        *nl = '\0';
        if (qs->discarding) {
            qs->discarding = false;
        } else {
            handle_line(qs, line, len);
        }
        start = qs->scanned = nl - qs->inbuf->str + 1;
    }
    g_string_erase(qs->inbuf, 0, start);
    if (full) {
        qs->scanned = 0;
        hold_input(qs);
        return;
    }
    qs->scanned = qs->inbuf->len;
    if (qs->inbuf->len > QTEST_MAX_LINE) {
        if (!qs->discarding) {
            qtest_send(qs, "FAIL line too long");
        }
        qs->discarding = true;
        g_string_truncate(qs->inbuf, 0);
        qs->scanned = 0;
    }
}

/* A client that hung up after its requests (stdin at end of file) still
 * gets every reply it can take before the run ends. */
static void tell_closed_once_sent(QTestServer *qs)
{
    if (qs->hung_up && !out_pending(qs) && !qs->closed_told) {
        qs->closed_told = true;
        qs->closed(qs->closed_opaque);
    }
}

static gboolean qtest_readable(gint fd, GIOCondition cond, gpointer opaque)
{
    QTestServer *qs = opaque;
    char buf[QTEST_READ_CHUNK];
    ssize_t n;

    (void)cond;
    n = read(fd, buf, sizeof(buf));
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
        return G_SOURCE_CONTINUE;
    }
    if (n <= 0) {
        qtest_log(qs, 'I', "CLOSED");
        qs->watch = 0;
        qs->hung_up = true;
        tell_closed_once_sent(qs);
        return G_SOURCE_REMOVE;
    }
    g_string_append_len(qs->inbuf, buf, n);
    consume_input(qs);
    return qs->input_held ? G_SOURCE_REMOVE : G_SOURCE_CONTINUE;
}

/* Output drained below the bound: the requests that waited run, then
 * the socket is read again. */
static void flush_and_serve(QTestServer *qs)
{
    flush_output(qs);
    if (qs->input_held && !output_full(qs)) {
        qs->input_held = false;
        consume_input(qs);
        if (!qs->input_held && !qs->hung_up) {
            watch_input(qs);
        }
    }
    tell_closed_once_sent(qs);
}

static gboolean qtest_writable(gint fd, GIOCondition cond, gpointer opaque)
{
    (void)fd, (void)cond;
    flush_and_serve(opaque);
    return G_SOURCE_CONTINUE;
}

static gboolean qtest_flush_kicked(gint fd, GIOCondition cond,
                                   gpointer opaque)
{
    eventfd_t ignored;

    (void)cond;
    eventfd_read(fd, &ignored);
    flush_and_serve(opaque);
    return G_SOURCE_CONTINUE;
}

QTestServer *qtest_server_start(const char *spec, FILE *log,
                                SpaprMachineState *spapr,
                                QTestClosedFn closed, void *opaque,
                                GError **errp)
{
    QTestServer *qs = g_new0(QTestServer, 1);
    SpaprLegacyIrqs legacy;

    qs->spapr = spapr;
    qs->irq_first = spapr && spapr_legacy_irqs(spapr, &legacy)
                    ? SPAPR_IRQ_BASE : SPAPR_IRQ_VIO;
    qs->irq_lines = SPAPR_IRQ_BASE + SPAPR_IRQ_NR - qs->irq_first;
    qs->closed = closed;
    qs->closed_opaque = opaque;
    qs->start_us = g_get_monotonic_time();
    qs->max_transfer = QTEST_MAX_TRANSFER;
    qs->inbuf = g_string_new(NULL);
    qs->outbuf = g_string_new(NULL);
    qemu_mutex_init(&qs->out_lock);
    qs->in_fd = qs->out_fd = qs->flush_fd = -1;
    qs->log = log;
    if (!strcmp(spec, "null")) {
        /* No channel: input comes from qtest_server_feed(). */
    } else if (!strcmp(spec, "stdio")) {
        qs->in_fd = STDIN_FILENO;
        qs->out_fd = STDOUT_FILENO;
    } else if (g_str_has_prefix(spec, "unix:")) {
        qs->in_fd = qs->out_fd = unix_socket_connect(spec + 5, errp);
        qs->owns_fd = true;
        if (qs->in_fd < 0) {
            goto fail;
        }
    } else {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "'%s' is not a qtest channel: use unix:PATH, stdio or "
                    "null", spec);
        goto fail;
    }
    if (qs->log) {
        fprintf(qs->log, "[I %f] OPENED\n", g_get_real_time() / 1e6);
        fflush(qs->log);
    }
    if (qs->in_fd >= 0) {
        watch_input(qs);
        qs->flush_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        g_assert(qs->flush_fd >= 0);
        qs->flush_watch = g_unix_fd_add(qs->flush_fd, G_IO_IN,
                                        qtest_flush_kicked, qs);
    }
    return qs;
fail:
    qtest_server_free(qs);
    return NULL;
}

void qtest_server_feed(QTestServer *qs, const char *data, size_t len)
{
    g_string_append_len(qs->inbuf, data, len);
    consume_input(qs);
}

void qtest_server_set_max_transfer(QTestServer *qs, uint32_t bytes)
{
    qs->max_transfer = MIN(bytes, QTEST_MAX_TRANSFER);
}

/*
 * The run ends (quit, SIGTERM) with replies and interrupt levels still
 * owed to a client that did not read them yet; it gets them if it reads
 * now, as it did when replies were written blocking.
 */
static void flush_before_exit(QTestServer *qs)
{
    gint64 deadline = g_get_monotonic_time() + QTEST_EXIT_FLUSH_MS * 1000;
    struct pollfd p = { .fd = qs->out_fd, .events = POLLOUT };
    int n;

    qemu_mutex_lock(&qs->out_lock);
    release_held_irqs_locked(qs);
    qemu_mutex_unlock(&qs->out_lock);
    flush_output(qs);
    while (out_pending(qs) && g_get_monotonic_time() < deadline) {
        do {
            n = poll(&p, 1, QTEST_EXIT_STALL_MS);
        } while (n < 0 && errno == EINTR);
        if (n <= 0) {
            break;
        }
        flush_output(qs);
    }
}

void qtest_server_free(QTestServer *qs)
{
    if (!qs) {
        return;
    }
    flush_before_exit(qs);
    if (qs->watch) {
        g_source_remove(qs->watch);
    }
    if (qs->out_watch) {
        g_source_remove(qs->out_watch);
    }
    if (qs->flush_watch) {
        g_source_remove(qs->flush_watch);
        close(qs->flush_fd);
    }
    if (qs->intercept_dev) {
        qs->intercept_dev->irq_out = *spapr_irq_input(qs->spapr,
                                                      qs->intercept_dev->irq);
    }
    if (qs->intercept_xics) {
        spapr_irq_intercept(qs->spapr, NULL, NULL);
    }
    if (qs->owns_fd && qs->in_fd >= 0) {
        close(qs->in_fd);
    }
    if (qs->log && qs->log != stderr) {
        fclose(qs->log);
    }
    qemu_mutex_destroy(&qs->out_lock);
    g_string_free(qs->outbuf, TRUE);
    g_string_free(qs->inbuf, TRUE);
    g_free(qs);
}
