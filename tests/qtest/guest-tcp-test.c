/*
 * Real TCP through the whole path, both ways: a socket in the test's
 * namespace, a veth pair, af-xdp, spapr-vlan, the built-in guest and its
 * TAP, whose end is a second namespace with a socket of the test's.  The
 * peer's veth leaves checksums to an offload (tx on, as a local sender's
 * does), which a guest without checksum offload drops; with the offloads
 * Linux negotiates the stream arrives byte-exact, the device flags the
 * partial checksums, merges segments, and segments the guest's large
 * sends, and the guest's GRO merges what it receives.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "libqos/rig.h"
#include "libqtest.h"
#include "netns.h"

#define PEER_IP     "10.9.0.1"
#define GUEST_IP    "10.9.0.2"
#define PORT        5201
#define STREAM      (8u << 20)
#define TAP         "ibtcp0"

typedef struct GuestNs {
    pid_t holder;           /* a process that keeps the namespace */
    int fd;                 /* /proc/PID/ns/net */
} GuestNs;

/* A second namespace for the TAP's side, held by a child that waits. */
static void guest_ns_create(GuestNs *ns)
{
    g_autofree char *path = NULL;
    int ready[2];
    char c;

    g_assert_cmpint(pipe(ready), ==, 0);
    ns->holder = fork();
    g_assert_cmpint(ns->holder, >=, 0);
    if (ns->holder == 0) {
        if (unshare(CLONE_NEWNET) < 0 || write(ready[1], "x", 1) != 1) {
            _exit(1);
        }
        pause();
        _exit(0);
    }
    g_assert_cmpint(read(ready[0], &c, 1), ==, 1);
    close(ready[0]);
    close(ready[1]);
    path = g_strdup_printf("/proc/%d/ns/net", ns->holder);
    ns->fd = open(path, O_RDONLY | O_CLOEXEC);
    g_assert_cmpint(ns->fd, >=, 0);
}

static void guest_ns_destroy(GuestNs *ns)
{
    close(ns->fd);
    kill(ns->holder, SIGKILL);
    waitpid(ns->holder, NULL, 0);
}

static void guest_ns_run(GuestNs *ns, const char *cmd)
{
    netns_run("nsenter -t %d -n %s", ns->holder, cmd);
}

static uint8_t stream_byte(size_t i)
{
    return (uint8_t)(i * 31 + (i >> 13));
}

typedef struct Side {
    GuestNs *ns;
    int listener;
    bool receive;           /* the guest's end receives, else it sends */
    size_t done;
} Side;

static void send_stream(int fd)
{
    static uint8_t buf[65536];

    for (size_t off = 0; off < STREAM; ) {
        size_t n = MIN(sizeof(buf), STREAM - off);

        for (size_t i = 0; i < n; i++) {
            buf[i] = stream_byte(off + i);
        }
        for (size_t k = 0; k < n; ) {
            ssize_t w = send(fd, buf + k, n - k, 0);

            g_assert_cmpint(w, >, 0);
            k += w;
        }
        off += n;
    }
}

/* Reads the whole stream and checks every byte; returns how many came. */
static size_t receive_stream(int fd)
{
    static uint8_t buf[65536];
    size_t got = 0;
    ssize_t n;

    while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) {
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] != stream_byte(got + i)) {
                g_error("stream byte %zu: %#x", got + i, buf[i]);
            }
        }
        got += n;
    }
    return got;
}

/* The guest's end, in the guest's namespace. */
static gpointer guest_side(gpointer opaque)
{
    Side *s = opaque;
    int fd = accept(s->listener, NULL, NULL);

    g_assert_cmpint(fd, >=, 0);
    if (s->receive) {
        s->done = receive_stream(fd);
    } else {
        send_stream(fd);
        s->done = STREAM;
    }
    close(fd);
    return NULL;
}

static int guest_listen(GuestNs *ns)
{
    struct sockaddr_in a = { .sin_family = AF_INET,
                             .sin_port = htons(PORT) };
    int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    int fd;

    /* The socket belongs to the namespace it is made in. */
    g_assert_cmpint(setns(ns->fd, CLONE_NEWNET), ==, 0);
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    g_assert_cmpint(setns(self, CLONE_NEWNET), ==, 0);
    close(self);
    inet_pton(AF_INET, GUEST_IP, &a.sin_addr);
    g_assert_cmpint(setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &(int){ 1 },
                               sizeof(int)), ==, 0);
    g_assert_cmpint(bind(fd, (struct sockaddr *)&a, sizeof(a)), ==, 0);
    g_assert_cmpint(listen(fd, 1), ==, 0);
    return fd;
}

static int peer_connect(void)
{
    struct sockaddr_in a = { .sin_family = AF_INET,
                             .sin_port = htons(PORT) };
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    inet_pton(AF_INET, GUEST_IP, &a.sin_addr);
    g_assert_cmpint(connect(fd, (struct sockaddr *)&a, sizeof(a)), ==, 0);
    return fd;
}

