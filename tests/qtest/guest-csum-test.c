/*
 * The built-in guest catches a device that lies about checksums: with
 * csum-audit=on it checks, with its own code, every checksum the device
 * flags CSUM_GOOD.  Run against illan, it finds none wrong; run against
 * illan-mutant-csum, whose device leaves an odd last byte out of its sum
 * (ILLAN_MUTANT_CSUM in hw/net/llan_offload.c), it finds every one the
 * device got wrong.
 */
#include <string.h>

#include "libqos/eth-frames.h"
#include "libqos/rig.h"
#include "libqtest.h"

#define FRAMES_PER_KIND 16

static const uint8_t peer_mac[6] = { 0x02, 0, 0, 0, 0, 0x01 };

static void put_be16(uint8_t *p, uint16_t v)
{
    p[0] = v >> 8;
    p[1] = v & 0xff;
}

/* An odd length for frame @i, 61 to 1513 bytes. */
static size_t odd_len(unsigned i)
{
    return 61 + 2 * ((i * 97) % 727);
}

/*
 * A TCP segment of odd length whose last byte changed in flight from 0
 * to 0x5a: its checksum is wrong, by that byte alone, so a sum that
 * leaves the byte out finds it right.
 */
static size_t corrupted_tcp(uint8_t *f, unsigned i)
{
    size_t len = odd_len(i);
    /* The frame's pattern byte at offset n is tag + n: tag makes the
     * last one 0. */
    uint16_t tag = (uint16_t)(256 * (i + 1) - (len - 1) % 256);

    eth_frame_tcp(f, len, qrig_mac, peer_mac, tag);
    g_assert_cmpuint(f[len - 1], ==, 0);
    f[len - 1] = 0x5a;
    return len;
}

/*
 * A UDP datagram of odd length as a local sender leaves it for hardware
 * to finish (CHECKSUM_PARTIAL): the checksum field holds the
 * pseudo-header's sum, which the device completes and flags good.
 */
static size_t partial_udp(uint8_t *f, unsigned i)
{
    size_t len = odd_len(i + FRAMES_PER_KIND);
    uint8_t pseudo[12] = { [9] = 17 };
    uint8_t *ip = f + ETH_FRAME_HLEN;

    eth_frame_udp(f, len, qrig_mac, peer_mac, i + 1);
    g_assert_cmpuint(f[len - 1], !=, 0);
    memcpy(pseudo, ip + 12, 8);
    put_be16(pseudo + 10, len - ETH_FRAME_HLEN - 20);
    put_be16(ip + 20 + 6,
             (uint16_t)~eth_frame_ip_checksum(pseudo, sizeof(pseudo)));
    return len;
}

static bool rx_csum_negotiated(QTestState *qts)
{
    g_autoptr(JsonObject) stats = qrig_guest_stats(qts);
    JsonObject *offloads = json_object_get_object_member(
        qrig_stats_guest(stats), "offloads");

    return json_object_get_boolean_member(offloads, "rx-csum");
}

typedef struct Counts {
    gint64 csum_good, audited, lied, csum_bad;
} Counts;

/* Sends both kinds of frames to a guest with csum-audit=on on @binary
 * and returns what it counted once it has taken them all. */
static Counts audit_run(const char *binary)
{
    g_autofree char *saved = g_strdup(g_getenv("ILLAN_BINARY"));
    uint8_t f[1514];
    Counts c;
    QRig r;

    g_assert_nonnull(binary);
    g_setenv("ILLAN_BINARY", binary, TRUE);
    qrig_init(&r);
    qrig_bind_peer(&r);
    qrig_start(&r, &(QRigOpts){
        .nic = ",id=net0",
        .extra = "-guest ibmveth,id=g0,dev=net0,fwd=rxonly,csum-audit=on",
    });
    g_setenv("ILLAN_BINARY", saved, TRUE);
    g_assert_true(rx_csum_negotiated(r.qts));
    for (unsigned i = 0; i < FRAMES_PER_KIND; i++) {
        qrig_send(&r, f, corrupted_tcp(f, i));
        qrig_send(&r, f, partial_udp(f, i));
    }
    qrig_wait_stat(r.qts, "guest.rx-frames", 2 * FRAMES_PER_KIND);
    c = (Counts) {
        .csum_good = qrig_stat(r.qts, "guest.offloads.rx-csum-good"),
        .audited = qrig_stat(r.qts, "guest.offloads.rx-csum-audited"),
        .lied = qrig_stat(r.qts, "guest.offloads.rx-csum-lied"),
        .csum_bad = qrig_stat(r.qts, "guest.drops.rx-csum-bad"),
    };
    qrig_stop(&r);
    return c;
}

/* The device flags only the partial datagrams good, having completed
 * them right, and leaves the bad segments to the guest's TCP. */
static void test_device_honest(void)
{
    Counts c = audit_run(g_getenv("ILLAN_BINARY"));

    g_assert_cmpint(c.csum_good, ==, FRAMES_PER_KIND);
    g_assert_cmpint(c.audited, ==, FRAMES_PER_KIND);
    g_assert_cmpint(c.lied, ==, 0);
    g_assert_cmpint(c.csum_bad, ==, FRAMES_PER_KIND);
}

/* The mutant flags the bad segments good and completes the datagrams
 * wrong: every one of them is a lie the guest counts. */
static void test_device_mutant(void)
{
    Counts c = audit_run(g_getenv("ILLAN_MUTANT_CSUM_BINARY"));

    g_assert_cmpint(c.csum_good, ==, 2 * FRAMES_PER_KIND);
    g_assert_cmpint(c.audited, ==, 2 * FRAMES_PER_KIND);
    g_assert_cmpint(c.lied, ==, 2 * FRAMES_PER_KIND);
    g_assert_cmpint(c.csum_bad, ==, 0);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/guest-csum/audit/honest-device", test_device_honest);
    g_test_add_func("/guest-csum/audit/mutant-device", test_device_mutant);
    return g_test_run();
}
