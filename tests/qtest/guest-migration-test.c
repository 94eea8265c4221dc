/*
 * A built-in guest migrates: two illan processes, each with a spapr-vlan
 * on a unix dgram socket and -guest ibmveth,fwd=macswap; the test is the
 * peer that sends numbered frames and collects their echoes.  Every frame
 * sent to the source is echoed exactly once, by the source's guest or by
 * the destination's (which takes over the frames still in the receive
 * queue), or is counted dropped by the source.  Also the two refusals,
 * a reset of the destination, and crafted guest sections refused whole
 * (pieces or cursor below 1 MiB, two guests holding the same pieces),
 * which a reset, freeing the pieces, would otherwise crash on.
 */
#include "libqos/eth-frames.h"
#include "migration-helpers.h"

#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define GUEST       "-guest ibmveth,id=g0,dev=net0,fwd=macswap"
#define MAX_TAGS    1024
#define BURST       300
#define ETH_P_RARP  0x8035
#define ETH_P_TEST  0x88b5

static const uint8_t peer_mac[6] = { 0x02, 0, 0, 0, 0, 0x01 };

/* The test's end of one illan's stream netdev: frames with a 4-byte
 * big-endian length, no loss (a unix stream socket pushes back). */
typedef struct Link {
    int fd;
    GByteArray *in;
} Link;

/* The echoes, taken by a thread of the test's own as they come, so that
 * illan never waits on a full socket (a stream backend gives a peer that
 * stops reading a second, then hangs up).  pthread's lock, not GLib's,
 * which ThreadSanitizer does not see. */
typedef struct Echoes {
    Rig rig;
    Link src, dst;
    uint16_t sent;
    GThread *reader;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool stop;                  /* under lock, */
    bool dst_up;                /* as the rest below */
    unsigned times[MAX_TAGS];   /* echoes of each tag */
    unsigned total;
    const uint8_t *guest_mac;   /* the guest's address: its frames' */
} Echoes;

/* An address the guest sets with x-guest-set-mac. */
static const uint8_t set_mac[6] = { 0x52, 0x54, 0x00, 0xab, 0xcd, 0x03 };

static void use_mac(Echoes *e, const uint8_t *mac)
{
    pthread_mutex_lock(&e->lock);
    e->guest_mac = mac;
    pthread_mutex_unlock(&e->lock);
}

static char *netdev_path(Rig *r, const char *name)
{
    g_autofree char *file = g_strdup_printf("%s.net", name);

    return rig_path(r, file);
}

/* An illan whose NIC's netdev listens at <dir>/@name.net, and the test
 * connected to it. */
static QTestState *start(Rig *r, Link *l, const char *name,
                         const char *extra)
{
    g_autofree char *path = netdev_path(r, name);
    g_autofree char *netdev = g_strdup_printf(
        "stream,id=n0,server=on,addr.type=unix,addr.path=%s", path);
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    QTestState *qts = qrig_spawn(&r->base, &(QRigOpts){
        .mem = "64M", .netdev = netdev, .nic = ",id=net0",
        .extra = extra });

    g_strlcpy(addr.sun_path, path, sizeof(addr.sun_path));
    l->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    g_assert_cmpint(connect(l->fd, (struct sockaddr *)&addr, sizeof(addr)),
                    ==, 0);
    l->in = g_byte_array_new();
    return qts;
}

static void link_close(Link *l)
{
    close(l->fd);
    g_byte_array_unref(l->in);
}

static void write_all(int fd, const void *buf, size_t len)
{
    g_assert_cmpint(write(fd, buf, len), ==, (ssize_t)len);
}

