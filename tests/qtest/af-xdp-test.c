/*
 * -netdev af-xdp on real AF_XDP sockets: a veth pair in a network
 * namespace of the test's own, frames sent from the peer end with an
 * AF_PACKET socket reach guest buffers through spapr-vlan (the libqos
 * ibmveth model is the guest), and frames the guest sends are captured on
 * the peer.  Native and skb mode, two queues, unprivileged sockets passed
 * with sock-fds, every refusal of a bad setup, and the interface's life.
 * Jumbo frames go both ways through the built-in guest echoing them
 * (fwd=macswap), in chains of UMEM frames (multi-buffer).
 */
#include "libqtest.h"
#include "libqos/eth-frames.h"
#include "libqos/ibmveth.h"
#include "libqos/rig.h"
#include "netns.h"
#include "net/link-watch.h"
#include "net/net.h"
#include "net/xdp-meta.h"
#include "net/xdp-prog.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <linux/if_link.h>
#include <linux/if_packet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#define UNIT            QRIG_UNIT
#define GUEST_MAC       QRIG_MAC
#define ETHERTYPE_TEST  0x88b5
/* Every capability gone, also across the exec of illan. */
#define DROP_ALL_CAPS   "setpriv --inh-caps=-all --bounding-set=-all"

static const uint8_t peer_mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x02 };
static const size_t frame_sizes[] = { 60, 600, 1514 };

typedef struct Rig {
    VethPair veth;
    QRig q;                 /* q.peer: AF_PACKET on the peer end */
} Rig;

/* Frames. */

/* A test frame to @dst of @len bytes; bytes 14-15 carry @tag. */
static void build_frame(uint8_t *f, size_t len, const uint8_t *dst,
                        const uint8_t *src, uint16_t tag)
{
    eth_frame_tagged(f, len, dst, src, ETHERTYPE_TEST, tag,
                     ETH_FRAME_TAG_FIRST);
}

static size_t tag_size(uint16_t tag)
{
    return frame_sizes[tag % G_N_ELEMENTS(frame_sizes)];
}

typedef struct PacketSend {
    int fd;
    const uint8_t *frame;
    size_t len;
} PacketSend;

static bool packet_sent(void *opaque)
{
    PacketSend *p = opaque;

    return packet_send(p->fd, p->frame, p->len);
}

/* Sends frames tagged @first.. from the peer end. */
static void send_frames(Rig *r, uint16_t first, unsigned n)
{
    uint8_t f[1514];

    for (unsigned i = 0; i < n; i++) {
        uint16_t tag = first + i;
        PacketSend p = { r->q.peer, f, tag_size(tag) };

        build_frame(f, tag_size(tag), qrig_mac, peer_mac, tag);
        /* A link that just came up may refuse for a moment. */
        qtest_wait_until(packet_sent, &p, QTEST_WAIT_S,
                         "%s to take frame %u", r->veth.peer, tag);
    }
}

/* The next frame in the guest's rx queue; checks its bytes, returns its
 * tag and buffer size. */
static uint16_t guest_receive(Rig *r, uint32_t *buf_size)
{
    static uint8_t data[65536];
    IbmvethRxEntry e = qibmveth_wait_rx(r->q.guest, data, sizeof(data));
    uint16_t tag = eth_frame_assert_tagged(data, e.len, qrig_mac, peer_mac,
                                           ETHERTYPE_TEST,
                                           ETH_FRAME_TAG_FIRST);

    g_assert_cmpuint(e.len, ==, tag_size(tag));
    *buf_size = e.buf_size;
    return tag;
}

/* Receives @n frames tagged @first.. in order, each in the smallest
 * Linux pool that holds it. */
static void guest_receive_in_order(Rig *r, uint16_t first, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        uint32_t buf_size;
        uint16_t tag = guest_receive(r, &buf_size);

        g_assert_cmpuint(tag, ==, first + i);
        g_assert_cmpuint(buf_size, ==, tag_size(tag) + 8 <= 512 ? 512 : 2048);
    }
}

/* The guest sends @n frames; each must arrive on the peer, byte-exact. */
static void guest_send_captured(Rig *r, unsigned n)
{
    uint8_t f[1514], got[2048];

    for (unsigned i = 0; i < n; i++) {
        size_t len = tag_size(i);
        ssize_t rn;

        build_frame(f, len, peer_mac, qrig_mac, 1000 + i);
        g_assert_cmpint(qibmveth_send(r->q.guest, f, len), ==, H_SUCCESS);
        rn = packet_recv(r->q.peer, ETHERTYPE_TEST, got, sizeof(got), 5000);
        g_assert_cmpint(rn, ==, (ssize_t)len);
        g_assert_cmpmem(got, len, f, len);
    }
}

/* The rig. */

static void rig_start_wrapped(Rig *r, const char *wrapper,
                              const char *netdev_opts)
{
    g_autofree char *netdev = g_strdup_printf("af-xdp,id=n0,ifname=%s%s",
                                              r->veth.dut, netdev_opts);

    qrig_init(&r->q);
    qrig_start(&r->q, &(QRigOpts){ .wrapper = wrapper, .mem = "512M",
                                   .netdev = netdev });
    r->q.peer = packet_socket_open(r->veth.peer);
}

static void rig_start(Rig *r, unsigned queues, const char *netdev_opts)
{
    veth_pair_create(&r->veth, queues);
    rig_start_wrapped(r, NULL, netdev_opts);
}

static void rig_stop(Rig *r)
{
    qrig_stop(&r->q);
    veth_pair_destroy(&r->veth);
}

/* Statistics. */

/* x-query-net-stats; *@nd is netdev n0 and *@nic the LAN, both owned by
 * the returned reply. */
static JsonObject *query_stats(Rig *r, JsonObject **nd, JsonObject **nic)
{
    JsonObject *st = qrig_net_stats(r->q.qts);

    *nd = qrig_stats_netdev(st, "n0");
    if (nic) {
        *nic = qrig_stats_nic(st);
    }
    return st;
}

/* Waits until netdev n0 has seen @frames frames. */
static void wait_rx_frames(Rig *r, gint64 frames)
{
    qrig_wait_stat(r->q.qts, "netdev.rx.frames", frames);
}

static JsonObject *backend_queue(JsonObject *nd, guint i)
{
    JsonObject *b = json_object_get_object_member(nd, "backend");

    g_assert_nonnull(b);
    return json_array_get_object_element(
        json_object_get_array_member(b, "queues"), i);
}

static const char *backend_str(JsonObject *nd, const char *key)
{
    return json_object_get_string_member(
        json_object_get_object_member(nd, "backend"), key);
}

static void qmp_ok(Rig *r, const char *cmd)
{
    g_autoptr(JsonObject) rsp = qtest_qmp(r->q.qts, "%s", cmd);

    g_assert_true(json_object_has_member(rsp, "return"));
}

/* Receive and send in one mode: frames before the guest opens, frames it
 * receives, frames while the VM is stopped; then the guest sends. */
static void check_rx_tx(const char *mode, const char *extra)
{
    g_autofree char *opts = g_strdup_printf(",mode=%s%s", mode, extra);
    JsonObject *nd, *nic;
    g_autoptr(JsonObject) rsp = NULL;
    Rig r = { 0 };

    rig_start(&r, 1, opts);
    send_frames(&r, 0, 5);
    wait_rx_frames(&r, 5);
    qrig_open_guest(&r.q, NULL);
    send_frames(&r, 100, 60);
    guest_receive_in_order(&r, 100, 60);
    /* Stopped, the I/O thread is parked: the frames wait in the AF_XDP
     * ring, whatever the timing, and arrive in order after cont. */
    qmp_ok(&r, "{'execute': 'stop'}");
    send_frames(&r, 200, 7);
    rsp = query_stats(&r, &nd, &nic);
    g_assert_cmpint(qjson_int(nd, "rx.frames"), ==, 65);
    g_clear_pointer(&rsp, json_object_unref);
    qmp_ok(&r, "{'execute': 'cont'}");
    guest_receive_in_order(&r, 200, 7);
    guest_send_captured(&r, 20);

    rsp = query_stats(&r, &nd, &nic);
    g_assert_cmpstr(backend_str(nd, "mode"), ==, mode);
    g_assert_cmpstr(backend_str(nd, "link"), ==, "up");
    g_assert_cmpint(qjson_int(nd, "rx.frames"), ==, 72);
    g_assert_cmpint(qjson_int(nd, "rx.delivered"), ==, 67);
    g_assert_cmpint(qjson_int(nd, "rx.dropped.not-registered"), ==, 5);
    g_assert_cmpint(qjson_int(nd, "rx.dropped.vm-stopped"), ==, 0);
    g_assert_cmpint(qjson_int(nd, "rx.delivered") +
                    qjson_sum(nd, "rx.dropped"), ==, 72);
    g_assert_cmpint(qjson_int(nic, "device.rx-frames"), ==, 67);
    g_assert_cmpint(qjson_int(backend_queue(nd, 0), "rx-frames"), ==, 72);
    g_assert_cmpint(qjson_int(backend_queue(nd, 0), "rx_dropped"), ==, 0);
    g_assert_cmpint(qjson_int(nd, "tx.frames"), ==, 20);
    g_assert_cmpint(qjson_int(backend_queue(nd, 0), "tx-frames"), ==, 20);
    g_test_message("%s%s: peer sent 72, netdev rx 72 = delivered 67 + "
                   "not-registered 5, 7 of them held in the ring while "
                   "stopped; guest sent 20, peer captured 20", mode, extra);
    rig_stop(&r);
}

/* What the kernel counts as received on @ifname (/proc/net/dev is this
 * namespace's): with native XDP, veth counts each frame its program saw,
 * in the NAPI poll that puts it in the socket's ring. */
static guint64 if_rx_packets(const char *ifname)
{
    g_autofree char *text = NULL;
    g_auto(GStrv) lines = NULL;
    guint64 bytes, packets;

    g_assert_true(g_file_get_contents("/proc/net/dev", &text, NULL, NULL));
    lines = g_strsplit(text, "\n", -1);
    for (guint i = 0; lines[i]; i++) {
        char *colon = strchr(lines[i], ':');

        if (colon) {
            g_autofree char *name = g_strndup(lines[i], colon - lines[i]);

            if (!strcmp(g_strstrip(name), ifname) &&
                sscanf(colon + 1, "%" SCNu64 " %" SCNu64, &bytes,
                       &packets) == 2) {
                return packets;
            }
        }
    }
    g_error("no %s in /proc/net/dev", ifname);
}

typedef struct RxCount {
    const char *ifname;
    guint64 want;
} RxCount;

static bool if_rx_reached(void *opaque)
{
    RxCount *c = opaque;

    return if_rx_packets(c->ifname) >= c->want;
}

static bool load_slept(void *opaque)
{
    JsonObject *nd, *st = query_stats(opaque, &nd, NULL);
    bool slept = qjson_int(backend_queue(nd, 0), "load-sleeps") > 0;

    json_object_unref(st);
    return slept;
}

/*
 * Frames that wait in the socket's ring go to the guest as one run of
 * batches with one interrupt, not one per batch; the I/O thread, having
 * taken more than a batch, then sleeps on its timer, not on the socket.
 * That sleep is the copy's (a lending queue never takes it): guest-umem=off.
 */
