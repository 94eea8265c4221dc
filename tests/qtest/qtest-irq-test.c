/*
 * A qtest client that intercepts interrupts and then talks only QMP: the
 * IRQ lines it leaves unread must never keep illan from answering, and
 * when it reads them at last they are well-formed and add up.
 */
#include "libqtest.h"
#include "libqos/eth-frames.h"
#include "libqos/rig.h"
#include "netns.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#define FRAMES      50000
/* Thousands from dgram; af-xdp pulses once per run of up to 256 frames,
 * about a hundred times for FRAMES under ThreadSanitizer. */
#define MIN_INTERRUPTS 20
#define FRAME_LEN   60
/* How long QMP may take to answer "stop" (the item's requirement). */
#define STOP_REPLY_S 2.0

static const uint8_t peer_mac[6] = { 0x02, 0, 0, 0, 0, 0x01 };

/* Sends FRAMES frames to illan's end of the dgram netdev, waiting for
 * room in its receive queue (r->peer is connected to it, so poll() tells)
 * at most until @timeout_s: a wedged illan stops reading, and the test
 * must go on to ask QMP.  Returns how many went. */
static unsigned flood_dgram(QRig *r, double timeout_s)
{
    gint64 deadline = g_get_monotonic_time() + timeout_s * G_USEC_PER_SEC;
    struct sockaddr_un to = { .sun_family = AF_UNIX };
    uint8_t frame[FRAME_LEN];
    unsigned sent = 0;

    g_assert_cmpuint(strlen(r->dev_path), <, sizeof(to.sun_path));
    strcpy(to.sun_path, r->dev_path);
    g_assert_cmpint(connect(r->peer, (struct sockaddr *)&to, sizeof(to)),
                    ==, 0);
    while (sent < FRAMES) {
        struct pollfd p = { .fd = r->peer, .events = POLLOUT };
        gint64 left_ms = (deadline - g_get_monotonic_time()) / 1000;

        eth_frame_udp(frame, sizeof(frame), qrig_mac, peer_mac, sent);
        if (send(r->peer, frame, sizeof(frame), MSG_DONTWAIT) == FRAME_LEN) {
            sent++;
            continue;
        }
        g_assert_cmpint(errno, ==, EAGAIN);
        if (left_ms <= 0 || poll(&p, 1, left_ms) == 0) {
            break;
        }
    }
    return sent;
}

typedef struct PacketSend {
    int fd;
    const uint8_t *frame;
} PacketSend;

static bool packet_sent(void *opaque)
{
    PacketSend *p = opaque;

    return packet_send(p->fd, p->frame, FRAME_LEN);
}

/* Sends FRAMES frames into the veth pair's peer end: the kernel takes
 * them whether or not illan's I/O thread keeps up. */
static unsigned flood_veth(QRig *r)
{
    uint8_t frame[FRAME_LEN];
    PacketSend p = { r->peer, frame };

    for (unsigned i = 0; i < FRAMES; i++) {
        eth_frame_udp(frame, sizeof(frame), qrig_mac, peer_mac, i);
        qtest_wait_until(packet_sent, &p, QTEST_WAIT_S,
                         "the veth pair to take frame %u", i);
    }
    return FRAMES;
}

/* FRAMES from the dgram peer, as fast as illan takes them, or into the
 * veth pair; all of them unless illan stopped reading. */
static unsigned flood(QRig *r, VethPair *veth)
{
    return veth ? flood_veth(r) : flood_dgram(r, QTEST_WAIT_S);
}

/* A reply big enough to fill the socket and the server's buffer. */
#define BIG_READ    "read 0 0x400000\n"
#define BIG_REPLY   (strlen("OK 0x") + 2 * 0x400000)

