/*
 * spapr-vlan under a hostile guest and a hostile wire.  Each input builds
 * a fresh machine with the device (first byte: pools on or off, frames
 * delivered as af-xdp does, in batches the device may hold, or as dgram
 * and stream do, all at once) and then decodes into up to MAX_OPS
 * operations: every LAN, TCE, VIO and attribute hcall with arguments
 * biased to boundaries, guest-memory writes, TCE unmaps, frames of any
 * length up to the largest a multi-buffer chain gathers, link flaps,
 * stop/cont and resets.  At the end every counter must balance: frames
 * the backend offered = delivered + dropped by reason, on the net core and
 * on the device, and every transmit counted once on each layer.
 */
#include "fuzz-input.h"
#include "fuzz-machine.h"
#include "hw/ppc/hcall.h"
#include "hw/ppc/spapr_iommu.h"
#include "qemu/guest-ram.h"
#include "qemu/runstate.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#define RAM_SIZE        (16ULL << 20)
#define MAPPED          (4ULL << 20)    /* identity-mapped at the start */
#define PAGE            4096ULL
#define MAX_OPS         256
#define MAX_WRITE       4096

typedef struct Rig {
    FuzzMachine m;
    SpaprTceTable *tcet;
    bool af_xdp;            /* deliver as af-xdp: the device may hold */
    bool room;              /* the device said it has room again */
    uint64_t offered;       /* frames the device took, by our count */
    uint64_t sends;         /* frames that reached our send() */
    bool send_fails;
    /* A batch the device held part of, as an AF_XDP ring keeps it. */
    uint8_t *held_data;
    NetFrame held[NET_BATCH_MAX];
    unsigned nheld;
} Rig;

static bool backend_send(void *opaque, const uint8_t *data, size_t len)
{
    Rig *r = opaque;

    (void)data, (void)len;
    r->sends++;
    return !r->send_fails;
}

static void backend_rx_ready(void *opaque)
{
    ((Rig *)opaque)->room = true;
}

static void backend_cleanup(void *opaque)
{
    (void)opaque;
}

static const NetBackendOps fuzz_backend_ops = {
    .send = backend_send,
    .cleanup = backend_cleanup,
    .rx_ready = backend_rx_ready,
};

static void rig_init(Rig *r, bool pools)
{
    fuzz_machine_init(&r->m, "pseries", RAM_SIZE, pools, &fuzz_backend_ops,
                      r);
    r->tcet = spapr_tce_find_by_liobn(spapr_tce_registry(r->m.spapr),
                                      r->m.unit);
    for (uint64_t a = 0; a < MAPPED; a += PAGE) {
        spapr_tce_put(r->tcet, a, a | 3);
    }
}

static void rig_free(Rig *r)
{
    fuzz_machine_free(&r->m);
    g_free(r->held_data);
}

/* Addresses and lengths where the device's checks are. */
static const uint64_t addr_edges[] = {
    0, 1, 8, 16, PAGE - 16, PAGE - 8, PAGE - 1, PAGE, PAGE + 8, 0x10000,
    MAPPED - PAGE, MAPPED - 16, MAPPED - 8, MAPPED - 1, MAPPED, RAM_SIZE - 1,
    RAM_SIZE, 0xffffffffULL, 0x100000000ULL, UINT64_MAX,
    0x100000, 0x101000, 0x102000, 0x200000, 0x201000, 0x300000,
};
static const uint64_t len_edges[] = {
    0, 1, 7, 8, 13, 14, 15, 16, 60, 64, 512, 1514, 1518, 1522, 2048, 4080,
    4096, 9000, 9018, 16384, 65535, 65536, 65552, 0xffffff, 0x1000000,
};

static uint64_t pick_addr(FuzzInput *in)
{
    return fuzz_pick(in, addr_edges, G_N_ELEMENTS(addr_edges));
}

static uint64_t pick_len(FuzzInput *in)
{
    return fuzz_pick(in, len_edges, G_N_ELEMENTS(len_edges));
}

/* A buffer descriptor: flags from one byte, then a length and address. */
static uint64_t pick_bd(FuzzInput *in)
{
    uint64_t flags = (uint64_t)fuzz_u8(in) << 56;
    uint64_t len = pick_len(in) & 0xffffff;

    return flags | len << 32 | (pick_addr(in) & 0xffffffffULL);
}

static uint64_t pick_mac(FuzzInput *in)
{
    static const uint64_t macs[] = {
        0x525400123456ULL, 0xffffffffffffULL, 0x01005e000001ULL,
        0x333300000001ULL, 0x525400abcdefULL, 0, 0x010000000000ULL,
    };

    return fuzz_pick(in, macs, G_N_ELEMENTS(macs)) & 0xffffffffffffULL;
}