static void test_interrupt_per_run(void)
{
    enum { FRAMES = 200, LAN_IRQ = 0 };
    uint8_t f[60];
    RxCount in = { 0 };
    Rig r = { 0 };

    rig_start(&r, 1, ",mode=native,guest-umem=off");
    qrig_open_guest(&r.q, NULL);
    qtest_irq_intercept_out(r.q.qts, "l-lan@71000000");
    qibmveth_set_irq(r.q.guest, true);
    qmp_ok(&r, "{'execute': 'stop'}");
    in = (RxCount){ r.veth.dut, if_rx_packets(r.veth.dut) + FRAMES };
    for (unsigned i = 0; i < FRAMES; i++) {
        build_frame(f, sizeof(f), qrig_mac, peer_mac, i);
        g_assert_true(packet_send(r.q.peer, f, sizeof(f)));
    }
    qtest_wait_until(if_rx_reached, &in, QTEST_WAIT_S,
                     "%s to take %u frames", r.veth.dut, FRAMES);
    qmp_ok(&r, "{'execute': 'cont'}");
    wait_rx_frames(&r, FRAMES);
    g_assert_cmpint(qrig_stat(r.q.qts, "netdev.rx.batches"), >=,
                    FRAMES / NET_BATCH_MAX + 1);
    g_assert_cmpuint(qtest_irq_raise_count(r.q.qts, LAN_IRQ), ==, 1);
    g_assert_cmpint(qrig_stat(r.q.qts, "nic.device.rx-interrupts"), ==, 1);
    qtest_wait_until(load_slept, &r, QTEST_WAIT_S,
                     "the I/O thread to sleep on its timer");
    for (unsigned i = 0; i < FRAMES; i++) {
        static uint8_t data[2048];
        IbmvethRxEntry e = qibmveth_wait_rx(r.q.guest, data, sizeof(data));

        g_assert_cmpuint(e.len, ==, sizeof(f));
        g_assert_cmpuint(eth_frame_assert_tagged(data, e.len, qrig_mac,
                                                 peer_mac, ETHERTYPE_TEST,
                                                 ETH_FRAME_TAG_FIRST), ==, i);
    }
    rig_stop(&r);
}

static void test_native(void)
{
    check_rx_tx("native", "");
}

static void test_skb(void)
{
    check_rx_tx("skb", ",force-copy=on");
}

/* The I/O thread spinning instead of sleeping, with small batches. */
static void test_spin(void)
{
    check_rx_tx("native", ",spin=on,batch=8");
}

static void test_busy_poll(void)
{
    check_rx_tx("native", ",spin=on,busy-poll=20,batch=16");
}

/* The scheduling policy of illan's I/O thread ("xsk-" and the
 * interface), once the thread has set it: its queue's io-sched says so. */
static int io_thread_policy(Rig *r, const char *want_stat)
{
    g_autofree char *io_name = g_strdup_printf("xsk-%s", r->veth.dut);
    JsonObject *nd, *st = query_stats(r, &nd, NULL);

    g_assert_cmpstr(json_object_get_string_member(backend_queue(nd, 0),
                                                  "io-sched"), ==, want_stat);
    json_object_unref(st);
    return sched_getscheduler(process_thread(qtest_pid(r->q.qts), io_name));
}

/*
 * io-sched: by default the I/O thread keeps illan's SCHED_OTHER; with
 * io-sched=batch it runs as SCHED_BATCH (its wake-ups do not preempt a
 * vCPU on its CPU), unless illan was started with a real-time policy,
 * which stays.  Frames still flow both ways in each.
 */
static void check_io_sched(const char *wrapper, const char *opts,
                           int want, const char *want_stat)
{
    Rig r = { 0 };

    veth_pair_create(&r.veth, 1);
    rig_start_wrapped(&r, wrapper, opts);
    qrig_open_guest(&r.q, NULL);
    send_frames(&r, 100, 10);
    guest_receive_in_order(&r, 100, 10);
    g_assert_cmpint(io_thread_policy(&r, want_stat), ==, want);
    guest_send_captured(&r, 5);
    rig_stop(&r);
}

static void test_io_sched(void)
{
    check_io_sched(NULL, ",mode=native", SCHED_OTHER, "other");
    check_io_sched(NULL, ",mode=native,io-sched=batch", SCHED_BATCH,
                   "batch");
}

static void test_io_sched_real_time(void)
{
    int status = -1;

    /* Root may still be refused it: no CAP_SYS_NICE in a container, or
     * no real-time runtime in its cgroup. */
    if (!g_spawn_command_line_sync("chrt -f 1 true", NULL, NULL, &status,
                                   NULL) ||
        !g_spawn_check_wait_status(status, NULL)) {
        g_test_skip("this process may not run a thread as SCHED_FIFO "
                    "(chrt -f 1 true failed)");
        return;
    }
    check_io_sched("chrt -f 1", ",mode=native,io-sched=batch", SCHED_FIFO,
                   "fifo");
}

/*
 * A guest with every buffer used: the frames wait in the AF_XDP ring
 * instead of being dropped as no-buffer, and each replenish lets as many
 * through as it posted, in order.
 */
static void test_held_without_buffers(void)
{
    enum { POSTED = 8, HELD = 12 };
    IbmvethConf conf;
    JsonObject *nd, *nic;
    g_autoptr(JsonObject) rsp = NULL;
    Rig r = { 0 };
    uint16_t next = 0;

    ibmveth_conf_linux_defaults(&conf, UNIT);
    conf.mac = GUEST_MAC;
    for (unsigned i = 0; i < IBMVETH_NUM_POOLS; i++) {
        conf.pool_active[i] = i == 1;
    }
    conf.pool_count[1] = POSTED;
    rig_start(&r, 1, ",mode=native");
    qrig_open_guest(&r.q, &conf);
    send_frames(&r, 0, POSTED);
    wait_rx_frames(&r, POSTED);
    send_frames(&r, POSTED, HELD);
    /* The I/O thread asks for room only when its ring has frames: once
     * it has found none, the frames are in the ring, and stay there. */
    qrig_wait_stat_min(r.q.qts, "nic.device.rx-held", 1);
    rsp = query_stats(&r, &nd, &nic);
    g_assert_cmpint(qjson_int(nd, "rx.frames"), ==, POSTED);
    g_assert_cmpint(qjson_int(nic, "device.rx-held"), >=, 1);
    g_assert_cmpint(qjson_int(nic, "device.rx-bufs-posted"), ==, 0);
    g_clear_pointer(&rsp, json_object_unref);

    while (next < POSTED + HELD) {
        unsigned batch = MIN(POSTED, POSTED + HELD - next);

        for (unsigned i = 0; i < batch; i++) {
            uint32_t buf_size;

            g_assert_cmpuint(guest_receive(&r, &buf_size), ==, next++);
            g_assert_cmpuint(buf_size, ==, 2048);
        }
        g_assert_cmpuint(qibmveth_replenish(r.q.guest), ==, batch);
    }
    wait_rx_frames(&r, POSTED + HELD);
    rsp = query_stats(&r, &nd, &nic);
    g_assert_cmpint(qjson_int(nd, "rx.delivered"), ==, POSTED + HELD);
    g_assert_cmpint(qjson_int(nic, "device.rx-dropped.no-buffer"), ==, 0);
    g_assert_cmpint(qjson_int(backend_queue(nd, 0), "rx_dropped"), ==, 0);
    g_assert_cmpuint(qibmveth_rx_no_buffer(r.q.guest), ==, 0);
    g_test_message("8 buffers posted, 20 frames sent: 12 held in the ring "
                   "(rx-held %" G_GINT64_FORMAT "), all 20 delivered in "
                   "order, 0 dropped", qjson_int(nic, "device.rx-held"));
    rig_stop(&r);
}

/* Two queues: the peer's frames go to the queue of the CPU that sends. */
static void test_two_queues(void)
{
    g_autoptr(JsonObject) rsp = NULL;
    g_autofree bool *seen = g_new0(bool, 100);
    JsonObject *nd;
    cpu_set_t saved;
    Rig r = { 0 };

    if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
        g_test_skip("needs two CPUs: veth picks the rx queue by the "
                    "sending CPU");
        return;
    }
    g_assert_cmpint(sched_getaffinity(0, sizeof(saved), &saved), ==, 0);
    rig_start(&r, 2, ",queues=2");
    qrig_open_guest(&r.q, NULL);
    g_assert_true(pin_to_cpu(0));
    send_frames(&r, 0, 50);
    g_assert_true(pin_to_cpu(1));
    send_frames(&r, 50, 50);
    g_assert_cmpint(sched_setaffinity(0, sizeof(saved), &saved), ==, 0);
    for (unsigned i = 0; i < 100; i++) {
        uint32_t buf_size;
        uint16_t tag = guest_receive(&r, &buf_size);

        g_assert_cmpuint(tag, <, 100);
        g_assert_false(seen[tag]);
        seen[tag] = true;
    }
    rsp = query_stats(&r, &nd, NULL);
    g_assert_cmpint(qjson_int(backend_queue(nd, 0), "queue"), ==, 0);
    g_assert_cmpint(qjson_int(backend_queue(nd, 1), "queue"), ==, 1);
    g_assert_cmpint(qjson_int(backend_queue(nd, 0), "rx-frames"), ==, 50);
    g_assert_cmpint(qjson_int(backend_queue(nd, 1), "rx-frames"), ==, 50);
    g_assert_cmpint(qjson_int(nd, "rx.delivered"), ==, 100);
    g_test_message("queues=2: 50 frames sent from CPU0 arrived on queue 0, "
                   "50 from CPU1 on queue 1, 100 delivered");
    rig_stop(&r);
}

/*
 * queues=all on a veth with four queues: a socket on each, and every
 * frame counted on the queue veth put it on.  veth receives a frame on
 * the queue its peer sent it from, which for a packet socket that goes
 * through the stack is picked by the flow's hash: frames of many UDP
 * flows land on several queues, whatever CPU sends them.
 */
#define ALL_QUEUES      4
#define ALL_FLOWS       64

/* On the peer, through the stack (no PACKET_QDISC_BYPASS, which would
 * pick the queue by the sending CPU); it receives nothing. */
static int flow_socket_open(const char *ifname)
{
    struct sockaddr_ll sll = {
        .sll_family = AF_PACKET, .sll_ifindex = veth_ifindex(ifname),
    };
    int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);

    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(bind(fd, (struct sockaddr *)&sll, sizeof(sll)), ==, 0);
    return fd;
}

/* A 60-byte IPv4/UDP frame of flow @flow: its source port and IP id. */
static void flow_frame(uint8_t *f, uint16_t flow)
{
    eth_frame_udp(f, 60, qrig_mac, peer_mac, flow);
    f[34] = (1024 + flow) >> 8;
    f[35] = (1024 + flow) & 0xff;
}

