/*
 * Network namespaces, veth pairs and packet sockets for the af-xdp suites.
 */
#include "netns.h"
#include "libqtest.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <linux/if_ether.h>
#include <linux/if_link.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static bool write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    bool ok = fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text);

    if (fd >= 0) {
        close(fd);
    }
    return ok;
}

bool netns_enter_private(char **why)
{
    if (geteuid() != 0) {
        *why = g_strdup("needs root (CAP_SYS_ADMIN for a network namespace, "
                        "CAP_NET_ADMIN and CAP_BPF for XDP)");
        return false;
    }
    if (unshare(CLONE_NEWNET) != 0) {
        *why = g_strdup_printf("cannot create a network namespace: %s",
                               g_strerror(errno));
        return false;
    }
    /* /proc/sys/net follows the namespace of whoever opens it. */
    write_file("/proc/sys/net/ipv6/conf/all/disable_ipv6", "1");
    write_file("/proc/sys/net/ipv6/conf/default/disable_ipv6", "1");
    netns_run("ip link set lo up");
    return true;
}

bool netns_enter_private_or_skip(void)
{
    g_autofree char *why = NULL;

    if (!netns_enter_private(&why)) {
        g_test_skip(why);
        return false;
    }
    return true;
}

static char *skip_all_reason;

static void skip_all(void)
{
    g_test_skip(skip_all_reason);
}

bool netns_enter_private_or_skip_all(const char *path)
{
    if (netns_enter_private(&skip_all_reason)) {
        return true;
    }
    g_test_add_func(path, skip_all);
    return false;
}

static int run_status(const char *cmd, char **err)
{
    g_auto(GStrv) argv = NULL;
    g_autoptr(GError) error = NULL;
    int status;

    g_assert_true(g_shell_parse_argv(cmd, NULL, &argv, &error));
    g_assert_true(g_spawn_sync(NULL, argv, NULL, G_SPAWN_SEARCH_PATH, NULL,
                               NULL, NULL, err, &status, &error));
    return status;
}

void netns_run(const char *fmt, ...)
{
    g_autofree char *cmd = NULL;
    g_autofree char *err = NULL;
    va_list ap;
    int status;

    va_start(ap, fmt);
    cmd = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    status = run_status(cmd, &err);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        g_error("'%s' failed: %s", cmd, err);
    }
}

void veth_pair_create(VethPair *p, unsigned queues)
{
    static unsigned n;

    g_snprintf(p->dut, sizeof(p->dut), "ixd%u", n);
    g_snprintf(p->peer, sizeof(p->peer), "ixp%u", n++);
    p->queues = queues;
    veth_pair_recreate(p);
}

void veth_pair_recreate(VethPair *p)
{
    netns_run("ip link add %s numrxqueues %u numtxqueues %u type veth peer "
              "name %s numrxqueues %u numtxqueues %u", p->dut, p->queues,
              p->queues, p->peer, p->queues, p->queues);
    netns_run("ip link set %s up", p->dut);
    netns_run("ip link set %s up", p->peer);
}

void veth_pair_destroy(VethPair *p)
{
    g_autofree char *cmd = g_strdup_printf("ip link del %s", p->dut);
    g_autofree char *err = NULL;

    if (veth_ifindex(p->dut)) {
        run_status(cmd, &err);
    }
}

unsigned veth_ifindex(const char *ifname)
{
    return if_nametoindex(ifname);
}

static bool same_file(int a, int b)
{
    struct stat sa, sb;

    g_assert_cmpint(fstat(a, &sa), ==, 0);
    g_assert_cmpint(fstat(b, &sb), ==, 0);
    return sa.st_ino == sb.st_ino && sa.st_dev == sb.st_dev;
}

pid_t process_thread(pid_t pid, const char *name)
{
    g_autofree char *dir = g_strdup_printf("/proc/%d/task", (int)pid);
    g_autofree char *want = g_strndup(name, 15);
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    const char *tid;
    pid_t found = -1;

    g_assert_nonnull(d);
    while ((tid = g_dir_read_name(d))) {
        g_autofree char *path = g_strdup_printf("%s/%s/comm", dir, tid);
        g_autofree char *comm = NULL;

        if (g_file_get_contents(path, &comm, NULL, NULL) &&
            g_str_has_prefix(comm, want)) {
            g_assert_cmpint(found, ==, -1);
            found = atoi(tid);
        }
    }
    if (found < 0) {
        g_error("no thread named %s in %s", want, dir);
    }
    return found;
}

int process_xsk(pid_t pid, const int *skip, unsigned nskip, int *fd_there)
{
    g_autofree char *dir = g_strdup_printf("/proc/%d/fd", pid);
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    int pidfd = syscall(SYS_pidfd_open, pid, 0), found = -1;
    const char *name;

    g_assert_nonnull(d);
    g_assert_cmpint(pidfd, >=, 0);
    while (found < 0 && (name = g_dir_read_name(d))) {
        int copy = syscall(SYS_pidfd_getfd, pidfd, atoi(name), 0);
        int domain = 0;
        socklen_t len = sizeof(domain);
        bool skipped = false;

        if (copy < 0) {
            continue;
        }
        for (unsigned i = 0; i < nskip; i++) {
            skipped |= same_file(copy, skip[i]);
        }
        if (!skipped && !getsockopt(copy, SOL_SOCKET, SO_DOMAIN, &domain,
                                    &len) && domain == AF_XDP) {
            found = copy;
            *fd_there = atoi(name);
        } else {
            close(copy);
        }
    }
    close(pidfd);
    g_assert_cmpint(found, >=, 0);
    return found;
}

