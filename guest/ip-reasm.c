/*
 * IPv4 reassembly after Linux 6.1's net/ipv4/ip_fragment.c and
 * inet_fragment.c.  Queues are found by key in a hash table and expire in
 * creation order, which is deadline order because time only goes forward.
 * A queue keeps its fragments as copies in an array sorted by offset.
 */
#include "guest/ip-reasm.h"
#include "guest/ip-checksum.h"
#include "qemu/bswap.h"

#include <glib.h>
#include <stdbool.h>
#include <string.h>

#define ETH_HLEN        14
#define ETH_P_IP        0x0800
#define IP_MAX_LEN      65535
#define IP_MAX_HLEN     60
#define IP_DF           0x4000
#define IP_MF           0x2000
#define IP_OFFSET       0x1fff
#define ECN_NOT_ECT     0x01    /* Linux's IPFRAG_ECN_* bits */
#define ECN_CE          0x08

typedef struct QueueKey {
    uint32_t src, dst;
    uint16_t id;
    uint8_t protocol;
    uint8_t zero;               /* so that keys compare as bytes */
} QueueKey;

/* One fragment's place and bytes.  Linux groups fragments that arrived in
 * order, each starting where the tail ended, into "runs"; a fragment is a
 * duplicate only if a single run holds it, so each records its run. */
typedef struct Frag {
    uint32_t offset, end;
    uint32_t run_start;
    uint8_t *data;
} Frag;

typedef struct Queue {
    QueueKey key;
    uint64_t deadline;
    GList *age_link;            /* in IpReasm.by_age */
    GArray *frags;              /* Frag, by offset */
    uint64_t charged;
    uint32_t len, meat;         /* known end; bytes held */
    uint16_t max_size, max_df_size;
    uint8_t ecn;
    bool first_in, last_in;
    uint8_t head_len;           /* Ethernet + IP header of offset 0 */
    uint8_t head[ETH_HLEN + IP_MAX_HLEN];
} Queue;

/* The parts of a frame's IPv4 header reassembly looks at. */
typedef struct Ipv4 {
    const uint8_t *frame;
    QueueKey key;
    uint32_t hlen;              /* IP header bytes */
    uint32_t payload;
    uint32_t offset;
    uint8_t ecn;
    bool more, df;
} Ipv4;

typedef enum FrameKind {
    FRAME_PLAIN,
    FRAME_BAD,
    FRAME_FRAGMENT,
} FrameKind;

typedef enum Placement {
    PLACE_NEW,
    PLACE_DUP,
    PLACE_OVERLAP,
} Placement;

struct IpReasm {
    uint64_t high_thresh, timeout_ns;
    uint64_t now;
    GHashTable *queues;         /* QueueKey -> Queue */
    GQueue by_age;
    IpReasmStats stats;
    size_t out_len;
    uint8_t out[ETH_HLEN + IP_MAX_LEN];
};

static guint key_hash(gconstpointer p)
{
    const QueueKey *k = p;

    return k->src * 31u ^ k->dst * 17u ^ k->id * 7u ^ k->protocol;
}

static gboolean key_equal(gconstpointer a, gconstpointer b)
{
    return memcmp(a, b, sizeof(QueueKey)) == 0;
}

static void read_fragment_fields(Ipv4 *ip, const uint8_t *h)
{
    uint16_t frag_off = ldn_be_p(h + 6, 2);

    ip->key.src = ldn_be_p(h + 12, 4);
    ip->key.dst = ldn_be_p(h + 16, 4);
    ip->key.id = ldn_be_p(h + 4, 2);
    ip->key.protocol = h[9];
    ip->offset = (frag_off & IP_OFFSET) * 8u;
    ip->more = frag_off & IP_MF;
    ip->df = frag_off & IP_DF;
    ip->ecn = 1u << (h[1] & 3);
}

/* ip_rcv()'s checks; bytes past the IP total length are link padding. */
static FrameKind parse_frame(const uint8_t *frame, size_t len, Ipv4 *ip)
{
    const uint8_t *h;
    uint32_t hlen, tot_len;

    if (len < ETH_HLEN) {
        return FRAME_BAD;
    }
    if (ldn_be_p(frame + 12, 2) != ETH_P_IP) {
        return FRAME_PLAIN;
    }
    h = frame + ETH_HLEN;
    if (len < ETH_HLEN + 20 || h[0] >> 4 != 4 || (h[0] & 15) < 5) {
        return FRAME_BAD;
    }
    hlen = (h[0] & 15) * 4u;
    tot_len = ldn_be_p(h + 2, 2);
    if (len < ETH_HLEN + hlen || ip_header_checksum(h, hlen) != 0 ||
        tot_len > len - ETH_HLEN || tot_len < hlen) {
        return FRAME_BAD;
    }
    if (!(ldn_be_p(h + 6, 2) & (IP_MF | IP_OFFSET))) {
        return FRAME_PLAIN;
    }
    memset(ip, 0, sizeof(*ip));
    ip->frame = frame;
    ip->hlen = hlen;
    ip->payload = tot_len - hlen;
    read_fragment_fields(ip, h);
    return FRAME_FRAGMENT;
}