/* The frames veth's rx queue @queue of @ifname redirected (ethtool -S). */
static gint64 veth_queue_redirects(const char *ifname, unsigned queue)
{
    g_autofree char *cmd = g_strdup_printf("ethtool -S %s", ifname);
    g_autofree char *out = NULL;
    g_autofree char *key = g_strdup_printf("rx_queue_%u_xdp_redirect: ",
                                           queue);
    const char *at;
    int status;

    g_assert_true(g_spawn_command_line_sync(cmd, &out, NULL, &status, NULL));
    g_assert_cmpint(status, ==, 0);
    at = strstr(out, key);
    g_assert_nonnull(at);
    return g_ascii_strtoll(at + strlen(key), NULL, 10);
}

static void test_queues_all(void)
{
    uint8_t sent[ALL_FLOWS][60], got[2048];
    g_autofree bool *seen = g_new0(bool, ALL_FLOWS);
    g_autoptr(JsonObject) rsp = NULL;
    g_autoptr(GString) spread = g_string_new(NULL);
    unsigned busy = 0;
    gint64 total = 0;
    JsonArray *queues;
    JsonObject *nd;
    Rig r = { 0 };
    int fd;

    rig_start(&r, ALL_QUEUES, ",queues=all");
    qrig_open_guest(&r.q, NULL);
    fd = flow_socket_open(r.veth.peer);
    for (unsigned i = 0; i < ALL_FLOWS; i++) {
        flow_frame(sent[i], i);
        g_assert_true(packet_send(fd, sent[i], 60));
    }
    close(fd);
    for (unsigned i = 0; i < ALL_FLOWS; i++) {
        IbmvethRxEntry e = qibmveth_wait_rx(r.q.guest, got, sizeof(got));
        uint16_t flow = got[18] << 8 | got[19];

        g_assert_cmpuint(e.len, ==, 60);
        g_assert_cmpuint(flow, <, ALL_FLOWS);
        g_assert_false(seen[flow]);
        g_assert_cmpmem(got, 60, sent[flow], 60);
        seen[flow] = true;
    }
    guest_send_captured(&r, 3);

    rsp = query_stats(&r, &nd, NULL);
    queues = json_object_get_array_member(
        json_object_get_object_member(nd, "backend"), "queues");
    g_assert_cmpuint(json_array_get_length(queues), ==, ALL_QUEUES);
    for (unsigned q = 0; q < ALL_QUEUES; q++) {
        gint64 frames = qjson_int(backend_queue(nd, q), "rx-frames");

        g_assert_cmpint(qjson_int(backend_queue(nd, q), "queue"), ==, q);
        g_assert_cmpint(frames, ==, veth_queue_redirects(r.veth.dut, q));
        g_string_append_printf(spread, " %" G_GINT64_FORMAT, frames);
        total += frames;
        busy += frames > 0;
    }
    g_assert_cmpint(total, ==, ALL_FLOWS);
    g_assert_cmpuint(busy, >=, 2);
    g_assert_cmpint(qjson_int(nd, "rx.delivered"), ==, ALL_FLOWS);
    g_test_message("queues=all on %d queues: %d flows arrived as%s, each "
                   "on the queue veth redirected it from", ALL_QUEUES,
                   ALL_FLOWS, spread->str);
    rig_stop(&r);
}

/* What a privileged helper does for an unprivileged illan: an AF_XDP
 * socket per queue in the XSK map of a program it attached (illan's own
 * redirect program serves as the helper's). */
typedef struct Helper {
    int xsk_fd;
    XdpRedirect *prog;
} Helper;

static void helper_setup(Helper *h, const char *ifname)
{
    h->prog = xdp_redirect_attach(veth_ifindex(ifname), XDP_FLAGS_DRV_MODE);
    g_assert_nonnull(h->prog);
    /* No FD_CLOEXEC: illan inherits it. */
    h->xsk_fd = socket(AF_XDP, SOCK_RAW, 0);
    g_assert_cmpint(h->xsk_fd, >=, 0);
    g_assert_true(xdp_redirect_add_socket(h->prog, 0, h->xsk_fd));
}

static void helper_teardown(Helper *h)
{
    close(h->xsk_fd);
    xdp_redirect_detach(h->prog);
}

static uint32_t attached_prog(const char *ifname)
{
    uint32_t id = 0;

    g_assert_cmpint(bpf_xdp_query_id(veth_ifindex(ifname), 0, &id), ==, 0);
    return id;
}

/* "CapEff:" of a process, as /proc shows it. */
static char *cap_eff(pid_t pid)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/status", pid);
    g_autofree char *text = NULL;
    char *line;

    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    line = strstr(text, "CapEff:");
    g_assert_nonnull(line);
    return g_strndup(line + 7 + strspn(line + 7, " \t"), 16);
}

static void test_unprivileged_sock_fds(void)
{
    g_autofree char *opts = NULL;
    g_autofree char *caps = NULL;
    g_autoptr(JsonObject) rsp = NULL;
    JsonObject *nd;
    Helper h;
    Rig r = { 0 };

    veth_pair_create(&r.veth, 1);
    helper_setup(&h, r.veth.dut);
    /* 1024 + 512 frames of 4 KiB: 6 MiB, under the default 8 MiB
     * RLIMIT_MEMLOCK an unprivileged process lives with. */
    opts = g_strdup_printf(",inhibit=on,sock-fds=%d,rx-ring-size=1024",
                           h.xsk_fd);
    rig_start_wrapped(&r, DROP_ALL_CAPS, opts);
    caps = cap_eff(qtest_pid(r.q.qts));
    g_assert_cmpstr(caps, ==, "0000000000000000");
    qrig_open_guest(&r.q, NULL);
    send_frames(&r, 0, 30);
    guest_receive_in_order(&r, 0, 30);
    guest_send_captured(&r, 5);
    rsp = query_stats(&r, &nd, NULL);
    g_assert_cmpstr(backend_str(nd, "mode"), ==, "external");
    g_assert_cmpint(qjson_int(nd, "rx.delivered"), ==, 30);
    rig_stop(&r);
    g_test_message("illan with CapEff %s received 30 and sent 5 frames on "
                   "a socket passed with sock-fds", caps);
    helper_teardown(&h);
}

/* sock-fds claims: only sockets handed to illan, each by one netdev. */

/* netdev_add of an af-xdp netdev @id on @ifname with @opts: its error,
 * or NULL if it was added. */
static char *netdev_add_error(Rig *r, const char *id, const char *ifname,
                              const char *opts)
{
    g_autoptr(JsonObject) rsp = qtest_qmp(r->q.qts,
        "{'execute': 'netdev_add', 'arguments': {'type': 'af-xdp', "
        "'id': '%s', 'ifname': '%s', 'inhibit': true%s}}", id, ifname, opts);
    JsonObject *err;

    if (json_object_has_member(rsp, "return")) {
        return NULL;
    }
    err = json_object_get_object_member(rsp, "error");
    g_assert_nonnull(err);
    return g_strdup(json_object_get_string_member(err, "desc"));
}

static void assert_netdev_add_refused(Rig *r, const char *ifname,
                                      const char *opts, const char *want)
{
    g_autofree char *err = netdev_add_error(r, "refused", ifname, opts);

    g_test_message("netdev_add af-xdp%s -> %s", opts, err);
    g_assert_nonnull(err);
    g_assert_nonnull(strstr(err, want));
}

typedef struct NetdevFrames {
    QTestState *qts;
    const char *id;
    gint64 want;
} NetdevFrames;

static bool netdev_frames_reached(void *opaque)
{
    NetdevFrames *w = opaque;
    g_autoptr(JsonObject) st = qrig_net_stats(w->qts);

    return qjson_int(qrig_stats_netdev(st, w->id), "rx.frames") >= w->want;
}

/*
 * sock-fds takes only AF_XDP sockets illan inherited and no netdev took:
 * not n0's own socket (n0 goes on receiving), not one socket for two
 * queues (which a netdev can still take alone after), not the socket
 * another netdev took (which goes on receiving too).
 */
static void test_sock_fds_claims(void)
{
    g_autofree char *opts = NULL;
    g_autofree char *want = NULL;
    g_autofree char *err = NULL;
    NetdevFrames n1 = { .id = "n1", .want = 10 };
    VethPair ext, wide;
    Helper h;
    Rig r = { 0 };
    int spare, inherited[2];
    int own, peer;
    uint8_t f[60];

    veth_pair_create(&ext, 1);
    veth_pair_create(&wide, 2);
    helper_setup(&h, ext.dut);
    spare = socket(AF_XDP, SOCK_RAW, 0);    /* inherited, never taken */
    g_assert_cmpint(spare, >=, 0);
    inherited[0] = h.xsk_fd;
    inherited[1] = spare;
    rig_start(&r, 1, "");
    qrig_open_guest(&r.q, NULL);
    n1.qts = r.q.qts;

    /* n0's own socket: refused, and n0 keeps it. */
    close(process_xsk(qtest_pid(r.q.qts), inherited, 2, &own));
    opts = g_strdup_printf(", 'sock-fds': '%d'", own);
    want = g_strdup_printf("sock-fds: descriptor %d was not handed to "
                           "illan for this: it is one of illan's own "
                           "descriptors", own);
    assert_netdev_add_refused(&r, ext.dut, opts, want);
    send_frames(&r, 0, 20);
    guest_receive_in_order(&r, 0, 20);

    /* One socket for two queues. */
    g_free(opts);
    g_free(want);
    opts = g_strdup_printf(", 'queues': 2, 'sock-fds': '%d:%d'", spare,
                           spare);
    want = g_strdup_printf("sock-fds: descriptor %d is given twice", spare);
    assert_netdev_add_refused(&r, wide.dut, opts, want);
    g_free(opts);
    opts = g_strdup_printf(", 'sock-fds': '%d'", spare);
    err = netdev_add_error(&r, "n2", wide.dut, opts);
    g_assert_null(err);

    /* The helper's socket, taken by n1, is n1's alone. */
    g_free(opts);
    opts = g_strdup_printf(", 'sock-fds': '%d'", h.xsk_fd);
    err = netdev_add_error(&r, "n1", ext.dut, opts);
    g_assert_null(err);
    g_free(want);
    want = g_strdup_printf("sock-fds: descriptor %d was not handed to "
                           "illan for this: another option took it",
                           h.xsk_fd);
    assert_netdev_add_refused(&r, ext.dut, opts, want);
    peer = packet_socket_open_proto(ext.peer, 0);
    for (unsigned i = 0; i < n1.want; i++) {
        PacketSend p = { peer, f, sizeof(f) };

        build_frame(f, sizeof(f), qrig_mac, peer_mac, i);
        qtest_wait_until(packet_sent, &p, QTEST_WAIT_S, "%s to take frame "
                         "%u", ext.peer, i);
    }
    close(peer);
    qtest_wait_until(netdev_frames_reached, &n1, QTEST_WAIT_S,
                     "netdev n1 to receive %" G_GINT64_FORMAT " frames",
                     n1.want);
    g_test_message("n0's own socket %d, socket %d twice (then taken by n2) "
                   "and n1's socket %d refused; n0 and n1 went on "
                   "receiving", own, spare, h.xsk_fd);
    rig_stop(&r);
    close(spare);
    helper_teardown(&h);
    veth_pair_destroy(&wide);
    veth_pair_destroy(&ext);
}

/* XDP hints: the struct our program writes in front of each frame. */