static int64_t hcall(Rig *r, uint64_t op, const uint64_t *a, unsigned n)
{
    uint64_t args[HCALL_NARGS] = { r->m.unit };
    unsigned nout;

    for (unsigned i = 0; i < n && i + 1 < HCALL_NARGS; i++) {
        args[i + 1] = a[i];
    }
    return spapr_hypercall(r->m.spapr, op, args, &nout);
}

/* An hcall on our unit (or, one time in 16, another), @n arguments. */
static void fuzz_hcall(Rig *r, FuzzInput *in, uint64_t op, unsigned n,
                       uint64_t (*pick)(FuzzInput *))
{
    uint64_t a[HCALL_NARGS - 1];
    uint64_t args[HCALL_NARGS];
    unsigned nout;

    for (unsigned i = 0; i < n; i++) {
        a[i] = pick(in);
    }
    if ((fuzz_u8(in) & 0xf) != 0) {
        hcall(r, op, a, n);
        return;
    }
    args[0] = pick_addr(in);
    memcpy(args + 1, a, n * sizeof(a[0]));
    memset(args + 1 + n, 0, (HCALL_NARGS - 1 - n) * sizeof(args[0]));
    spapr_hypercall(r->m.spapr, op, args, &nout);
}

static void op_register(Rig *r, FuzzInput *in)
{
    uint64_t a[4] = { pick_addr(in), pick_bd(in), pick_addr(in),
                      pick_mac(in) };

    hcall(r, H_REGISTER_LOGICAL_LAN, a, 4);
}

static void op_send(Rig *r, FuzzInput *in)
{
    uint64_t a[8] = { 0 };
    unsigned nbd = fuzz_u8(in) % 7;

    for (unsigned i = 0; i < nbd; i++) {
        a[i] = pick_bd(in);
    }
    a[6] = fuzz_u8(in) < 8 ? pick_addr(in) : 0;   /* continuation token */
    a[7] = pick_len(in);                            /* MSS in r12 */
    r->send_fails = fuzz_u8(in) < 16;
    hcall(r, H_SEND_LOGICAL_LAN, a, 8);
}

static void op_tce(Rig *r, FuzzInput *in)
{
    uint64_t liobn = fuzz_u8(in) < 240 ? r->m.unit : pick_addr(in);
    uint64_t a[3] = { pick_addr(in), pick_addr(in) | (fuzz_u8(in) & 3),
                      pick_len(in) };
    uint64_t args[HCALL_NARGS] = { liobn, a[0], a[1], a[2] };
    static const uint64_t ops[] = { H_PUT_TCE, H_STUFF_TCE, H_GET_TCE,
                                    H_PUT_TCE_INDIRECT };
    unsigned nout;

    spapr_hypercall(r->m.spapr, ops[fuzz_u8(in) % 4], args, &nout);
}

static void op_write_memory(Rig *r, FuzzInput *in)
{
    uint64_t addr = pick_addr(in);
    const uint8_t *bytes;
    size_t n = fuzz_bytes(in, MAX_WRITE, &bytes);

    guest_ram_write(spapr_ram(r->m.spapr), addr, bytes, n);
}

/* A whole range the guest unmaps (or maps read-only, or back). */
static void op_unmap(Rig *r, FuzzInput *in)
{
    uint64_t start = pick_addr(in) & ~(PAGE - 1);
    unsigned pages = fuzz_u8(in) + 1;
    unsigned perm = fuzz_u8(in) % 4;

    for (unsigned i = 0; i < pages && start < MAPPED; i++, start += PAGE) {
        spapr_tce_put(r->tcet, start, perm ? start | perm : 0);
    }
}