static void charge(IpReasm *r, Queue *q, uint64_t bytes)
{
    q->charged += bytes;
    r->stats.mem_bytes += bytes;
    r->stats.mem_peak_bytes = MAX(r->stats.mem_peak_bytes,
                                  r->stats.mem_bytes);
}

static Queue *queue_new(IpReasm *r, const QueueKey *key)
{
    Queue *q = g_new0(Queue, 1);

    q->key = *key;
    q->deadline = r->now > UINT64_MAX - r->timeout_ns ?
                  UINT64_MAX : r->now + r->timeout_ns;
    q->frags = g_array_new(FALSE, FALSE, sizeof(Frag));
    g_queue_push_tail(&r->by_age, q);
    q->age_link = r->by_age.tail;
    g_hash_table_insert(r->queues, &q->key, q);
    charge(r, q, IP_REASM_QUEUE_CHARGE);
    return q;
}

static void queue_destroy(IpReasm *r, Queue *q)
{
    for (guint i = 0; i < q->frags->len; i++) {
        g_free(g_array_index(q->frags, Frag, i).data);
    }
    g_array_free(q->frags, TRUE);
    g_hash_table_remove(r->queues, &q->key);
    g_queue_delete_link(&r->by_age, q->age_link);
    r->stats.mem_bytes -= q->charged;
    g_free(q);
}

/* The datagram is lost, and with it every fragment the queue held. */
static IpReasmResult queue_fail(IpReasm *r, Queue *q)
{
    r->stats.fragments_dropped += q->frags->len;
    r->stats.datagrams_failed++;
    queue_destroy(r, q);
    return IP_REASM_DROPPED;
}

/* The fragment that revealed the inconsistency goes with the queue. */
static IpReasmResult discard_queue(IpReasm *r, Queue *q)
{
    r->stats.fragments_dropped++;
    return queue_fail(r, q);
}

/* inet_frag_find(): nothing at all once memory is over the limit. */
static Queue *find_queue(IpReasm *r, const QueueKey *key)
{
    Queue *q;

    if (!r->high_thresh || r->stats.mem_bytes > r->high_thresh) {
        return NULL;
    }
    q = g_hash_table_lookup(r->queues, key);
    if (q || g_hash_table_size(r->queues) >= IP_REASM_MAX_QUEUES) {
        return q;
    }
    return queue_new(r, key);
}

static const Frag *frag_at(const Queue *q, guint i)
{
    return &g_array_index(q->frags, Frag, i);
}