static uint64_t monotonic_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

/* A frame's timestamp, read by its BTF id, lies between the test's own
 * CLOCK_MONOTONIC readings around the frames' sending and receipt
 * (bpf_ktime_get_ns() reads that clock), and so do the delays sampled
 * from it; the driver's own clock, where it has one, is only checked to
 * be set. */
static void check_rx_metadata(const char *mode, const char *want_source)
{
    g_autofree char *opts = g_strdup_printf(",mode=%s,rx-metadata=on", mode);
    g_autoptr(JsonObject) rsp = NULL;
    JsonObject *nd, *q;
    uint64_t before, after, ts, flags;
    Rig r = { 0 };

    rig_start(&r, 1, opts);
    qrig_open_guest(&r.q, NULL);
    before = monotonic_ns();
    send_frames(&r, 0, 4);
    guest_receive_in_order(&r, 0, 4);
    after = monotonic_ns();
    rsp = query_stats(&r, &nd, NULL);
    g_assert_cmpstr(backend_str(nd, "rx-metadata"), ==, want_source);
    q = backend_queue(nd, 0);
    g_assert_cmpint(qjson_int(q, "rx-meta-frames"), ==, 4);
    g_assert_cmpint(qjson_int(q, "rx-meta-foreign"), ==, 0);
    ts = qjson_int(q, "rx-meta-timestamp");
    flags = qjson_int(q, "rx-meta-flags");
    g_assert_true(flags & (ILLAN_XDP_META_TS_KTIME |
                           ILLAN_XDP_META_TS_DEVICE));
    g_assert_cmpuint(ts, >, 0);
    if (flags & ILLAN_XDP_META_TS_KTIME) {
        /* Each batch is sampled once; every frame's delay lies inside
         * the window. */
        g_assert_cmpuint(ts, >=, before);
        g_assert_cmpuint(ts, <=, after);
        g_assert_cmpint(qjson_int(q, "rx-latency.samples"), >=, 1);
        g_assert_cmpint(qjson_int(q, "rx-latency.samples"), <=, 4);
        g_assert_cmpint(qjson_int(q, "rx-latency.p50-ns"), <=,
                        qjson_int(q, "rx-latency.max-ns"));
        g_assert_cmpint(qjson_int(q, "rx-latency.max-ns"), <=,
                        (gint64)(after - before));
    }
    g_test_message("%s: rx-metadata %s, flags %#" PRIx64 ", the last frame "
                   "stamped %" PRIu64 " ns into the test's window of %"
                   PRIu64 " ns; XDP to the device: %" PRId64 " sample(s), "
                   "max %" PRId64 " ns", mode, want_source, flags,
                   ts - before, after - before,
                   qjson_int(q, "rx-latency.samples"),
                   qjson_int(q, "rx-latency.max-ns"));
    rig_stop(&r);
}

/* veth has the rx-metadata kfuncs, for a device-bound program in native
 * mode (its timestamp is the skb's hardware one, absent here, so the
 * program takes bpf_ktime_get_ns()). */
static void test_rx_metadata_native(void)
{
    check_rx_metadata("native", "kfunc");
}

/* In skb mode the kernel refuses a device-bound program: the one that
 * takes the time itself runs, and the copy to the UMEM keeps the
 * metadata in front of the frame. */
static void test_rx_metadata_skb(void)
{
    check_rx_metadata("skb", "ktime");
}

/* A program that writes another struct (the test variant of ours, with
 * a different BTF id): the frames arrive, counted as foreign, and no
 * timestamp is taken from them. */
static void test_rx_metadata_foreign(void)
{
    g_autofree char *opts = NULL;
    g_autoptr(JsonObject) rsp = NULL;
    JsonObject *nd, *q;
    Helper h;
    Rig r = { 0 };

    veth_pair_create(&r.veth, 1);
    h.prog = xdp_redirect_attach_meta(veth_ifindex(r.veth.dut),
                                      XDP_FLAGS_DRV_MODE, false,
                                      XDP_META_FOREIGN);
    g_assert_nonnull(h.prog);
    h.xsk_fd = socket(AF_XDP, SOCK_RAW, 0);
    g_assert_cmpint(h.xsk_fd, >=, 0);
    g_assert_true(xdp_redirect_add_socket(h.prog, 0, h.xsk_fd));
    opts = g_strdup_printf(",inhibit=on,sock-fds=%d,rx-metadata=on",
                           h.xsk_fd);
    rig_start_wrapped(&r, NULL, opts);
    qrig_open_guest(&r.q, NULL);
    send_frames(&r, 0, 5);
    guest_receive_in_order(&r, 0, 5);
    rsp = query_stats(&r, &nd, NULL);
    g_assert_cmpstr(backend_str(nd, "rx-metadata"), ==, "external");
    q = backend_queue(nd, 0);
    g_assert_cmpint(qjson_int(q, "rx-meta-foreign"), ==, 5);
    g_assert_cmpint(qjson_int(q, "rx-meta-frames"), ==, 0);
    g_assert_cmpint(qjson_int(q, "rx-meta-timestamp"), ==, 0);
    g_test_message("5 frames with struct illan_xdp_meta_foreign in front: "
                   "all delivered, all counted foreign, no timestamp kept");
    rig_stop(&r);
    helper_teardown(&h);
}

/*
 * The built-in guest's view of the same stamps: frames sent one at a
 * time, each its own batch, are each sampled by the device (the entry
 * made visible) and by the guest (the entry read), and the guest cannot
 * read an entry before it is there: each of its delays is at least the
 * device's for the same frame, and so are its median and maximum.  With
 * rx-metadata=off neither has a sample.
 */
static void check_guest_latency(const char *netdev_opts, bool stamped)
{
    enum { N = 16 };
    g_autofree char *netdev = NULL;
    g_autoptr(JsonObject) net = NULL;
    g_autoptr(JsonObject) guests = NULL;
    JsonObject *q, *g;
    Rig r = { 0 };

    veth_pair_create(&r.veth, 1);
    netdev = g_strdup_printf("af-xdp,id=n0,ifname=%s%s", r.veth.dut,
                             netdev_opts);
    qrig_init(&r.q);
    qrig_start(&r.q, &(QRigOpts){
        .mem = "512M", .netdev = netdev, .nic = ",id=net0",
        .extra = "-guest ibmveth,id=g0,dev=net0,fwd=rxonly" });
    r.q.peer = packet_socket_open(r.veth.peer);
    for (unsigned i = 0; i < N; i++) {
        send_frames(&r, i, 1);
        qrig_wait_stat(r.q.qts, "guest.rx-frames", i + 1);
    }
    net = query_stats(&r, &g, NULL);
    q = backend_queue(g, 0);
    guests = qrig_guest_stats(r.q.qts);
    g = qrig_stats_guest(guests);
    if (!stamped) {
        g_assert_cmpint(qjson_int(q, "rx-latency.samples"), ==, 0);
        g_assert_cmpint(qjson_int(g, "rx-latency.samples"), ==, 0);
        g_test_message("rx-metadata=off: %d frames, no sample in either "
                       "histogram", N);
        rig_stop(&r);
        return;
    }
    g_assert_cmpint(qjson_int(q, "rx-latency.samples"), ==, N);
    g_assert_cmpint(qjson_int(g, "rx-latency.samples"), ==, N);
    g_assert_cmpint(qjson_int(g, "rx-latency.p50-ns"), >=,
                    qjson_int(q, "rx-latency.p50-ns"));
    g_assert_cmpint(qjson_int(g, "rx-latency.max-ns"), >=,
                    qjson_int(q, "rx-latency.max-ns"));
    g_test_message("%d frames one at a time: XDP to the device's queue "
                   "p50 %" PRId64 " ns, max %" PRId64 " ns; to the guest's "
                   "consumption p50 %" PRId64 " ns, max %" PRId64 " ns", N,
                   qjson_int(q, "rx-latency.p50-ns"),
                   qjson_int(q, "rx-latency.max-ns"),
                   qjson_int(g, "rx-latency.p50-ns"),
                   qjson_int(g, "rx-latency.max-ns"));
    rig_stop(&r);
}

static void test_guest_latency(void)
{
    check_guest_latency(",rx-metadata=on", true);
}

static void test_guest_latency_off(void)
{
    check_guest_latency(",rx-metadata=off", false);
}

/* Jumbo frames (multi-buffer): the built-in guest echoes every frame
 * (fwd=macswap), so each crosses AF_XDP both ways. */

/* Both ends of a new pair at @mtu, illan on it with netdev options
 * @netdev_opts and the echoing guest at the same MTU. */
static void echo_start(Rig *r, unsigned mtu, const char *netdev_opts)
{
    g_autofree char *netdev = NULL;
    g_autofree char *set_mtu = NULL;
    int rcvbuf = 16 << 20;

    veth_pair_create(&r->veth, 1);
    netns_run("ip link set %s mtu %u", r->veth.dut, mtu);
    netns_run("ip link set %s mtu %u", r->veth.peer, mtu);
    netdev = g_strdup_printf("af-xdp,id=n0,ifname=%s%s", r->veth.dut,
                             netdev_opts);
    qrig_init(&r->q);
    qrig_start(&r->q, &(QRigOpts){
        .mem = "512M", .netdev = netdev, .nic = ",id=net0",
        .extra = "-guest ibmveth,id=g0,dev=net0,fwd=macswap" });
    r->q.peer = packet_socket_open(r->veth.peer);
    /* Room for every echo of a burst of jumbo frames. */
    g_assert_cmpint(setsockopt(r->q.peer, SOL_SOCKET, SO_RCVBUFFORCE,
                               &rcvbuf, sizeof(rcvbuf)), ==, 0);
    /* Linux closes, activates the pools the MTU needs, and opens. */
    set_mtu = g_strdup_printf("{'execute': 'x-guest-set-mtu', 'arguments': "
                              "{'id': 'g0', 'mtu': %u}}", mtu);
    qmp_ok(r, set_mtu);
}

/* A frame of @len to the guest: the test EtherType, @tag in bytes 14-15,
 * random bytes after. */
static void random_frame(uint8_t *f, size_t len, uint16_t tag, GRand *rng)
{
    memcpy(f, qrig_mac, 6);
    memcpy(f + 6, peer_mac, 6);
    f[12] = ETHERTYPE_TEST >> 8;
    f[13] = ETHERTYPE_TEST & 0xff;
    f[14] = tag >> 8;
    f[15] = tag & 0xff;
    for (size_t i = 16; i < len; i++) {
        f[i] = g_rand_int(rng);
    }
}

/* The next echo on the peer is @f with its MACs swapped, byte for byte. */
static void expect_echo(Rig *r, const uint8_t *f, size_t len)
{
    static uint8_t back[NET_FRAME_MAX + 64];
    ssize_t n = packet_recv(r->q.peer, ETHERTYPE_TEST, back, sizeof(back),
                            5000);

    g_assert_cmpint(n, ==, (ssize_t)len);
    g_assert_cmpmem(back, 6, peer_mac, 6);
    g_assert_cmpmem(back + 6, 6, qrig_mac, 6);
    g_assert_cmpmem(back + 12, len - 12, f + 12, len - 12);
}

