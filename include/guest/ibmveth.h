/*
 * A model of Linux's ibmveth driver: it opens a spapr-vlan the way Linux
 * does, keeps its receive pools filled, consumes the receive queue with the
 * toggle bit and sends frames.  It reaches the machine only through an
 * IbmvethBus (hcalls, guest memory, an allocator), so the same driver runs
 * inside illan as a built-in guest and in test programs over qtest.
 *
 * The queues, list pages and transmit buffer are identity-mapped: their
 * I/O address in the device's DMA window equals their guest-physical
 * address, so the allocator must stay below the 256 MiB window.  What
 * is mapped when and where follows Linux's DMA API on a pseries IOMMU
 * with "hcall-multi-tce" (see IbmvethDma).
 */
#ifndef GUEST_IBMVETH_H
#define GUEST_IBMVETH_H

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct IbmvethDriver IbmvethDriver;

/* How the driver reaches the machine. */
typedef struct IbmvethBus {
    /* r3 of hcall @opcode with @nargs arguments (r4...) in @args; the
     * first @nout output registers come back in @args. */
    int64_t (*hcall)(void *opaque, uint64_t opcode, unsigned nargs,
                     uint64_t *args, unsigned nout);
    void (*read)(void *opaque, uint64_t gpa, void *buf, size_t len);
    void (*write)(void *opaque, uint64_t gpa, const void *buf, size_t len);
    void (*fill)(void *opaque, uint64_t gpa, uint8_t byte, size_t len);
    /* Optional: one byte, ordered before every later read (an acquire),
     * for a device on another thread of the same process: the rx queue
     * entry's control byte, which the device writes last.  Without it,
     * read() is used. */
    uint8_t (*read_u8_acquire)(void *opaque, uint64_t gpa);
    /* Guest-physical memory for the driver; 0 when there is none left. */
    uint64_t (*alloc)(void *opaque, uint64_t size, uint64_t align);
    /* Optional: takes back what alloc() handed out, when the driver
     * closes (as Linux's close frees its pools and queues). */
    void (*free)(void *opaque, uint64_t gpa, uint64_t size);
    void *opaque;
} IbmvethBus;

#define IBMVETH_NUM_POOLS           5
/* The bulk hcall's 8 descriptors, unused ones 0. */
#define IBMVETH_MAX_BDS_PER_ADD     8
/* H_SEND_LOGICAL_LAN takes up to 6 descriptors. */
#define IBMVETH_MAX_TX_BDS          6
/* Linux's transmit "long-term buffer": every frame is copied into it. */
#define IBMVETH_TX_BUF_SIZE         65536
/* Linux's sysfs limits on a pool ("num" and "size"). */
#define IBMVETH_POOL_COUNT_MAX      4096
#define IBMVETH_POOL_SIZE_MIN       23
#define IBMVETH_POOL_SIZE_MAX       131072

/* H_ILLAN_ATTRIBUTES bits (PAPR's, by Linux's names). */
#define IBMVETH_ILLAN_IPV4_TCP_CSUM         0x2ULL
#define IBMVETH_ILLAN_IPV6_TCP_CSUM         0x4ULL
#define IBMVETH_ILLAN_PADDED_PKT_CSUM       0x2000ULL
#define IBMVETH_ILLAN_LRG_SND_SUPPORT       0x8000ULL
#define IBMVETH_ILLAN_LRG_SR_ENABLED        0x10000ULL
/* The firmware takes up to 8 rx buffers per hcall. */
#define IBMVETH_ILLAN_RX_MULTI_BUFF_SUPPORT 0x40000ULL

/* Buffer descriptor: flags and a 24-bit length above a 32-bit I/O address. */
#define IBMVETH_BD_VALID            0x8000000000000000ULL
#define IBMVETH_BD_TOGGLE           0x4000000000000000ULL
#define IBMVETH_BD_LRG_SND          0x0400000000000000ULL
#define IBMVETH_BD_NO_CSUM          0x0200000000000000ULL
#define IBMVETH_BD_CSUM_GOOD        0x0100000000000000ULL
#define IBMVETH_BD_LEN_SHIFT        32
#define IBMVETH_BD_LEN_MASK         0xFFFFFFULL