static void send_to(Echoes *e, Link *l, unsigned n)
{
    uint8_t f[4 + 128];
    const uint8_t *dst;

    pthread_mutex_lock(&e->lock);
    dst = e->guest_mac;
    pthread_mutex_unlock(&e->lock);
    for (unsigned i = 0; i < n; i++) {
        uint16_t tag = e->sent++;
        size_t len = 60 + tag % 64;

        g_assert_cmpuint(tag, <, MAX_TAGS);
        f[0] = f[1] = f[2] = 0;
        f[3] = len;
        eth_frame_tagged(f + 4, len, dst, peer_mac, ETH_P_TEST, tag,
                         ETH_FRAME_TAG_LAST);
        write_all(l->fd, f, 4 + len);
    }
}

/* One echo (or announcement) taken from @l's buffer; under lock. */
static void take_frame(Echoes *e, Link *l)
{
    const uint8_t *f = l->in->data + 4;
    uint32_t len = (uint32_t)l->in->data[0] << 24 | l->in->data[1] << 16 |
                   l->in->data[2] << 8 | l->in->data[3];
    uint16_t tag;

    g_assert_cmpuint(len, >=, 14);
    if (f[12] != ETH_P_RARP >> 8 || f[13] != (ETH_P_RARP & 0xff)) {
        tag = eth_frame_assert_tagged(f, len, peer_mac, e->guest_mac,
                                      ETH_P_TEST, ETH_FRAME_TAG_LAST);
        g_assert_cmpuint(tag, <, MAX_TAGS);
        g_assert_cmpuint(len, ==, 60 + tag % 64);
        e->times[tag]++;
        g_assert_cmpuint(e->times[tag], ==, 1);
        e->total++;
        pthread_cond_broadcast(&e->cond);
    }
    g_byte_array_remove_range(l->in, 0, 4 + len);
}

static bool frame_ready(const Link *l)
{
    return l->in->len >= 4 &&
           l->in->len >= 4 + ((uint32_t)l->in->data[0] << 24 |
                              l->in->data[1] << 16 | l->in->data[2] << 8 |
                              l->in->data[3]);
}

static void pump(Echoes *e, Link *l)
{
    uint8_t buf[65536];
    ssize_t got = read(l->fd, buf, sizeof(buf));

    g_assert_cmpint(got, >, 0);
    pthread_mutex_lock(&e->lock);
    g_byte_array_append(l->in, buf, got);
    while (frame_ready(l)) {
        take_frame(e, l);
    }
    pthread_mutex_unlock(&e->lock);
}

static gpointer reader(gpointer opaque)
{
    Echoes *e = opaque;

    for (;;) {
        struct pollfd fds[2] = { { .fd = e->src.fd, .events = POLLIN } };
        bool stop, dst_up;

        pthread_mutex_lock(&e->lock);
        stop = e->stop;
        dst_up = e->dst_up;
        pthread_mutex_unlock(&e->lock);
        if (stop) {
            return NULL;
        }
        /* The link is the main thread's until it says it is up. */
        fds[1] = (struct pollfd){ .fd = dst_up ? e->dst.fd : -1,
                                  .events = POLLIN };
        /* A short timeout: the destination's link may come up. */
        if (poll(fds, dst_up ? 2 : 1, 20) <= 0) {
            continue;
        }
        if (fds[0].revents) {
            pump(e, &e->src);
        }
        if (dst_up && fds[1].revents) {
            pump(e, &e->dst);
        }
    }
}

static void stop_reader(Echoes *e)
{
    pthread_mutex_lock(&e->lock);
    e->stop = true;
    pthread_mutex_unlock(&e->lock);
    g_thread_join(e->reader);
}

/* Waits (QTEST_WAIT_S: a suite beside it may hold both CPUs) until
 * @want echoes have come in all. */
static void collect(Echoes *e, unsigned want)
{
    struct timespec deadline;

    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += (time_t)QTEST_WAIT_S;
    pthread_mutex_lock(&e->lock);
    while (e->total < want) {
        if (pthread_cond_timedwait(&e->cond, &e->lock, &deadline)) {
            g_error("waited %.0f s for echo %u of %u", QTEST_WAIT_S,
                    e->total + 1, want);
        }
    }
    pthread_mutex_unlock(&e->lock);
}