/* Every frame the peer sent came in, was delivered, went back out, and
 * @rx_chains and @tx_chains of them spanned several descriptors. */
static void check_echo_stats(Rig *r, gint64 frames, gint64 bytes,
                             gint64 rx_chains, gint64 tx_chains,
                             unsigned mtu)
{
    g_autoptr(JsonObject) st = NULL;
    JsonObject *nd, *nic, *q0;

    /* The net core counts a frame just after the NIC or the backend has
     * it, which may be after the echo arrived. */
    qrig_wait_stat(r->q.qts, "netdev.rx.frames", frames);
    qrig_wait_stat(r->q.qts, "netdev.tx.frames", frames);
    st = query_stats(r, &nd, &nic);
    q0 = backend_queue(nd, 0);
    g_assert_true(json_object_get_boolean_member(
        json_object_get_object_member(nd, "backend"), "multi-buffer"));
    g_assert_cmpint(qjson_int(nd, "backend.mtu"), ==, mtu);
    g_assert_cmpint(qjson_int(nd, "rx.bytes"), ==, bytes);
    g_assert_cmpint(qjson_int(nd, "rx.delivered"), ==, frames);
    g_assert_cmpint(qjson_sum(nd, "rx.dropped"), ==, 0);
    g_assert_cmpint(qjson_int(nd, "rx-errors"), ==, 0);
    g_assert_cmpint(qjson_int(nic, "device.rx-frames"), ==, frames);
    g_assert_cmpint(qjson_int(nd, "tx.bytes"), ==, bytes);
    g_assert_cmpint(qjson_int(nd, "tx.errors"), ==, 0);
    g_assert_cmpint(qjson_int(nd, "backend.tx-over-mtu"), ==, 0);
    g_assert_cmpint(qjson_int(q0, "rx-frames"), ==, frames);
    g_assert_cmpint(qjson_int(q0, "rx-chains"), ==, rx_chains);
    g_assert_cmpint(qjson_int(q0, "tx-frames"), ==, frames);
    g_assert_cmpint(qjson_int(q0, "tx-chains"), ==, tx_chains);
    g_assert_cmpint(qjson_int(q0, "rx_dropped"), ==, 0);
    g_assert_cmpint(qjson_int(q0, "rx-too-long"), ==, 0);
    g_assert_cmpint(qjson_int(q0, "rx-truncated"), ==, 0);
    g_assert_cmpint(qjson_int(q0, "tx-oversize"), ==, 0);
}

/* A burst of numbered 9014-byte frames (MTU 9000) and their echoes. */
static void check_jumbo(const char *mode, const char *extra)
{
    enum { N = 64, LEN = 9014 };
    g_autofree char *opts = g_strdup_printf(",mode=%s%s", mode, extra);
    g_autofree uint8_t *frames = g_malloc(N * LEN);
    g_autoptr(GRand) rng = g_rand_new_with_seed(9000);
    Rig r = { 0 };

    echo_start(&r, 9000, opts);
    for (unsigned i = 0; i < N; i++) {
        random_frame(frames + i * LEN, LEN, i, rng);
        g_assert_true(packet_send(r.q.peer, frames + i * LEN, LEN));
    }
    for (unsigned i = 0; i < N; i++) {
        expect_echo(&r, frames + i * LEN, LEN);
    }
    check_echo_stats(&r, N, (gint64)N * LEN, N, N, 9000);
    g_assert_cmpint(qrig_stat(r.q.qts, "guest.frames-by-buffer-size.16384"),
                    ==, N);
    g_test_message("%s: %d frames of %d bytes sent, %d echoed byte-exact; "
                   "each a chain of 3 descriptors in and 3 out", mode, N,
                   LEN, N);
    rig_stop(&r);
}

static void test_jumbo_native(void)
{
    check_jumbo("native", "");
}

static void test_jumbo_skb(void)
{
    check_jumbo("skb", ",multi-buffer=on");
}

/*
 * Frame lengths on each side of a chain's edges: 3840 bytes of data fit
 * a received UMEM frame (4096 less the kernel's headroom), 4096 a sent
 * one; and the largest frame at Linux's largest ibmveth MTU, 65513.
 */
static void test_chain_edges(void)
{
    static const size_t sizes[] = {
        60, 3839, 3840, 3841, 4095, 4096, 4097, 7680, 7681, 8192, 8193,
        12288, 12289, 32768, 65527,
    };
    g_autofree uint8_t *f = g_malloc(65549);
    g_autoptr(GRand) rng = g_rand_new_with_seed(65514);
    gint64 bytes = 0, rx_chains = 0, tx_chains = 0;
    g_autoptr(JsonObject) st = NULL;
    JsonObject *nd;
    Rig r = { 0 };

    echo_start(&r, 65513, ",mode=native");
    for (unsigned i = 0; i < G_N_ELEMENTS(sizes); i++) {
        random_frame(f, sizes[i], i, rng);
        g_assert_true(packet_send(r.q.peer, f, sizes[i]));
        expect_echo(&r, f, sizes[i]);
        bytes += sizes[i];
        rx_chains += sizes[i] > 3840;
        tx_chains += sizes[i] > 4096;
    }
    check_echo_stats(&r, G_N_ELEMENTS(sizes), bytes, rx_chains, tx_chains,
                     65513);

    /* At veth's largest MTU a frame can outgrow the device's 65536
     * bytes: the queue drops its chain, counts it, and goes on. */
    netns_run("ip link set %s mtu 65535", r.veth.dut);
    netns_run("ip link set %s mtu 65535", r.veth.peer);
    random_frame(f, 65549, 100, rng);
    g_assert_true(packet_send(r.q.peer, f, 65549));
    qrig_wait_stat(r.q.qts, "netdev.rx-errors", 1);
    random_frame(f, 9014, 101, rng);
    g_assert_true(packet_send(r.q.peer, f, 9014));
    expect_echo(&r, f, 9014);
    g_assert_cmpint(qrig_stat(r.q.qts, "netdev.rx.frames"), ==,
                    G_N_ELEMENTS(sizes) + 1);
    st = query_stats(&r, &nd, NULL);
    g_assert_cmpint(qjson_int(backend_queue(nd, 0), "rx-too-long"), ==, 1);
    g_assert_cmpint(qjson_int(backend_queue(nd, 0), "rx-truncated"), ==, 0);
    g_test_message("%zu frames from 60 to 65527 bytes echoed byte-exact: "
                   "%" G_GINT64_FORMAT " chains in, %" G_GINT64_FORMAT
                   " out; a 65549-byte frame dropped as too long",
                   G_N_ELEMENTS(sizes), rx_chains, tx_chains);
    rig_stop(&r);
}

/*
 * Jumbo frames while the guest has fewer buffers than frames: the device
 * holds the rest, whose chains go back to the ring whole and are gathered
 * again once the guest posts buffers; all arrive in order, each counted
 * once.
 */
static void test_jumbo_held(void)
{
    enum { POSTED = 4, SENT = 10, LEN = 9014 };
    static uint8_t f[LEN], data[65536];
    g_autoptr(JsonObject) st = NULL;
    JsonObject *nd, *nic;
    IbmvethConf conf;
    Rig r = { 0 };
    unsigned got = 0;

    ibmveth_conf_linux_defaults(&conf, UNIT);
    conf.mac = GUEST_MAC;
    for (unsigned i = 0; i < IBMVETH_NUM_POOLS; i++) {
        conf.pool_active[i] = i == 2;
    }
    conf.pool_count[2] = POSTED;
    veth_pair_create(&r.veth, 1);
    netns_run("ip link set %s mtu 9000", r.veth.dut);
    netns_run("ip link set %s mtu 9000", r.veth.peer);
    rig_start_wrapped(&r, NULL, ",mode=native");
    qrig_open_guest(&r.q, &conf);
    for (unsigned i = 0; i < SENT; i++) {
        build_frame(f, LEN, qrig_mac, peer_mac, i);
        g_assert_true(packet_send(r.q.peer, f, LEN));
    }
    qrig_wait_stat_min(r.q.qts, "nic.device.rx-held", 1);
    while (got < SENT) {
        unsigned batch = MIN(POSTED, SENT - got);

        for (unsigned i = 0; i < batch; i++) {
            IbmvethRxEntry e = qibmveth_wait_rx(r.q.guest, data,
                                                sizeof(data));

            g_assert_cmpuint(e.len, ==, LEN);
            g_assert_cmpuint(e.buf_size, ==, 16384);
            g_assert_cmpuint(eth_frame_assert_tagged(data, e.len, qrig_mac,
                                                     peer_mac,
                                                     ETHERTYPE_TEST,
                                                     ETH_FRAME_TAG_FIRST),
                             ==, got++);
        }
        g_assert_cmpuint(qibmveth_replenish(r.q.guest), ==, batch);
    }
    wait_rx_frames(&r, SENT);
    st = query_stats(&r, &nd, &nic);
    g_assert_cmpint(qjson_int(nd, "rx.delivered"), ==, SENT);
    g_assert_cmpint(qjson_int(nic, "device.rx-dropped.no-buffer"), ==, 0);
    g_assert_cmpint(qjson_int(backend_queue(nd, 0), "rx-chains"), ==, SENT);
    g_assert_cmpint(qjson_int(backend_queue(nd, 0), "rx_dropped"), ==, 0);
    g_test_message("%d buffers of 16 KiB, %d frames of %d bytes: held "
                   "%" G_GINT64_FORMAT " times, all delivered in order",
                   POSTED, SENT, LEN, qjson_int(nic, "device.rx-held"));
    rig_stop(&r);
}

/* Waits until queue 0's @key is @want. */
typedef struct QueueStat {
    Rig *r;
    const char *key;
    gint64 want;
} QueueStat;

static bool queue_stat_reached(void *opaque)
{
    QueueStat *w = opaque;
    JsonObject *nd;
    JsonObject *st = query_stats(w->r, &nd, NULL);   /* owns nd */
    bool reached = qjson_int(backend_queue(nd, 0), w->key) >= w->want;

    json_object_unref(st);
    return reached;
}

/*
 * The guest sends a frame longer than the interface's MTU allows: it is
 * counted (tx-over-mtu) instead of handed to the kernel, which would
 * refuse it.  Raising the MTU lets the same frame through.
 */
