/*
 * Unit tests for the net core (net/net.c) and the dgram and stream
 * backends, over real sockets on the loopback interface.
 *
 * A test NIC records every frame it is handed and answers with results the
 * test chooses; a fake backend records what the NIC sends.  Socket tests
 * iterate the default GLib main context until frames arrive, always up to
 * a deadline.
 */
#include "net/net.h"
#include "qemu/hmp-registry.h"
#include "qemu/option.h"

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#define WAIT_US (5 * G_USEC_PER_SEC)
#define ETH_MIN 14

/* ---- the test NIC ---- */

typedef struct TestNic {
    NetClientState *nc;
    unsigned calls;             /* receive_batch() calls */
    unsigned max_batch;
    GPtrArray *frames;          /* GBytes, in arrival order */
    const NetRxResult *answers; /* by frame number, cycled; NULL: deliver */
    unsigned n_answers;
    unsigned room;              /* frames it takes when it may hold */
    uint64_t stamp;             /* the last call's "entered", or 0 */
    unsigned more_calls;        /* receive_batch() calls with NET_RX_MORE */
    unsigned run_ends;          /* rx_run_end() calls */
} TestNic;

static unsigned test_nic_receive_batch(void *opaque, const NetFrame *frames,
                                       unsigned n, unsigned flags,
                                       NetRxStamp *stamp,
                                       NetRxResult *results)
{
    TestNic *t = opaque;

    g_assert_cmpuint(n, >=, 1);
    g_assert_cmpuint(n, <=, NET_BATCH_MAX);
    t->calls++;
    t->stamp = stamp ? stamp->entered : 0;
    t->max_batch = MAX(t->max_batch, n);
    if (flags & NET_RX_MORE) {
        t->more_calls++;
    }
    if ((flags & NET_RX_MAY_HOLD) && t->room < n) {
        n = t->room;
    }
    t->room -= MIN(t->room, n);
    for (unsigned i = 0; i < n; i++) {
        guint number = t->frames->len;

        g_ptr_array_add(t->frames, g_bytes_new(frames[i].data, frames[i].len));
        results[i] = t->answers ? t->answers[number % t->n_answers]
                                : NET_RX_DELIVERED;
    }
    return n;
}

static void test_nic_rx_run_end(void *opaque)
{
    ((TestNic *)opaque)->run_ends++;
}

static const NetNicOps test_nic_ops = {
    .receive_batch = test_nic_receive_batch,
    .rx_run_end = test_nic_rx_run_end,
};

static TestNic *test_nic_new(const char *name, const char *netdev)
{
    TestNic *t = g_new0(TestNic, 1);
    GError *err = NULL;

    t->frames = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
    t->nc = net_nic_new(name, netdev, &test_nic_ops, t, &err);
    g_assert_no_error(err);
    g_assert_nonnull(t->nc);
    return t;
}

static void test_nic_free(TestNic *t)
{
    net_nic_free(t->nc);
    g_ptr_array_free(t->frames, TRUE);
    g_free(t);
}

/* ---- the fake backend ---- */

typedef struct FakeBackend {
    NetClientState *nc;
    bool send_ok;
    GPtrArray *sent;            /* GBytes */
    bool *cleaned;              /* set at cleanup, for the test to see */
} FakeBackend;

static FakeBackend *last_fake;

static bool fake_send(void *opaque, const uint8_t *data, size_t len)
{
    FakeBackend *f = opaque;

    if (f->send_ok) {
        g_ptr_array_add(f->sent, g_bytes_new(data, len));
    }
    return f->send_ok;
}

static void fake_cleanup(void *opaque)
{
    FakeBackend *f = opaque;

    if (f->cleaned) {
        *f->cleaned = true;
    }
    g_ptr_array_free(f->sent, TRUE);
    g_free(f);
}

static const NetBackendOps fake_ops = {
    .send = fake_send,
    .cleanup = fake_cleanup,
};

static bool fake_create(const char *id, const QemuOpts *opts, GError **errp)
{
    static const char *const keys[] = { "type", "id", NULL };
    FakeBackend *f;

    if (!qemu_opts_check_keys(opts, keys, errp)) {
        return false;
    }
    f = g_new0(FakeBackend, 1);
    f->send_ok = true;
    f->sent = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
    f->nc = net_backend_new(id, &fake_ops, f);
    last_fake = f;
    return true;
}

static const NetdevType fake_type = {
    .name = "test-fake",
    .desc = "the net unit test's in-process backend",
    .create = fake_create,
};

/* ---- helpers ---- */

static void G_GNUC_PRINTF(1, 2) netdev_add_ok(const char *fmt, ...)
{
    g_autofree char *str = NULL;
    g_autoptr(QemuOpts) opts = NULL;
    GError *err = NULL;
    va_list ap;

    va_start(ap, fmt);
    str = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    opts = qemu_opts_parse(str, "type", &err);
    g_assert_no_error(err);
    g_assert_true(net_netdev_add(opts, &err));
    g_assert_no_error(err);
}

/* Expects -netdev @str to fail with a message containing @msg, and to
 * leave no netdev named @id behind. */
static void netdev_add_fails(const char *str, const char *id, const char *msg)
{
    g_autoptr(QemuOpts) opts = NULL;
    GError *err = NULL;

    opts = qemu_opts_parse(str, "type", &err);
    g_assert_no_error(err);
    g_assert_false(net_netdev_add(opts, &err));
    g_assert_error(err, ILLAN_ERROR, 0);
    if (!strstr(err->message, msg)) {
        g_test_message("-netdev %s: got '%s', expected '%s'", str,
                       err->message, msg);
        g_test_fail();
    }
    g_error_free(err);
    if (id) {
        g_assert_false(net_netdev_exists(id));
    }
}

typedef struct FindClient {
    const char *name;
    bool is_nic;
    NetClientState *found;
} FindClient;

static void find_client_cb(NetClientState *nc, bool is_nic, void *opaque)
{
    FindClient *f = opaque;

    if (is_nic == f->is_nic && !strcmp(net_client_name(nc), f->name)) {
        f->found = nc;
    }
}

static NetClientState *find_netdev(const char *id)
{
    FindClient f = { .name = id, .is_nic = false };

    net_foreach_client(find_client_cb, &f);
    g_assert_nonnull(f.found);
    return f.found;
}

static NetClientStats stats_of(const NetClientState *nc)
{
    NetClientStats st;

    net_client_get_stats(nc, &st);
    return st;
}

/* Every frame handed in is counted under exactly one result. */
static void assert_balanced(const NetClientState *nc)
{
    NetClientStats st = stats_of(nc);
    uint64_t sum = 0;

    for (unsigned r = 0; r < NET_RX__MAX; r++) {
        sum += st.rx_results[r];
    }
    g_assert_cmpuint(st.rx_frames, ==, sum);
}

/* A frame of @len bytes whose contents depend on @seed. */
static uint8_t *make_frame(unsigned seed, size_t len)
{
    uint8_t *f = g_malloc(len ? len : 1);

    for (size_t i = 0; i < len; i++) {
        f[i] = (uint8_t)(seed * 31 + i * 7 + (i >> 8));
    }
    return f;
}

static void assert_frame(const TestNic *t, guint i, const uint8_t *data,
                         size_t len)
{
    GBytes *b;

    g_assert_cmpuint(i, <, t->frames->len);
    b = g_ptr_array_index(t->frames, i);
    g_assert_cmpmem(g_bytes_get_data(b, NULL), g_bytes_get_size(b), data,
                    len);
}

static void assert_frame_seed(const TestNic *t, guint i, unsigned seed,
                              size_t len)
{
    g_autofree uint8_t *want = make_frame(seed, len);

    assert_frame(t, i, want, len);
}

static bool nic_has_frames(const TestNic *t, guint n)
{
    gint64 deadline = g_get_monotonic_time() + WAIT_US;

    while (t->frames->len < n) {
        if (g_get_monotonic_time() > deadline) {
            return false;
        }
        if (!g_main_context_iteration(NULL, FALSE)) {
            g_usleep(1000);
        }
    }
    return true;
}

/* Runs the main context until it has had nothing to do for a while. */
static void pump(void)
{
    gint64 deadline = g_get_monotonic_time() + WAIT_US;
    unsigned idle = 0;

    while (idle < 3 && g_get_monotonic_time() < deadline) {
        if (g_main_context_iteration(NULL, FALSE)) {
            idle = 0;
        } else {
            idle++;
            g_usleep(1000);
        }
    }
}

static void set_recv_timeout(int fd)
{
    struct timeval tv = { .tv_sec = WAIT_US / G_USEC_PER_SEC };

    g_assert_cmpint(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv,
                               sizeof(tv)), ==, 0);
}

static socklen_t loopback_addr(int family, uint16_t port,
                               struct sockaddr_storage *ss)
{
    memset(ss, 0, sizeof(*ss));
    if (family == AF_INET6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;

        a->sin6_family = AF_INET6;
        a->sin6_addr = in6addr_loopback;
        a->sin6_port = htons(port);
        return sizeof(*a);
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)ss;

        a->sin_family = AF_INET;
        a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a->sin_port = htons(port);
        return sizeof(*a);
    }
}

static const char *loopback_host(int family)
{
    return family == AF_INET6 ? "::1" : "127.0.0.1";
}

/* A socket bound to the loopback address on a port of the kernel's
 * choosing, or -1 if the family is not available. */
static int loopback_socket(int family, int type, uint16_t *port)
{
    struct sockaddr_storage ss;
    socklen_t len = loopback_addr(family, 0, &ss);
    int fd = socket(family, type | SOCK_CLOEXEC, 0);

    if (fd < 0) {
        return -1;
    }
    if (bind(fd, (struct sockaddr *)&ss, len) < 0 ||
        getsockname(fd, (struct sockaddr *)&ss, &len) < 0) {
        close(fd);
        return -1;
    }
    *port = ntohs(family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                     : ((struct sockaddr_in *)&ss)->sin_port);
    set_recv_timeout(fd);
    return fd;
}

/* A port that was free a moment ago. */
static uint16_t free_port(int family, int type)
{
    uint16_t port = 0;
    int fd = loopback_socket(family, type, &port);

    g_assert_cmpint(fd, >=, 0);
    close(fd);
    return port;
}

static char *tmp_path(const char *tag)
{
    return g_strdup_printf("%s/illan-test-net-%d-%s.sock", g_get_tmp_dir(),
                           (int)getpid(), tag);
}

static socklen_t unix_addr(const char *path, struct sockaddr_un *sun)
{
    memset(sun, 0, sizeof(*sun));
    sun->sun_family = AF_UNIX;
    g_assert_cmpuint(strlen(path), <, sizeof(sun->sun_path));
    strcpy(sun->sun_path, path);
    return sizeof(*sun);
}

static int unix_socket_bound(int type, const char *path)
{
    struct sockaddr_un sun;
    socklen_t len = unix_addr(path, &sun);
    int fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);

    g_assert_cmpint(fd, >=, 0);
    g_unlink(path);
    g_assert_cmpint(bind(fd, (struct sockaddr *)&sun, len), ==, 0);
    set_recv_timeout(fd);
    return fd;
}

/* Leaves a socket file at @path, as a crashed run would. */
static void leave_stale_socket(const char *path)
{
    close(unix_socket_bound(SOCK_DGRAM, path));
    g_assert_true(g_file_test(path, G_FILE_TEST_EXISTS));
}

static void send_all(int fd, const void *data, size_t len)
{
    g_assert_cmpint(send(fd, data, len, MSG_NOSIGNAL), ==, (ssize_t)len);
}

static void recv_exact(int fd, void *buf, size_t len)
{
    g_assert_cmpint(recv(fd, buf, len, MSG_WAITALL), ==, (ssize_t)len);
}

static void stream_encode(GByteArray *out, const uint8_t *frame, uint32_t len)
{
    uint8_t header[4] = { len >> 24, len >> 16, len >> 8, len };

    g_byte_array_append(out, header, sizeof(header));
    g_byte_array_append(out, frame, len);
}

static void stream_encode_seed(GByteArray *out, unsigned seed, uint32_t len)
{
    g_autofree uint8_t *frame = make_frame(seed, len);

    stream_encode(out, frame, len);
}