static unsigned echoes(Echoes *e)
{
    unsigned n;

    pthread_mutex_lock(&e->lock);
    n = e->total;
    pthread_mutex_unlock(&e->lock);
    return n;
}

/* @n frames to @l and their @n echoes: counted before sending, since
 * the first may be back before the count is read. */
static void send_and_collect(Echoes *e, Link *l, unsigned n)
{
    unsigned want = echoes(e) + n;

    send_to(e, l, n);
    collect(e, want);
}

static gint64 stat(QTestState *qts, const char *path)
{
    return qrig_stat(qts, path);
}

static gint64 nic_dropped(QTestState *qts)
{
    g_autoptr(JsonObject) st = qrig_net_stats(qts);

    return qjson_sum(qrig_stats_nic(st), "rx.dropped");
}

/* The guest's active pools as it reports them: none while it has no
 * driver. */
static guint active_pools(QTestState *qts)
{
    g_autoptr(JsonObject) st = qrig_guest_stats(qts);

    return json_object_get_size(json_object_get_object_member(
        qrig_stats_guest(st), "frames-by-buffer-size"));
}

/* An offload the guest reports as negotiated. */
static bool guest_offload(QTestState *qts, const char *name)
{
    g_autoptr(JsonObject) st = qrig_guest_stats(qts);

    return json_object_get_boolean_member(json_object_get_object_member(
        qrig_stats_guest(st), "offloads"), name);
}

typedef struct DroppedAt {
    QTestState *qts;
    gint64 want;
} DroppedAt;

static bool dropped_reached(void *opaque)
{
    DroppedAt *d = opaque;

    return nic_dropped(d->qts) >= d->want;
}

static void wait_dropped(QTestState *qts, gint64 want)
{
    DroppedAt d = { qts, want };

    qtest_wait_until(dropped_reached, &d, QTEST_WAIT_S, "%" G_GINT64_FORMAT
                     " frames dropped", want);
    g_assert_cmpint(nic_dropped(qts), ==, want);
}

/* The source's socket is drained once what it has dropped and
 * delivered accounts for every frame sent to it. */
typedef struct Settled {
    QTestState *qts;
    gint64 sent;
} Settled;

static bool source_settled(void *opaque)
{
    Settled *s = opaque;

    return nic_dropped(s->qts) + stat(s->qts, "nic.device.rx-frames") >=
           s->sent;
}