static void test_over_mtu(void)
{
    uint8_t f[2000], got[2048];
    g_autoptr(JsonObject) st = NULL;
    JsonObject *nd;
    Rig r = { 0 };

    rig_start(&r, 1, ",mode=native");
    qrig_open_guest(&r.q, NULL);
    g_assert_cmpint(qrig_stat(r.q.qts, "netdev.backend.mtu"), ==, 1500);
    build_frame(f, 1515, peer_mac, qrig_mac, 1);
    g_assert_cmpint(qibmveth_send(r.q.guest, f, 1515), ==, H_SUCCESS);
    build_frame(f, 1514, peer_mac, qrig_mac, 2);
    g_assert_cmpint(qibmveth_send(r.q.guest, f, 1514), ==, H_SUCCESS);
    g_assert_cmpint(packet_recv(r.q.peer, ETHERTYPE_TEST, got, sizeof(got),
                                5000), ==, 1514);
    g_assert_cmpmem(got, 1514, f, 1514);

    netns_run("ip link set %s mtu 2000", r.veth.dut);
    netns_run("ip link set %s mtu 2000", r.veth.peer);
    qrig_wait_stat(r.q.qts, "netdev.backend.mtu", 2000);
    build_frame(f, 1515, peer_mac, qrig_mac, 3);
    g_assert_cmpint(qibmveth_send(r.q.guest, f, 1515), ==, H_SUCCESS);
    g_assert_cmpint(packet_recv(r.q.peer, ETHERTYPE_TEST, got, sizeof(got),
                                5000), ==, 1515);
    g_assert_cmpmem(got, 1515, f, 1515);

    st = query_stats(&r, &nd, NULL);
    g_assert_cmpint(qjson_int(nd, "backend.tx-over-mtu"), ==, 1);
    g_assert_cmpint(qjson_int(nd, "tx.errors"), ==, 1);
    g_assert_cmpint(qjson_int(nd, "tx.frames"), ==, 2);
    g_assert_cmpint(qjson_int(backend_queue(nd, 0), "tx-frames"), ==, 2);
    g_test_message("MTU 1500: a 1515-byte frame counted as tx-over-mtu, "
                   "1514 sent; MTU 2000 read from the link change, 1515 "
                   "sent");
    rig_stop(&r);
}

/*
 * multi-buffer=off at MTU 9000 (skb mode: native refuses it): a received
 * frame longer than a UMEM frame is dropped by the kernel and counted
 * (rx_dropped), one the guest sends is refused (tx-oversize); shorter
 * ones pass.
 */
static void test_single_buffer(void)
{
    static uint8_t f[5000], data[65536];
    g_autoptr(JsonObject) st = NULL;
    QueueStat dropped;
    IbmvethRxEntry e;
    JsonObject *nd;
    Rig r = { 0 };

    veth_pair_create(&r.veth, 1);
    netns_run("ip link set %s mtu 9000", r.veth.dut);
    netns_run("ip link set %s mtu 9000", r.veth.peer);
    rig_start_wrapped(&r, NULL, ",mode=skb,multi-buffer=off");
    qrig_open_guest(&r.q, NULL);
    build_frame(f, 5000, qrig_mac, peer_mac, 1);
    g_assert_true(packet_send(r.q.peer, f, 5000));
    dropped = (QueueStat){ &r, "rx_dropped", 1 };
    qtest_wait_until(queue_stat_reached, &dropped, QTEST_WAIT_S,
                     "the kernel to drop a 5000-byte frame");
    build_frame(f, 3000, qrig_mac, peer_mac, 2);
    g_assert_true(packet_send(r.q.peer, f, 3000));
    e = qibmveth_wait_rx(r.q.guest, data, sizeof(data));
    g_assert_cmpuint(e.len, ==, 3000);
    g_assert_cmpmem(data, 3000, f, 3000);

    build_frame(f, 5000, peer_mac, qrig_mac, 3);
    g_assert_cmpint(qibmveth_send(r.q.guest, f, 5000), ==, H_SUCCESS);
    st = query_stats(&r, &nd, NULL);
    g_assert_false(json_object_get_boolean_member(
        json_object_get_object_member(nd, "backend"), "multi-buffer"));
    g_assert_cmpint(qjson_int(backend_queue(nd, 0), "rx_dropped"), ==, 1);
    g_assert_cmpint(qjson_int(backend_queue(nd, 0), "tx-oversize"), ==, 1);
    g_assert_cmpint(qjson_int(nd, "rx.frames"), ==, 1);
    g_assert_cmpint(qjson_int(nd, "tx.errors"), ==, 1);
    rig_stop(&r);
}

/* Refusals. */

/* Runs illan (under @wrapper) to its end, keeping the test's descriptors;
 * returns the exit status and its stderr. */