/* Receive-queue entry: 16 bytes; these are bits of its control byte. */
#define IBMVETH_RXQ_ENTRY_SIZE      16
#define IBMVETH_RXQ_TOGGLE          0x80
#define IBMVETH_RXQ_VALID           0x40
#define IBMVETH_RXQ_LRG_PKT         0x04
#define IBMVETH_RXQ_NO_CSUM         0x02
#define IBMVETH_RXQ_CSUM_GOOD       0x01

/* Buffer-list page: the device's count of frames dropped for want of a
 * buffer sits in its last 8 bytes. */
#define IBMVETH_RX_NO_BUFFER_OFFSET 4088

/* A valid descriptor for @len bytes at I/O address @ioba. */
static inline uint64_t ibmveth_bd(uint32_t len, uint32_t ioba)
{
    return IBMVETH_BD_VALID |
           ((uint64_t)(len & IBMVETH_BD_LEN_MASK) << IBMVETH_BD_LEN_SHIFT) |
           ioba;
}

/*
 * When the receive buffers are mapped.  PER_BUFFER is Linux's: a buffer
 * is mapped when it is posted (ibmveth_replenish_buffer_pool's
 * dma_map_single) and unmapped when its frame is taken
 * (ibmveth_remove_buffer_from_pool's dma_unmap_single); a map of one
 * 4 KiB TCE page is one H_PUT_TCE, of more one H_PUT_TCE_INDIRECT per
 * 512 pages, an unmap one H_STUFF_TCE per 512 pages (pseries iommu.c's
 * tce_buildmulti_pSeriesLP, tce_freemulti_pSeriesLP).  Each buffer lies
 * in guest memory where Linux 6.1's netdev_alloc_skb() puts it on a
 * kernel of 64 KiB pages (a page fragment or a kmalloc object, the data
 * 128 bytes in), which decides how many TCE pages it touches, and each
 * buffer slot owns an I/O range of its own at the top of the window, as
 * Linux's IOMMU gives each mapping TCEs of its own: the descriptor
 * carries that I/O address.  POOL, for the benchmark, identity-maps each
 * pool whole once at open, buffers packed 128 bytes apart, and makes no
 * TCE hcall per frame.
 */
typedef enum IbmvethDma {
    IBMVETH_DMA_PER_BUFFER,
    IBMVETH_DMA_POOL,
} IbmvethDma;

typedef struct IbmvethConf {
    uint32_t unit;               /* VIO unit address, e.g. 0x71000000 */
    uint64_t mac;                /* low 48 bits, first octet in bits 47..40 */
    unsigned npools;             /* 0 = Linux defaults */
    uint32_t pool_size[IBMVETH_NUM_POOLS];
    uint32_t pool_count[IBMVETH_NUM_POOLS];
    bool pool_active[IBMVETH_NUM_POOLS];
    bool bulk_add;               /* use H_ADD_LOGICAL_LAN_BUFFERS: asked
                                    for, and offered at probe */
    /* The offloads in force, as ibmveth_probe_features() left them:
     * checksum offload (Linux's rx_csum, both ways), and large send
     * (fw_large_send_support: the MSS goes in r12). */
    bool rx_csum;
    bool large_send;
    IbmvethDma dma;
    /* The guest kernel's page size: dma_alloc_coherent maps the rx
     * queue in whole kernel pages.  0 is 4 KiB. */
    uint32_t page_size;
    /* What the probe offers "ethtool -K": checksum offload with
     * ibm,illan-options, large send with LRG_SND_SUPPORT. */
    bool csum_offered;
    bool tso_offered;
} IbmvethConf;

/*
 * Linux's pools: sizes 512, 2048, 16384, 32768, 65536; counts 256, 512, 256,
 * 256, 256; active 1, 1, 0, 0, 1.  The MAC is 52:54:00:12:34:56, the default
 * a lone spapr-vlan gets when no mac= is given.  No bulk add.  Buffers
 * mapped one by one, on a kernel of 64 KiB pages (ppc64le's).
 */
void ibmveth_conf_linux_defaults(IbmvethConf *conf, uint32_t unit);
/* False, saying why, unless Linux would accept the pools (counts
 * 1..4096, sizes 23..131072). */