static uint16_t csum_add(uint32_t sum, const uint8_t *p, size_t len)
{
    for (size_t i = 0; i + 1 < len; i += 2) {
        sum += p[i] << 8 | p[i + 1];
    }
    if (len & 1) {
        sum += p[len - 1] << 8;
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return sum;
}

/*
 * An IPv4 TCP or UDP frame with correct checksums (bit 1 of @kind breaks
 * the L4 one), the input's bytes for its flags, ports and payload: what
 * the receive checksum and LRO paths look at.
 */
static void shape_ipv4(uint8_t *f, uint32_t len, uint8_t kind)
{
    uint32_t ip_len = len - 14, l4_len = ip_len - 20;
    uint8_t proto = kind & 4 ? 17 : 6;
    uint8_t pseudo[12];
    uint16_t sum;

    if (len < 14 + 20 + 20) {
        return;
    }
    f[12] = 0x08, f[13] = 0x00;
    f[14] = 0x45;
    f[16] = ip_len >> 8, f[17] = ip_len;
    f[20] = 0x40, f[21] = 0;        /* DF, not a fragment */
    f[23] = proto;
    f[24] = f[25] = 0;
    sum = ~csum_add(0, f + 14, 20);
    f[24] = sum >> 8, f[25] = sum;
    memcpy(pseudo, f + 26, 8);
    pseudo[8] = 0, pseudo[9] = proto;
    pseudo[10] = l4_len >> 8, pseudo[11] = l4_len;
    if (proto == 6) {
        f[46] = 0x50 | (f[46] & 0x0f);      /* a 20-byte header */
        f[50] = f[51] = 0;
    } else {
        f[38] = l4_len >> 8, f[39] = l4_len;
        f[40] = f[41] = 0;
    }
    sum = ~csum_add(csum_add(0, pseudo, 12), f + 34, l4_len);
    if (kind & 2) {
        sum ^= 1;
    }
    f[proto == 6 ? 50 : 40] = sum >> 8, f[proto == 6 ? 51 : 41] = sum;
}

static void build_frame(Rig *r, FuzzInput *in, uint8_t *f, uint32_t len)
{
    const uint8_t *fill;
    size_t nfill = fuzz_bytes(in, 256, &fill);
    uint8_t kind = fuzz_u8(in);
    uint64_t dst;

    for (uint32_t i = 0; i < len; i++) {
        f[i] = nfill ? fill[i % nfill] : (uint8_t)i;
    }
    if (kind & 1) {
        MACAddr mac = spapr_vlan_get_mac(r->m.lan);

        memcpy(f, mac.a, MIN(len, 6));
    } else if (len >= 6) {
        dst = pick_mac(in);
        for (int i = 0; i < 6; i++) {
            f[i] = dst >> (40 - 8 * i);
        }
    }
    if (kind & 8) {
        shape_ipv4(f, len, kind);
    }
}

/* Hands a batch over; with af-xdp's way, what the device holds stays
 * ours until it says it has room. */
static void offer(Rig *r, const NetFrame *frames, unsigned n)
{
    /* The XDP stamp af-xdp passes with a batch's last frame when the
     * program's metadata is on: every other batch has one. */
    NetRxStamp stamp = { .entered = 1 };
    unsigned taken;

    if (!r->af_xdp) {
        net_backend_deliver(r->m.backend, frames, n);
        r->offered += n;
        return;
    }
    r->room = false;
    /* Some batches say more follow, as af-xdp's do under a backlog; the
     * run ends with the next batch that does not. */
    taken = net_backend_deliver_or_hold(r->m.backend, frames, n,
                                        n % 2 ? &stamp : NULL, n % 4 == 0);
    fuzz_check(taken <= n, "took more than offered");
    r->offered += taken;
    r->nheld = n - taken;
    memmove(r->held, frames + taken, r->nheld * sizeof(NetFrame));
}

static void op_frames(Rig *r, FuzzInput *in)
{
    unsigned n = fuzz_u8(in) % NET_BATCH_MAX + 1;
    uint32_t lens[NET_BATCH_MAX];
    NetFrame frames[NET_BATCH_MAX];
    size_t total = 0;
    uint8_t *data;

    if (r->nheld) {
        return;         /* the ring is full until the device takes them */
    }
    for (unsigned i = 0; i < n; i++) {
        uint64_t len = pick_len(in);

        lens[i] = MIN(len, NET_FRAME_MAX);
        total += lens[i];
    }
    g_free(r->held_data);
    r->held_data = data = g_malloc(total ? total : 1);
    for (unsigned i = 0; i < n; i++) {
        build_frame(r, in, data, lens[i]);
        frames[i] = (NetFrame){ .data = data, .len = lens[i] };
        data += lens[i];
    }
    offer(r, frames, n);
}

/* The backend offers what the device held again, as after rx_ready. */
static void op_reoffer(Rig *r)
{
    NetFrame frames[NET_BATCH_MAX];
    unsigned n = r->nheld;

    memcpy(frames, r->held, n * sizeof(NetFrame));
    if (n) {
        offer(r, frames, n);
    }
}

static void op_machine(Rig *r, FuzzInput *in)
{
    switch (fuzz_u8(in) % 4) {
    case 0:
        net_client_set_link(r->m.backend, !net_client_link_up(r->m.backend));
        break;
    case 1:
        if (runstate_is_running()) {
            vm_stop();
        } else {
            vm_start();
        }
        break;
    case 2:
        spapr_machine_reset(r->m.spapr);
        break;
    default:
        op_reoffer(r);
        break;
    }
}

static void run_op(Rig *r, FuzzInput *in)
{
    switch (fuzz_u8(in) % 16) {
    case 0:
        op_register(r, in);
        break;
    case 1:
        hcall(r, H_FREE_LOGICAL_LAN, NULL, 0);
        break;
    case 2:
        fuzz_hcall(r, in, H_ADD_LOGICAL_LAN_BUFFER, 1, pick_bd);
        break;
    case 3:
        fuzz_hcall(r, in, H_ADD_LOGICAL_LAN_BUFFERS, 4, pick_bd);
        break;
    case 4:
        op_send(r, in);
        break;
    case 5:
        fuzz_hcall(r, in, H_MULTICAST_CTRL, 2, pick_mac);
        break;
    case 6:
        fuzz_hcall(r, in, H_CHANGE_LOGICAL_LAN_MAC, 1, pick_mac);
        break;
    case 7:
        fuzz_hcall(r, in, H_FREE_LOGICAL_LAN_BUFFER, 1, pick_len);
        break;
    case 8:
        fuzz_hcall(r, in, H_ILLAN_ATTRIBUTES, 2, pick_addr);
        break;
    case 9:
        fuzz_hcall(r, in, H_VIO_SIGNAL, 1, pick_addr);
        break;
    case 10:
        op_tce(r, in);
        break;
    case 11:
        op_write_memory(r, in);
        break;
    case 12:
        op_unmap(r, in);
        break;
    case 13:
        op_machine(r, in);
        break;
    default:
        op_frames(r, in);
        break;
    }
}

static uint64_t sum(const uint64_t *v, int from, int to)
{
    uint64_t s = 0;

    for (int i = from; i < to; i++) {
        s += v[i];
    }
    return s;
}

static void check_balance(Rig *r)
{
    NetClientStats nic, nd;
    SpaprVlanStats vs;

    net_client_get_stats(spapr_vlan_nic(r->m.lan), &nic);
    net_client_get_stats(r->m.backend, &nd);
    spapr_vlan_get_stats(r->m.lan, &vs);
    if (getenv("FUZZ_VERBOSE")) {
        fprintf(stderr, "offered %" PRIu64 ":", r->offered);
        for (int i = 0; i < NET_RX__MAX; i++) {
            fprintf(stderr, " %s %" PRIu64, net_rx_result_name(i),
                    nic.rx_results[i]);
        }
        fprintf(stderr, "; sent %" PRIu64 ", tx errors %" PRIu64 "\n",
                nic.tx_frames, nic.tx_errors);
    }
    fuzz_check(nd.rx_frames == r->offered, "netdev rx.frames != frames taken");
    fuzz_check(nic.rx_frames == r->offered, "nic rx.frames != frames taken");
    fuzz_check(sum(nic.rx_results, 0, NET_RX__MAX) == nic.rx_frames,
          "nic rx.frames != delivered + dropped");
    fuzz_check(sum(nd.rx_results, 0, NET_RX__MAX) == nd.rx_frames,
          "netdev rx.frames != delivered + dropped");
    fuzz_check(!memcmp(nic.rx_results, nd.rx_results, sizeof(nd.rx_results)),
          "nic and netdev results differ");
    fuzz_check(vs.rx_frames == nic.rx_results[NET_RX_DELIVERED],
          "device rx-frames != delivered");
    /* The core drops what the device never sees: no NIC, link down,
     * too short. */
    for (int i = NET_RX_DROP_NOT_REGISTERED; i < NET_RX__MAX; i++) {
        bool core_only = i == NET_RX_DROP_TOO_SHORT;

        fuzz_check(vs.rx_dropped[i] == (core_only ? 0 : nic.rx_results[i]),
              "device drops != net core drops by reason");
    }
    fuzz_check(r->sends == nic.tx_frames + nic.tx_errors,
          "backend sends != tx.frames + tx.errors");
    fuzz_check(vs.tx_frames == nic.tx_frames + nic.tx_errors + nic.tx_dropped,
          "device tx-frames != net core tx");
    fuzz_check(nd.tx_frames == nic.tx_frames && nd.tx_errors == nic.tx_errors &&
          nd.tx_dropped == nic.tx_dropped, "nic and netdev tx differ");
    fuzz_check(vs.rx_bytes <= vs.rx_buffer_bytes, "rx bytes > buffer bytes");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FuzzInput in = { data, size, 0 };
    uint8_t mode = fuzz_u8(&in);
    Rig r = { .af_xdp = !(mode & 2) };

    rig_init(&r, !(mode & 1));
    for (unsigned i = 0; i < MAX_OPS && !fuzz_done(&in); i++) {
        run_op(&r, &in);
    }
    check_balance(&r);
    rig_free(&r);
    return 0;
}