static int run_illan(const char *wrapper, const char *args, char **err)
{
    g_autofree char *cmd = g_strdup_printf("exec %s %s %s 2>&1",
                                           wrapper ? wrapper : "",
                                           illan_binary(), args);
    GString *out = g_string_new(NULL);
    int pipefd[2], status;
    pid_t pid;
    char buf[4096];
    ssize_t n;

    g_assert_cmpint(pipe2(pipefd, O_CLOEXEC), ==, 0);
    pid = fork();
    g_assert_cmpint(pid, >=, 0);
    if (pid == 0) {
        dup2(pipefd[1], STDOUT_FILENO);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    close(pipefd[1]);
    while ((n = read(pipefd[0], buf, sizeof(buf))) > 0) {
        g_string_append_len(out, buf, n);
    }
    close(pipefd[0]);
    g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
    g_assert_true(WIFEXITED(status));
    *err = g_string_free(out, FALSE);
    return WEXITSTATUS(status);
}

/* illan -netdev af-xdp,@opts must fail with one line containing @want. */
static void expect_refusal(const char *wrapper, const char *opts,
                           const char *want)
{
    g_autofree char *args = g_strdup_printf("-nodefaults -netdev af-xdp,"
                                            "id=n0%s", opts);
    g_autofree char *err = NULL;
    int rc = run_illan(wrapper, args, &err);

    g_test_message("af-xdp%s -> %.*s", opts, (int)strcspn(err, "\n"), err);
    g_assert_cmpint(rc, ==, 1);
    g_assert_true(g_str_has_prefix(err, "illan: -netdev af-xdp,id=n0"));
    g_assert_nonnull(strstr(err, want));
    g_assert_cmpint(strchr(err, '\n') - err, ==, (long)strlen(err) - 1);
}

static int load_pass_program(void)
{
    struct bpf_insn insns[] = {
        { .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0,
          .imm = XDP_PASS },
        { .code = BPF_JMP | BPF_EXIT },
    };
    int fd = bpf_prog_load(BPF_PROG_TYPE_XDP, "foreign", "GPL", insns,
                           G_N_ELEMENTS(insns), NULL);

    g_assert_cmpint(fd, >=, 0);
    return fd;
}

/* Options refused on an interface that exists. */
static const struct {
    const char *opts, *want;
} bad_options[] = {
    { ",queues=2", "queue 1 out of range" },
    { ",start-queue=3", "queue 3 out of range" },
    { ",mode=turbo", "Parameter 'mode' does not accept value 'turbo'" },
    { ",inhibit=on", "inhibit=on needs sock-fds" },
    { ",inhibit=on,sock-fds=0", "descriptor 0 is not an open AF_XDP socket" },
    { ",inhibit=on,sock-fds=4294967296",
      "sock-fds: 4294967296 is not a file descriptor number" },
    { ",batch=65", "Parameter 'batch' expects a value from 1 to 64" },
    { ",rx-ring-size=1000", "must be a power of two" },
    { ",multi-buffer=maybe",
      "Parameter 'multi-buffer' does not accept value 'maybe'" },
    { ",io-sched=fifo",
      "Parameter 'io-sched' does not accept value 'fifo' (batch or other)" },
};

static void test_refusals(void)
{
    VethPair v;
    Helper h;
    g_autofree char *o = NULL;
    int prog;

    veth_pair_create(&v, 1);
    expect_refusal(NULL, ",ifname=nonexistent",
                   "interface 'nonexistent' not found");
    expect_refusal(NULL, "", "Parameter 'ifname' is missing");
    for (guint i = 0; i < G_N_ELEMENTS(bad_options); i++) {
        o = g_strdup_printf(",ifname=%s%s", v.dut, bad_options[i].opts);
        expect_refusal(NULL, o, bad_options[i].want);
        g_free(o);
    }

    /* No capabilities at all. */
    o = g_strdup_printf(",ifname=%s", v.dut);
    expect_refusal(DROP_ALL_CAPS, o, "no permission: af-xdp needs "
                   "CAP_NET_RAW (AF_XDP sockets), CAP_NET_ADMIN (attaching "
                   "XDP), CAP_BPF (loading the XDP program)");
    g_free(o);
    /* Sockets passed, but the default rings need 10 MiB of locked memory
     * and the limit is 8 MiB without CAP_IPC_LOCK. */
    helper_setup(&h, v.dut);
    o = g_strdup_printf(",ifname=%s,inhibit=on,sock-fds=%d", v.dut,
                        h.xsk_fd);
    expect_refusal(DROP_ALL_CAPS, o, "RLIMIT_MEMLOCK too low: the UMEM "
                   "needs 10240 KiB");
    g_free(o);
    helper_teardown(&h);

    /* Someone else's program. */
    prog = load_pass_program();
    g_assert_cmpint(bpf_xdp_attach(veth_ifindex(v.dut), prog,
                                   XDP_FLAGS_SKB_MODE, NULL), ==, 0);
    o = g_strdup_printf(",ifname=%s", v.dut);
    expect_refusal(NULL, o, "an XDP program is already attached");
    g_assert_cmpuint(attached_prog(v.dut), !=, 0);
    g_free(o);
    bpf_xdp_detach(veth_ifindex(v.dut), XDP_FLAGS_SKB_MODE, NULL);
    close(prog);

    /* veth refuses native XDP when its peer's MTU exceeds a page, unless
     * the program handles frames in several buffers. */
    netns_run("ip link set %s mtu 9000", v.peer);
    o = g_strdup_printf(",ifname=%s,mode=native,multi-buffer=off", v.dut);
    expect_refusal(NULL, o, "its MTU is too large for a program without "
                   "multi-buffer; use multi-buffer=auto or mode=skb");
    veth_pair_destroy(&v);
}

/* illan -netdev af-xdp,id=n0,@fmt... must fail with @want. */
static void expect_refusal_f(const char *want, const char *fmt, ...)
    G_GNUC_PRINTF(2, 3);

static void expect_refusal_f(const char *want, const char *fmt, ...)
{
    g_autofree char *opts = NULL;
    va_list ap;

    va_start(ap, fmt);
    opts = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    expect_refusal(NULL, opts, want);
}

/* queues=all where it cannot count, or counts too many. */
static void test_queues_all_refusals(void)
{
    int xsk = socket(AF_XDP, SOCK_RAW, 0);    /* inherited by illan */
    VethPair v, wide;

    g_assert_cmpint(xsk, >=, 0);
    veth_pair_create(&v, ALL_QUEUES);
    expect_refusal_f("queues=all: lo does not report its channels",
                     ",ifname=lo,queues=all");
    expect_refusal_f("has 4 queue(s), none from start-queue=4 on", ",ifname=%s,queues=all,"
                     "start-queue=4", v.dut);
    expect_refusal_f("sock-fds has 1 descriptor(s) but the 4 queue(s) need "
                     "one each", ",ifname=%s,queues=all,inhibit=on,"
                     "sock-fds=%d", v.dut, xsk);
    /* The channels in use, not the most the interface could have. */
    netns_run("ethtool -L %s rx 2 tx 2", v.dut);
    expect_refusal_f("the 2 queue(s) need one each",
                     ",ifname=%s,queues=all,inhibit=on,sock-fds=%d", v.dut,
                     xsk);
    /* One more than the 64 queues af-xdp opens at most. */
    veth_pair_create(&wide, 65);
    expect_refusal_f("has 65 queue(s) from start-queue=0 on, more than the "
                     "64 af-xdp opens; give queues=N",
                     ",ifname=%s,queues=all", wide.dut);
    veth_pair_destroy(&wide);
    veth_pair_destroy(&v);
    close(xsk);
}

/* Without mode=, a refused native mode falls back to skb. */
static void test_skb_fallback(void)
{
    g_autoptr(JsonObject) rsp = NULL;
    JsonObject *nd;
    Rig r = { 0 };

    veth_pair_create(&r.veth, 1);
    netns_run("ip link set %s mtu 9000", r.veth.peer);
    rig_start_wrapped(&r, NULL, ",multi-buffer=off");
    qrig_open_guest(&r.q, NULL);
    send_frames(&r, 0, 12);
    guest_receive_in_order(&r, 0, 12);
    rsp = query_stats(&r, &nd, NULL);
    g_assert_cmpstr(backend_str(nd, "mode"), ==, "skb");
    rig_stop(&r);
}

/* Lifecycle. */

static void test_program_lifecycle(void)
{
    VethPair v;
    QTestState *qts;
    g_autoptr(JsonObject) rsp = NULL;
    Rig r = { 0 };

    veth_pair_create(&v, 1);
    g_assert_cmpuint(attached_prog(v.dut), ==, 0);

    /* Attached while the netdev is open, gone after SIGTERM. */
    qts = qtest_initf("-nodefaults -netdev af-xdp,id=n0,ifname=%s", v.dut);
    g_assert_cmpuint(attached_prog(v.dut), !=, 0);
    qtest_quit(qts);
    g_assert_cmpuint(attached_prog(v.dut), ==, 0);

    /* ... and after netdev_del. */
    qts = qtest_initf("-nodefaults -netdev af-xdp,id=n0,ifname=%s", v.dut);
    g_assert_cmpuint(attached_prog(v.dut), !=, 0);
    rsp = qtest_qmp(qts, "{'execute': 'netdev_del', "
                         "'arguments': {'id': 'n0'}}");
    g_assert_true(json_object_has_member(rsp, "return"));
    g_assert_cmpuint(attached_prog(v.dut), ==, 0);
    qtest_quit(qts);

    /* The program hangs on a bpf_link of the process: a crash takes it
     * along, and the next run starts from a clean interface. */
    qts = qtest_initf("-nodefaults -netdev af-xdp,id=n0,ifname=%s", v.dut);
    g_assert_cmpuint(attached_prog(v.dut), !=, 0);
    qtest_kill(qts);
    g_assert_cmpuint(attached_prog(v.dut), ==, 0);
    r.veth = v;
    rig_start_wrapped(&r, NULL, "");
    qrig_open_guest(&r.q, NULL);
    send_frames(&r, 0, 9);
    guest_receive_in_order(&r, 0, 9);
    qrig_stop(&r.q);
    g_assert_cmpuint(attached_prog(v.dut), ==, 0);
    veth_pair_destroy(&v);
}

/* The link-events flood: one frame, tagged 0xf00d, 500 a second. */
static size_t link_flood_frame(uint8_t *frame, guint64 seq)
{
    (void)seq;
    build_frame(frame, 60, qrig_mac, peer_mac, 0xf00d);
    return 60;
}

/* Waits for NETDEV_LINK_CHANGED with @state; an interface being deleted
 * may first report "down". */
static void expect_link_event(Rig *r, const char *state)
{
    for (;;) {
        g_autoptr(JsonObject) ev = qtest_qmp_eventwait(r->q.qts,
                                                       "NETDEV_LINK_CHANGED");
        JsonObject *data = json_object_get_object_member(ev, "data");
        const char *got = json_object_get_string_member(data, "state");

        g_assert_cmpstr(json_object_get_string_member(data, "netdev-id"),
                        ==, "n0");
        g_test_message("NETDEV_LINK_CHANGED %s: %s", got,
                       json_object_get_string_member(data, "detail"));
        if (!strcmp(got, state)) {
            return;
        }
        g_assert_cmpstr(got, ==, "down");
    }
}

/* Drains the guest's rx queue of flood frames; the frames it must then
 * see are tagged @first.. */
static void guest_skip_flood(Rig *r, uint16_t first, unsigned n)
{
    unsigned got = 0;

    while (got < n) {
        static uint8_t data[65536];
        IbmvethRxEntry e = qibmveth_wait_rx(r->q.guest, data, sizeof(data));
        uint16_t tag = eth_frame_tag(data, e.len, ETH_FRAME_TAG_FIRST);

        qibmveth_replenish(r->q.guest);
        if (tag == 0xf00d) {
            continue;
        }
        g_assert_cmpuint(tag, ==, first + got);
        got++;
    }
}

static void test_link_events(void)
{
    g_autoptr(JsonObject) rsp = NULL;
    g_autoptr(JsonObject) status = NULL;
    JsonObject *nd;
    PacketFlood flood;
    guint64 sent;
    gint64 before;
    Rig r = { 0 };

    rig_start(&r, 1, "");
    qrig_open_guest(&r.q, NULL);

    packet_flood_start(&flood, r.q.peer, link_flood_frame, 2000);
    netns_run("ip link set %s down", r.veth.peer);
    expect_link_event(&r, "down");
    netns_run("ip link set %s up", r.veth.peer);
    expect_link_event(&r, "up");
    sent = packet_flood_stop(&flood);
    g_assert_cmpuint(sent, >, 0);
    send_frames(&r, 0, 10);
    guest_skip_flood(&r, 0, 10);

    /* The interface goes away while frames flow, and comes back. */
    before = qrig_stat(r.q.qts, "netdev.rx.frames");
    packet_flood_start(&flood, r.q.peer, link_flood_frame, 2000);
    qrig_wait_stat_min(r.q.qts, "netdev.rx.frames", before + 1);
    netns_run("ip link del %s", r.veth.dut);
    expect_link_event(&r, "removed");
    packet_flood_stop(&flood);
    close(r.q.peer);
    status = qtest_qmp(r.q.qts, "{'execute': 'query-status'}");
    g_assert_true(json_object_has_member(status, "return"));
    rsp = query_stats(&r, &nd, NULL);
    g_assert_cmpstr(backend_str(nd, "link"), ==, "removed");
    g_assert_cmpint(qjson_int(nd, "rx.frames"), >, before);
    g_assert_cmpint(qjson_int(nd, "rx.delivered") +
                    qjson_sum(nd, "rx.dropped"), ==,
                    qjson_int(nd, "rx.frames"));
    g_clear_pointer(&rsp, json_object_unref);

    veth_pair_recreate(&r.veth);
    expect_link_event(&r, "reopened");
    r.q.peer = packet_socket_open(r.veth.peer);
    send_frames(&r, 20, 10);
    guest_skip_flood(&r, 20, 10);
    rsp = query_stats(&r, &nd, NULL);
    g_assert_cmpint(qjson_int(nd, "backend.reopens"), ==, 1);
    rig_stop(&r);
}

/* A file of `ip -batch` lines taking @ifname down and up @n times. */
static char *flap_batch_file(const char *ifname, unsigned n)
{
    g_autoptr(GString) lines = g_string_new(NULL);
    g_autoptr(GError) err = NULL;
    char *path = NULL;
    int fd = g_file_open_tmp("illan-flap-XXXXXX", &path, &err);

    g_assert_no_error(err);
    close(fd);
    for (unsigned i = 0; i < n; i++) {
        g_string_append_printf(lines, "link set %s down\nlink set %s up\n",
                               ifname, ifname);
    }
    g_assert_true(g_file_set_contents(path, lines->str, lines->len, &err));
    return path;
}

typedef struct LinkState {
    const char *ifname;
    bool up;
} LinkState;

static bool link_state_reached(void *opaque)
{
    LinkState *s = opaque;

    return link_is_up(s->ifname) == s->up;
}

/* Sets @peer down or up and waits until the kernel has told its other
 * end, @dut, of it (veth carrier changes reach it a moment later). */
static void peer_set_and_wait(const VethPair *veth, bool up)
{
    LinkState s = { veth->dut, up };

    netns_run("ip link set %s %s", veth->peer, up ? "up" : "down");
    qtest_wait_until(link_state_reached, &s, QTEST_WAIT_S,
                     "%s to be %s", veth->dut, up ? "up" : "down");
}

/*
 * The kernel drops rtnetlink events once a listener's socket is full.
 * illan is stopped while its own peer flaps (a "down" and an "up" that
 * stay queued), then 300 flaps of another pair fill its socket many
 * times over, and only then does its peer go down: that event is lost,
 * so illan can only learn of it by reading the link again, and the
 * queued "up", older than that, must not undo what it read.
 */
static void test_link_events_overrun(void)
{
    g_autoptr(JsonObject) rsp = NULL;
    g_autofree char *batch = NULL;
    JsonObject *nd;
    VethPair other;
    Rig r = { 0 };

    rig_start(&r, 1, "");
    qrig_open_guest(&r.q, NULL);
    veth_pair_create(&other, 1);
    batch = flap_batch_file(other.dut, 300);
    g_assert_cmpint(kill(qtest_pid(r.q.qts), SIGSTOP), ==, 0);
    peer_set_and_wait(&r.veth, false);
    peer_set_and_wait(&r.veth, true);
    netns_run("ip -batch %s", batch);
    peer_set_and_wait(&r.veth, false);
    g_assert_cmpint(kill(qtest_pid(r.q.qts), SIGCONT), ==, 0);
    expect_link_event(&r, "down");
    rsp = query_stats(&r, &nd, NULL);
    g_assert_cmpstr(backend_str(nd, "link"), ==, "down");
    g_assert_cmpint(qjson_int(nd, "backend.link-overruns"), >=, 1);
    g_clear_pointer(&rsp, json_object_unref);

    netns_run("ip link set %s up", r.veth.peer);
    expect_link_event(&r, "up");
    send_frames(&r, 0, 10);
    guest_skip_flood(&r, 0, 10);
    unlink(batch);
    veth_pair_destroy(&other);
    rig_stop(&r);
}

/*
 * map-path: the test plays the privileged helper of a container set-up.
 * It creates an XSK map, pins it on a BPF file system of its own, and
 * attaches a program that redirects queue q's frames to slot
 * q + map-start-index; illan, without CAP_BPF or CAP_NET_ADMIN, puts its
 * sockets in the map and loads nothing.
 */
#define PINNED_SLOTS    8
#define PINNED_START    5
/*
 * CAP_NET_RAW for the sockets, and CAP_IPC_LOCK, also across the exec of
 * illan.  Without CAP_IPC_LOCK a UMEM counts against RLIMIT_MEMLOCK of
 * the user, root here, whose other illans' UMEMs the kernel releases
 * some time after they exit.
 */
#define SOCKETS_ONLY    "setpriv --inh-caps=-all " \
                        "--bounding-set=-all,+net_raw,+ipc_lock"

/* A BPF file system of the test's own, where helpers pin by custom. */
#define BPFFS_DIR       "/sys/fs/bpf"

typedef struct Pinned {
    const char *dir;        /* BPFFS_DIR */
    char *xsks;             /* the XSK map pinned in it */
    int map_fd, prog_fd;
} Pinned;

/* The test's mounts stay in a mount namespace of its own: its bpf file
 * system hides the host's only from the test and illan, and goes away
 * with them, even after a crash. */
static void private_mounts(void)
{
    static bool done;

    if (!done) {
        g_assert_cmpint(unshare(CLONE_NEWNS), ==, 0);
        g_assert_cmpint(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL),
                        ==, 0);
        done = true;
    }
}

