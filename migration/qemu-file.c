/*
 * The byte channel.  One buffer serves both directions: output collects
 * bytes until it is full or closed; input refills it from the descriptor
 * and keeps room for the small look-ahead subsection parsing needs.
 *
 * The descriptor is made non-blocking and waited on with poll() beside an
 * eventfd, so that a peer that stops reading or sending holds up only
 * the thread doing the I/O, and qemu_file_cancel() from any other thread
 * gets it out at once, whatever the descriptor is (socket, pipe, file).
 */
#include "migration/qemu-file.h"
#include "qemu/bswap.h"
#include "qemu/option.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define QEMU_FILE_BUF_SIZE  65536
#define QEMU_FILE_MAX_PEEK  512

struct QEMUFile {
    int fd;
    bool output;
    uint8_t buf[QEMU_FILE_BUF_SIZE];
    size_t pos, len;            /* input: unread bytes are buf[pos..len) */
    uint64_t transferred;
    uint64_t io_bytes;          /* moved through fd; atomic */
    GBytes *mem;                /* input from memory instead of fd */
    size_t mem_pos;
    int wake_fd;                /* eventfd written by qemu_file_cancel() */
    const char *cancelled;      /* why, once cancelled; atomic */
    GError *error;
};

static QEMUFile *file_new(int fd, bool output)
{
    QEMUFile *f = g_new0(QEMUFile, 1);
    int flags = fcntl(fd, F_GETFL);

    f->fd = fd;
    f->output = output;
    if (flags >= 0) {
        fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    }
    f->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    g_assert(f->wake_fd >= 0);
    return f;
}

QEMUFile *qemu_file_new_output(int fd)
{
    return file_new(fd, true);
}

QEMUFile *qemu_file_new_input(int fd)
{
    return file_new(fd, false);
}

QEMUFile *qemu_file_new_from_bytes(GBytes *bytes)
{
    QEMUFile *f = file_new(-1, false);

    f->mem = g_bytes_ref(bytes);
    return f;
}