/* Reads one length-prefixed frame and checks it is @seed's. */
static void stream_expect_frame(int fd, unsigned seed, uint32_t len)
{
    g_autofree uint8_t *want = make_frame(seed, len);
    g_autofree uint8_t *got = g_malloc(len);
    uint8_t header[4];
    uint8_t expect_header[4] = { len >> 24, len >> 16, len >> 8, len };

    recv_exact(fd, header, sizeof(header));
    g_assert_cmpmem(header, sizeof(header), expect_header,
                    sizeof(expect_header));
    recv_exact(fd, got, len);
    g_assert_cmpmem(got, len, want, len);
}

/* Runs the main context until the netdev closes @fd's connection. */
static bool peer_closed(int fd)
{
    gint64 deadline = g_get_monotonic_time() + WAIT_US;
    uint8_t byte;

    while (g_get_monotonic_time() < deadline) {
        ssize_t n = recv(fd, &byte, 1, MSG_DONTWAIT);

        if (n == 0 || (n < 0 && errno == ECONNRESET)) {
            return true;
        }
        g_assert_true(n < 0 && errno == EAGAIN);
        if (!g_main_context_iteration(NULL, FALSE)) {
            g_usleep(1000);
        }
    }
    return false;
}

static int connect_loopback(int family, uint16_t port)
{
    struct sockaddr_storage ss;
    socklen_t len = loopback_addr(family, port, &ss);
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);

    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(connect(fd, (struct sockaddr *)&ss, len), ==, 0);
    set_recv_timeout(fd);
    return fd;
}

static int connect_unix(const char *path)
{
    struct sockaddr_un sun;
    socklen_t len = unix_addr(path, &sun);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(connect(fd, (struct sockaddr *)&sun, len), ==, 0);
    set_recv_timeout(fd);
    return fd;
}

/* Standard error, captured so that a backend's one-line reports can be
 * checked and do not clutter the test output. */
typedef struct StderrCapture {
    int saved;
    int fd;
    char *path;
} StderrCapture;

static void stderr_capture_begin(StderrCapture *c)
{
    GError *err = NULL;

    c->fd = g_file_open_tmp("illan-test-net-XXXXXX", &c->path, &err);
    g_assert_no_error(err);
    fflush(stderr);
    c->saved = dup(STDERR_FILENO);
    g_assert_cmpint(dup2(c->fd, STDERR_FILENO), ==, STDERR_FILENO);
}

static char *stderr_capture_end(StderrCapture *c)
{
    GError *err = NULL;
    char *text = NULL;

    fflush(stderr);
    g_assert_cmpint(dup2(c->saved, STDERR_FILENO), ==, STDERR_FILENO);
    close(c->saved);
    close(c->fd);
    g_file_get_contents(c->path, &text, NULL, &err);
    g_assert_no_error(err);
    g_unlink(c->path);
    g_free(c->path);
    return text;
}

/* ---- the net core, with the fake backend ---- */

static void test_result_names(void)
{
    static const char *const names[NET_RX__MAX] = {
        "delivered", "no-nic", "link-down", "not-registered", "filtered",
        "no-buffer", "dma-error", "too-short", "vm-stopped", "jumbo-tcp",
    };

    for (unsigned r = 0; r < NET_RX__MAX; r++) {
        g_assert_cmpstr(net_rx_result_name(r), ==, names[r]);
    }
}

static void test_help_lists_types(void)
{
    if (g_test_subprocess()) {
        net_print_netdev_types();
        return;
    }
    g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_passed();
    g_test_trap_assert_stdout("Available netdev backend types:\n*"
                              "dgram *UDP or unix datagram socket*"
                              "stream *TCP or unix stream socket*");
}

static void test_core_option_errors(void)
{
    netdev_add_fails("id=n0", "n0", "Parameter 'type' is missing");
    netdev_add_fails("nosuch,id=n0", "n0",
                     "Parameter 'type' does not accept value 'nosuch'");
    netdev_add_fails("test-fake", NULL, "Parameter 'id' is missing");
    netdev_add_fails("dgram", NULL, "Parameter 'id' is missing");
    netdev_add_fails("test-fake,id=n0,bogus=1", "n0",
                     "Invalid parameter 'bogus'");
    netdev_add_ok("test-fake,id=n0");
    netdev_add_fails("test-fake,id=n0", NULL, "Duplicate ID 'n0' for netdev");
    netdev_add_fails("dgram,id=n0", NULL, "Duplicate ID 'n0' for netdev");
    g_assert_true(net_netdev_exists("n0"));
    net_cleanup();
    g_assert_false(net_netdev_exists("n0"));
}

/* What fuzz-options relies on: the checks refuse as net_netdev_add()
 * would, and accept without opening or registering anything (no
 * interface named veth-nosuch exists, so an open would fail). */
static void netdev_check(const char *str, const char *msg)
{
    g_autoptr(QemuOpts) opts = qemu_opts_parse(str, "type", NULL);
    g_autoptr(GError) err = NULL;
    bool existed = net_netdev_exists("n0");

    g_assert_nonnull(opts);
    g_assert_true(net_netdev_check(opts, &err) == !msg);
    if (msg) {
        g_assert_nonnull(strstr(err->message, msg));
    }
    g_assert_true(net_netdev_exists("n0") == existed);
}

static void test_netdev_check(void)
{
    netdev_check("af-xdp,id=n0,ifname=veth-nosuch,queues=2,mode=skb", NULL);
    netdev_check("dgram,id=n0", NULL);
    netdev_check("af-xdp,id=n0", "Parameter 'ifname' is missing");
    netdev_check("af-xdp,id=n0,ifname=veth-nosuch,batch=0", "batch");
    netdev_check("nosuch,id=n0", "does not accept value 'nosuch'");
    netdev_add_ok("test-fake,id=n0");
    netdev_check("af-xdp,id=n0,ifname=veth-nosuch",
                 "Duplicate ID 'n0' for netdev");
    net_cleanup();
}

static void test_nic_pairing(void)
{
    TestNic *a, *b;
    GError *err = NULL;

    netdev_add_ok("test-fake,id=n0");
    g_assert_null(net_nic_new("nic0", "nosuch", &test_nic_ops, NULL, &err));
    g_assert_error(err, ILLAN_ERROR, 0);
    g_assert_cmpstr(err->message, ==, "netdev 'nosuch' not found");
    g_clear_error(&err);

    a = test_nic_new("nic0", "n0");
    g_assert_null(net_nic_new("nic1", "n0", &test_nic_ops, NULL, &err));
    g_assert_error(err, ILLAN_ERROR, 0);
    g_assert_cmpstr(err->message, ==,
                    "netdev 'n0' is already in use by NIC 'nic0'");
    g_clear_error(&err);

    /* Without a netdev: a NIC of its own, which drops what it sends. */
    b = test_nic_new("nic1", NULL);
    g_assert_cmpstr(net_client_name(b->nc), ==, "nic1");
    g_assert_false(net_nic_send(b->nc, (const uint8_t *)"0123456789abcdef",
                                16));
    g_assert_cmpuint(stats_of(b->nc).tx_dropped, ==, 1);
    test_nic_free(b);

    /* Freeing the NIC frees the netdev for another one. */
    test_nic_free(a);
    b = test_nic_new("nic2", "n0");
    test_nic_free(b);
    net_cleanup();
}

static void test_nic_backend_free_order(void)
{
    TestNic *nic;
    bool cleaned = false;
    uint8_t frame[60] = { 0 };

    netdev_add_ok("test-fake,id=n0");
    last_fake->cleaned = &cleaned;
    nic = test_nic_new("nic0", "n0");
    /* The netdevs go first at exit; the NIC is left unpaired. */
    net_cleanup();
    g_assert_true(cleaned);
    g_assert_false(net_netdev_exists("n0"));
    g_assert_false(net_nic_send(nic->nc, frame, sizeof(frame)));
    g_assert_cmpuint(stats_of(nic->nc).tx_dropped, ==, 1);
    test_nic_free(nic);
}

static void record_client(NetClientState *nc, bool is_nic, void *opaque)
{
    g_string_append_printf(opaque, "%s%s ", is_nic ? "nic:" : "netdev:",
                           net_client_name(nc));
}

static void test_foreach_nics_first(void)
{
    g_autoptr(GString) seen = g_string_new(NULL);
    TestNic *a, *b;

    netdev_add_ok("test-fake,id=n0");
    netdev_add_ok("test-fake,id=n1");
    a = test_nic_new("nic0", "n1");
    b = test_nic_new("nic1", NULL);
    net_foreach_client(record_client, seen);
    g_assert_cmpstr(seen->str, ==, "nic:nic0 nic:nic1 netdev:n0 netdev:n1 ");
    test_nic_free(a);
    test_nic_free(b);
    net_cleanup();
}

/* What a holding backend says of its batches' last frames. */
#define LAST_FRAME_STAMP 123456789u

/* One frame of each length in @lens, with seeds 0, 1, ... */
/* Returns how many the NIC took (all, unless @may_hold). */
static unsigned deliver_lengths_or_hold(NetClientState *backend,
                                        const uint32_t *lens, unsigned n,
                                        bool may_hold)
{
    uint8_t *bufs[NET_BATCH_MAX];
    NetFrame frames[NET_BATCH_MAX];
    unsigned taken = n;

    g_assert_cmpuint(n, <=, NET_BATCH_MAX);
    for (unsigned i = 0; i < n; i++) {
        bufs[i] = make_frame(i, lens[i]);
        frames[i] = (NetFrame){ .data = bufs[i], .len = lens[i] };
    }
    if (may_hold) {
        NetRxStamp stamp = { LAST_FRAME_STAMP, 0 };

        taken = net_backend_deliver_or_hold(backend, frames, n, &stamp,
                                            false);
    } else {
        net_backend_deliver(backend, frames, n);
    }
    for (unsigned i = 0; i < n; i++) {
        g_free(bufs[i]);
    }
    return taken;
}

static void deliver_lengths(NetClientState *backend, const uint32_t *lens,
                            unsigned n)
{
    deliver_lengths_or_hold(backend, lens, n, false);
}

/* A full batch, one call, every result the NIC gives counted on both. */
static void test_results_counted(void)
{
    static const NetRxResult answers[] = {
        NET_RX_DELIVERED, NET_RX_DROP_NOT_REGISTERED, NET_RX_DROP_FILTERED,
        NET_RX_DELIVERED, NET_RX_DROP_NO_BUFFER, NET_RX_DROP_DMA_ERROR,
    };
    uint32_t lens[NET_BATCH_MAX];
    uint64_t bytes = 0;
    uint64_t expect[NET_RX__MAX] = { 0 };
    NetClientState *backend;
    TestNic *nic;

    netdev_add_ok("test-fake,id=n0");
    backend = find_netdev("n0");
    nic = test_nic_new("nic0", "n0");
    nic->answers = answers;
    nic->n_answers = G_N_ELEMENTS(answers);
    for (unsigned i = 0; i < NET_BATCH_MAX; i++) {
        lens[i] = 60 + i;
        bytes += lens[i];
        expect[answers[i % G_N_ELEMENTS(answers)]]++;
    }
    deliver_lengths(backend, lens, NET_BATCH_MAX);

    g_assert_cmpuint(nic->calls, ==, 1);
    g_assert_cmpuint(nic->frames->len, ==, NET_BATCH_MAX);
    for (unsigned i = 0; i < NET_BATCH_MAX; i++) {
        assert_frame_seed(nic, i, i, lens[i]);
    }
    for (unsigned side = 0; side < 2; side++) {
        NetClientStats st = stats_of(side ? nic->nc : backend);

        g_assert_cmpuint(st.rx_batches, ==, 1);
        g_assert_cmpuint(st.rx_frames, ==, NET_BATCH_MAX);
        g_assert_cmpuint(st.rx_bytes, ==, bytes);
        for (unsigned r = 0; r < NET_RX__MAX; r++) {
            g_assert_cmpuint(st.rx_results[r], ==, expect[r]);
        }
    }
    assert_balanced(backend);
    assert_balanced(nic->nc);
    test_nic_free(nic);
    net_cleanup();
}

/* Several threads deliver at once, as af-xdp's I/O threads do, while
 * the main thread sends and reads counters: none is lost. */