int packet_socket_open(const char *ifname)
{
    return packet_socket_open_proto(ifname, ETH_P_ALL);
}

int packet_socket_open_proto(const char *ifname, uint16_t proto)
{
    struct sockaddr_ll sll = {
        .sll_family = AF_PACKET, .sll_protocol = htons(proto),
        .sll_ifindex = if_nametoindex(ifname),
    };
    int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(proto));
    int one = 1;

    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpuint(sll.sll_ifindex, !=, 0);
    g_assert_cmpint(bind(fd, (struct sockaddr *)&sll, sizeof(sll)), ==, 0);
    /* Straight to the driver: the tx queue (and so veth's rx queue on
     * the other end) is then the sending CPU's. */
    g_assert_cmpint(setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one,
                               sizeof(one)), ==, 0);
    return fd;
}

unsigned packet_socket_drops(int fd)
{
    struct tpacket_stats st = { 0 };
    socklen_t len = sizeof(st);

    g_assert_cmpint(getsockopt(fd, SOL_PACKET, PACKET_STATISTICS, &st, &len),
                    ==, 0);
    return st.tp_drops;
}

bool packet_send(int fd, const void *frame, size_t len)
{
    return send(fd, frame, len, 0) == (ssize_t)len;
}

ssize_t packet_recv(int fd, uint16_t ethertype, void *buf, size_t max,
                    int timeout_ms)
{
    gint64 deadline = g_get_monotonic_time() + timeout_ms * 1000LL;
    struct pollfd pfd = { .fd = fd, .events = POLLIN };

    for (;;) {
        gint64 left = (deadline - g_get_monotonic_time()) / 1000;
        struct sockaddr_ll from;
        socklen_t fromlen = sizeof(from);
        ssize_t n;

        if (left < 0 || poll(&pfd, 1, left) <= 0) {
            return -1;
        }
        n = recvfrom(fd, buf, max, 0, (struct sockaddr *)&from, &fromlen);
        /* Frames this socket sent come back as outgoing; skip them. */
        if (n >= 14 && from.sll_pkttype != PACKET_OUTGOING &&
            (((uint8_t *)buf)[12] << 8 | ((uint8_t *)buf)[13]) == ethertype) {
            return n;
        }
    }
}

void netns_bridge_create(const char *name)
{
    /* Without snooping it joins no group (224.0.0.106) and so sends no
     * IGMP of its own, which would reach every port whatever their
     * flood flags say. */
    netns_run("ip link add %s type bridge stp_state 0 mcast_snooping 0",
              name);
    netns_run("ip link set %s up", name);
}

void netns_bridge_add_port(const char *bridge, const char *ifname,
                           bool flood, bool bcast)
{
    netns_run("ip link set %s master %s", ifname, bridge);
    netns_run("ip link set %s type bridge_slave flood %s bcast_flood %s "
              "mcast_flood %s", ifname, flood ? "on" : "off",
              bcast ? "on" : "off", bcast ? "on" : "off");
}

/* getifaddrs() asks the kernel over netlink, so it sees this process's
 * namespace; /sys/class/net shows the one sysfs was mounted in. */
IfDrops netns_if_drops(const char *ifname)
{
    struct ifaddrs *list, *i;
    IfDrops drops = { 0 };
    bool found = false;

    g_assert_cmpint(getifaddrs(&list), ==, 0);
    for (i = list; i; i = i->ifa_next) {
        if (i->ifa_addr && i->ifa_addr->sa_family == AF_PACKET &&
            i->ifa_data && !strcmp(i->ifa_name, ifname)) {
            const struct rtnl_link_stats *st = i->ifa_data;

            drops = (IfDrops){ st->rx_dropped, st->tx_dropped };
            found = true;
        }
    }
    freeifaddrs(list);
    g_assert_true(found);
    return drops;
}

bool pin_to_cpu(int cpu)
{
    cpu_set_t set;

    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof(set), &set) == 0;
}

static gpointer packet_flood_run(gpointer opaque)
{
    PacketFlood *f = opaque;
    uint8_t frame[PACKET_FLOOD_MAX];

    for (guint64 seq = 0; !__atomic_load_n(&f->stop, __ATOMIC_ACQUIRE);
         seq++) {
        if (packet_send(f->fd, frame, f->build(frame, seq))) {
            __atomic_add_fetch(&f->sent, 1, __ATOMIC_RELEASE);
        }
        g_usleep(f->pace_us);
    }
    return NULL;
}

static bool packet_flood_flowing(void *opaque)
{
    PacketFlood *f = opaque;

    return __atomic_load_n(&f->sent, __ATOMIC_ACQUIRE) > 0;
}

void packet_flood_start(PacketFlood *f, int fd, PacketFloodFrame build,
                        unsigned pace_us)
{
    *f = (PacketFlood){ .fd = fd, .build = build, .pace_us = pace_us };
    f->thread = g_thread_new("flood", packet_flood_run, f);
    /* Frames flow before anything changes, however late the thread is
     * scheduled on a loaded machine. */
    qtest_wait_until(packet_flood_flowing, f, QTEST_WAIT_S,
                     "the flood thread to send its first frame");
}

guint64 packet_flood_stop(PacketFlood *f)
{
    __atomic_store_n(&f->stop, true, __ATOMIC_RELEASE);
    g_thread_join(f->thread);
    return __atomic_load_n(&f->sent, __ATOMIC_ACQUIRE);
}