static void test_guest_migrates(void)
{
    g_autofree char *sock = NULL, *uri = NULL, *incoming = NULL;
    Echoes *e = g_new0(Echoes, 1);
    Rig *r = &e->rig;
    gint64 src_rx, src_delivered, dst_rx, dst_delivered, dropped;
    unsigned to_src;

    pthread_mutex_init(&e->lock, NULL);
    pthread_cond_init(&e->cond, NULL);
    e->guest_mac = qrig_mac;
    rig_init(r);
    sock = rig_path(r, "mig.sock");
    uri = g_strdup_printf("unix:%s", sock);
    incoming = g_strdup_printf("%s -incoming %s", GUEST, uri);
    r->src = start(r, &e->src, "src", GUEST);
    e->reader = g_thread_new("echoes", reader, e);
    /* The guest's admin sets an address of its own: it must follow the
     * guest, and the destination's guest open with it again. */
    json_object_unref(qmp_ok(r->src, "{'execute': 'x-guest-set-mac', "
                             "'arguments': {'id': 'g0', "
                             "'mac': '52:54:00:ab:cd:03'}}"));
    use_mac(e, set_mac);
    send_to(e, &e->src, 32);
    collect(e, 32);

    /* Waiting for the stream, the destination's guest has not opened its
     * device: no pools, no poll. */
    r->dst = start(r, &e->dst, "dst", incoming);
    pthread_mutex_lock(&e->lock);
    e->dst_up = true;
    pthread_mutex_unlock(&e->lock);
    g_assert_cmpuint(active_pools(r->dst), ==, 0);
    g_assert_cmpint(stat(r->dst, "guest.napi-polls"), ==, 0);

    /* A burst, and the switchover while the source's guest works on it. */
    send_to(e, &e->src, BURST);
    migrate(r->src, uri);
    assert_completed(r->dst);
    g_assert_cmpuint(active_pools(r->dst), ==, 3);
    /* What the source's guest negotiated at boot came with the device's
     * state, and the destination's guest goes on with it. */
    g_assert_cmphex(stat(r->dst, "nic.device.attributes"), ==,
                    stat(r->src, "nic.device.attributes"));
    g_assert_cmphex(stat(r->dst, "nic.device.attributes") & 0x10006, ==,
                    0x10006);
    g_assert_true(guest_offload(r->dst, "rx-csum"));
    g_assert_true(guest_offload(r->dst, "large-send"));

    /* The source is stopped for good: what reaches it now it drops. */
    to_src = e->sent;
    qtest_wait_until(source_settled, &(Settled){ r->src, to_src },
                     QTEST_WAIT_S, "the source to account for %u frames",
                     to_src);
    dropped = nic_dropped(r->src);
    send_to(e, &e->src, 16);
    wait_dropped(r->src, dropped + 16);

    /* The destination's guest carries on. */
    send_to(e, &e->dst, 32);
    qrig_wait_stat_min(r->dst, "guest.tx-frames", 32);

    /* Every frame delivered into the source's guest RAM was processed
     * once: by the source's guest, or by the destination's from the
     * queue it took over. */
    src_rx = stat(r->src, "guest.rx-frames");
    src_delivered = stat(r->src, "nic.device.rx-frames");
    dst_delivered = stat(r->dst, "nic.device.rx-frames");
    g_assert_cmpint(dst_delivered, ==, 32);
    dst_rx = qrig_wait_stat_min(r->dst, "guest.rx-frames",
                                src_delivered - src_rx + dst_delivered);
    g_assert_cmpint(dst_rx, ==, src_delivered - src_rx + dst_delivered);
    g_assert_cmpint(src_delivered + dropped, ==, to_src);
    g_test_message("burst of %d: %" G_GINT64_FORMAT " echoed by the source, "
                   "%" G_GINT64_FORMAT " taken over in the queue, %"
                   G_GINT64_FORMAT " dropped by the stopped source", BURST,
                   src_rx - 32, dst_rx - dst_delivered, dropped);
    collect(e, src_delivered + 32);
    g_assert_cmpint(stat(r->src, "guest.tx-frames"), ==, src_rx);
    g_assert_cmpint(stat(r->dst, "guest.tx-frames"), ==, dst_rx);

    /* An MTU change on the destination closes and opens again, with
     * the address set on the source (filtering on: a frame to any other
     * address would not come back). */
    json_object_unref(qmp_ok(r->dst, "{'execute': 'x-guest-set-mtu', "
                             "'arguments': {'id': 'g0', 'mtu': 9000}}"));
    send_and_collect(e, &e->dst, 16);

    /* A reset on the destination is a reboot: the guest opens its device
     * again, with the device tree's address. */
    json_object_unref(qmp_ok(r->dst, "{'execute': 'system_reset'}"));
    qrig_wait_stat(r->dst, "guest.resets", 1);
    use_mac(e, qrig_mac);
    send_and_collect(e, &e->dst, 16);

    stop_reader(e);
    qtest_quit(r->src);
    qtest_quit(r->dst);
    link_close(&e->src);
    link_close(&e->dst);
    rig_free(r);
    pthread_cond_destroy(&e->cond);
    pthread_mutex_destroy(&e->lock);
    g_free(e);
}