static void file_fail(QEMUFile *f, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static void file_fail(QEMUFile *f, const char *fmt, ...)
{
    va_list ap;

    if (f->error) {
        return;
    }
    va_start(ap, fmt);
    f->error = g_error_new_valist(ILLAN_ERROR, 0, fmt, ap);
    va_end(ap);
}

void qemu_file_cancel(QEMUFile *f, const char *why)
{
    const char *none = NULL;

    if (__atomic_compare_exchange_n(&f->cancelled, &none, why, false,
                                    __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
        eventfd_write(f->wake_fd, 1);
    }
}

bool qemu_file_cancelled(QEMUFile *f)
{
    return __atomic_load_n(&f->cancelled, __ATOMIC_ACQUIRE) != NULL;
}

static bool check_cancelled(QEMUFile *f)
{
    const char *why = __atomic_load_n(&f->cancelled, __ATOMIC_ACQUIRE);

    if (why) {
        file_fail(f, "%s at byte %" G_GUINT64_FORMAT, why,
                  __atomic_load_n(&f->io_bytes, __ATOMIC_RELAXED));
    }
    return why != NULL;
}

/* Sleeps until the descriptor is ready for @events or the file is
 * cancelled; false (with the error set) for the latter. */
static bool wait_ready(QEMUFile *f, short events)
{
    for (;;) {
        struct pollfd p[2] = { { f->fd, events, 0 },
                               { f->wake_fd, POLLIN, 0 } };

        if (check_cancelled(f)) {
            return false;
        }
        if (poll(p, 2, -1) < 0 && errno != EINTR) {
            file_fail(f, "poll failed: %s", g_strerror(errno));
            return false;
        }
        if (p[0].revents) {
            return !check_cancelled(f);
        }
    }
}

static void count_io(QEMUFile *f, size_t n)
{
    __atomic_store_n(&f->io_bytes,
                     __atomic_load_n(&f->io_bytes, __ATOMIC_RELAXED) + n,
                     __ATOMIC_RELAXED);
}

static void flush(QEMUFile *f)
{
    size_t done = 0;

    while (!f->error && done < f->len && !check_cancelled(f)) {
        ssize_t n = write(f->fd, f->buf + done, f->len - done);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            wait_ready(f, POLLOUT);
            continue;
        }
        if (n <= 0) {
            file_fail(f, "write failed after %" G_GUINT64_FORMAT " bytes: %s",
                      f->transferred, n < 0 ? g_strerror(errno) : "no progress");
        }
        done += n > 0 ? n : 0;
        count_io(f, n > 0 ? n : 0);
    }
    f->len = 0;
}

bool qemu_file_check(QEMUFile *f, GError **errp)
{
    if (f->error) {
        g_propagate_error(errp, g_error_copy(f->error));
        return false;
    }
    return true;
}

bool qemu_file_finish(QEMUFile *f, GError **errp)
{
    if (f->output) {
        flush(f);
    }
    return qemu_file_check(f, errp);
}

bool qemu_file_sleep(QEMUFile *f, int64_t us)
{
    int64_t until = g_get_monotonic_time() + us, left;

    if (f->output) {
        flush(f);
    }
    while (!f->error && !check_cancelled(f) &&
           (left = until - g_get_monotonic_time()) > 0) {
        struct pollfd p = { f->wake_fd, POLLIN, 0 };

        poll(&p, 1, (int)((left + 999) / 1000));
    }
    return !f->error;
}

void qemu_file_free(QEMUFile *f)
{
    if (!f) {
        return;
    }
    close(f->wake_fd);
    g_clear_pointer(&f->mem, g_bytes_unref);
    g_clear_error(&f->error);
    g_free(f);
}

bool qemu_file_close(QEMUFile *f, GError **errp)
{
    bool ok = qemu_file_finish(f, errp);

    qemu_file_free(f);
    return ok;
}

uint64_t qemu_file_transferred(const QEMUFile *f)
{
    return f->transferred;
}

uint64_t qemu_file_io_bytes(const QEMUFile *f)
{
    return __atomic_load_n(&f->io_bytes, __ATOMIC_RELAXED);
}

void qemu_put_buffer(QEMUFile *f, const void *buf, size_t len)
{
    const uint8_t *p = buf;

    g_assert(f->output);
    f->transferred += len;
    while (len > 0 && !f->error) {
        size_t n = MIN(len, sizeof(f->buf) - f->len);

        memcpy(f->buf + f->len, p, n);
        f->len += n;
        p += n;
        len -= n;
        if (f->len == sizeof(f->buf)) {
            flush(f);
        }
    }
}

static void put_be(QEMUFile *f, unsigned size, uint64_t v)
{
    uint8_t be[8];

    stn_be_p(be, size, v);
    qemu_put_buffer(f, be, size);
}

void qemu_put_byte(QEMUFile *f, uint8_t v)
{
    qemu_put_buffer(f, &v, 1);
}

void qemu_put_be16(QEMUFile *f, uint16_t v)
{
    put_be(f, 2, v);
}

void qemu_put_be32(QEMUFile *f, uint32_t v)
{
    put_be(f, 4, v);
}

void qemu_put_be64(QEMUFile *f, uint64_t v)
{
    put_be(f, 8, v);
}

void qemu_put_counted_string(QEMUFile *f, const char *s)
{
    size_t len = strlen(s);

    g_assert(len < 256);
    qemu_put_byte(f, len);
    qemu_put_buffer(f, s, len);
}

/* Makes at least @want bytes readable if the stream has them; returns how
 * many are. */
static size_t fill(QEMUFile *f, size_t want)
{
    g_assert(!f->output);
    if (f->len - f->pos >= want || f->error) {
        return f->len - f->pos;
    }
    memmove(f->buf, f->buf + f->pos, f->len - f->pos);
    f->len -= f->pos;
    f->pos = 0;
    if (f->mem) {
        gsize size;
        const uint8_t *data = g_bytes_get_data(f->mem, &size);
        size_t n = MIN(size - f->mem_pos, sizeof(f->buf) - f->len);

        memcpy(f->buf + f->len, data + f->mem_pos, n);
        f->mem_pos += n;
        f->len += n;
        return f->len;
    }
    while (f->len < want && !check_cancelled(f)) {
        ssize_t n = read(f->fd, f->buf + f->len, sizeof(f->buf) - f->len);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!wait_ready(f, POLLIN)) {
                break;
            }
            continue;
        }
        if (n < 0) {
            file_fail(f, "read failed after %" G_GUINT64_FORMAT " bytes: %s",
                      f->transferred, g_strerror(errno));
        }
        if (n <= 0) {
            break;
        }
        f->len += n;
        count_io(f, n);
    }
    return f->len - f->pos;
}