/* return bpf_redirect_map(&xsks, ctx->rx_queue_index + @start, XDP_PASS) */
static int load_slot_redirect(int map_fd, int start)
{
    struct bpf_insn insns[] = {
        { .code = BPF_LDX | BPF_MEM | BPF_W, .dst_reg = BPF_REG_2,
          .src_reg = BPF_REG_1,
          .off = offsetof(struct xdp_md, rx_queue_index) },
        { .code = BPF_ALU64 | BPF_ADD | BPF_K, .dst_reg = BPF_REG_2,
          .imm = start },
        { .code = BPF_LD | BPF_DW | BPF_IMM, .dst_reg = BPF_REG_1,
          .src_reg = BPF_PSEUDO_MAP_FD, .imm = map_fd },
        { 0 },
        { .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_3,
          .imm = XDP_PASS },
        { .code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_redirect_map },
        { .code = BPF_JMP | BPF_EXIT },
    };
    int fd = bpf_prog_load(BPF_PROG_TYPE_XDP, "test_slot", "GPL", insns,
                           G_N_ELEMENTS(insns), NULL);

    g_assert_cmpint(fd, >=, 0);
    return fd;
}

static void pinned_setup(Pinned *p)
{
    private_mounts();
    p->dir = BPFFS_DIR;
    g_assert_cmpint(mount("bpffs", p->dir, "bpf", 0, NULL), ==, 0);
    p->xsks = g_build_filename(p->dir, "xsks", NULL);
    p->map_fd = bpf_map_create(BPF_MAP_TYPE_XSKMAP, "test_xsks",
                               sizeof(uint32_t), sizeof(uint32_t),
                               PINNED_SLOTS, NULL);
    g_assert_cmpint(p->map_fd, >=, 0);
    g_assert_cmpint(bpf_obj_pin(p->map_fd, p->xsks), ==, 0);
    p->prog_fd = load_slot_redirect(p->map_fd, PINNED_START);
}

/* A map of another type pinned beside the XSK map; its path. */
static char *pin_array_map(Pinned *p)
{
    char *path = g_build_filename(p->dir, "array", NULL);
    int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "test_array",
                            sizeof(uint32_t), sizeof(uint32_t), 4, NULL);

    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(bpf_obj_pin(fd, path), ==, 0);
    close(fd);
    return path;
}

/* Unmounting drops every pin in the mount, and the maps with them. */
static void pinned_teardown(Pinned *p)
{
    close(p->prog_fd);
    close(p->map_fd);
    g_assert_cmpint(umount(p->dir), ==, 0);
    g_free(p->xsks);
}

static void test_map_path(void)
{
    g_autofree char *opts = NULL;
    g_autofree char *caps = NULL;
    g_autoptr(JsonObject) rsp = NULL;
    JsonObject *nd;
    uint32_t prog_id;
    Pinned p;
    Rig r = { 0 };

    veth_pair_create(&r.veth, 1);
    pinned_setup(&p);
    g_assert_cmpint(bpf_xdp_attach(veth_ifindex(r.veth.dut), p.prog_fd,
                                   XDP_FLAGS_DRV_MODE, NULL), ==, 0);
    prog_id = attached_prog(r.veth.dut);
    opts = g_strdup_printf(",inhibit=on,map-path=%s,map-start-index=%d",
                           p.xsks, PINNED_START);
    rig_start_wrapped(&r, SOCKETS_ONLY, opts);
    caps = cap_eff(qtest_pid(r.q.qts));
    g_assert_cmpstr(caps, ==, "0000000000006000");
    /* Frames reach illan only through slot PINNED_START. */
    qrig_open_guest(&r.q, NULL);
    send_frames(&r, 0, 30);
    guest_receive_in_order(&r, 0, 30);
    guest_send_captured(&r, 5);
    rsp = query_stats(&r, &nd, NULL);
    g_assert_cmpstr(backend_str(nd, "mode"), ==, "external");
    g_assert_cmpint(qjson_int(nd, "rx.delivered"), ==, 30);
    g_assert_cmpint(qjson_int(backend_queue(nd, 0), "rx-frames"), ==, 30);
    g_assert_cmpuint(attached_prog(r.veth.dut), ==, prog_id);
    g_clear_pointer(&rsp, json_object_unref);

    /* The interface goes, and its program with it; illan's new sockets
     * go into the same pinned map, and the helper attaches again. */
    netns_run("ip link del %s", r.veth.dut);
    expect_link_event(&r, "removed");
    close(r.q.peer);
    veth_pair_recreate(&r.veth);
    expect_link_event(&r, "reopened");
    g_assert_cmpint(bpf_xdp_attach(veth_ifindex(r.veth.dut), p.prog_fd,
                                   XDP_FLAGS_DRV_MODE, NULL), ==, 0);
    r.q.peer = packet_socket_open(r.veth.peer);
    send_frames(&r, 100, 10);
    guest_receive_in_order(&r, 100, 10);
    g_assert_cmpuint(attached_prog(r.veth.dut), ==, prog_id);
    rsp = query_stats(&r, &nd, NULL);
    g_assert_cmpint(qjson_int(nd, "backend.reopens"), ==, 1);
    rig_stop(&r);
    g_test_message("illan with CapEff %s put its socket in slot %d of the "
                   "pinned map, received 30 and sent 5 frames, and 10 more "
                   "after the interface was replaced; illan loaded no "
                   "program (the test's, id %u, ran throughout)",
                   caps, PINNED_START, prog_id);
    pinned_teardown(&p);
}

/* map-path's refusals: the options around it, and maps that will not do. */
static void test_map_path_refusals(void)
{
    g_autofree char *array = NULL;
    g_autofree char *missing = NULL;
    g_autofree char *o = NULL;
    int xsk = socket(AF_XDP, SOCK_RAW, 0);    /* inherited by illan */
    const char *ifn;
    VethPair v;
    Pinned p;

    g_assert_cmpint(xsk, >=, 0);
    veth_pair_create(&v, 1);
    ifn = v.dut;
    pinned_setup(&p);
    array = pin_array_map(&p);
    missing = g_build_filename(p.dir, "none", NULL);
    expect_refusal_f("map-path needs inhibit=on", ",ifname=%s,map-path=%s",
                     ifn, p.xsks);
    expect_refusal_f("map-path and sock-fds exclude each other",
                     ",ifname=%s,inhibit=on,map-path=%s,sock-fds=%d", ifn,
                     p.xsks, xsk);
    expect_refusal_f("map-start-index needs map-path",
                     ",ifname=%s,map-start-index=1", ifn);
    expect_refusal_f("map-start-index needs map-path",
                     ",ifname=%s,inhibit=on,sock-fds=%d,map-start-index=1",
                     ifn, xsk);
    expect_refusal_f("map-start-index",
                     ",ifname=%s,inhibit=on,map-path=%s,map-start-index=-1",
                     ifn, p.xsks);
    expect_refusal_f("is a BPF array map, not an XSK map (xskmap)",
                     ",ifname=%s,inhibit=on,map-path=%s", ifn, array);
    expect_refusal_f("nothing is pinned there",
                     ",ifname=%s,inhibit=on,map-path=%s", ifn, missing);
    expect_refusal_f("is not on a BPF file system",
                     ",ifname=%s,inhibit=on,map-path=/proc/self/status",
                     ifn);
    /* Its own sockets still need CAP_NET_RAW. */
    o = g_strdup_printf(",ifname=%s,inhibit=on,map-path=%s", ifn, p.xsks);
    expect_refusal(DROP_ALL_CAPS, o, "no permission: af-xdp needs "
                   "CAP_NET_RAW (AF_XDP sockets); run as root, grant the "
                   "capabilities, or let a privileged helper attach the "
                   "program and pass inhibit=on with the sockets it made "
                   "(sock-fds=...)");
    expect_refusal_f("has 8 slot(s), but map-start-index=8 with 1 queue(s) "
                     "needs slot 8",
                     ",ifname=%s,inhibit=on,map-path=%s,map-start-index=8",
                     ifn, p.xsks);
    pinned_teardown(&p);
    veth_pair_destroy(&v);
    close(xsk);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    if (!netns_enter_private_or_skip_all("/af-xdp/needs-namespace")) {
        return g_test_run();
    }
    g_test_add_func("/af-xdp/native", test_native);
    g_test_add_func("/af-xdp/skb", test_skb);
    g_test_add_func("/af-xdp/spin", test_spin);
    g_test_add_func("/af-xdp/busy-poll", test_busy_poll);
    g_test_add_func("/af-xdp/io-sched", test_io_sched);
    g_test_add_func("/af-xdp/io-sched/real-time", test_io_sched_real_time);
    g_test_add_func("/af-xdp/two-queues", test_two_queues);
    g_test_add_func("/af-xdp/interrupt-per-run", test_interrupt_per_run);
    g_test_add_func("/af-xdp/queues-all", test_queues_all);
    g_test_add_func("/af-xdp/held-without-buffers",
                    test_held_without_buffers);
    g_test_add_func("/af-xdp/unprivileged-sock-fds",
                    test_unprivileged_sock_fds);
    g_test_add_func("/af-xdp/sock-fds/claims", test_sock_fds_claims);
    g_test_add_func("/af-xdp/rx-metadata/native", test_rx_metadata_native);
    g_test_add_func("/af-xdp/rx-metadata/skb", test_rx_metadata_skb);
    g_test_add_func("/af-xdp/rx-metadata/guest-latency", test_guest_latency);
    g_test_add_func("/af-xdp/rx-metadata/guest-latency-off",
                    test_guest_latency_off);
    g_test_add_func("/af-xdp/rx-metadata/foreign",
                    test_rx_metadata_foreign);
    g_test_add_func("/af-xdp/map-path", test_map_path);
    g_test_add_func("/af-xdp/map-path/refusals", test_map_path_refusals);
    g_test_add_func("/af-xdp/queues-all/refusals",
                    test_queues_all_refusals);
    g_test_add_func("/af-xdp/refusals", test_refusals);
    g_test_add_func("/af-xdp/skb-fallback", test_skb_fallback);
    g_test_add_func("/af-xdp/program-lifecycle", test_program_lifecycle);
    g_test_add_func("/af-xdp/link-events", test_link_events);
    g_test_add_func("/af-xdp/link-events/overrun", test_link_events_overrun);
    g_test_add_func("/af-xdp/jumbo/native", test_jumbo_native);
    g_test_add_func("/af-xdp/jumbo/skb", test_jumbo_skb);
    g_test_add_func("/af-xdp/jumbo/chain-edges", test_chain_edges);
    g_test_add_func("/af-xdp/jumbo/held", test_jumbo_held);
    g_test_add_func("/af-xdp/jumbo/over-mtu", test_over_mtu);
    g_test_add_func("/af-xdp/jumbo/single-buffer", test_single_buffer);
    return g_test_run();
}