bool ibmveth_conf_check(const IbmvethConf *conf, GError **errp);

/*
 * What Linux's ibmveth_probe does: H_ILLAN_ATTRIBUTES(unit, 0, 0) once,
 * which keeps @conf's bulk_add only if the device offers
 * RX_MULTI_BUFF_SUPPORT (mainline reads it there, never at open); then
 * ibmveth_set_features() with its default features, each of which
 * differs from the adapter's initial state: with "ibm,illan-options" in
 * the device tree (@illan_options), ibmveth_set_csum_offload reads the
 * attributes again and, if the device reports PADDED_PKT_CSUM, sets
 * IPV4_TCP_CSUM and IPV6_TCP_CSUM, one hcall each (a refused one undone
 * with the masks swapped); if the probe's read reported LRG_SND_SUPPORT,
 * ibmveth_set_tso reads them again and sets LRG_SR_ENABLED.  Without
 * @want, the admin's "ethtool -K ... rx off tso off" follows before the
 * interface is up: the same two functions clear what was set.  A device
 * without the hcall costs exactly one H_ILLAN_ATTRIBUTES.  Fills
 * @conf's rx_csum and large_send with what is in force.
 */
void ibmveth_probe_features(const IbmvethBus *bus, IbmvethConf *conf,
                            bool illan_options, bool want);
/*
 * Linux's ibmveth_set_csum_offload and ibmveth_set_tso between their
 * close and open: the attributes read, then with PADDED_PKT_CSUM the
 * IPv4 and IPv6 bits, or with LRG_SND_SUPPORT LRG_SR_ENABLED, turned
 * @on or off, a refused change undone.  @conf's rx_csum (large_send)
 * becomes @on when a change was taken (for checksums, either of the
 * two); large_send is off without LRG_SND_SUPPORT (Linux's old large
 * send is not modelled).  False, saying what the device answered, where
 * Linux returns EIO, and when large send is asked for without
 * LRG_SND_SUPPORT.
 */
bool ibmveth_set_csum_offload(const IbmvethBus *bus, IbmvethConf *conf,
                              bool on, GError **errp);
bool ibmveth_set_tso(const IbmvethBus *bus, IbmvethConf *conf, bool on,
                     GError **errp);
/* The probe's read alone, for callers that want bulk add and nothing
 * else of it: whether H_ILLAN_ATTRIBUTES offers RX_MULTI_BUFF_SUPPORT. */
bool ibmveth_offers_bulk_add(const IbmvethBus *bus, uint32_t unit);
/* The same flags from the device's attributes as they stand (after a
 * migration, what the source's probe set), and tso_offered: one
 * H_ILLAN_ATTRIBUTES(0, 0). */
void ibmveth_read_features(const IbmvethBus *bus, IbmvethConf *conf);

/*
 * Opens as Linux does (bulk_add as the probe left it, no hcall for it):
 * a zeroed rx queue of 16 x (1 + the counts of all pools, active or not)
 * bytes in whole kernel pages, a zeroed buffer-list page and filter page,
 * mapped read/write, and a zeroed 64 KiB tx buffer mapped read-only
 * (Linux maps it to-device), in that order; H_VIO_SIGNAL(disable);
 * H_REGISTER_LOGICAL_LAN, and on failure H_FREE_LOGICAL_LAN (repeated
 * while busy) and one retry.  After a successful register, with dma POOL,
 * the buffers of the active pools, mapped read/write; then Linux's first
 * interrupt and NAPI poll: H_VIO_SIGNAL(disable), the initial replenish,
 * H_VIO_SIGNAL(enable).  So the rx interrupt is ENABLED when this returns.
 * All the guest memory is allocated first, so that when it runs out
 * no hcall was made.
 * NULL when the conf is bad, memory runs out or a TCE hcall fails (errp
 * says which), or when H_REGISTER fails (*rc says how; errp too); what
 * was allocated is given back.  *rc is H_SUCCESS on success.  @rc may be
 * NULL.
 */
IbmvethDriver *ibmveth_open(const IbmvethBus *bus, const IbmvethConf *conf,
                            int64_t *rc, GError **errp);
