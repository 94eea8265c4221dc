/*
 * The built-in guest's hcalls, scenario by scenario, against Linux 6.1's
 * ibmveth as docs/devel/linux-hcalls.md counts them from its source (and
 * a real guest on QEMU 7.2 confirms where QEMU's trace events reach):
 * each scenario's counts from x-query-guest-stats are Linux's row.
 */
#include <string.h>

#include "libqos/eth-frames.h"
#include "libqos/rig.h"
#include "libqtest.h"

/* The table's columns, as x-query-guest-stats names them. */
enum {
    ATTR, SIG, REG, FREE, ADD, ADDS, SEND, MCAST, MAC, PUT, IND, STUFF,
    OTHER, NCOLS,
};

static const char *const col_name[NCOLS] = {
    [ATTR] = "H_ILLAN_ATTRIBUTES", [SIG] = "H_VIO_SIGNAL",
    [REG] = "H_REGISTER_LOGICAL_LAN", [FREE] = "H_FREE_LOGICAL_LAN",
    [ADD] = "H_ADD_LOGICAL_LAN_BUFFER", [ADDS] = "H_ADD_LOGICAL_LAN_BUFFERS",
    [SEND] = "H_SEND_LOGICAL_LAN", [MCAST] = "H_MULTICAST_CTRL",
    [MAC] = "H_CHANGE_LOGICAL_LAN_MAC", [PUT] = "H_PUT_TCE",
    [IND] = "H_PUT_TCE_INDIRECT", [STUFF] = "H_STUFF_TCE", [OTHER] = "other",
};

/* A cell the scenario's own checks decide (it depends on batching or
 * on how many buffers were out). */
#define ANY (-1)

typedef struct Hcalls {
    gint64 n[NCOLS];
} Hcalls;

static const uint8_t peer_mac[6] = { 0x02, 0, 0, 0, 0, 0x01 };

/*
 * The counts once the vCPU is done with what it has: a frame is counted
 * before its poll's refill and the poll's last H_VIO_SIGNAL, and a stop
 * parks the vCPU only between two turns of its loop, after both.
 */
static Hcalls hcalls_now(QTestState *qts)
{
    g_autoptr(JsonObject) st = NULL;
    g_autoptr(JsonObject) stop = qtest_qmp(qts, "{'execute': 'stop'}");
    g_autoptr(JsonObject) cont = qtest_qmp(qts, "{'execute': 'cont'}");
    JsonObject *g;
    Hcalls h;

    g_assert_true(json_object_has_member(stop, "return"));
    g_assert_true(json_object_has_member(cont, "return"));
    st = qrig_guest_stats(qts);
    g = qrig_stats_guest(st);

    for (int c = 0; c < NCOLS; c++) {
        g_autofree char *path = g_strdup_printf("hcalls.%s", col_name[c]);

        h.n[c] = qjson_int(g, path);
    }
    return h;
}

static Hcalls hcalls_since(QTestState *qts, const Hcalls *before)
{
    Hcalls h = hcalls_now(qts);

    for (int c = 0; c < NCOLS; c++) {
        h.n[c] -= before->n[c];
    }
    return h;
}

/* Logs the model's row (the closing note's table) and checks it against
 * Linux's @want, cell by cell. */
static void check_row(const char *scenario, const Hcalls *got,
                      const gint64 want[NCOLS])
{
    g_autoptr(GString) row = g_string_new(scenario);

    for (int c = 0; c < NCOLS; c++) {
        g_string_append_printf(row, " | %" G_GINT64_FORMAT, got->n[c]);
    }
    g_test_message("%s", row->str);
    for (int c = 0; c < NCOLS; c++) {
        if (want[c] != ANY && got->n[c] != want[c]) {
            g_error("%s: %s = %" G_GINT64_FORMAT ", Linux's row says %"
                    G_GINT64_FORMAT, scenario, col_name[c], got->n[c],
                    want[c]);
        }
    }
}