#define PARALLEL_THREADS 2
#define PARALLEL_BATCHES 2000
#define PARALLEL_BATCH 16

static unsigned parallel_nic_receive(void *opaque, const NetFrame *frames,
                                     unsigned n, unsigned flags,
                                     NetRxStamp *stamp, NetRxResult *results)
{
    unsigned *frames_seen = opaque;

    __atomic_fetch_add(frames_seen, n, __ATOMIC_RELAXED);
    for (unsigned i = 0; i < n; i++) {
        results[i] = frames[i].len == 60 ? NET_RX_DELIVERED
                                         : NET_RX_DROP_NO_BUFFER;
    }
    (void)flags, (void)stamp;
    return n;
}

static const NetNicOps parallel_nic_ops = {
    .receive_batch = parallel_nic_receive,
};

static gpointer parallel_deliver(gpointer opaque)
{
    static const uint8_t frame[1514];
    NetFrame frames[PARALLEL_BATCH];

    /* 14 delivered, one no-buffer, one too-short per batch. */
    for (unsigned i = 0; i < PARALLEL_BATCH; i++) {
        frames[i].data = frame;
        frames[i].len = i == 0 ? 1514 : i == 1 ? 10 : 60;
    }
    for (unsigned b = 0; b < PARALLEL_BATCHES; b++) {
        net_backend_deliver(opaque, frames, PARALLEL_BATCH);
    }
    return NULL;
}

static void test_parallel_delivery(void)
{
    static const uint8_t frame[60];
    const uint64_t batches = PARALLEL_THREADS * PARALLEL_BATCHES;
    GThread *threads[PARALLEL_THREADS];
    unsigned frames_seen = 0;
    NetClientState *backend, *nic;
    NetClientStats st;
    GError *err = NULL;

    netdev_add_ok("test-fake,id=n0");
    backend = find_netdev("n0");
    last_fake->send_ok = true;
    nic = net_nic_new("nic0", "n0", &parallel_nic_ops, &frames_seen, &err);
    g_assert_no_error(err);
    for (unsigned t = 0; t < PARALLEL_THREADS; t++) {
        threads[t] = g_thread_new("deliver", parallel_deliver, backend);
    }
    for (unsigned i = 0; i < 1000; i++) {
        g_assert_true(net_nic_send(nic, frame, sizeof(frame)));
        net_client_get_stats(backend, &st);
        g_assert_cmpuint(st.rx_frames, ==, st.rx_results[NET_RX_DELIVERED] +
                         st.rx_results[NET_RX_DROP_NO_BUFFER] +
                         st.rx_results[NET_RX_DROP_TOO_SHORT]);
    }
    for (unsigned t = 0; t < PARALLEL_THREADS; t++) {
        g_thread_join(threads[t]);
    }
    for (unsigned side = 0; side < 2; side++) {
        net_client_get_stats(side ? nic : backend, &st);
        g_assert_cmpuint(st.rx_batches, ==, batches);
        g_assert_cmpuint(st.rx_frames, ==, batches * PARALLEL_BATCH);
        g_assert_cmpuint(st.rx_results[NET_RX_DELIVERED], ==, batches * 14);
        g_assert_cmpuint(st.rx_results[NET_RX_DROP_NO_BUFFER], ==, batches);
        g_assert_cmpuint(st.rx_results[NET_RX_DROP_TOO_SHORT], ==, batches);
        g_assert_cmpuint(st.tx_frames, ==, 1000);
    }
    g_assert_cmpuint(frames_seen, ==, batches * (PARALLEL_BATCH - 1));
    net_nic_free(nic);
    net_cleanup();
}

static void test_no_nic(void)
{
    static const uint32_t lens[] = { 60, 1514, 5 };
    NetClientState *backend;
    NetClientStats st;

    netdev_add_ok("test-fake,id=n0");
    backend = find_netdev("n0");
    deliver_lengths(backend, lens, G_N_ELEMENTS(lens));
    /* Nothing lost silently: no NIC is a reason like any other, and it
     * comes before the length check. */
    st = stats_of(backend);
    g_assert_cmpuint(st.rx_batches, ==, 1);
    g_assert_cmpuint(st.rx_frames, ==, 3);
    g_assert_cmpuint(st.rx_bytes, ==, 60 + 1514 + 5);
    g_assert_cmpuint(st.rx_results[NET_RX_DROP_NO_NIC], ==, 3);
    assert_balanced(backend);
    net_cleanup();
}

static void test_empty_batch(void)
{
    NetClientState *backend;
    TestNic *nic;

    netdev_add_ok("test-fake,id=n0");
    backend = find_netdev("n0");
    nic = test_nic_new("nic0", "n0");
    net_backend_deliver(backend, NULL, 0);
    g_assert_cmpuint(nic->calls, ==, 0);
    g_assert_cmpuint(stats_of(backend).rx_batches, ==, 0);
    test_nic_free(nic);
    net_cleanup();
}

static void test_too_short(void)
{
    static const uint32_t lens[] = { 0, 13, 14, 60, 5, 1514 };
    NetClientState *backend;
    TestNic *nic;

    netdev_add_ok("test-fake,id=n0");
    backend = find_netdev("n0");
    nic = test_nic_new("nic0", "n0");
    deliver_lengths(backend, lens, G_N_ELEMENTS(lens));
    /* The long enough ones reach the NIC together, in order. */
    g_assert_cmpuint(nic->calls, ==, 1);
    g_assert_cmpuint(nic->frames->len, ==, 3);
    assert_frame_seed(nic, 0, 2, 14);
    assert_frame_seed(nic, 1, 3, 60);
    assert_frame_seed(nic, 2, 5, 1514);
    for (unsigned side = 0; side < 2; side++) {
        NetClientStats st = stats_of(side ? nic->nc : backend);

        g_assert_cmpuint(st.rx_frames, ==, 6);
        g_assert_cmpuint(st.rx_results[NET_RX_DROP_TOO_SHORT], ==, 3);
        g_assert_cmpuint(st.rx_results[NET_RX_DELIVERED], ==, 3);
    }
    assert_balanced(backend);
    assert_balanced(nic->nc);

    /* A batch of nothing but runts does not call the NIC. */
    deliver_lengths(backend, lens, 2);
    g_assert_cmpuint(nic->calls, ==, 1);
    g_assert_cmpuint(stats_of(nic->nc).rx_results[NET_RX_DROP_TOO_SHORT],
                     ==, 5);
    test_nic_free(nic);
    net_cleanup();
}

/*
 * A NIC that may hold takes a prefix of the batch in the one call: the
 * frames before the first one it held are counted (runts among them as
 * too-short), the rest are counted nowhere, as they are still the
 * backend's.  Without may_hold it takes everything.
 */
static void test_hold(void)
{
    static const uint32_t lens[] = { 60, 5, 61, 62, 7, 63 };
    NetClientState *backend;
    TestNic *nic;
    NetClientStats st;

    netdev_add_ok("test-fake,id=n0");
    backend = find_netdev("n0");
    nic = test_nic_new("nic0", "n0");
    nic->room = 2;
    /* Takes 60 and 61; the runt between them is dropped, 62 on held. */
    g_assert_cmpuint(deliver_lengths_or_hold(backend, lens, 6, true), ==, 3);
    st = stats_of(backend);
    g_assert_cmpuint(st.rx_frames, ==, 3);
    g_assert_cmpuint(st.rx_bytes, ==, 60 + 5 + 61);
    g_assert_cmpuint(st.rx_results[NET_RX_DELIVERED], ==, 2);
    g_assert_cmpuint(st.rx_results[NET_RX_DROP_TOO_SHORT], ==, 1);
    assert_balanced(backend);
    assert_balanced(nic->nc);
    /* No room at all: nothing is taken or counted. */
    g_assert_cmpuint(deliver_lengths_or_hold(backend, lens + 3, 3, true), ==,
                     0);
    g_assert_cmpuint(stats_of(backend).rx_frames, ==, 3);
    /* Room again: the held frames come in. */
    nic->room = 8;
    g_assert_cmpuint(deliver_lengths_or_hold(backend, lens + 3, 3, true), ==,
                     3);
    /* A backend that cannot hold always has its batch taken. */
    g_assert_cmpuint(deliver_lengths_or_hold(backend, lens, 6, false), ==, 6);
    st = stats_of(backend);
    g_assert_cmpuint(st.rx_frames, ==, 12);
    g_assert_cmpuint(st.rx_results[NET_RX_DELIVERED], ==, 2 + 2 + 4);
    g_assert_cmpuint(st.rx_results[NET_RX_DROP_TOO_SHORT], ==, 1 + 1 + 2);
    assert_balanced(backend);
    assert_balanced(nic->nc);
    test_nic_free(nic);
    net_cleanup();
}

/* The backend's stamp goes with its batch's last frame, and only with
 * it: a last frame too short for the NIC takes it along. */
static void test_stamp(void)
{
    static const uint32_t lens[] = { 60, 61, 5 };
    NetClientState *backend;
    TestNic *nic;

    netdev_add_ok("test-fake,id=n0");
    backend = find_netdev("n0");
    nic = test_nic_new("nic0", "n0");
    nic->room = 8;
    g_assert_cmpuint(deliver_lengths_or_hold(backend, lens, 2, true), ==, 2);
    g_assert_cmpuint(nic->stamp, ==, LAST_FRAME_STAMP);
    g_assert_cmpuint(deliver_lengths_or_hold(backend, lens, 3, true), ==, 3);
    g_assert_cmpuint(nic->stamp, ==, 0);
    g_assert_cmpuint(deliver_lengths_or_hold(backend, lens, 2, false), ==, 2);
    g_assert_cmpuint(nic->stamp, ==, 0);
    test_nic_free(nic);
    net_cleanup();
}

/* A backend's "more to come" reaches the NIC with its batch; a run that
 * ends with nothing for the NIC (no frame left, runts only, link down)
 * still ends there, and a batch without it ends the run itself. */
static void test_more(void)
{
    static const uint32_t lens[] = { 60, 61 }, runts[] = { 5 };
    static const uint8_t data[60];
    NetFrame frame = { .data = data, .len = 60 };
    NetFrame runt = { .data = data, .len = 5 };
    NetClientState *backend;
    TestNic *nic;

    netdev_add_ok("test-fake,id=n0");
    backend = find_netdev("n0");
    nic = test_nic_new("nic0", "n0");
    nic->room = 100;
    g_assert_cmpuint(net_backend_deliver_or_hold(backend, &frame, 1, NULL,
                                                 true), ==, 1);
    g_assert_cmpuint(nic->more_calls, ==, 1);
    g_assert_cmpuint(net_backend_deliver_or_hold(backend, &frame, 1, NULL,
                                                 false), ==, 1);
    g_assert_cmpuint(nic->calls, ==, 2);
    g_assert_cmpuint(nic->more_calls, ==, 1);
    g_assert_cmpuint(nic->run_ends, ==, 0);
    g_assert_cmpuint(net_backend_deliver_or_hold(backend, NULL, 0, NULL,
                                                 false), ==, 0);
    g_assert_cmpuint(nic->run_ends, ==, 1);
    g_assert_cmpuint(net_backend_deliver_or_hold(backend, &runt, 1, NULL,
                                                 false), ==, 1);
    g_assert_cmpuint(nic->run_ends, ==, 2);
    /* Runts with more to come end nothing yet. */
    g_assert_cmpuint(net_backend_deliver_or_hold(backend, &runt, 1, NULL,
                                                 true), ==, 1);
    g_assert_cmpuint(nic->run_ends, ==, 2);
    net_client_set_link(backend, false);
    deliver_lengths(backend, lens, G_N_ELEMENTS(lens));
    g_assert_cmpuint(nic->run_ends, ==, 3);
    net_client_set_link(backend, true);
    deliver_lengths(backend, runts, 1);
    g_assert_cmpuint(nic->run_ends, ==, 4);
    g_assert_cmpuint(nic->calls, ==, 2);
    test_nic_free(nic);
    net_cleanup();
}