/*
 * Closes as Linux does: H_VIO_SIGNAL(disable), H_FREE_LOGICAL_LAN repeated
 * while busy (bounded), then unmaps the buffer list, the filter page, the
 * rx queue, every buffer still posted (dma POOL: each pool whole) and the
 * tx buffer, and frees the driver whatever the rc, giving its guest
 * memory back through the bus's free().  Guest memory's contents stay as
 * they are.  Returns H_FREE's rc.
 */
int64_t ibmveth_close(IbmvethDriver *v);
/*
 * Whether ibmveth_open() with @conf would find its guest memory once
 * @replacing (or NULL) has closed: @replacing's memory is given back
 * through the bus's free() while it stays open, and an open's worth is
 * allocated and given back.  The caller puts its allocator back as it
 * was afterwards; an allocator that hands out the same pieces for the
 * same calls then guarantees the open's memory.  No hcall is made.
 */
bool ibmveth_memory_fits(const IbmvethBus *bus, const IbmvethConf *conf,
                         IbmvethDriver *replacing, GError **errp);

/*
 * Replenishes as Linux does: pools 4 down to 0; an active pool with fewer
 * than count * 7 / 8 buffers posted is refilled up to count, free slots
 * taken in the order they were freed.  Each buffer's first 8 bytes get the
 * correlator (pool << 32 | slot); its BD is VALID | size | address.  One
 * buffer per H_ADD_LOGICAL_LAN_BUFFER, or in bulk mode up to 8 per
 * H_ADD_LOGICAL_LAN_BUFFERS (a batch of exactly one still goes through the
 * single hcall).  With dma PER_BUFFER each buffer is mapped just before
 * its add hcall (a batch's all before it), and unmapped again if the add
 * fails.  A failed hcall counts its buffers as add failures and ends
 * that pool's refill for this call; H_FUNCTION in bulk mode drops to one
 * buffer per hcall for good.  Returns how many buffers were added.
 */
unsigned ibmveth_replenish(IbmvethDriver *v);

typedef struct IbmvethRxEntry {
    bool valid;          /* the "valid message" bit */
    unsigned pool, slot; /* from the handle */
    uint32_t buf_size;
    uint32_t len, offset;
    uint64_t handle;
    uint8_t control;     /* the raw control byte, for checks of other bits */
    uint32_t index;      /* its place in the queue, from 0 */
} IbmvethRxEntry;

typedef enum IbmvethRxStatus {
    IBMVETH_RX_EMPTY,        /* no new entry (the toggle does not match) */
    IBMVETH_RX_READY,        /* an entry naming a posted buffer */
    IBMVETH_RX_BAD_HANDLE,   /* an entry naming no posted buffer: Linux
                                WARNs and resets the adapter */
} IbmvethRxStatus;

/* Reads the next rx-queue entry into @e without consuming it. */
IbmvethRxStatus ibmveth_rx_peek(IbmvethDriver *v, IbmvethRxEntry *e);
/* How many entries the receive queue holds. */
uint32_t ibmveth_rxq_entries(IbmvethDriver *v);
/* Guest address of the frame data of a READY entry. */
uint64_t ibmveth_rx_data_addr(IbmvethDriver *v, const IbmvethRxEntry *e);
/* The I/O address the buffer of a READY entry was posted at: its guest
 * address with dma POOL, its slot's own I/O range's with PER_BUFFER. */
uint64_t ibmveth_rx_buffer_ioba(IbmvethDriver *v, const IbmvethRxEntry *e);
/* The MSS of a large packet (IBMVETH_RXQ_LRG_PKT): the big-endian u64 the
 * device put 8 bytes into the buffer. */
uint16_t ibmveth_rx_mss(IbmvethDriver *v, const IbmvethRxEntry *e);

/* What ibmveth_poll() made of a received frame before its stack saw it. */
typedef struct IbmvethRxLarge {
    bool large;             /* counted in Linux's rx_large_packets */
    uint16_t gso_size;      /* the MSS it gave a TCP packet; 0: none */
    uint32_t zeroed_at;     /* the TCP checksum field it zeroed; 0: none */
} IbmvethRxLarge;