static void start(QRig *r, const char *nic, const char *fwd)
{
    g_autoptr(GString) head = g_string_new("scenario");
    g_autofree char *guest = g_strdup_printf(
        "-guest ibmveth,id=g0,dev=net0,fwd=%s", fwd);
    g_autofree char *dev = g_strdup_printf(",id=net0%s", nic);

    for (int c = 0; c < NCOLS; c++) {
        g_string_append_printf(head, " | %s", col_name[c]);
    }
    g_test_message("%s", head->str);
    qrig_init(r);
    qrig_bind_peer(r);
    qrig_start(r, &(QRigOpts){ .nic = dev, .extra = guest });
    /* The boot's ifup ends with the solicited-node join's rx mode. */
    qrig_wait_stat_min(r->qts, "guest.hcalls.H_MULTICAST_CTRL", 1);
}

/* @n frames of @len bytes, in bursts of 16 (a NAPI budget) each taken
 * before the next is sent, so no frame waits for a buffer. */
static void receive_frames(QRig *r, unsigned n, size_t len)
{
    uint8_t f[1514];
    gint64 base = qrig_stat(r->qts, "guest.rx-frames");

    for (unsigned i = 0; i < n; i++) {
        eth_frame_udp(f, len, qrig_mac, peer_mac, i);
        qrig_send(r, f, len);
        if (i % 16 == 15 || i == n - 1) {
            qrig_wait_stat(r->qts, "guest.rx-frames", base + i + 1);
        }
    }
}

/* The hcalls the QMP command @cmd (an admin's command) made happen. */
static Hcalls hcalls_of(QRig *r, const char *cmd)
{
    Hcalls t0 = hcalls_now(r->qts);
    g_autoptr(JsonObject) rsp = qtest_qmp(r->qts, "%s", cmd);

    g_assert_true(json_object_has_member(rsp, "return"));
    return hcalls_since(r->qts, &t0);
}

/*
 * A Linux 6.1 guest against QEMU 7.2's device (illan's offloads=off: no
 * ibm,illan-options, H_ILLAN_ATTRIBUTES is H_FUNCTION, 0 multicast
 * filters), with Linux's default pools, scenario by scenario.
 */
static void test_qemu_device(void)
{
    /*                   ATTR SIG REG FREE ADD ADDS SEND MCAST MAC PUT IND STUFF other */
    static const gint64 probe_open[NCOLS] =
                       { 1,   3,  1,  0,   1024, 0, 0,   3,    0,  524, 504, 0, 0 };
    static const gint64 idle[NCOLS] = { 0 };
    static const gint64 rx_1000b[NCOLS] =
                       { 0,   ANY, 0, 0,   ANY, 0,  0,   0,    0,  ANY, ANY, 1000, 0 };
    static const gint64 rx_64b[NCOLS] =
                       { 0,   ANY, 0, 0,   1000, 0, 0,   0,    0,  0,   0,   0, 0 };
    static const gint64 mac[NCOLS] =
                       { 0,   0,  0,  0,   0,   0,  0,   0,    1,  0,   0,   0, 0 };
    static const gint64 join[NCOLS] =
                       { 0,   0,  0,  0,   0,   0,  0,   1,    0,  0,   0,   0, 0 };
    gint64 mtu[NCOLS] = { 0,   4,  1,  1,   1280, 0, 0,   0,    0,  524, 760, ANY, 0 };
    gint64 link_down[NCOLS] = { 0, 1,  0,  1,   0,   0,  0,   1,    0,  0,   0,   ANY, 0 };
    static const gint64 link_up[NCOLS] =
                       { 0,   3,  1,  0,   1024, 0, 0,   4,    0,  524, 504, 0, 0 };
    QRig r;
    Hcalls t0, h;
    gint64 posted;

    start(&r, ",offloads=off", "rxonly");
    qrig_wait_stat(r.qts, "guest.hcalls.H_MULTICAST_CTRL", 3);
    h = hcalls_now(r.qts);
    check_row("probe + open", &h, probe_open);
    posted = 1024;

    /* A measuring window, not a wait for something to happen. */
    t0 = hcalls_now(r.qts);
    g_usleep(10 * G_USEC_PER_SEC);
    h = hcalls_since(r.qts, &t0);
    check_row("idle 10 s", &h, idle);

    /* Each frame's buffer unmapped (H_STUFF_TCE), and re-added with a
     * map (one H_PUT_TCE or H_PUT_TCE_INDIRECT each) only by the
     * refills, each when more than 1/8 of the pool is out: up to 64
     * buffers are still out at the end. */
    t0 = hcalls_now(r.qts);
    receive_frames(&r, 1000, 1000);
    h = hcalls_since(r.qts, &t0);
    check_row("1000 frames in, 1000 bytes", &h, rx_1000b);
    g_assert_cmpint(h.n[ADD], ==, h.n[PUT] + h.n[IND]);
    g_assert_cmpint(h.n[ADD], >=, 1000 - 64);
    g_assert_cmpint(h.n[IND], >, 0);
    g_assert_cmpint(h.n[SIG], >=, 2);
    posted += h.n[ADD] - 1000;

    /* Below rx_copybreak: copied out, the buffer added again at once,
     * still mapped. */
    t0 = hcalls_now(r.qts);
    receive_frames(&r, 1000, 64);
    h = hcalls_since(r.qts, &t0);
    check_row("1000 frames in, 64 bytes", &h, rx_64b);
    g_assert_cmpint(h.n[SIG], >=, 2);

    h = hcalls_of(&r, "{'execute': 'x-guest-set-mac', 'arguments': "
                  "{'id': 'g0', 'mac': '52:54:00:12:34:57'}}");
    check_row("MAC change", &h, mac);

    h = hcalls_of(&r, "{'execute': 'x-guest-add-multicast', 'arguments': "
                  "{'id': 'g0', 'mac': '01:00:5e:00:00:fb'}}");
    check_row("multicast join", &h, join);

    /* The close unmaps the two list pages, the queue, the send buffer
     * and every buffer posted. */
    h = hcalls_of(&r, "{'execute': 'x-guest-set-link', 'arguments': "
                  "{'id': 'g0', 'up': false}}");
    link_down[STUFF] = 4 + posted;
    check_row("close (link down)", &h, link_down);

    /* An ifup after a close: the stack rejoins all-nodes too, so four
     * rx-mode calls where the boot's first ifup makes three; the group
     * joined above is still listed, so even __dev_open's first call has
     * an address and is one hcall. */
    h = hcalls_of(&r, "{'execute': 'x-guest-set-link', 'arguments': "
                  "{'id': 'g0', 'up': true}}");
    check_row("open (link up)", &h, link_up);

    /* ibmveth_change_mtu: a close, pools 0 to 2 active, an open; no rx
     * mode. */
    h = hcalls_of(&r, "{'execute': 'x-guest-set-mtu', 'arguments': "
                  "{'id': 'g0', 'mtu': 9000}}");
    mtu[STUFF] = 4 + 1024;
    check_row("MTU 1500 -> 9000", &h, mtu);

    qrig_stop(&r);
}