/* Either side's link down drops both ways, and counts it. */
static void test_link_down(void)
{
    static const uint32_t lens[] = { 60, 61 };
    uint8_t frame[60] = { 1 };
    NetClientState *backend;
    TestNic *nic;

    netdev_add_ok("test-fake,id=n0");
    backend = find_netdev("n0");
    nic = test_nic_new("nic0", "n0");
    g_assert_true(net_client_link_up(backend));
    g_assert_true(net_client_link_up(nic->nc));

    for (unsigned side = 0; side < 2; side++) {
        NetClientState *down = side ? nic->nc : backend;

        net_client_set_link(down, false);
        g_assert_false(net_client_link_up(down));
        deliver_lengths(backend, lens, G_N_ELEMENTS(lens));
        g_assert_false(net_nic_send(nic->nc, frame, sizeof(frame)));
        net_client_set_link(down, true);
    }
    g_assert_cmpuint(nic->calls, ==, 0);
    g_assert_cmpuint(last_fake->sent->len, ==, 0);
    for (unsigned side = 0; side < 2; side++) {
        NetClientStats st = stats_of(side ? nic->nc : backend);

        g_assert_cmpuint(st.rx_frames, ==, 4);
        g_assert_cmpuint(st.rx_results[NET_RX_DROP_LINK_DOWN], ==, 4);
        g_assert_cmpuint(st.tx_dropped, ==, 2);
        g_assert_cmpuint(st.tx_frames, ==, 0);
    }

    /* Up again, frames flow. */
    deliver_lengths(backend, lens, G_N_ELEMENTS(lens));
    g_assert_true(net_nic_send(nic->nc, frame, sizeof(frame)));
    g_assert_cmpuint(nic->frames->len, ==, 2);
    g_assert_cmpuint(last_fake->sent->len, ==, 1);
    assert_balanced(backend);
    assert_balanced(nic->nc);
    test_nic_free(nic);
    net_cleanup();
}

static void test_tx(void)
{
    g_autofree uint8_t *big = make_frame(9, NET_FRAME_MAX + 1);
    g_autofree uint8_t *frame = make_frame(3, 60);
    TestNic *lonely, *nic;
    NetClientState *backend;
    GBytes *sent;

    lonely = test_nic_new("lonely", NULL);
    g_assert_false(net_nic_send(lonely->nc, frame, 60));
    g_assert_cmpuint(stats_of(lonely->nc).tx_dropped, ==, 1);
    g_assert_cmpuint(stats_of(lonely->nc).tx_errors, ==, 0);
    test_nic_free(lonely);

    netdev_add_ok("test-fake,id=n0");
    backend = find_netdev("n0");
    nic = test_nic_new("nic0", "n0");
    g_assert_false(net_nic_send(nic->nc, frame, 0));
    g_assert_false(net_nic_send(nic->nc, big, NET_FRAME_MAX + 1));
    last_fake->send_ok = false;
    g_assert_false(net_nic_send(nic->nc, frame, 60));
    last_fake->send_ok = true;
    g_assert_true(net_nic_send(nic->nc, frame, 60));
    g_assert_true(net_nic_send(nic->nc, big, NET_FRAME_MAX));

    g_assert_cmpuint(last_fake->sent->len, ==, 2);
    sent = g_ptr_array_index(last_fake->sent, 0);
    g_assert_cmpmem(g_bytes_get_data(sent, NULL), g_bytes_get_size(sent),
                    frame, 60);
    sent = g_ptr_array_index(last_fake->sent, 1);
    g_assert_cmpmem(g_bytes_get_data(sent, NULL), g_bytes_get_size(sent),
                    big, NET_FRAME_MAX);
    for (unsigned side = 0; side < 2; side++) {
        NetClientStats st = stats_of(side ? nic->nc : backend);

        g_assert_cmpuint(st.tx_frames, ==, 2);
        g_assert_cmpuint(st.tx_bytes, ==, 60 + NET_FRAME_MAX);
        g_assert_cmpuint(st.tx_errors, ==, 3);
        g_assert_cmpuint(st.tx_dropped, ==, 0);
    }
    test_nic_free(nic);
    net_cleanup();
}

/* ---- option errors of the socket backends ---- */

static void test_dgram_option_errors(void)
{
    static const struct {
        const char *args;
        const char *msg;
    } cases[] = {
        { "dgram,id=d0", "Parameter 'local.type' is missing" },
        { "dgram,id=d0,local.type=tipc", "Parameter 'local.type' expects "
          "'inet', 'unix' or 'fd', not 'tipc'" },
        { "dgram,id=d0,local.type=inet,local.port=5000",
          "local.type=inet needs local.host" },
        { "dgram,id=d0,local.type=inet,local.host=127.0.0.1",
          "local.type=inet needs local.port" },
        { "dgram,id=d0,local.type=inet,local.host=127.0.0.1,local.port=0",
          "Parameter 'local.port' expects a port number 1-65535, not '0'" },
        { "dgram,id=d0,local.type=inet,local.host=127.0.0.1,"
          "local.port=65536",
          "Parameter 'local.port' expects a port number 1-65535" },
        { "dgram,id=d0,local.type=inet,local.host=127.0.0.1,local.port=http",
          "Parameter 'local.port' expects a port number 1-65535" },
        { "dgram,id=d0,local.type=inet,local.host=nosuch.invalid,"
          "local.port=5000", "Parameter 'local.host': cannot resolve" },
        { "dgram,id=d0,local.type=inet,local.host=127.0.0.1,local.port=5000,"
          "local.path=/x", "Parameter 'local.path' does not apply to "
          "local.type=inet" },
        { "dgram,id=d0,local.type=unix", "local.type=unix needs local.path" },
        { "dgram,id=d0,local.type=unix,local.path=",
          "local.type=unix needs local.path" },
        { "dgram,id=d0,local.type=unix,local.path=/x,local.port=1",
          "Parameter 'local.port' does not apply to local.type=unix" },
        { "dgram,id=d0,local.type=inet,local.host=127.0.0.1,local.port=5000",
          "Parameter 'remote.type' is missing" },
        { "dgram,id=d0,local.type=unix,local.path=/x,remote.type=unix",
          "remote.type=unix needs remote.path" },
        { "dgram,id=d0,local.type=inet,local.host=127.0.0.1,local.port=5000,"
          "remote.type=inet,remote.host=127.0.0.1,remote.port=99999",
          "Parameter 'remote.port' expects a port number 1-65535" },
        { "dgram,id=d0,local.type=inet,local.host=127.0.0.1,local.port=5000,"
          "remote.type=inet,remote.host=::1,remote.port=5001",
          "cannot resolve '::1' as an IPv4 address" },
        { "dgram,id=d0,local.type=unix,local.path=/x,remote.type=inet,"
          "remote.host=127.0.0.1,remote.port=5000",
          "remote.type=inet does not match local.type=unix" },
        { "dgram,id=d0,x=1", "Invalid parameter 'x'" },
        { "dgram,id=d0,local.type=inet,local.host=127.0.0.1,local.port=5000,"
          "local.to=5001", "Invalid parameter 'local.to'" },
        { "dgram,id=d0,local.type=inet,local.host=127.0.0.1,local.port=5000,"
          "local.ipv4=off,local.ipv6=off,remote.type=inet,"
          "remote.host=127.0.0.1,remote.port=5001",
          "local.ipv4=off and local.ipv6=off leave no address family" },
        { "dgram,id=d0,local.type=inet,local.host=127.0.0.1,local.port=5000,"
          "local.ipv4=maybe", "Parameter 'local.ipv4' expects 'on' or 'off'" },
        { "dgram,id=d0,local.type=inet,local.host=127.0.0.1,local.port=5000,"
          "local.ipv6=on", "cannot resolve '127.0.0.1' as an IPv6 address" },
        { "dgram,id=d0,local.type=inet,local.host=::1,local.port=5000,"
          "remote.type=inet,remote.host=::1,remote.port=5001,"
          "remote.ipv4=on", "remote.ipv4 and remote.ipv6 ask for IPv4, but "
          "the other address is IPv6" },
        { "dgram,id=d0,local.type=unix,local.path=/x,local.tight=on",
          "Parameter 'local.tight' applies only with local.abstract=on" },
        { "dgram,id=d0,local.type=unix,local.path=/x,local.str=3",
          "Parameter 'local.str' does not apply to local.type=unix" },
        { "dgram,id=d0,local.type=fd", "local.type=fd needs local.str" },
        { "dgram,id=d0,local.type=fd,local.str=mysock",
          "Parameter 'local.str' expects a file descriptor number, not "
          "'mysock'" },
        { "dgram,id=d0,local.type=fd,local.str=9999",
          "File descriptor '9999' is not a socket" },
        { "dgram,id=d0,local.type=fd,local.str=0,local.path=/x",
          "Parameter 'local.path' does not apply to local.type=fd" },
        /* Multicast: an IPv4 group as remote. */
        { "dgram,id=d0,remote.type=inet,remote.host=127.0.0.1,"
          "remote.port=5000", "Parameter 'local.type' is missing" },
        { "dgram,id=d0,local.type=unix,local.path=/x,remote.type=inet,"
          "remote.host=230.0.0.1,remote.port=5000",
          "A multicast remote takes local.type=inet (the interface's "
          "address) or no local address" },
        { "dgram,id=d0,local.type=inet,local.host=127.0.0.1,local.port=5,"
          "remote.type=inet,remote.host=230.0.0.1,remote.port=5000",
          "Parameter 'local.port' does not apply to a multicast netdev" },
        { "dgram,id=d0,local.type=inet,local.host=localhost,"
          "remote.type=inet,remote.host=230.0.0.1,remote.port=5000",
          "Parameter 'local.host' expects the IPv4 address of the interface "
          "for the group, not 'localhost'" },
    };
    g_autofree char *long_path = g_strnfill(120, 'p');
    g_autofree char *too_long = g_strdup_printf(
        "dgram,id=d0,local.type=unix,local.path=/%s", long_path);

    for (unsigned i = 0; i < G_N_ELEMENTS(cases); i++) {
        netdev_add_fails(cases[i].args, "d0", cases[i].msg);
    }
    netdev_add_fails(too_long, "d0",
                     "Parameter 'local.path' is too long (at most 107 "
                     "bytes)");
}

static void test_dgram_bind_error(void)
{
    uint16_t port;
    int fd = loopback_socket(AF_INET, SOCK_DGRAM, &port);
    g_autofree char *args = g_strdup_printf(
        "dgram,id=d0,local.type=inet,local.host=127.0.0.1,local.port=%u,"
        "remote.type=inet,remote.host=127.0.0.1,remote.port=%u", port, port);
    g_autofree char *msg = g_strdup_printf(
        "Failed to bind to 127.0.0.1:%u: Address already in use", port);

    g_assert_cmpint(fd, >=, 0);
    netdev_add_fails(args, "d0", msg);
    close(fd);
}

/* Only a socket file is taken for stale; anything else stays. */
static void test_unix_path_not_a_socket(void)
{
    g_autofree char *path = tmp_path("not-a-socket");
    g_autofree char *args = g_strdup_printf(
        "dgram,id=d0,local.type=unix,local.path=%s,remote.type=unix,"
        "remote.path=%s", path, path);
    g_autofree char *msg = g_strdup_printf(
        "Failed to bind to %s: Address already in use", path);
    GError *err = NULL;

    g_assert_true(g_file_set_contents(path, "keep", -1, &err));
    g_assert_no_error(err);
    netdev_add_fails(args, "d0", msg);
    g_assert_true(g_file_test(path, G_FILE_TEST_IS_REGULAR));
    g_unlink(path);
}