/*
 * Linux's reading of a frame of @len bytes on an interface of MTU @mtu:
 * one longer than the MTU + 14, marked LRG_PKT (@lrg_mss its MSS) or
 * IPv4 with the header checksum 0xFFFF is aggregated TCP
 * (ibmveth_rx_mss_helper).  For TCP the MSS is the entry's when marked;
 * otherwise it is read from the TCP checksum field, which is then zeroed
 * in @frame.  Not TCP: counted, nothing more.
 */
IbmvethRxLarge ibmveth_rx_large(uint8_t *frame, uint32_t len, uint32_t mtu,
                                bool lrg_pkt, uint16_t lrg_mss);
/* Consumes the entry @e from peek (ibmveth_rxq_harvest_buffer): a READY
 * entry's buffer is unmapped (dma PER_BUFFER) and goes back to its pool's
 * free slots for the next replenish; the index advances, flipping the
 * toggle when it wraps. */
void ibmveth_rx_consume(IbmvethDriver *v, const IbmvethRxEntry *e);

/* Linux 6.1's rx_copybreak: a frame shorter than this is copied out of
 * its buffer, and the buffer posted again at once. */
#define IBMVETH_RX_COPYBREAK    128

/*
 * Consumes the READY entry @e as ibmveth_rxq_recycle_buffer does, once
 * its frame has been copied out: the same buffer, still mapped, is
 * posted again with one H_ADD_LOGICAL_LAN_BUFFER; if that fails it is
 * consumed as by ibmveth_rx_consume().  Linux 6.1 does this for frames
 * under IBMVETH_RX_COPYBREAK and for entries without the valid bit.
 * Returns the add's rc.
 */
int64_t ibmveth_rx_recycle(IbmvethDriver *v, const IbmvethRxEntry *e);

/*
 * Sends one frame as current Linux does: copied into the tx buffer, one BD,
 * repeated with the returned continue-token while H_BUSY (up to 1024
 * retries).  Returns the last rc.  @len is at most IBMVETH_TX_BUF_SIZE.
 */
int64_t ibmveth_send(IbmvethDriver *v, const void *frame, size_t len);
/* One H_SEND_LOGICAL_LAN with up to 6 caller-given BDs, unused ones 0, and
 * continue-token 0; no retry.  For gather and hostile tests. */
int64_t ibmveth_send_bds(IbmvethDriver *v, const uint64_t *bds,
                         unsigned nbds);
/* ibmveth_send() with offload flags on its BD (IBMVETH_BD_NO_CSUM, ...)
 * and, while large send is in force, @mss in r12. */
int64_t ibmveth_send_offload(IbmvethDriver *v, const void *frame, size_t len,
                             uint64_t bd_flags, uint64_t mss);
/* Whether large send is in force (after a migration, as the device's
 * attributes say). */
void ibmveth_set_large_send(IbmvethDriver *v, bool large_send);

/* H_VIO_SIGNAL(enable ? 1 : 0); returns its rc. */
int64_t ibmveth_set_irq(IbmvethDriver *v, bool enable);
/* The BE64 drop counter at buffer-list + 4088. */
uint64_t ibmveth_rx_no_buffer(IbmvethDriver *v);

/* Guest addresses (equal to I/O addresses), for hostile tests. */
uint64_t ibmveth_buffer_list(IbmvethDriver *v);
uint64_t ibmveth_rxq(IbmvethDriver *v);
/* The read-only-mapped tx buffer, IBMVETH_TX_BUF_SIZE bytes. */
uint64_t ibmveth_tx_buffer(IbmvethDriver *v);

/* Buffers of @pool posted to the device and not yet consumed. */
unsigned ibmveth_posted(IbmvethDriver *v, unsigned pool);
/* How its rx buffers are mapped: as opened, or as the adopted state's. */
IbmvethDma ibmveth_dma(IbmvethDriver *v);
/* The buffer size of @pool, 0 when inactive. */
uint32_t ibmveth_pool_size(IbmvethDriver *v, unsigned pool);
/* Buffers whose add hcall failed, summed over all replenishes (Linux's
 * replenish_add_buff_failure). */
uint64_t ibmveth_add_failures(IbmvethDriver *v);
/* 8 while bulk add is in use, else 1. */
unsigned ibmveth_bds_per_add(IbmvethDriver *v);