/* One stream of STREAM bytes, peer to guest or guest to peer. */
static void stream_once(GuestNs *ns, bool to_guest)
{
    Side s = { .ns = ns, .listener = guest_listen(ns), .receive = to_guest };
    GThread *t = g_thread_new("guest-side", guest_side, &s);
    int fd = peer_connect();

    if (to_guest) {
        send_stream(fd);
        shutdown(fd, SHUT_WR);
        g_thread_join(t);
    } else {
        g_assert_cmpuint(receive_stream(fd), ==, STREAM);
        g_thread_join(t);
    }
    g_assert_cmpuint(s.done, ==, STREAM);
    close(fd);
    close(s.listener);
}

static void rig_up(QRig *r, VethPair *v, GuestNs *ns, const char *guest)
{
    g_autofree char *netdev = NULL, *extra = NULL;

    veth_pair_create(v, 1);
    netns_run("ip addr add " PEER_IP "/24 dev %s", v->peer);
    netns_run("ip tuntap add dev " TAP " mode tap");
    netdev = g_strdup_printf("af-xdp,id=n0,ifname=%s,mode=native", v->dut);
    extra = g_strdup_printf("-guest ibmveth,id=g0,dev=net0,fwd=tap,"
                            "ifname=" TAP ",%s", guest);
    qrig_init(r);
    qrig_start(r, &(QRigOpts){ .netdev = netdev, .nic = ",id=net0",
                               .extra = extra });
    guest_ns_create(ns);
    netns_run("ip link set " TAP " netns %d", ns->holder);
    guest_ns_run(ns, "ip link set lo up");
    guest_ns_run(ns, "ip link set " TAP " address 52:54:00:12:34:56 up");
    guest_ns_run(ns, "ip addr add " GUEST_IP "/24 dev " TAP);
}

static void rig_down(QRig *r, VethPair *v, GuestNs *ns)
{
    qrig_stop(r);
    guest_ns_destroy(ns);
    veth_pair_destroy(v);
}

static gint64 stat(QRig *r, const char *path)
{
    return qrig_stat(r->qts, path);
}

static void test_offloads_both_ways(void)
{
    GuestNs ns;
    VethPair v;
    QRig r;

    if (!netns_enter_private_or_skip()) {
        return;
    }
    rig_up(&r, &v, &ns, "offloads=on");
    stream_once(&ns, true);
    stream_once(&ns, false);
    g_test_message("device: rx-csum-partial %" G_GINT64_FORMAT
                   ", rx-lro-frames %" G_GINT64_FORMAT " (%" G_GINT64_FORMAT
                   " segments), tx-segmented %" G_GINT64_FORMAT
                   "; guest: gro %" G_GINT64_FORMAT " into %" G_GINT64_FORMAT
                   ", tx-large-sends %" G_GINT64_FORMAT,
                   stat(&r, "nic.device.rx-csum-partial"),
                   stat(&r, "nic.device.rx-lro-frames"),
                   stat(&r, "nic.device.rx-lro-segments"),
                   stat(&r, "nic.device.tx-segmented"),
                   stat(&r, "guest.offloads.gro-merged"),
                   stat(&r, "guest.offloads.gro-packets"),
                   stat(&r, "guest.offloads.tx-large-sends"));
    /* The peer's veth left its checksums partial: the device said so. */
    g_assert_cmpint(stat(&r, "nic.device.rx-csum-partial"), >, 0);
    g_assert_cmpint(stat(&r, "guest.offloads.rx-csum-good"), >, 0);
    /* The guest's stack sent large segments; the device cut them. */
    g_assert_cmpint(stat(&r, "guest.offloads.tx-large-sends"), >, 0);
    g_assert_cmpint(stat(&r, "nic.device.tx-segmented"), ==,
                    stat(&r, "guest.offloads.tx-large-sends"));
    g_assert_cmpint(stat(&r, "guest.offloads.tx-csum-offloaded"), >, 0);
    /* Received segments went up merged, by the device or by GRO. */
    g_assert_cmpint(stat(&r, "nic.device.rx-lro-frames") +
                    stat(&r, "guest.offloads.gro-merged"), >, 0);
    g_assert_cmpint(stat(&r, "guest.drops.tap-write"), ==, 0);
    g_assert_cmpint(stat(&r, "guest.drops.tx-bad-offload"), ==, 0);
    rig_down(&r, &v, &ns);
}

/* Without offloads the peer must checksum in software, and the stream
 * still goes both ways: GRO checks every checksum itself. */
static void test_no_offloads(void)
{
    GuestNs ns;
    VethPair v;
    QRig r;

    if (!netns_enter_private_or_skip()) {
        return;
    }
    rig_up(&r, &v, &ns, "offloads=off");
    netns_run("ethtool -K %s tx off", v.peer);
    stream_once(&ns, true);
    stream_once(&ns, false);
    g_assert_cmpint(stat(&r, "nic.device.attributes") & 0x10006, ==, 0);
    g_assert_cmpint(stat(&r, "guest.offloads.tx-large-sends"), ==, 0);
    g_assert_cmpint(stat(&r, "guest.offloads.rx-csum-good"), ==, 0);
    g_assert_cmpint(stat(&r, "guest.offloads.gro-csum-checked"), >, 0);
    g_assert_cmpint(stat(&r, "guest.offloads.gro-merged"), >, 0);
    rig_down(&r, &v, &ns);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/guest-tcp/offloads-both-ways", test_offloads_both_ways);
    g_test_add_func("/guest-tcp/no-offloads", test_no_offloads);
    return g_test_run();
}
