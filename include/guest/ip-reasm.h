/*
 * IPv4 reassembly as a Linux 6.1 guest does it, so that the guest model
 * loses the datagrams a real guest loses, for the same reason.
 *
 * Linux charges every queued fragment its skb truesize, plus the queue
 * itself, and refuses any fragment, for a new or an existing datagram,
 * once the charge is above ipfrag_high_thresh (4 MiB).  Nothing is evicted
 * to make room: memory comes back only when a datagram completes or its
 * queue fails or expires, ipfrag_time (30 s) after its first fragment.
 * With every frame in a 64 KiB receive buffer (131328 bytes of truesize),
 * the 32nd fragment takes the charge past the limit, so a 45-fragment
 * datagram never completes and nothing more is queued for 30 s; in 2 KiB
 * buffers the same datagram costs 44 x 2816 + 1280 bytes and completes.
 *
 * Rules kept from ip_rcv() and ip_frag_queue(): a header that fails
 * ip_rcv()'s checks (version, length, checksum) is bad; a fragment inside
 * what one "run" of fragments already holds is a duplicate and is dropped
 * alone; any other overlap, a last fragment that disagrees with the
 * length, data past a known end, and an empty fragment fail the datagram;
 * so does one longer than 65535 bytes, found when it completes.  Not
 * modelled: ipfrag_max_dist (a queue restarted after 64 fragments from its
 * source went elsewhere), and other users of the reassembly memory.
 *
 * Every frame handed in is copied; nothing points into the caller's frame.
 * Bytes held stay below high_thresh plus one frame, whatever the peer
 * sends, because each fragment is charged at least its length.
 */
#ifndef GUEST_IP_REASM_H
#define GUEST_IP_REASM_H

#include <stddef.h>
#include <stdint.h>

#define IP_REASM_HIGH_THRESH    4194304u            /* ipfrag_high_thresh */
#define IP_REASM_TIMEOUT_NS     30000000000ull      /* ipfrag_time */
/* Linux charges each queue sizeof(struct ipq): 200 bytes on a 64-bit 6.1
 * kernel without lock debugging. */
#define IP_REASM_QUEUE_CHARGE   200u
/* Queues beyond this are refused as an allocation failure would be; the
 * memory limit alone would allow one per fragment. */
#define IP_REASM_MAX_QUEUES     4096u

typedef struct IpReasm IpReasm;

/* Every fragment seen is refused, dropped, reassembled or still held. */
typedef struct IpReasmStats {
    uint64_t fragments;             /* valid fragments seen */
    uint64_t fragments_refused;     /* over high_thresh, or no queue free */
    uint64_t fragments_dropped;     /* duplicates, and all of a failed
                                     * datagram's */
    uint64_t fragments_reassembled; /* part of a datagram handed up */
    uint64_t datagrams_ok;
    uint64_t datagrams_failed;      /* inconsistent, overlapping, too long,
                                     * or expired */
    uint64_t timeouts;
    uint64_t bad;                   /* IPv4 frames failing ip_rcv()'s checks */
    uint64_t mem_bytes;             /* charged now, as Linux counts it */
    uint64_t mem_peak_bytes;
} IpReasmStats;

typedef enum IpReasmResult {
    IP_REASM_PASS,      /* not IPv4, or not a fragment: handed up as is */
    IP_REASM_HELD,      /* queued until its datagram completes */
    IP_REASM_COMPLETE,  /* completed a datagram: see ip_reasm_datagram() */
    IP_REASM_REFUSED,   /* not queued: memory over high_thresh, or the
                         * queue cap reached */
    IP_REASM_DROPPED,   /* duplicate, or its datagram failed */
    IP_REASM_BAD,       /* claims IPv4 but its header is malformed */
} IpReasmResult;

/* Linux's defaults are IP_REASM_HIGH_THRESH and IP_REASM_TIMEOUT_NS; a
 * @high_thresh of 0 refuses every fragment, as in Linux. */
IpReasm *ip_reasm_new(uint64_t high_thresh, uint64_t timeout_ns);
void ip_reasm_free(IpReasm *r);
/* One received Ethernet frame of @len bytes, which the guest charged
 * @truesize.  Queues whose time has come expire first.  @now_ns never goes
 * back: an earlier time counts as the latest one seen. */
IpReasmResult ip_reasm_input(IpReasm *r, const uint8_t *frame, size_t len,
                             uint32_t truesize, uint64_t now_ns);
/* After IP_REASM_COMPLETE: the datagram as one Ethernet frame, with the
 * first fragment's Ethernet and IP headers, the IP header's length, flags
 * and checksum rewritten as Linux does.  Valid until the next input; NULL
 * after any other result. */
const uint8_t *ip_reasm_datagram(IpReasm *r, size_t *len);
/* Fails every queue whose timer ran out by @now_ns. */
void ip_reasm_expire(IpReasm *r, uint64_t now_ns);
/* When the next queue expires; UINT64_MAX when nothing is held. */
uint64_t ip_reasm_next_expiry(IpReasm *r);
void ip_reasm_stats(IpReasm *r, IpReasmStats *out);

#endif