/* The first fragment ending after @offset; ends ascend with offsets. */
static guint first_ending_after(const Queue *q, uint32_t offset)
{
    guint lo = 0, hi = q->frags->len;

    while (lo < hi) {
        guint mid = lo + (hi - lo) / 2;

        if (frag_at(q, mid)->end > offset) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    return lo;
}

/* Whether the run of fragment @i holds all of [offset, end). */
static bool run_holds(const Queue *q, guint i, uint32_t offset, uint32_t end)
{
    const Frag *f = frag_at(q, i);

    if (offset < f->offset) {
        return false;
    }
    while (f->end < end && ++i < q->frags->len) {
        const Frag *next = frag_at(q, i);

        if (next->run_start != f->run_start) {
            return false;
        }
        f = next;
    }
    return f->end >= end;
}

/* inet_frag_queue_insert()'s verdict on [offset, end), and where it goes.
 * Past the tail, it joins the tail's run if it starts where that ends. */
static Placement place(const Queue *q, uint32_t offset, uint32_t end,
                       guint *at, uint32_t *run_start)
{
    guint n = q->frags->len;
    const Frag *tail = n ? frag_at(q, n - 1) : NULL;

    *run_start = offset;
    if (!tail || tail->end < end) {
        if (tail && offset < tail->end) {
            return PLACE_OVERLAP;
        }
        if (tail && offset == tail->end) {
            *run_start = tail->run_start;
        }
        *at = n;
        return PLACE_NEW;
    }
    *at = first_ending_after(q, offset);
    if (frag_at(q, *at)->offset >= end) {
        return PLACE_NEW;
    }
    return run_holds(q, *at, offset, end) ? PLACE_DUP : PLACE_OVERLAP;
}

/* ip_frag_queue()'s length rules; false when the datagram is corrupt.
 * A fragment with more to follow carries whole 8-byte blocks only. */
static bool update_length(Queue *q, const Ipv4 *ip, uint32_t *end)
{
    *end = ip->offset + ip->payload;
    if (!ip->more) {
        if (*end < q->len || (q->last_in && *end != q->len)) {
            return false;
        }
        q->last_in = true;
        q->len = *end;
    } else {
        *end &= ~7u;
        if (*end > q->len) {
            if (q->last_in) {
                return false;
            }
            q->len = *end;
        }
    }
    return *end != ip->offset;
}

static void note_fragment(Queue *q, const Ipv4 *ip, uint32_t size)
{
    uint32_t fragsize = size + ip->hlen;

    q->meat += size;
    q->ecn |= ip->ecn;
    q->max_size = MAX(q->max_size, fragsize);
    if (ip->df) {
        q->max_df_size = MAX(q->max_df_size, fragsize);
    }
    if (ip->offset == 0) {
        q->first_in = true;
        q->head_len = ETH_HLEN + ip->hlen;
        memcpy(q->head, ip->frame, q->head_len);
    }
}

/* The datagram's IP header as ip_frag_reasm() leaves it: DF only if the
 * largest fragment had it, CE if any fragment had it. */
static void finish_header(IpReasm *r, const Queue *q)
{
    uint8_t *h = r->out + ETH_HLEN;
    uint32_t hlen = q->head_len - ETH_HLEN;

    stn_be_p(h + 2, 2, hlen + q->len);
    stn_be_p(h + 6, 2, q->max_df_size == q->max_size ? IP_DF : 0);
    if (q->ecn & ECN_CE) {
        h[1] |= 3;
    }
    stn_be_p(h + 10, 2, 0);
    stn_be_p(h + 10, 2, ip_header_checksum(h, hlen));
}

static IpReasmResult reassemble(IpReasm *r, Queue *q)
{
    bool ecn_mixed = (q->ecn & ECN_NOT_ECT) && (q->ecn & ~ECN_NOT_ECT);

    if (ecn_mixed || q->head_len - ETH_HLEN + q->len > IP_MAX_LEN) {
        return queue_fail(r, q);
    }
    memcpy(r->out, q->head, q->head_len);
    for (guint i = 0; i < q->frags->len; i++) {
        const Frag *f = frag_at(q, i);

        memcpy(r->out + q->head_len + f->offset, f->data, f->end - f->offset);
    }
    finish_header(r, q);
    r->out_len = q->head_len + q->len;
    r->stats.datagrams_ok++;
    r->stats.fragments_reassembled += q->frags->len;
    queue_destroy(r, q);
    return IP_REASM_COMPLETE;
}

static IpReasmResult queue_fragment(IpReasm *r, Queue *q, const Ipv4 *ip,
                                    uint64_t truesize)
{
    uint32_t end, run_start;
    guint at;
    Frag f;

    if (!update_length(q, ip, &end)) {
        return discard_queue(r, q);
    }
    switch (place(q, ip->offset, end, &at, &run_start)) {
    case PLACE_DUP:
        r->stats.fragments_dropped++;
        return IP_REASM_DROPPED;
    case PLACE_OVERLAP:
        return discard_queue(r, q);
    case PLACE_NEW:
        break;
    }
    f = (Frag) { ip->offset, end, run_start, g_malloc(end - ip->offset) };
    memcpy(f.data, ip->frame + ETH_HLEN + ip->hlen, end - ip->offset);
    g_array_insert_val(q->frags, at, f);
    note_fragment(q, ip, end - ip->offset);
    charge(r, q, truesize);
    if (q->first_in && q->last_in && q->meat == q->len) {
        return reassemble(r, q);
    }
    return IP_REASM_HELD;
}

IpReasm *ip_reasm_new(uint64_t high_thresh, uint64_t timeout_ns)
{
    IpReasm *r = g_new0(IpReasm, 1);

    r->high_thresh = high_thresh;
    r->timeout_ns = timeout_ns;
    r->queues = g_hash_table_new(key_hash, key_equal);
    g_queue_init(&r->by_age);
    return r;
}

void ip_reasm_free(IpReasm *r)
{
    if (!r) {
        return;
    }
    while (r->by_age.head) {
        queue_destroy(r, r->by_age.head->data);
    }
    g_hash_table_destroy(r->queues);
    g_free(r);
}

IpReasmResult ip_reasm_input(IpReasm *r, const uint8_t *frame, size_t len,
                             uint32_t truesize, uint64_t now_ns)
{
    Ipv4 ip;
    Queue *q;

    r->out_len = 0;
    ip_reasm_expire(r, now_ns);
    switch (parse_frame(frame, len, &ip)) {
    case FRAME_PLAIN:
        return IP_REASM_PASS;
    case FRAME_BAD:
        r->stats.bad++;
        return IP_REASM_BAD;
    case FRAME_FRAGMENT:
        break;
    }
    r->stats.fragments++;
    q = find_queue(r, &ip.key);
    if (!q) {
        r->stats.fragments_refused++;
        return IP_REASM_REFUSED;
    }
    return queue_fragment(r, q, &ip, MAX((uint64_t)truesize, len));
}

const uint8_t *ip_reasm_datagram(IpReasm *r, size_t *len)
{
    *len = r->out_len;
    return r->out_len ? r->out : NULL;
}

void ip_reasm_expire(IpReasm *r, uint64_t now_ns)
{
    r->now = MAX(r->now, now_ns);
    while (r->by_age.head) {
        Queue *q = r->by_age.head->data;

        if (q->deadline > r->now) {
            break;
        }
        r->stats.timeouts++;
        queue_fail(r, q);
    }
}

uint64_t ip_reasm_next_expiry(IpReasm *r)
{
    const Queue *q = r->by_age.head ? r->by_age.head->data : NULL;

    return q ? q->deadline : UINT64_MAX;
}

void ip_reasm_stats(IpReasm *r, IpReasmStats *out)
{
    *out = r->stats;
}