/* The big-endian word at @p. */
static uint32_t be32_at(const char *p)
{
    const uint8_t *b = (const uint8_t *)p;

    return (uint32_t)b[0] << 24 | b[1] << 16 | b[2] << 8 | b[3];
}

/*
 * On pseries-2.5 a device adopts the interrupt number a QEMU stream gives
 * it (QEMU's LAN is 0x1007 with one -serial, illan's 0x1006): the
 * destination's guest, which sleeps until its interrupt, must be woken
 * by the adopted number.
 */
static void test_legacy_irq_adopted(void)
{
    static const char idstr[] = "l-lan@71000000/spapr_llan";
    g_autofree char *file = NULL, *uri = NULL, *incoming = NULL;
    g_autofree char *data = NULL;
    Echoes *e = g_new0(Echoes, 1);
    Rig *r = &e->rig;
    char *irq;
    gsize len;

    pthread_mutex_init(&e->lock, NULL);
    pthread_cond_init(&e->cond, NULL);
    e->guest_mac = qrig_mac;
    rig_init(r);
    file = rig_path(r, "stream");
    uri = g_strdup_printf("file:%s", file);
    incoming = g_strdup_printf("-M pseries-2.5 " GUEST " -incoming %s", uri);
    r->src = start(r, &e->src, "src", "-M pseries-2.5 " GUEST);
    e->reader = g_thread_new("echoes", reader, e);
    send_and_collect(e, &e->src, 16);
    migrate(r->src, uri);

    g_assert_true(g_file_get_contents(file, &data, &len, NULL));
    irq = memmem(data, len, idstr, strlen(idstr));
    g_assert_nonnull(irq);
    /* After the idstr: instance and version ids, then sdev.reg. */
    irq += strlen(idstr) + 4 + 4 + 4;
    g_assert_cmphex(be32_at(irq), ==, 0x1006);
    irq[3] = 0x07;
    g_assert_true(g_file_set_contents(file, data, len, NULL));

    r->dst = start(r, &e->dst, "dst", incoming);
    pthread_mutex_lock(&e->lock);
    e->dst_up = true;
    pthread_mutex_unlock(&e->lock);
    assert_completed(r->dst);
    send_and_collect(e, &e->dst, 32);
    g_assert_cmpint(stat(r->dst, "guest.rx-frames"), ==, 32);
    /* It also looks every second; only the interrupt counts as a
     * wakeup. */
    g_assert_cmpint(stat(r->dst, "guest.wakeups"), >, 0);
    g_assert_cmpint(stat(r->dst, "guest.woken-late"), ==, 0);

    stop_reader(e);
    qtest_quit(r->src);
    qtest_quit(r->dst);
    link_close(&e->src);
    link_close(&e->dst);
    rig_free(r);
    pthread_cond_destroy(&e->cond);
    pthread_mutex_destroy(&e->lock);
    g_free(e);
}

/* A stream from a source with or without a guest, into a destination
 * with or without one, from the command line: refused with one line. */
static void refused(const char *src_extra, const char *dst_extra,
                    const char *msg)
{
    Rig r;
    g_autofree char *file = NULL, *uri = NULL, *args = NULL;
    g_autofree char *out = NULL, *err = NULL;

    rig_init(&r);
    file = rig_path(&r, "stream");
    uri = g_strdup_printf("file:%s", file);
    r.src = qrig_spawn(&r.base, &(QRigOpts){
        .machine = "pseries", .mem = "64M", .dev_path = r.src_dev,
        .nic = ",id=net0", .extra = src_extra });
    migrate(r.src, uri);
    args = g_strdup_printf("-nodefaults -M pseries -m 64M -device "
                           "spapr-vlan,id=net0,mac=52:54:00:12:34:56 %s "
                           "-incoming %s", dst_extra, uri);
    g_assert_cmpint(illan_run(args, &out, &err), ==, 1);
    g_test_message("%s", err);
    g_assert_true(g_str_has_prefix(err, "illan: -incoming file:"));
    g_assert_nonnull(strstr(err, msg));
    g_assert_cmpint(strchr(err, '\n') - err, ==, (long)strlen(err) - 1);
    qtest_quit(r.src);
    rig_free(&r);
}