/*
 * The 1000 sent frames: a macswap guest sends each frame it receives
 * back, so its hcalls are the 64-byte row's plus the sends.
 */
static void test_sends(void)
{
    static const gint64 sent[NCOLS] =
                       { 0,   ANY, 0, 0,   1000, 0, 1000, 0,   0,  0,   0,   0, 0 };
    QRig r;
    Hcalls t0, h;

    start(&r, ",offloads=off", "macswap");
    qrig_wait_stat(r.qts, "guest.hcalls.H_MULTICAST_CTRL", 3);
    t0 = hcalls_now(r.qts);
    receive_frames(&r, 1000, 64);
    qrig_wait_stat(r.qts, "guest.tx-frames", 1000);
    h = hcalls_since(r.qts, &t0);
    check_row("1000 frames in, 64 bytes, each sent back", &h, sent);
    qrig_stop(&r);
}

/*
 * Against illan's own device (offloads=on): the probe sets checksum
 * offload and large send (6 H_ILLAN_ATTRIBUTES), 16 filters make each
 * rx-mode call n + 2 hcalls, and mainline's bulk add posts 8 buffers a
 * call.
 */
static void test_illan_device(void)
{
    static const gint64 probe_open[NCOLS] =
                       { 6,   3,  1,  0,   0,  128, 0,   12,   0,  524, 504, 0, 0 };
    QRig r;
    Hcalls h;

    start(&r, "", "rxonly");
    qrig_wait_stat(r.qts, "guest.hcalls.H_MULTICAST_CTRL", 12);
    h = hcalls_now(r.qts);
    check_row("probe + open, offloads=on", &h, probe_open);
    qrig_stop(&r);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/guest-hcalls/qemu-device", test_qemu_device);
    g_test_add_func("/guest-hcalls/sends", test_sends);
    g_test_add_func("/guest-hcalls/illan-device", test_illan_device);
    return g_test_run();
}