/* The driver now reaches the machine through @bus (after a migration the
 * same guest drives the destination). */
void ibmveth_set_bus(IbmvethDriver *v, const IbmvethBus *bus);

/*
 * The driver's state as plain data, for the built-in guest's migration
 * section: what ibmveth_open() set up and everything the driver changed
 * since.  free_map and posted are used up to count entries, and only in
 * an active pool.
 */
typedef struct IbmvethPoolState {
    bool active;
    uint32_t size, count;
    uint64_t base, stride;
    uint32_t consumer, producer, available;
    uint32_t free_map[IBMVETH_POOL_COUNT_MAX];
    bool posted[IBMVETH_POOL_COUNT_MAX];
} IbmvethPoolState;

typedef struct IbmvethState {
    uint32_t unit;
    uint64_t tce_list, buffer_list, filter_list, rxq, tx_buf;
    uint32_t rxq_len, rxq_index;
    bool rxq_toggle;
    uint32_t bds_per_add;
    uint64_t mac;
    uint32_t dma;               /* IbmvethDma */
    uint32_t rxq_size;          /* bytes allocated and mapped for the rx
                                   queue: rxq_len in whole kernel pages */
    IbmvethPoolState pool[IBMVETH_NUM_POOLS];
} IbmvethState;

/* Linux's MTU limits: a buffer holds the MTU plus the Ethernet header
 * and the 8-byte handle. */
#define IBMVETH_BUFF_OH     22
#define IBMVETH_MIN_MTU     68
/* Linux's max_mtu for ibmveth: ETH_MAX_MTU (65535) less the overhead. */
#define IBMVETH_MAX_MTU     (65535 - IBMVETH_BUFF_OH)
#define IBMVETH_DEFAULT_MTU 1500

/* The interface's address: the conf's, or the last one changed. */
uint64_t ibmveth_mac(IbmvethDriver *v);
/* ndo_set_mac_address on a running interface: H_CHANGE_LOGICAL_LAN_MAC;
 * the address changes when it succeeds.  Returns its rc. */
int64_t ibmveth_change_mac(IbmvethDriver *v, uint64_t mac);
/*
 * Linux's ibmveth_set_multicast_list (ndo_set_rx_mode), which the net
 * core calls at ifup and at each multicast join or leave: with @all
 * (promiscuous or all-multicast) or more @groups than the device's
 * filter table holds (its ibm,mac-address-filters), reception on and
 * filtering off; otherwise the table cleared, @groups added, and
 * filtering on.  Returns how many hcalls failed (Linux logs them).
 */
unsigned ibmveth_set_rx_mode(IbmvethDriver *v, bool all, const uint64_t *groups,
                             unsigned ngroups, unsigned table_size);

/* Into a zeroed @s. */
void ibmveth_get_state(IbmvethDriver *v, IbmvethState *s);
/* False, saying which field, unless @s is a state the driver could have
 * reached with every structure in guest memory in [@mem_start, @mem_end):
 * the driver trusts it as it trusts its own. */
bool ibmveth_state_check(const IbmvethState *s, uint64_t mem_start,
                         uint64_t mem_end, GError **errp);

/* The pieces of guest memory a driver in state @s holds, each given back
 * on its own at close: its pages, queue, transmit buffer and active
 * pools.  Returns how many it put in @p. */
typedef struct IbmvethMemPiece {
    uint64_t addr, size;
} IbmvethMemPiece;
#define IBMVETH_MAX_MEM_PIECES  (5 + IBMVETH_NUM_POOLS)
unsigned ibmveth_state_pieces(const IbmvethState *s,
                              IbmvethMemPiece p[IBMVETH_MAX_MEM_PIECES]);
/* A driver that carries on from @s (checked), already registered with
 * the device: no hcall is made. */
IbmvethDriver *ibmveth_adopt(const IbmvethBus *bus, const IbmvethState *s);

/*
 * The driver's own state as text, and a driver rebuilt from it: for
 * streams kept as test fixtures, whose guest must carry on in a later
 * process.  A restored driver cannot open again (no allocator state).
 */
char *ibmveth_save(IbmvethDriver *v);
IbmvethDriver *ibmveth_restore(const IbmvethBus *bus, const char *text,
                               GError **errp);

#endif