static void test_stream_without_guest(void)
{
    refused("", GUEST, "the stream has no state for guest 'g0' (section "
            "'ibmveth-guest'): the source ran no built-in guest on dev=net0; "
            "give the destination the source's -guest options, or none");
}

static void test_destination_without_guest(void)
{
    refused(GUEST, "", "unknown section 'ibmveth-guest' instance 0");
}

/*
 * Crafted guest sections.  After its header (type, section id, "ibmveth-
 * guest", instance, version) a section holds unit, mem_next, tx_position,
 * then the driver: tce_list, buffer_list, filter_list, rxq, tx_buf,
 * rxq_len, rxq_index, rxq_toggle, bds_per_add, mac, and five pools of
 * active, size, count, base, stride, consumer, producer, available and
 * count free-map entries and count posted flags.
 */
#define GUEST_IDSTR     "ibmveth-guest"
#define AT_MEM_NEXT     4
#define AT_DRIVER       16
#define AT_POOLS        (AT_DRIVER + 5 * 8 + 3 * 4 + 1 + 8)
#define SECTION_HEAD    (1 + 4 + 1 + sizeof(GUEST_IDSTR) - 1 + 4 + 4)
#define SECTION_FOOT    (1 + 4)

/* Where the body of guest section @n starts in @data: its idstr with
 * its length byte, unlike a subsection's name that begins with it. */
static size_t guest_section(const char *data, size_t len, unsigned n)
{
    static const char idstr[] = "\x0d" GUEST_IDSTR;
    const char *at = data;

    G_STATIC_ASSERT(sizeof(GUEST_IDSTR) - 1 == 0x0d);
    for (unsigned i = 0; i <= n; i++) {
        at = memmem(at + 1, len - (at + 1 - data), idstr, strlen(idstr));
        g_assert_nonnull(at);
    }
    return at - data + strlen(idstr) + 8;
}

static uint64_t get_be(const char *p, int size)
{
    uint64_t v = 0;

    for (int i = 0; i < size; i++) {
        v = v << 8 | (uint8_t)p[i];
    }
    return v;
}

static void put_be64(char *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8) {
        p[i] = v;
    }
}

static void move_down(char *p, uint64_t by)
{
    put_be64(p, get_be(p, 8) - by);
}

/* The allocator's cursor and every piece of guest section @n's driver
 * moved down by @by bytes. */
static void move_guest_down(char *data, size_t len, unsigned n, uint64_t by)
{
    char *body = data + guest_section(data, len, n);
    char *pool = body + AT_POOLS;

    move_down(body + AT_MEM_NEXT, by);
    for (int i = 0; i < 5; i++) {
        move_down(body + AT_DRIVER + 8 * i, by);
    }
    for (int i = 0; i < 5; i++) {
        uint64_t count = get_be(pool + 5, 4);

        if (pool[0]) {
            move_down(pool + 9, by);
        }
        pool += 1 + 4 + 4 + 8 + 8 + 4 * 3 + count * 5;
    }
}

/* A stream from a source with @guests (each on its own spapr-vlan),
 * changed by @craft, into a destination like it: refused with @msg, and
 * the destination quits cleanly after a reset, as it would have run. */