/*
 * Reads the qtest socket up to the reply to irq_coalesced, which must come
 * last, after @big_replies replies to BIG_READ (in any place among the
 * IRQ lines).  Every IRQ line must be the LAN's source (qtest number 0,
 * source 0x1100) and a change from the one before; the last one lowers it, as a pulse ends.  Returns how
 * many IRQ lines came in all; *@late gets how many came after the last
 * big reply, *@coalesced the count.
 */
static unsigned read_irq_lines(QTestState *qts, unsigned big_replies,
                               unsigned *late, uint64_t *coalesced)
{
    g_autofree char *prev = g_strdup("IRQ lower 0");
    unsigned lines = 0;

    *late = 0;
    qtest_send_raw(qts, "irq_coalesced\n", strlen("irq_coalesced\n"));
    for (;;) {
        char *line = qtest_recv_raw_line(qts);
        char *end;

        if (g_str_has_prefix(line, "IRQ ")) {
            g_assert_true(!strcmp(line, "IRQ raise 0") ||
                          !strcmp(line, "IRQ lower 0"));
            g_assert_true(lines == 0 || strcmp(line, prev));
            g_free(prev);
            prev = line;
            lines++;
            (*late)++;
            continue;
        }
        if (g_str_has_prefix(line, "OK 0x")) {
            g_assert_cmpuint(big_replies, >, 0);
            g_assert_cmpuint(strlen(line), ==, BIG_REPLY);
            big_replies--;
            *late = 0;
            g_free(line);
            continue;
        }
        g_assert_cmpuint(big_replies, ==, 0);
        g_assert_true(g_str_has_prefix(line, "OK "));
        *coalesced = g_ascii_strtoull(line + 3, &end, 10);
        g_assert_cmpstr(end, ==, "");
        g_free(line);
        g_assert_cmpstr(prev, ==, "IRQ lower 0");
        return lines;
    }
}

/*
 * A client intercepts the LAN's interrupt, stops reading the qtest socket
 * (first asking for a reply larger than the socket and the server's
 * buffer hold, when @behind_reply), and 50 k frames go through the
 * device, from a dgram netdev on the main loop or, with @veth, from
 * af-xdp on an I/O thread: QMP must still answer "stop" at once.
 */