void qemu_get_buffer(QEMUFile *f, void *buf, size_t len)
{
    uint8_t *p = buf;

    while (len > 0) {
        size_t n = MIN(fill(f, 1), len);

        if (n == 0) {
            file_fail(f, "the stream ends early (truncated) at byte %"
                      G_GUINT64_FORMAT, f->transferred);
            memset(p, 0, len);
            return;
        }
        memcpy(p, f->buf + f->pos, n);
        f->pos += n;
        f->transferred += n;
        p += n;
        len -= n;
    }
}

static uint64_t get_be(QEMUFile *f, unsigned size)
{
    uint8_t be[8];

    qemu_get_buffer(f, be, size);
    return ldn_be_p(be, size);
}

uint8_t qemu_get_byte(QEMUFile *f)
{
    return get_be(f, 1);
}

uint16_t qemu_get_be16(QEMUFile *f)
{
    return get_be(f, 2);
}

uint32_t qemu_get_be32(QEMUFile *f)
{
    return get_be(f, 4);
}

uint64_t qemu_get_be64(QEMUFile *f)
{
    return get_be(f, 8);
}

void qemu_get_counted_string(QEMUFile *f, char buf[256])
{
    uint8_t len = qemu_get_byte(f);

    qemu_get_buffer(f, buf, len);
    buf[len] = '\0';
}

void qemu_file_skip(QEMUFile *f, uint64_t len)
{
    uint8_t scratch[4096];

    while (len > 0 && !f->error) {
        size_t n = MIN(len, sizeof(scratch));

        qemu_get_buffer(f, scratch, n);
        len -= n;
    }
}

GBytes *qemu_file_read_to_end(QEMUFile *f, size_t max, uint64_t *held)
{
    g_autoptr(GByteArray) all = g_byte_array_new();
    size_t n;

    while ((n = fill(f, 1)) > 0) {
        if (all->len + n > max) {
            file_fail(f, "more than %zu bytes after byte %" G_GUINT64_FORMAT,
                      max, f->transferred - all->len);
            return NULL;
        }
        g_byte_array_append(all, f->buf + f->pos, n);
        f->pos += n;
        f->transferred += n;
        __atomic_store_n(held, all->len, __ATOMIC_RELAXED);
    }
    return f->error ? NULL : g_byte_array_free_to_bytes(g_steal_pointer(&all));
}

size_t qemu_peek_buffer(QEMUFile *f, void *buf, size_t len, size_t offset)
{
    size_t avail;

    g_assert(offset + len <= QEMU_FILE_MAX_PEEK);
    avail = fill(f, offset + len);
    if (avail <= offset) {
        return 0;
    }
    len = MIN(len, avail - offset);
    memcpy(buf, f->buf + f->pos + offset, len);
    return len;
}

int qemu_peek_byte(QEMUFile *f, size_t offset)
{
    uint8_t b;

    return qemu_peek_buffer(f, &b, 1, offset) ? b : -1;
}
