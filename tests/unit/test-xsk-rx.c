/*
 * Unit tests for an AF_XDP queue's receive path (net/xsk-queue.c) on
 * rings built by hand: the test plays the kernel, taking UMEM frames from
 * the fill ring and publishing descriptors, multi-buffer chains among
 * them, on the rx ring; a test NIC behind a real net-core backend records
 * what the queue delivers.
 */
#include "net/net.h"
#include "net/xsk-queue.h"

#include <glib.h>
#include <string.h>
#include <sys/mman.h>
#include <linux/if_xdp.h>
#include <xdp/xsk.h>

#ifndef XDP_PKT_CONTD
#define XDP_PKT_CONTD (1 << 0)
#endif

#define RING_SIZE 512
#define FRAME_LEN 60

/* ---- the test NIC: takes and records every frame ---- */

static unsigned nic_receive_batch(void *opaque, const NetFrame *frames,
                                  unsigned n, G_GNUC_UNUSED unsigned flags,
                                  G_GNUC_UNUSED NetRxStamp *stamp,
                                  NetRxResult *results)
{
    GPtrArray *got = opaque;

    for (unsigned i = 0; i < n; i++) {
        g_ptr_array_add(got, g_bytes_new(frames[i].data, frames[i].len));
        results[i] = NET_RX_DELIVERED;
    }
    return n;
}

static const NetNicOps nic_ops = { .receive_batch = nic_receive_batch };

/* The queue under test only receives. */
static bool backend_send(G_GNUC_UNUSED void *opaque,
                         G_GNUC_UNUSED const uint8_t *data,
                         G_GNUC_UNUSED size_t len)
{
    return false;
}

static const NetBackendOps backend_ops = { .send = backend_send };

/* ---- the rings, and the test as the kernel ---- */

typedef struct Rig {
    uint32_t rx_prod, rx_cons, rx_flags;
    uint32_t fill_prod, fill_cons, fill_flags;
    struct xdp_desc descs[RING_SIZE];
    uint64_t fill_addrs[RING_SIZE];
    uint8_t *umem;
    NetClientState *backend, *nic;
    GPtrArray *got;             /* GBytes the NIC took, in order */
    XskQueue *q;
} Rig;