static void crafted(const char *guests, void (*craft)(char *, size_t),
                    const char *msg)
{
    Rig r;
    g_autofree char *file = NULL, *uri = NULL, *cmd = NULL, *data = NULL;
    g_autofree char *dst_extra = g_strdup_printf("%s -incoming defer",
                                                 guests);
    g_autoptr(JsonObject) info = NULL;
    gsize len;

    rig_init(&r);
    file = rig_path(&r, "stream");
    uri = g_strdup_printf("file:%s", file);
    r.src = qrig_spawn(&r.base, &(QRigOpts){
        .machine = "pseries", .mem = "64M", .dev_path = r.src_dev,
        .nic = ",id=net0", .extra = guests });
    migrate(r.src, uri);
    qtest_quit(r.src);
    g_assert_true(g_file_get_contents(file, &data, &len, NULL));
    craft(data, len);
    g_assert_true(g_file_set_contents(file, data, len, NULL));

    r.dst = qrig_spawn(&r.base, &(QRigOpts){
        .machine = "pseries", .mem = "64M", .dev_path = r.dst_dev,
        .nic = ",id=net0", .extra = dst_extra });
    cmd = g_strdup_printf("{'execute': 'migrate-incoming', 'arguments': "
                          "{'uri': '%s'}}", uri);
    json_object_unref(qmp_ok(r.dst, cmd));
    info = wait_migration(r.dst);
    g_test_message("%s: %s", json_object_get_string_member(info, "status"),
                   json_object_has_member(info, "error-desc") ?
                   json_object_get_string_member(info, "error-desc") : "");
    /* Closing the guests frees their pieces: with the crafted state
     * adopted, the old code aborted here. */
    json_object_unref(qmp_ok(r.dst, "{'execute': 'system_reset'}"));
    g_assert_cmpstr(json_object_get_string_member(info, "status"), ==,
                    "failed");
    g_assert_nonnull(strstr(json_object_get_string_member(info,
                                                          "error-desc"),
                            msg));
    qtest_quit(r.dst);
    rig_free(&r);
}

/* Every piece and the cursor 1 MiB lower: some pieces below 1 MiB,
 * where the allocator hands nothing out. */
static void below_base(char *data, size_t len)
{
    move_guest_down(data, len, 0, 1 << 20);
}

static void test_pieces_below_base(void)
{
    crafted(GUEST, below_base, "guest 'g0': driver state: pool 0: size "
            "512, count 256, 1024 bytes apart at 0x23000 is not a pool the "
            "driver makes in this machine's memory");
}

static void cursor_below_base(char *data, size_t len)
{
    put_be64(data + guest_section(data, len, 0) + AT_MEM_NEXT, 0x80000);
}

static void test_cursor_below_base(void)
{
    crafted(GUEST, cursor_below_base, "guest 'g0': the guest allocator "
            "stands at 0x80000, below 0x100000 where it starts");
}

/* Guest 1's state made guest 0's (unit apart): both drivers hold the same
 * pieces. */
static void shared_pieces(char *data, size_t len)
{
    size_t g0 = guest_section(data, len, 0), g1 = guest_section(data, len, 1);
    size_t body = g1 - g0 - SECTION_HEAD - SECTION_FOOT;

    memcpy(data + g1 + 4, data + g0 + 4, body - 4);
}

#define TWO_GUESTS GUEST " -device spapr-vlan,id=net1,mac=52:54:00:12:34:57 " \
    "-guest ibmveth,id=g1,dev=net1,fwd=macswap"

static void test_guests_share_pieces(void)
{
    crafted(TWO_GUESTS, shared_pieces, "section 'ibmveth-guest': a piece "
            "of guest 'g0' at 0x100000 overlaps one of guest 'g1' at "
            "0x100000");
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/guest-migration/macswap", test_guest_migrates);
    g_test_add_func("/guest-migration/legacy-irq-adopted",
                    test_legacy_irq_adopted);
    g_test_add_func("/guest-migration/stream-without-guest",
                    test_stream_without_guest);
    g_test_add_func("/guest-migration/destination-without-guest",
                    test_destination_without_guest);
    g_test_add_func("/guest-migration/pieces-below-base",
                    test_pieces_below_base);
    g_test_add_func("/guest-migration/cursor-below-base",
                    test_cursor_below_base);
    g_test_add_func("/guest-migration/guests-share-pieces",
                    test_guests_share_pieces);
    return g_test_run();
}