static void unread_irq_lines(bool behind_reply, VethPair *veth)
{
    g_autofree char *netdev = NULL;
    QRig r;
    g_autoptr(JsonObject) rsp = NULL;
    uint8_t frame[FRAME_LEN];
    uint64_t coalesced, before;
    unsigned sent, lines, late;
    gint64 interrupts, pulsed, rx, t0;
    gint64 flood_deadline = g_get_monotonic_time() +
                            QTEST_WAIT_S * G_USEC_PER_SEC;
    double stop_ms;

    qrig_init(&r);
    if (veth) {
        netdev = g_strdup_printf("af-xdp,id=n0,ifname=%s,mode=native",
                                 veth->dut);
        r.peer = packet_socket_open(veth->peer);
    } else {
        qrig_bind_peer(&r);
    }
    qrig_start(&r, &(QRigOpts){
        .netdev = netdev, .nic = ",id=net0",
        .extra = "-guest ibmveth,dev=net0,fwd=rxonly" });
    qtest_irq_intercept_out(r.qts, "net0");
    if (behind_reply) {
        qtest_send_raw(r.qts, BIG_READ, strlen(BIG_READ));
    }

    /* The guest replenishes its own buffers, so every batch the device
     * delivers may pulse the line; but a guest that keeps polling takes
     * frames with its interrupt off (under ThreadSanitizer, af-xdp saw 7
     * interrupts for 50 k frames), so more go until enough pulsed. */
    sent = flood(&r, veth);
    while (sent % FRAMES == 0 &&
           qrig_stat(r.qts, "nic.device.rx-interrupts") < MIN_INTERRUPTS) {
        g_assert_cmpint(g_get_monotonic_time(), <, flood_deadline);
        sent += flood(&r, veth);
    }
    t0 = g_get_monotonic_time();
    qtest_qmp_send_raw(r.qts, "{'execute': 'stop'}", 19);
    rsp = qtest_qmp_reply_within(r.qts, STOP_REPLY_S);
    if (!rsp) {
        g_error("stop had no reply within %.0f s (%u of %u frames sent)",
                STOP_REPLY_S, sent, FRAMES);
    }
    stop_ms = (g_get_monotonic_time() - t0) / 1000.0;
    g_assert_true(json_object_has_member(rsp, "return"));
    g_assert_cmpuint(sent % FRAMES, ==, 0);

    interrupts = pulsed = qrig_stat(r.qts, "nic.device.rx-interrupts");
    lines = read_irq_lines(r.qts, behind_reply, &late, &coalesced);
    g_test_message("%u frames: %" G_GINT64_FORMAT " interrupts, stop "
                   "answered in %.1f ms, %u IRQ lines sent (%u after the "
                   "last reply), %" G_GUINT64_FORMAT " coalesced", sent,
                   interrupts, stop_ms, lines, late, coalesced);
    g_assert_cmpint(interrupts, >=, MIN_INTERRUPTS);
    /* Every level change is either a line or counted. */
    g_assert_cmpuint(lines + coalesced, ==, 2 * interrupts);
    if (behind_reply) {
        /* Behind the reply only the line's latest level went out. */
        g_assert_cmpuint(late, <=, 1);
    }

    if (veth) {
        /* A pulse on the I/O thread comes after the count QMP reads, so
         * nothing can be waited for to see it arrive. */
        qrig_stop(&r);
        return;
    }
    /*
     * Back to normal once read: each pulse is two lines again.  A frame
     * pulses only if it finds the guest's interrupt on (not while the
     * guest polls), so frames go one by one, each handled by the device
     * (on the main loop, as QMP is) before the next, until one has.
     */
    json_object_unref(qtest_qmp(r.qts, "{'execute': 'cont'}"));
    before = coalesced;
    rx = qrig_stat(r.qts, "nic.rx.frames");
    for (unsigned i = 0; i < 100 && pulsed == interrupts; i++) {
        eth_frame_udp(frame, sizeof(frame), qrig_mac, peer_mac, i);
        qrig_send(&r, frame, sizeof(frame));
        rx = qrig_wait_stat_min(r.qts, "nic.rx.frames", rx + 1);
        pulsed = qrig_stat(r.qts, "nic.device.rx-interrupts");
    }
    g_assert_cmpint(pulsed, >, interrupts);
    g_assert_cmpuint(read_irq_lines(r.qts, 0, &late, &coalesced), ==,
                     2 * (pulsed - interrupts));
    g_assert_cmpuint(coalesced, ==, before);
    qrig_stop(&r);
}

static void test_unread_irq_lines(void)
{
    unread_irq_lines(false, NULL);
}

static void test_irq_lines_behind_reply(void)
{
    unread_irq_lines(true, NULL);
}

static void af_xdp_unread_irq_lines(bool behind_reply)
{
    VethPair v;

    if (!netns_enter_private_or_skip()) {
        return;
    }
    veth_pair_create(&v, 1);
    unread_irq_lines(behind_reply, &v);
    veth_pair_destroy(&v);
}

static void test_unread_irq_lines_af_xdp(void)
{
    af_xdp_unread_irq_lines(false);
}

static void test_irq_lines_behind_reply_af_xdp(void)
{
    af_xdp_unread_irq_lines(true);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/qtest/irq/unread-lines-block-nothing",
                    test_unread_irq_lines);
    g_test_add_func("/qtest/irq/lines-behind-unread-reply-coalesce",
                    test_irq_lines_behind_reply);
    g_test_add_func("/qtest/irq/unread-lines-block-no-io-thread",
                    test_unread_irq_lines_af_xdp);
    g_test_add_func("/qtest/irq/io-thread-lines-behind-reply-coalesce",
                    test_irq_lines_behind_reply_af_xdp);
    return g_test_run();
}