static void test_stream_option_errors(void)
{
    static const struct {
        const char *args;
        const char *msg;
    } cases[] = {
        { "stream,id=s0", "Parameter 'addr.type' is missing" },
        { "stream,id=s0,server=on", "Parameter 'addr.type' is missing" },
        { "stream,id=s0,server=maybe,addr.type=unix,addr.path=/x",
          "Parameter 'server' expects 'on' or 'off', not 'maybe'" },
        { "stream,id=s0,addr.type=vsock", "Parameter 'addr.type' expects "
          "'inet', 'unix' or 'fd', not 'vsock'" },
        { "stream,id=s0,addr.type=fd", "addr.type=fd needs addr.str" },
        { "stream,id=s0,server=on,addr.type=unix,addr.path=/x,"
          "reconnect-ms=10", "'reconnect-ms' option is incompatible with "
          "socket in server mode" },
        { "stream,id=s0,addr.type=unix,addr.path=/x,reconnect-ms=-1",
          "Parameter 'reconnect-ms'" },
        { "stream,id=s0,addr.type=unix,addr.path=/x,reconnect-ms=4294967296",
          "Parameter 'reconnect-ms' expects 0 to 4294967295 milliseconds" },
        { "stream,id=s0,addr.type=unix,addr.path=/x,addr.abstract=on,"
          "addr.abstract=maybe",
          "Parameter 'addr.abstract' expects 'on' or 'off'" },
        { "stream,id=s0,addr.type=inet,addr.port=5000",
          "addr.type=inet needs addr.host" },
        { "stream,id=s0,addr.type=inet,addr.host=127.0.0.1",
          "addr.type=inet needs addr.port" },
        { "stream,id=s0,addr.type=inet,addr.host=127.0.0.1,addr.port=-1",
          "Parameter 'addr.port' expects a port number 1-65535, not '-1'" },
        { "stream,id=s0,addr.type=unix", "addr.type=unix needs addr.path" },
        { "stream,id=s0,addr.type=unix,addr.path=/x,addr.host=h",
          "Parameter 'addr.host' does not apply to addr.type=unix" },
        { "stream,id=s0,addr.type=unix,addr.path=/x,reconnect=1",
          "Invalid parameter 'reconnect'" },
        { "stream,id=s0,local.type=unix", "Invalid parameter 'local.type'" },
        { "stream,id=s0,server=on,addr.type=unix,"
          "addr.path=/nonexistent-dir/s.sock",
          "Failed to bind to /nonexistent-dir/s.sock: No such file or "
          "directory" },
        { "stream,id=s0,addr.type=unix,addr.path=/nonexistent-dir/s.sock",
          "Failed to connect to /nonexistent-dir/s.sock: No such file or "
          "directory" },
    };

    for (unsigned i = 0; i < G_N_ELEMENTS(cases); i++) {
        netdev_add_fails(cases[i].args, "s0", cases[i].msg);
    }
}

static void test_stream_connect_refused(void)
{
    uint16_t port = free_port(AF_INET, SOCK_STREAM);
    g_autofree char *args = g_strdup_printf(
        "stream,id=s0,server=off,addr.type=inet,addr.host=127.0.0.1,"
        "addr.port=%u", port);
    g_autofree char *msg = g_strdup_printf(
        "Failed to connect to 127.0.0.1:%u: Connection refused", port);

    netdev_add_fails(args, "s0", msg);
}

/* ---- dgram over sockets ---- */

/* Ten datagrams queued before the main loop runs arrive as batches. */
static void dgram_check_rx(const TestNic *nic, NetClientState *backend,
                           unsigned expect_calls)
{
    g_assert_true(nic_has_frames(nic, 10));
    pump();
    g_assert_cmpuint(nic->frames->len, ==, 10);
    g_assert_cmpuint(nic->calls, <=, expect_calls);
    for (unsigned i = 0; i < 10; i++) {
        assert_frame_seed(nic, i, i, 60 + i * 97);
    }
    g_assert_cmpuint(stats_of(backend).rx_batches, ==, nic->calls);
    g_assert_cmpuint(stats_of(nic->nc).rx_batches, ==, nic->calls);
    g_assert_cmpuint(stats_of(nic->nc).rx_results[NET_RX_DELIVERED], ==, 10);
    assert_balanced(backend);
    assert_balanced(nic->nc);
}

/* Three frames from the NIC arrive on @fd, byte for byte. */
static void dgram_check_tx(const TestNic *nic, NetClientState *backend,
                           int fd)
{
    static const size_t lens[] = { 14, 1514, 9000 };
    uint64_t bytes = 0;

    for (unsigned i = 0; i < G_N_ELEMENTS(lens); i++) {
        g_autofree uint8_t *frame = make_frame(100 + i, lens[i]);
        g_autofree uint8_t *got = g_malloc(lens[i] + 1);

        g_assert_true(net_nic_send(nic->nc, frame, lens[i]));
        g_assert_cmpint(recv(fd, got, lens[i] + 1, 0), ==, (ssize_t)lens[i]);
        g_assert_cmpmem(got, lens[i], frame, lens[i]);
        bytes += lens[i];
    }
    for (unsigned side = 0; side < 2; side++) {
        NetClientStats st = stats_of(side ? nic->nc : backend);

        g_assert_cmpuint(st.tx_frames, ==, 3);
        g_assert_cmpuint(st.tx_bytes, ==, bytes);
        g_assert_cmpuint(st.tx_errors, ==, 0);
    }
}

static void dgram_inet(int family)
{
    uint16_t peer_port, port = 0;
    int peer = loopback_socket(family, SOCK_DGRAM, &peer_port);
    struct sockaddr_storage to;
    socklen_t to_len;
    TestNic *nic;
    NetClientState *backend;

    if (peer < 0) {
        g_test_skip("no loopback address in this family");
        return;
    }
    port = free_port(family, SOCK_DGRAM);
    netdev_add_ok("dgram,id=d0,local.type=inet,local.host=%s,local.port=%u,"
                  "remote.type=inet,remote.host=%s,remote.port=%u",
                  loopback_host(family), port, loopback_host(family),
                  peer_port);
    backend = find_netdev("d0");
    nic = test_nic_new("nic0", "d0");

    to_len = loopback_addr(family, port, &to);
    for (unsigned i = 0; i < 10; i++) {
        g_autofree uint8_t *frame = make_frame(i, 60 + i * 97);

        g_assert_cmpint(sendto(peer, frame, 60 + i * 97, 0,
                               (struct sockaddr *)&to, to_len),
                        ==, 60 + i * 97);
    }
    dgram_check_rx(nic, backend, 10);
    dgram_check_tx(nic, backend, peer);

    test_nic_free(nic);
    net_cleanup();
    close(peer);
}

static void test_dgram_inet(void)
{
    dgram_inet(AF_INET);
}

static void test_dgram_inet6(void)
{
    dgram_inet(AF_INET6);
}

static void test_dgram_unix(void)
{
    g_autofree char *local = tmp_path("dgram-local");
    g_autofree char *remote = tmp_path("dgram-remote");
    struct sockaddr_un to;
    socklen_t to_len = unix_addr(local, &to);
    int peer = unix_socket_bound(SOCK_DGRAM, remote);
    uint8_t runt[10] = { 0 };
    NetClientState *backend;
    TestNic *nic;

    leave_stale_socket(local);
    netdev_add_ok("dgram,id=d0,local.type=unix,local.path=%s,"
                  "remote.type=unix,remote.path=%s", local, remote);
    backend = find_netdev("d0");
    nic = test_nic_new("nic0", "d0");

    for (unsigned i = 0; i < 10; i++) {
        g_autofree uint8_t *frame = make_frame(i, 60 + i * 97);

        g_assert_cmpint(sendto(peer, frame, 60 + i * 97, 0,
                               (struct sockaddr *)&to, to_len),
                        ==, 60 + i * 97);
    }
    g_assert_cmpint(sendto(peer, runt, sizeof(runt), 0,
                           (struct sockaddr *)&to, to_len), ==, sizeof(runt));
    /* Unix datagrams are queued by the time sendto() returns: all eleven
     * come in one read, and the ten whole frames in one call. */
    dgram_check_rx(nic, backend, 1);
    g_assert_cmpuint(stats_of(backend).rx_frames, ==, 11);
    g_assert_cmpuint(stats_of(backend).rx_results[NET_RX_DROP_TOO_SHORT],
                     ==, 1);
    dgram_check_tx(nic, backend, peer);

    /* With nobody at the remote path, a frame is a counted tx error. */
    close(peer);
    g_unlink(remote);
    g_assert_false(net_nic_send(nic->nc, runt, sizeof(runt)));
    g_assert_cmpuint(stats_of(nic->nc).tx_errors, ==, 1);
    g_assert_cmpuint(stats_of(backend).tx_errors, ==, 1);

    test_nic_free(nic);
    net_cleanup();
    g_assert_false(g_file_test(local, G_FILE_TEST_EXISTS));
}

/* A datagram larger than any frame is dropped, counted and reported. */
static void test_dgram_oversized(void)
{
    g_autofree char *local = tmp_path("dgram-big-local");
    g_autofree char *remote = tmp_path("dgram-big-remote");
    g_autofree uint8_t *big = make_frame(1, NET_FRAME_MAX + 1);
    g_autofree uint8_t *frame = make_frame(2, 60);
    g_autofree char *log = NULL;
    struct sockaddr_un to;
    socklen_t to_len = unix_addr(local, &to);
    int peer = unix_socket_bound(SOCK_DGRAM, remote);
    int sndbuf = 4 * NET_FRAME_MAX;
    StderrCapture cap;
    TestNic *nic;

    g_assert_cmpint(setsockopt(peer, SOL_SOCKET, SO_SNDBUF, &sndbuf,
                               sizeof(sndbuf)), ==, 0);
    netdev_add_ok("dgram,id=d0,local.type=unix,local.path=%s,"
                  "remote.type=unix,remote.path=%s", local, remote);
    nic = test_nic_new("nic0", "d0");
    g_assert_cmpint(sendto(peer, big, NET_FRAME_MAX + 1, 0,
                           (struct sockaddr *)&to, to_len),
                    ==, NET_FRAME_MAX + 1);
    g_assert_cmpint(sendto(peer, frame, 60, 0, (struct sockaddr *)&to,
                           to_len), ==, 60);
    stderr_capture_begin(&cap);
    g_assert_true(nic_has_frames(nic, 1));
    log = stderr_capture_end(&cap);
    assert_frame_seed(nic, 0, 2, 60);
    g_assert_nonnull(strstr(log, "illan: dgram netdev 'd0': dropped a "
                            "datagram larger than 65536 bytes "
                            "(1 rx errors so far)"));
    /* Counted where stats can see it, and not as a frame. */
    g_assert_cmpuint(stats_of(find_netdev("d0")).rx_errors, ==, 1);
    g_assert_cmpuint(stats_of(find_netdev("d0")).rx_frames, ==, 1);
    test_nic_free(nic);
    net_cleanup();
    close(peer);
    g_unlink(remote);
}

/* ---- stream over sockets ---- */

/* Frames of one write come in batches; several batches past 64. */
static void stream_check_rx(int client, TestNic *nic, NetClientState *backend)
{
    g_autoptr(GByteArray) wire = g_byte_array_new();

    for (unsigned i = 0; i < 10; i++) {
        stream_encode_seed(wire, i, 60 + i * 97);
    }
    send_all(client, wire->data, wire->len);
    g_assert_true(nic_has_frames(nic, 10));
    pump();
    g_assert_cmpuint(nic->frames->len, ==, 10);
    g_assert_cmpuint(nic->calls, <=, 10);
    for (unsigned i = 0; i < 10; i++) {
        assert_frame_seed(nic, i, i, 60 + i * 97);
    }
    g_assert_cmpuint(stats_of(backend).rx_batches, ==, nic->calls);
    g_assert_cmpuint(stats_of(nic->nc).rx_batches, ==, nic->calls);
    assert_balanced(backend);
    assert_balanced(nic->nc);
}

static void stream_check_tx(int client, TestNic *nic)
{
    g_autofree uint8_t *a = make_frame(200, 60);
    g_autofree uint8_t *b = make_frame(201, NET_FRAME_MAX);

    g_assert_true(net_nic_send(nic->nc, a, 60));
    g_assert_true(net_nic_send(nic->nc, b, NET_FRAME_MAX));
    stream_expect_frame(client, 200, 60);
    stream_expect_frame(client, 201, NET_FRAME_MAX);
    g_assert_cmpuint(stats_of(nic->nc).tx_frames, ==, 2);
    g_assert_cmpuint(stats_of(nic->nc).tx_bytes, ==, 60 + NET_FRAME_MAX);
}

static uint16_t stream_server_inet(void)
{
    uint16_t port = free_port(AF_INET, SOCK_STREAM);

    netdev_add_ok("stream,id=s0,server=on,addr.type=inet,"
                  "addr.host=127.0.0.1,addr.port=%u", port);
    return port;
}