static void rig_init(Rig *r)
{
    XskQueueConfig cfg = {
        .ifname = "mock", .rx_ring_size = RING_SIZE, .tx_ring_size = 64,
        .batch = NET_BATCH_MAX, .multi_buffer = true, .sock_fd = -1,
    };
    struct xsk_ring_cons rx = {
        .mask = RING_SIZE - 1, .size = RING_SIZE, .producer = &r->rx_prod,
        .consumer = &r->rx_cons, .ring = r->descs, .flags = &r->rx_flags,
    };
    /* A producer's cached_cons runs one ring ahead, as libxdp keeps it. */
    struct xsk_ring_prod fill = {
        .cached_cons = RING_SIZE, .mask = RING_SIZE - 1, .size = RING_SIZE,
        .producer = &r->fill_prod, .consumer = &r->fill_cons,
        .ring = r->fill_addrs, .flags = &r->fill_flags,
    };
    GError *err = NULL;

    memset(r, 0, sizeof(*r));
    r->umem = mmap(NULL, xsk_queue_umem_size(&cfg), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    g_assert(r->umem != MAP_FAILED);
    r->got = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
    r->backend = net_backend_new("x0", &backend_ops, NULL);
    r->nic = net_nic_new("nic0", "x0", &nic_ops, r->got, &err);
    g_assert_no_error(err);
    r->q = xsk_queue_new_on_rings(&cfg, r->backend, &rx, &fill, r->umem);
    /* The queue gave every receive frame to the fill ring. */
    g_assert_cmpuint(r->fill_prod, ==, RING_SIZE);
}

static void rig_free(Rig *r)
{
    xsk_queue_close(r->q);
    net_nic_free(r->nic);
    net_cleanup();
    g_ptr_array_free(r->got, TRUE);
}

/* One descriptor: a frame from the fill ring, @len bytes of @fill. */
static void publish_desc(Rig *r, uint8_t fill, uint32_t len, bool contd)
{
    uint64_t addr;

    g_assert_cmpuint(r->fill_cons, !=, r->fill_prod);
    addr = r->fill_addrs[r->fill_cons++ & (RING_SIZE - 1)] + 256;
    memset(r->umem + addr, fill, len);
    r->descs[r->rx_prod & (RING_SIZE - 1)] = (struct xdp_desc){
        .addr = addr, .len = len, .options = contd ? XDP_PKT_CONTD : 0,
    };
    __atomic_store_n(&r->rx_prod, r->rx_prod + 1, __ATOMIC_RELEASE);
}

/* A frame in @ndesc descriptors of @len bytes each, every byte @fill. */
static void publish_frame(Rig *r, uint8_t fill, unsigned ndesc,
                          uint32_t len)
{
    for (unsigned i = 0; i < ndesc; i++) {
        publish_desc(r, fill, len, i + 1 < ndesc);
    }
}

/* Polls until the queue has consumed every descriptor published. */
static void poll_all(Rig *r)
{
    for (unsigned polls = 0; r->rx_cons != r->rx_prod; polls++) {
        g_assert_cmpuint(polls, <, RING_SIZE);
        xsk_queue_rx_poll(r->q);
    }
}

static void assert_got(Rig *r, unsigned i, uint8_t fill, size_t len)
{
    GBytes *b = g_ptr_array_index(r->got, i);
    const uint8_t *data = g_bytes_get_data(b, NULL);

    g_assert_cmpuint(g_bytes_get_size(b), ==, len);
    for (size_t k = 0; k < len; k++) {
        g_assert_cmpuint(data[k], ==, fill);
    }
}

static void assert_dropped_too_long(Rig *r, uint64_t too_long)
{
    XskQueueStats st;
    NetClientStats nst;

    xsk_queue_get_stats(r->q, &st);
    net_client_get_stats(r->backend, &nst);
    g_assert_cmpuint(st.rx_too_long, ==, too_long);
    g_assert_cmpuint(st.rx_truncated, ==, 0);
    g_assert_cmpuint(nst.rx_errors, ==, too_long);
    g_assert_cmpuint(st.rx_frames, ==, r->got->len);
}

/*
 * A chain of more than XSK_CHAIN_CAP descriptors is dropped whole, in the
 * batch that sees its head, and counted once as too long: its tail is no
 * frame, and the good frames after it, in the same batch and in the next,
 * arrive.
 */
static void test_over_long_chain(void)
{
    Rig r;

    rig_init(&r);
    publish_frame(&r, 0xee, XSK_CHAIN_CAP + 6, 100);
    publish_frame(&r, 0x01, 1, FRAME_LEN);
    publish_frame(&r, 0x02, 2, 2000);
    poll_all(&r);
    publish_frame(&r, 0x03, 1, FRAME_LEN);
    poll_all(&r);
    g_assert_cmpuint(r.got->len, ==, 3);
    assert_got(&r, 0, 0x01, FRAME_LEN);
    assert_got(&r, 1, 0x02, 4000);
    assert_got(&r, 2, 0x03, FRAME_LEN);
    assert_dropped_too_long(&r, 1);
    rig_free(&r);
}

/* The same for a chain longer than a batch looks at: the rest of it is
 * skipped over the batches that follow, and nothing after it. */
static void test_chain_past_peek(void)
{
    Rig r;

    rig_init(&r);
    publish_frame(&r, 0xee, NET_BATCH_MAX + XSK_CHAIN_CAP + 40, 100);
    publish_frame(&r, 0x01, 1, FRAME_LEN);
    poll_all(&r);
    publish_frame(&r, 0x02, 1, FRAME_LEN);
    poll_all(&r);
    g_assert_cmpuint(r.got->len, ==, 2);
    assert_got(&r, 0, 0x01, FRAME_LEN);
    assert_got(&r, 1, 0x02, FRAME_LEN);
    assert_dropped_too_long(&r, 1);
    rig_free(&r);
}

/* An over-long chain the ring ends in the middle of lost its end: the
 * kernel publishes frames whole, so the next descriptor starts a frame.
 * So does an empty ring after the end of what a batch looked at. */
static void test_over_long_chain_without_end(void)
{
    Rig r;

    rig_init(&r);
    for (unsigned i = 0; i < XSK_CHAIN_CAP + 6; i++) {
        publish_desc(&r, 0xee, 100, true);
    }
    poll_all(&r);
    publish_frame(&r, 0x01, 1, FRAME_LEN);
    poll_all(&r);
    for (unsigned i = 0; i < NET_BATCH_MAX + XSK_CHAIN_CAP; i++) {
        publish_desc(&r, 0xee, 100, true);
    }
    poll_all(&r);
    g_assert_cmpuint(xsk_queue_rx_poll(r.q), ==, 0);
    publish_frame(&r, 0x02, 1, FRAME_LEN);
    poll_all(&r);
    g_assert_cmpuint(r.got->len, ==, 2);
    assert_got(&r, 0, 0x01, FRAME_LEN);
    assert_got(&r, 1, 0x02, FRAME_LEN);
    assert_dropped_too_long(&r, 2);
    rig_free(&r);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/xsk-queue/rx/over-long-chain", test_over_long_chain);
    g_test_add_func("/xsk-queue/rx/chain-past-peek", test_chain_past_peek);
    g_test_add_func("/xsk-queue/rx/over-long-chain-without-end",
                    test_over_long_chain_without_end);
    return g_test_run();
}