static void test_stream_server(void)
{
    uint16_t port = stream_server_inet();
    NetClientState *backend = find_netdev("s0");
    TestNic *nic = test_nic_new("nic0", "s0");
    int client = connect_loopback(AF_INET, port);

    stream_check_rx(client, nic, backend);
    stream_check_tx(client, nic);
    test_nic_free(nic);
    net_cleanup();
    g_assert_true(peer_closed(client));
    close(client);
}

static void test_stream_server_inet6(void)
{
    uint16_t port;
    int probe = loopback_socket(AF_INET6, SOCK_STREAM, &port);
    NetClientState *backend;
    TestNic *nic;
    int client;

    if (probe < 0) {
        g_test_skip("no IPv6 loopback");
        return;
    }
    close(probe);
    netdev_add_ok("stream,id=s0,server=on,addr.type=inet,addr.host=::1,"
                  "addr.port=%u", port);
    backend = find_netdev("s0");
    nic = test_nic_new("nic0", "s0");
    client = connect_loopback(AF_INET6, port);
    stream_check_rx(client, nic, backend);
    stream_check_tx(client, nic);
    test_nic_free(nic);
    net_cleanup();
    close(client);
}

/* More than a batch in one write: split at NET_BATCH_MAX. */
static void test_stream_many_frames(void)
{
    g_autoptr(GByteArray) wire = g_byte_array_new();
    uint16_t port = stream_server_inet();
    TestNic *nic = test_nic_new("nic0", "s0");
    int client = connect_loopback(AF_INET, port);

    for (unsigned i = 0; i < 150; i++) {
        stream_encode_seed(wire, i, 60);
    }
    send_all(client, wire->data, wire->len);
    g_assert_true(nic_has_frames(nic, 150));
    g_assert_cmpuint(nic->calls, >=, 3);
    g_assert_cmpuint(nic->max_batch, ==, NET_BATCH_MAX);
    for (unsigned i = 0; i < 150; i++) {
        assert_frame_seed(nic, i, i, 60);
    }
    test_nic_free(nic);
    net_cleanup();
    close(client);
}

/* Frames cut at odd places, the length prefix included, arrive whole. */
static void test_stream_split_frames(void)
{
    static const uint32_t lens[] = { 61, 200, 1514, 14, 9001 };
    static const size_t cuts[] = { 1, 2, 3, 5, 7, 11, 13, 17, 19, 23, 29 };
    g_autoptr(GByteArray) wire = g_byte_array_new();
    uint16_t port = stream_server_inet();
    TestNic *nic = test_nic_new("nic0", "s0");
    int client = connect_loopback(AF_INET, port);
    size_t pos = 0;

    for (unsigned i = 0; i < G_N_ELEMENTS(lens); i++) {
        stream_encode_seed(wire, i, lens[i]);
    }
    for (unsigned i = 0; pos < wire->len; i++) {
        size_t step = MIN(cuts[i % G_N_ELEMENTS(cuts)] * (1 + i / 11),
                          wire->len - pos);

        send_all(client, wire->data + pos, step);
        pos += step;
        pump();
    }
    g_assert_true(nic_has_frames(nic, G_N_ELEMENTS(lens)));
    g_assert_cmpuint(nic->frames->len, ==, G_N_ELEMENTS(lens));
    for (unsigned i = 0; i < G_N_ELEMENTS(lens); i++) {
        assert_frame_seed(nic, i, i, lens[i]);
    }
    test_nic_free(nic);
    net_cleanup();
    close(client);
}

/* Sends one frame and waits for the NIC to have @total frames. */
static void stream_send_one(int client, TestNic *nic, unsigned seed,
                            guint total)
{
    g_autoptr(GByteArray) wire = g_byte_array_new();

    stream_encode_seed(wire, seed, 60);
    send_all(client, wire->data, wire->len);
    g_assert_true(nic_has_frames(nic, total));
    assert_frame_seed(nic, total - 1, seed, 60);
}

/* A length of 0 or above NET_FRAME_MAX: the peer is dropped, counted
 * and reported; the server takes the next one. */
static void test_stream_bad_length(void)
{
    static const uint8_t zero_len[4] = { 0, 0, 0, 0 };
    static const uint8_t huge_len[4] = { 0, 1, 0, 1 };
    uint16_t port = stream_server_inet();
    TestNic *nic = test_nic_new("nic0", "s0");
    g_autofree char *log = NULL;
    StderrCapture cap;
    int client;

    stderr_capture_begin(&cap);
    client = connect_loopback(AF_INET, port);
    stream_send_one(client, nic, 1, 1);
    send_all(client, zero_len, sizeof(zero_len));
    g_assert_true(peer_closed(client));
    close(client);

    client = connect_loopback(AF_INET, port);
    stream_send_one(client, nic, 2, 2);
    send_all(client, huge_len, sizeof(huge_len));
    g_assert_true(peer_closed(client));
    close(client);
    log = stderr_capture_end(&cap);

    g_assert_nonnull(strstr(log, "illan: stream netdev 's0': peer sent a "
                            "frame length of 0 (expected 1-65536); "
                            "connection dropped (1 rx errors so far)\n"));
    g_assert_nonnull(strstr(log, "frame length of 65537 (expected 1-65536); "
                            "connection dropped (2 rx errors so far)\n"));

    client = connect_loopback(AF_INET, port);
    stream_send_one(client, nic, 3, 3);
    assert_balanced(nic->nc);
    test_nic_free(nic);
    net_cleanup();
    close(client);
}

/* A peer that hangs up inside a frame is dropped and reported too. */
static void test_stream_truncated_frame(void)
{
    g_autoptr(GByteArray) wire = g_byte_array_new();
    uint16_t port = stream_server_inet();
    TestNic *nic = test_nic_new("nic0", "s0");
    g_autofree char *log = NULL;
    StderrCapture cap;
    int client = connect_loopback(AF_INET, port);

    stream_encode_seed(wire, 1, 60);
    stream_encode_seed(wire, 2, 60);
    stderr_capture_begin(&cap);
    send_all(client, wire->data, wire->len - 30);
    shutdown(client, SHUT_WR);
    g_assert_true(peer_closed(client));
    log = stderr_capture_end(&cap);
    g_assert_cmpuint(nic->frames->len, ==, 1);
    assert_frame_seed(nic, 0, 1, 60);
    g_assert_nonnull(strstr(log, "illan: stream netdev 's0': peer hung up "
                            "in the middle of a frame (34 bytes discarded); "
                            "connection dropped (1 rx errors so far)\n"));
    test_nic_free(nic);
    net_cleanup();
    close(client);
}

/* One peer at a time: a second connection is closed, the first goes on. */
static void test_stream_second_client(void)
{
    uint16_t port = stream_server_inet();
    TestNic *nic = test_nic_new("nic0", "s0");
    int first = connect_loopback(AF_INET, port);
    g_autofree char *log = NULL;
    StderrCapture cap;
    int second;

    stream_send_one(first, nic, 1, 1);
    stderr_capture_begin(&cap);
    second = connect_loopback(AF_INET, port);
    g_assert_true(peer_closed(second));
    log = stderr_capture_end(&cap);
    g_assert_nonnull(strstr(log, "refused a second connection"));
    stream_send_one(first, nic, 2, 2);
    g_assert_true(net_nic_send(nic->nc, (const uint8_t *)"0123456789abcd",
                               14));
    g_assert_cmpuint(stats_of(nic->nc).tx_frames, ==, 1);

    test_nic_free(nic);
    net_cleanup();
    close(first);
    close(second);
}

/* The peer hangs up: the link stays up, frames sent meanwhile are tx
 * errors, and the next peer is served. */
static void test_stream_peer_hangup(void)
{
    uint16_t port = stream_server_inet();
    NetClientState *backend = find_netdev("s0");
    TestNic *nic = test_nic_new("nic0", "s0");
    uint8_t frame[60] = { 7 };
    int client = connect_loopback(AF_INET, port);

    stream_send_one(client, nic, 1, 1);
    /* The netdev closes its end once it reads the hang-up. */
    shutdown(client, SHUT_WR);
    g_assert_true(peer_closed(client));
    close(client);
    g_assert_true(net_client_link_up(backend));
    g_assert_false(net_nic_send(nic->nc, frame, sizeof(frame)));
    g_assert_cmpuint(stats_of(nic->nc).tx_errors, ==, 1);
    g_assert_cmpuint(stats_of(backend).tx_errors, ==, 1);

    client = connect_loopback(AF_INET, port);
    stream_send_one(client, nic, 2, 2);
    g_assert_true(net_nic_send(nic->nc, frame, sizeof(frame)));
    g_assert_cmpuint(stats_of(nic->nc).tx_frames, ==, 1);
    test_nic_free(nic);
    net_cleanup();
    close(client);
}

static void test_stream_server_unix(void)
{
    g_autofree char *path = tmp_path("stream-server");
    NetClientState *backend;
    TestNic *nic;
    int client;

    leave_stale_socket(path);
    netdev_add_ok("stream,id=s0,server=on,addr.type=unix,addr.path=%s",
                  path);
    backend = find_netdev("s0");
    nic = test_nic_new("nic0", "s0");
    client = connect_unix(path);
    stream_check_rx(client, nic, backend);
    stream_check_tx(client, nic);
    test_nic_free(nic);
    net_cleanup();
    close(client);
    g_assert_false(g_file_test(path, G_FILE_TEST_EXISTS));
}

/* server=off connects at creation; after the peer hangs up, sends fail. */
static void test_stream_client(void)
{
    uint16_t port;
    int listener = loopback_socket(AF_INET, SOCK_STREAM, &port);
    NetClientState *backend;
    TestNic *nic;
    int conn;

    g_assert_cmpint(listener, >=, 0);
    g_assert_cmpint(listen(listener, 1), ==, 0);
    netdev_add_ok("stream,id=s0,addr.type=inet,addr.host=127.0.0.1,"
                  "addr.port=%u", port);
    backend = find_netdev("s0");
    nic = test_nic_new("nic0", "s0");
    conn = accept(listener, NULL, NULL);
    g_assert_cmpint(conn, >=, 0);
    set_recv_timeout(conn);

    stream_check_tx(conn, nic);
    stream_check_rx(conn, nic, backend);

    shutdown(conn, SHUT_WR);
    g_assert_true(peer_closed(conn));
    close(conn);
    g_assert_false(net_nic_send(nic->nc, (const uint8_t *)"0123456789abcd",
                                14));
    g_assert_cmpuint(stats_of(backend).tx_errors, ==, 1);
    test_nic_free(nic);
    net_cleanup();
    close(listener);
}

static void test_stream_client_unix(void)
{
    g_autofree char *path = tmp_path("stream-client");
    int listener = unix_socket_bound(SOCK_STREAM, path);
    NetClientState *backend;
    TestNic *nic;
    int conn;

    g_assert_cmpint(listen(listener, 1), ==, 0);
    netdev_add_ok("stream,id=s0,server=off,addr.type=unix,addr.path=%s",
                  path);
    backend = find_netdev("s0");
    nic = test_nic_new("nic0", "s0");
    conn = accept(listener, NULL, NULL);
    g_assert_cmpint(conn, >=, 0);
    set_recv_timeout(conn);
    stream_check_rx(conn, nic, backend);
    stream_check_tx(conn, nic);
    test_nic_free(nic);
    net_cleanup();
    /* The client does not own the listener's socket file. */
    g_assert_true(g_file_test(path, G_FILE_TEST_EXISTS));
    close(conn);
    close(listener);
    g_unlink(path);
}

/* ---- stream peers as they come and go ---- */

/* What the stream notifier has heard: connections, losses, and the last
 * address announced. */
typedef struct StreamEvents {
    unsigned connected, disconnected;
    char *last_addr;            /* "type path" or "type host port" */
} StreamEvents;

static StreamEvents stream_events;

static void count_stream_event(NetClientState *backend, GVariant *addr)
{
    const char *type = NULL, *path = NULL, *host = NULL, *port = NULL;

    (void)backend;
    if (!addr) {
        stream_events.disconnected++;
        return;
    }
    stream_events.connected++;
    g_variant_lookup(addr, "type", "&s", &type);
    g_variant_lookup(addr, "path", "&s", &path);
    g_variant_lookup(addr, "host", "&s", &host);
    g_variant_lookup(addr, "port", "&s", &port);
    g_free(stream_events.last_addr);
    stream_events.last_addr = path ? g_strdup_printf("%s %s", type, path)
                                   : g_strdup_printf("%s %s %s", type, host,
                                                     port);
}

static void stream_events_reset(void)
{
    g_clear_pointer(&stream_events.last_addr, g_free);
    memset(&stream_events, 0, sizeof(stream_events));
    net_set_stream_event_notifier(count_stream_event);
}

/* Runs the main loop until *@counter reaches @n (never a fixed sleep:
 * the loop runs the netdev's timers and watches). */
static bool wait_count(const unsigned *counter, unsigned n)
{
    gint64 deadline = g_get_monotonic_time() + WAIT_US;

    while (*counter < n) {
        if (g_get_monotonic_time() > deadline) {
            return false;
        }
        if (!g_main_context_iteration(NULL, FALSE)) {
            g_usleep(1000);
        }
    }
    return true;
}

/* ---- info network ---- */

static char *info_network(void)
{
    const HmpCommand *cmd = hmp_find_command("info network");
    GString *out = g_string_new(NULL);

    g_assert_nonnull(cmd);
    cmd->fn("", out);
    return g_string_free(out, FALSE);
}

/* The text of netdev @id, without its "\r\n". */
static char *info_line(const char *id)
{
    g_autofree char *text = info_network();
    g_auto(GStrv) lines = g_strsplit(text, "\r\n", -1);
    g_autofree char *prefix = g_strdup_printf("%s: ", id);

    for (char **l = lines; *l; l++) {
        /* A NIC's netdev follows it after " \\ ". */
        const char *line = g_str_has_prefix(*l, " \\ ") ? *l + 3 : *l;

        if (g_str_has_prefix(line, prefix)) {
            return g_strdup(line);
        }
    }
    return NULL;
}

/* Runs the main loop until netdev @id's line starts with @prefix, and
 * returns the line. */
static char *wait_info(const char *id, const char *prefix)
{
    gint64 deadline = g_get_monotonic_time() + WAIT_US;
    char *line = info_line(id);

    while (!(line && g_str_has_prefix(line, prefix)) &&
           g_get_monotonic_time() < deadline) {
        if (!g_main_context_iteration(NULL, FALSE)) {
            g_usleep(1000);
        }
        g_free(line);
        line = info_line(id);
    }
    return line;
}

/* Runs the main loop until netdev @id's line reads @want. */
static void expect_info(const char *id, const char *want)
{
    g_autofree char *line = wait_info(id, want);

    g_assert_cmpstr(line, ==, want);
}

/* ---- multicast ---- */

#define MCAST_GROUP "230.0.0.1"

/* Two netdevs in one group: a frame one NIC sends reaches the other's
 * NIC, and, looped back as QEMU's are, its own. */
static void mcast_pair(const char *local)
{
    uint16_t port = free_port(AF_INET, SOCK_DGRAM);
    g_autofree char *want = g_strdup_printf(
        "m0: index=0,type=dgram,mcast=" MCAST_GROUP ":%u", port);
    g_autofree uint8_t *frame = make_frame(42, 100);
    TestNic *a, *b;

    netdev_add_ok("dgram,id=m0,remote.type=inet,remote.host=" MCAST_GROUP
                  ",remote.port=%u%s", port, local);
    netdev_add_ok("dgram,id=m1,remote.type=inet,remote.host=" MCAST_GROUP
                  ",remote.port=%u%s", port, local);
    a = test_nic_new("nic-a", "m0");
    b = test_nic_new("nic-b", "m1");
    expect_info("m0", want);

    g_assert_true(net_nic_send(a->nc, frame, 100));
    g_assert_true(nic_has_frames(b, 1));
    assert_frame_seed(b, 0, 42, 100);
    g_assert_true(nic_has_frames(a, 1));
    assert_frame_seed(a, 0, 42, 100);
    g_assert_cmpuint(stats_of(find_netdev("m0")).tx_frames, ==, 1);

    test_nic_free(a);
    test_nic_free(b);
    net_cleanup();
}

/* No local address: the group is joined on the default interface. */
static void test_dgram_mcast(void)
{
    mcast_pair("");
}

/* local.host picks the interface: here the loopback one. */
static void test_dgram_mcast_interface(void)
{
    mcast_pair(",local.type=inet,local.host=127.0.0.1");
}

/* ---- inherited sockets ---- */

/* One end of a datagram socketpair as the netdev; the test holds the
 * other. */
static void test_dgram_fd(void)
{
    int sv[2];
    g_autofree char *want = NULL;
    g_autofree uint8_t *frame = make_frame(7, 80);
    uint8_t got[128];
    TestNic *nic;

    g_assert_cmpint(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv), ==, 0);
    set_recv_timeout(sv[1]);
    netdev_add_ok("dgram,id=f0,local.type=fd,local.str=%d", sv[0]);
    nic = test_nic_new("nic0", "f0");
    want = g_strdup_printf("f0: index=0,type=dgram,fd=%d unix", sv[0]);
    expect_info("f0", want);

    g_assert_cmpint(send(sv[1], frame, 80, 0), ==, 80);
    g_assert_true(nic_has_frames(nic, 1));
    assert_frame_seed(nic, 0, 7, 80);
    g_assert_true(net_nic_send(nic->nc, frame, 80));
    g_assert_cmpint(recv(sv[1], got, sizeof(got), 0), ==, 80);
    g_assert_cmpmem(got, 80, frame, 80);

    test_nic_free(nic);
    net_cleanup();
    /* The netdev owned its end and closed it. */
    g_assert_cmpint(send(sv[1], frame, 80, MSG_DONTWAIT), <, 0);
    close(sv[1]);
}

static void test_fd_refusals(void)
{
    int dg[2], st[2];
    g_autofree char *a = NULL, *b = NULL, *c = NULL, *d = NULL, *e = NULL;
    g_autofree char *dg_str = NULL, *st_str = NULL;

    g_assert_cmpint(socketpair(AF_UNIX, SOCK_DGRAM, 0, dg), ==, 0);
    g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM, 0, st), ==, 0);
    a = g_strdup_printf("dgram,id=f0,local.type=fd,local.str=%d", st[0]);
    dg_str = g_strdup_printf("File descriptor '%d' is not a datagram socket",
                             st[0]);
    b = g_strdup_printf("stream,id=f0,addr.type=fd,addr.str=%d", dg[0]);
    st_str = g_strdup_printf("File descriptor '%d' is not a stream socket",
                             dg[0]);
    c = g_strdup_printf("dgram,id=f0,local.type=fd,local.str=%d,"
                        "remote.type=unix,remote.path=/x", dg[0]);
    d = g_strdup_printf("stream,id=f0,server=on,addr.type=fd,addr.str=%d",
                        st[0]);
    e = g_strdup_printf("stream,id=f0,addr.type=fd,addr.str=%d,"
                        "reconnect-ms=10", st[1]);
    netdev_add_fails(a, "f0", dg_str);
    netdev_add_fails(b, "f0", st_str);
    netdev_add_fails(c, "f0", "remote.* does not apply to local.type=fd");
    netdev_add_fails(d, "f0", "server=on needs a listening socket");
    netdev_add_fails(e, "f0", "reconnect-ms needs an address to connect to "
                     "again, not addr.type=fd");
    /* A refused netdev closes what it was given, as QEMU does. */
    g_assert_cmpint(fcntl(dg[0], F_GETFD), <, 0);
    g_assert_cmpint(fcntl(st[0], F_GETFD), <, 0);
    g_assert_cmpint(fcntl(st[1], F_GETFD), <, 0);
    close(dg[1]);
}

/* A connected stream socket as a client netdev: "unix:" for the unnamed
 * end of a socketpair, as QEMU shows it. */
static void test_stream_fd_client(void)
{
    int sv[2];
    TestNic *nic;

    g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), ==, 0);
    set_recv_timeout(sv[1]);
    stream_events_reset();
    netdev_add_ok("stream,id=f0,addr.type=fd,addr.str=%d", sv[0]);
    nic = test_nic_new("nic0", "f0");
    expect_info("f0", "f0: index=0,type=stream,unix:");
    g_assert_cmpuint(stream_events.connected, ==, 1);
    stream_check_rx(sv[1], nic, find_netdev("f0"));
    stream_check_tx(sv[1], nic);
    test_nic_free(nic);
    net_cleanup();
    g_assert_true(peer_closed(sv[1]));
    close(sv[1]);
}

/* A listening socket as a server netdev. */
static void test_stream_fd_server(void)
{
    g_autofree char *path = tmp_path("stream-fd-server");
    g_autofree char *want = g_strdup_printf("f0: index=0,type=stream,unix:%s",
                                            path);
    int listener = unix_socket_bound(SOCK_STREAM, path);
    int client;
    TestNic *nic;

    g_assert_cmpint(listen(listener, 1), ==, 0);
    netdev_add_ok("stream,id=f0,server=on,addr.type=fd,addr.str=%d",
                  listener);
    nic = test_nic_new("nic0", "f0");
    expect_info("f0", "f0: index=0,type=stream,listening");
    client = connect_unix(path);
    expect_info("f0", want);
    stream_check_rx(client, nic, find_netdev("f0"));
    test_nic_free(nic);
    net_cleanup();
    close(client);
    g_unlink(path);
}

/* ---- reconnect-ms ---- */

/* The server appears only after the client netdev exists, then goes and
 * comes back: each time the client connects again by itself. */
static void test_stream_reconnect(void)
{
    g_autofree char *path = tmp_path("stream-reconnect");
    g_autofree char *want = g_strdup_printf("r0: index=0,type=stream,unix:%s",
                                            path);
    g_autofree char *want_addr = g_strdup_printf("unix %s", path);
    TestNic *nic;
    int listener, conn;

    g_unlink(path);
    stream_events_reset();
    netdev_add_ok("stream,id=r0,addr.type=unix,addr.path=%s,"
                  "reconnect-ms=20", path);
    nic = test_nic_new("nic0", "r0");
    expect_info("r0", "r0: index=0,type=stream,connecting");
    g_assert_cmpuint(stream_events.connected, ==, 0);

    for (unsigned round = 1; round <= 2; round++) {
        listener = unix_socket_bound(SOCK_STREAM, path);
        g_assert_cmpint(listen(listener, 1), ==, 0);
        g_assert_true(wait_count(&stream_events.connected, round));
        g_assert_cmpstr(stream_events.last_addr, ==, want_addr);
        expect_info("r0", want);
        conn = accept(listener, NULL, NULL);
        g_assert_cmpint(conn, >=, 0);
        set_recv_timeout(conn);
        stream_send_one(conn, nic, round, round);
        /* The server goes away altogether. */
        close(conn);
        close(listener);
        g_unlink(path);
        g_assert_true(wait_count(&stream_events.disconnected, round));
        expect_info("r0", "r0: index=0,type=stream,connecting");
    }
    test_nic_free(nic);
    net_cleanup();
    net_set_stream_event_notifier(NULL);
}

/* Over TCP the attempts are non-blocking connect()s that complete
 * later; refused ones are retried until the server listens. */
static void test_stream_reconnect_inet(void)
{
    uint16_t port = free_port(AF_INET, SOCK_STREAM);
    g_autofree char *want = g_strdup_printf(
        "r0: index=0,type=stream,tcp:127.0.0.1:%u", port);
    g_autofree char *want_addr = g_strdup_printf("inet 127.0.0.1 %u", port);
    struct sockaddr_storage ss;
    socklen_t len = loopback_addr(AF_INET, port, &ss);
    int listener, conn;

    stream_events_reset();
    netdev_add_ok("stream,id=r0,addr.type=inet,addr.host=127.0.0.1,"
                  "addr.port=%u,reconnect-ms=10", port);
    expect_info("r0", "r0: index=0,type=stream,connecting");
    listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    g_assert_cmpint(bind(listener, (struct sockaddr *)&ss, len), ==, 0);
    g_assert_cmpint(listen(listener, 1), ==, 0);
    g_assert_true(wait_count(&stream_events.connected, 1));
    g_assert_cmpstr(stream_events.last_addr, ==, want_addr);
    expect_info("r0", want);
    conn = accept(listener, NULL, NULL);
    g_assert_cmpint(conn, >=, 0);
    net_cleanup();
    g_assert_true(peer_closed(conn));
    close(conn);
    close(listener);
    net_set_stream_event_notifier(NULL);
}

/* Without reconnect-ms a client whose peer left stays without one. */
static void test_stream_no_reconnect(void)
{
    uint16_t port;
    int listener = loopback_socket(AF_INET, SOCK_STREAM, &port);
    g_autofree char *want = g_strdup_printf(
        "s0: index=0,type=stream,tcp:127.0.0.1:%u", port);
    int conn;

    g_assert_cmpint(listen(listener, 1), ==, 0);
    stream_events_reset();
    netdev_add_ok("stream,id=s0,addr.type=inet,addr.host=127.0.0.1,"
                  "addr.port=%u", port);
    expect_info("s0", want);
    conn = accept(listener, NULL, NULL);
    close(conn);
    g_assert_true(wait_count(&stream_events.disconnected, 1));
    expect_info("s0", "s0: index=0,type=stream,disconnected");
    g_assert_cmpuint(stream_events.connected, ==, 1);
    net_cleanup();
    close(listener);
    net_set_stream_event_notifier(NULL);
}

/* ---- addresses: abstract unix names, ipv4= and ipv6= ---- */

static int connect_abstract(const char *name)
{
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    socklen_t len = offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    memcpy(sun.sun_path + 1, name, strlen(name));
    g_assert_cmpint(connect(fd, (struct sockaddr *)&sun, len), ==, 0);
    set_recv_timeout(fd);
    return fd;
}

/* An abstract name has no file; tight (the default) is the name's exact
 * length, which is what a client must use to reach it. */
static void test_stream_abstract(void)
{
    g_autofree char *name = g_strdup_printf("illan-test-net-%d-abstract",
                                            (int)getpid());
    g_autofree char *want = g_strdup_printf("a0: index=0,type=stream,unix:%s",
                                            name);
    g_autofree char *want_c = g_strdup_printf(
        "c0: index=0,type=stream,unix:%s", name);
    g_autofree char *want_addr = g_strdup_printf("unix %s", name);
    int client;

    stream_events_reset();
    netdev_add_ok("stream,id=a0,server=on,addr.type=unix,addr.path=%s,"
                  "addr.abstract=on", name);
    expect_info("a0", "a0: index=0,type=stream,listening");
    g_assert_false(g_file_test(name, G_FILE_TEST_EXISTS));
    client = connect_abstract(name);
    expect_info("a0", want);
    g_assert_cmpstr(stream_events.last_addr, ==, want_addr);
    close(client);
    g_assert_true(wait_count(&stream_events.disconnected, 1));
    expect_info("a0", "a0: index=0,type=stream,listening");

    /* A client netdev reaches it by the same name. */
    netdev_add_ok("stream,id=c0,addr.type=unix,addr.path=%s,"
                  "addr.abstract=on", name);
    expect_info("c0", want_c);
    expect_info("a0", want);
    net_cleanup();
    net_set_stream_event_notifier(NULL);
}

static bool connects(int family, const char *host, uint16_t port)
{
    struct sockaddr_storage ss = { .ss_family = family };
    socklen_t len;
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool ok;

    if (family == AF_INET6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

        inet_pton(AF_INET6, host, &a->sin6_addr);
        a->sin6_port = htons(port);
        len = sizeof(*a);
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;

        inet_pton(AF_INET, host, &a->sin_addr);
        a->sin_port = htons(port);
        len = sizeof(*a);
    }
    ok = connect(fd, (struct sockaddr *)&ss, len) == 0;
    close(fd);
    return ok;
}

/* A server on "::" takes IPv4 too, unless ipv4=off (or ipv6=on alone)
 * makes it IPv6 only, as in QEMU. */
static void test_stream_ipv6_only(void)
{
    uint16_t port;
    int probe = loopback_socket(AF_INET6, SOCK_STREAM, &port);

    if (probe < 0) {
        g_test_skip("no IPv6 loopback");
        return;
    }
    close(probe);
    netdev_add_ok("stream,id=s0,server=on,addr.type=inet,addr.host=::,"
                  "addr.port=%u", port);
    g_assert_true(connects(AF_INET, "127.0.0.1", port));
    net_cleanup();
    netdev_add_ok("stream,id=s0,server=on,addr.type=inet,addr.host=::,"
                  "addr.port=%u,addr.ipv4=off,addr.ipv6=on", port);
    g_assert_false(connects(AF_INET, "127.0.0.1", port));
    g_assert_true(connects(AF_INET6, "::1", port));
    net_cleanup();
    /* ipv4=on picks IPv4 for a name with both. */
    netdev_add_ok("stream,id=s0,server=on,addr.type=inet,addr.host=localhost,"
                  "addr.port=%u,addr.ipv4=on", port);
    g_assert_true(connects(AF_INET, "127.0.0.1", port));
    net_cleanup();
}

/* ---- info network for every kind ---- */

static GVariant *mac_filter(void *opaque)
{
    GVariantBuilder b;

    (void)opaque;
    g_variant_builder_init(&b, G_VARIANT_TYPE_VARDICT);
    g_variant_builder_add(&b, "{sv}", "main-mac",
                          g_variant_new_string("52:54:00:12:34:56"));
    return g_variant_builder_end(&b);
}

static const NetNicOps modelled_nic_ops = {
    .receive_batch = test_nic_receive_batch,
    .model = "test-nic",
    .query_rx_filter = mac_filter,
};

/* QEMU's layout: clients in creation order, a NIC followed on its line
 * by " \ " and its netdev, other netdevs on lines of their own. */
static void test_info_network(void)
{
    g_autofree char *dpath = tmp_path("info-dgram");
    g_autofree char *rpath = tmp_path("info-dgram-r");
    g_autofree char *spath = tmp_path("info-stream");
    uint16_t p0 = free_port(AF_INET, SOCK_DGRAM);
    uint16_t p1 = free_port(AF_INET, SOCK_DGRAM);
    uint16_t sp = free_port(AF_INET, SOCK_STREAM);
    g_autofree char *text = NULL, *want = NULL, *want_c = NULL;
    TestNic nic = { 0 };
    GError *err = NULL;
    int client;

    netdev_add_ok("dgram,id=d0,local.type=inet,local.host=127.0.0.1,"
                  "local.port=%u,remote.type=inet,remote.host=127.0.0.1,"
                  "remote.port=%u", p0, p1);
    netdev_add_ok("dgram,id=d1,local.type=unix,local.path=%s,"
                  "remote.type=unix,remote.path=%s", dpath, rpath);
    netdev_add_ok("stream,id=s0,server=on,addr.type=inet,addr.host=127.0.0.1,"
                  "addr.port=%u", sp);
    netdev_add_ok("stream,id=s1,server=on,addr.type=unix,addr.path=%s",
                  spath);
    nic.frames = g_ptr_array_new_with_free_func(
        (GDestroyNotify)g_bytes_unref);
    nic.nc = net_nic_new("net0", "d1", &modelled_nic_ops, &nic, &err);
    g_assert_no_error(err);

    text = info_network();
    want = g_strdup_printf(
        "d0: index=0,type=dgram,udp=127.0.0.1:%u/127.0.0.1:%u\r\n"
        "s0: index=0,type=stream,listening\r\n"
        "s1: index=0,type=stream,listening\r\n"
        "net0: index=0,type=nic,model=test-nic,macaddr=52:54:00:12:34:56\r\n"
        " \\ d1: index=0,type=dgram,udp=%s:%s\r\n", p0, p1, dpath, rpath);
    g_assert_cmpstr(text, ==, want);

    /* A stream client shows the server's address, the server its
     * client's (inet) or its own path (unix). */
    netdev_add_ok("stream,id=c0,addr.type=inet,addr.host=127.0.0.1,"
                  "addr.port=%u", sp);
    want_c = g_strdup_printf("c0: index=0,type=stream,tcp:127.0.0.1:%u", sp);
    expect_info("c0", want_c);
    g_free(want);
    want = wait_info("s0", "s0: index=0,type=stream,tcp:127.0.0.1:");
    g_assert_true(g_str_has_prefix(want, "s0: index=0,type=stream,"
                                   "tcp:127.0.0.1:"));
    g_assert_cmpstr(want, !=, want_c);
    client = connect_unix(spath);
    g_free(want);
    want = g_strdup_printf("s1: index=0,type=stream,unix:%s", spath);
    expect_info("s1", want);

    net_nic_free(nic.nc);
    g_ptr_array_free(nic.frames, TRUE);
    net_cleanup();
    close(client);
    g_unlink(rpath);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    netdev_type_register(&fake_type);

    g_test_add_func("/net/result-names", test_result_names);
    g_test_add_func("/net/help", test_help_lists_types);
    g_test_add_func("/net/options/core", test_core_option_errors);
    g_test_add_func("/net/options/check-only", test_netdev_check);
    g_test_add_func("/net/options/dgram", test_dgram_option_errors);
    g_test_add_func("/net/options/dgram-bind", test_dgram_bind_error);
    g_test_add_func("/net/options/unix-not-a-socket",
                    test_unix_path_not_a_socket);
    g_test_add_func("/net/options/stream", test_stream_option_errors);
    g_test_add_func("/net/options/stream-refused",
                    test_stream_connect_refused);
    g_test_add_func("/net/nic/pairing", test_nic_pairing);
    g_test_add_func("/net/nic/outlives-netdev", test_nic_backend_free_order);
    g_test_add_func("/net/foreach", test_foreach_nics_first);
    g_test_add_func("/net/rx/results-counted", test_results_counted);
    g_test_add_func("/net/rx/no-nic", test_no_nic);
    g_test_add_func("/net/rx/parallel", test_parallel_delivery);
    g_test_add_func("/net/rx/empty-batch", test_empty_batch);
    g_test_add_func("/net/rx/too-short", test_too_short);
    g_test_add_func("/net/rx/hold", test_hold);
    g_test_add_func("/net/rx/stamp", test_stamp);
    g_test_add_func("/net/rx/more", test_more);
    g_test_add_func("/net/link-down", test_link_down);
    g_test_add_func("/net/tx", test_tx);
    g_test_add_func("/net/dgram/inet", test_dgram_inet);
    g_test_add_func("/net/dgram/inet6", test_dgram_inet6);
    g_test_add_func("/net/dgram/unix", test_dgram_unix);
    g_test_add_func("/net/dgram/oversized", test_dgram_oversized);
    g_test_add_func("/net/stream/server", test_stream_server);
    g_test_add_func("/net/stream/server-inet6", test_stream_server_inet6);
    g_test_add_func("/net/stream/server-unix", test_stream_server_unix);
    g_test_add_func("/net/stream/many-frames", test_stream_many_frames);
    g_test_add_func("/net/stream/split-frames", test_stream_split_frames);
    g_test_add_func("/net/stream/bad-length", test_stream_bad_length);
    g_test_add_func("/net/stream/truncated-frame",
                    test_stream_truncated_frame);
    g_test_add_func("/net/stream/second-client", test_stream_second_client);
    g_test_add_func("/net/stream/peer-hangup", test_stream_peer_hangup);
    g_test_add_func("/net/stream/client", test_stream_client);
    g_test_add_func("/net/stream/client-unix", test_stream_client_unix);
    g_test_add_func("/net/dgram/mcast", test_dgram_mcast);
    g_test_add_func("/net/dgram/mcast-interface", test_dgram_mcast_interface);
    g_test_add_func("/net/dgram/fd", test_dgram_fd);
    g_test_add_func("/net/options/fd", test_fd_refusals);
    g_test_add_func("/net/stream/fd-client", test_stream_fd_client);
    g_test_add_func("/net/stream/fd-server", test_stream_fd_server);
    g_test_add_func("/net/stream/reconnect", test_stream_reconnect);
    g_test_add_func("/net/stream/reconnect-inet", test_stream_reconnect_inet);
    g_test_add_func("/net/stream/no-reconnect", test_stream_no_reconnect);
    g_test_add_func("/net/stream/abstract", test_stream_abstract);
    g_test_add_func("/net/stream/ipv6-only", test_stream_ipv6_only);
    g_test_add_func("/net/info-network", test_info_network);

    return g_test_run();
}
