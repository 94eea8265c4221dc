/*
 * Migration test helpers (see migration-helpers.h).
 */
#include "migration-helpers.h"
#include "libqos/eth-frames.h"

#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* One frame size per pool: 512, 2048 and 16384-byte buffers. */
static const size_t frame_sizes[NPOOLS] = { 60, 1000, 4000 };

void rig_init(Rig *r)
{
    *r = (Rig){ 0 };
    qrig_init(&r->base);
    qrig_bind_peer(&r->base);
    r->dir = r->base.dir;
    r->src_dev = rig_path(r, "src");
    r->dst_dev = rig_path(r, "dst");
}

char *rig_path(Rig *r, const char *name)
{
    return qrig_path(&r->base, name);
}

/* An illan whose NIC's backend is the dgram socket @dev_path. */
QTestState *rig_start(Rig *r, const char *dev_path, const char *machine,
                      const char *pools, const char *extra)
{
    g_autofree char *nic = pools ? g_strdup_printf(
        ",use-rx-buffer-pools=%s", pools) : NULL;

    r->best_fit = pools ? !strcmp(pools, "on")
                        : strcmp(machine, "pseries-1.0") != 0 &&
                          strcmp(machine, "pseries-2.5") != 0;
    return qrig_spawn(&r->base, &(QRigOpts){
        .machine = machine, .mem = "64M", .dev_path = dev_path,
        .nic = nic, .extra = extra });
}

/* The processes are the tests' to end. */
void rig_free(Rig *r)
{
    qrig_stop(&r->base);
    g_free(r->src_dev);
    g_free(r->dst_dev);
}

/* Three pools of 16, 16 and 8 buffers: a 41-entry queue. */
void rig_open_guest(Rig *r, uint64_t ram_size)
{
    IbmvethConf conf = { .unit = UNIT, .mac = OUR_MAC, .npools = NPOOLS,
                          .pool_size = { 512, 2048, 16384 },
                          .pool_count = { 16, 16, 8 },
                          .pool_active = { true, true, true },
                          .bulk_add = true };

    r->veth = qrig_guest_open(r->src, &r->alloc, &conf, ram_size);
}

/* Frame number @tag, to us, its size picking the pool. */
void rig_inject(Rig *r, const char *dev_path)
{
    uint16_t tag = r->sent++;
    size_t len = frame_sizes[tag % NPOOLS];
    g_autofree uint8_t *frame = g_malloc(len);

    eth_frame_tagged(frame, len, qrig_mac, qrig_mac, 0, tag,
                     ETH_FRAME_TAG_LAST);
    qtest_dgram_send(r->base.peer, dev_path, frame, len);
}

/* The next frame must be the next tag, whole, in the right pool. */
void rig_expect_next(Rig *r)
{
    static uint8_t data[65536];
    IbmvethRxEntry e = qibmveth_wait_rx(r->veth, data, sizeof(data));
    uint16_t tag = eth_frame_assert_tagged(data, e.len, qrig_mac, qrig_mac,
                                           0, ETH_FRAME_TAG_LAST);

    g_assert_cmpuint(tag, ==, r->seen);
    g_assert_cmpuint(e.len, ==, frame_sizes[tag % NPOOLS]);
    if (r->best_fit) {
        g_assert_cmpuint(e.pool, ==, tag % NPOOLS);
    }
    r->seen++;
    qibmveth_replenish(r->veth);
}

JsonObject *qmp_ok(QTestState *qts, const char *cmd)
{
    JsonObject *rsp = qtest_qmp(qts, "%s", cmd);

    if (!json_object_has_member(rsp, "return")) {
        g_error("%s failed", cmd);
    }
    return rsp;
}

void migration_events_on(QTestState *qts)
{
    json_object_unref(qmp_ok(qts, "{'execute': 'migrate-set-capabilities', "
                             "'arguments': {'capabilities': [{'capability': "
                             "'events', 'state': true}]}}"));
}

char *run_state(QTestState *qts)
{
    g_autoptr(JsonObject) rsp = qmp_ok(qts, "{'execute': 'query-status'}");

    return g_strdup(json_object_get_string_member(
        json_object_get_object_member(rsp, "return"), "status"));
}

/* Waits until the device has delivered @n frames in all. */
void wait_delivered(QTestState *qts, gint64 n)
{
    qrig_wait_stat(qts, "nic.device.rx-frames", n);
}

/* "size:posted ..." of the device's pools, and the buffers it holds. */
char *pool_table(QTestState *qts)
{
    g_autoptr(JsonObject) st = qrig_net_stats(qts);
    JsonObject *dev = json_object_get_object_member(qrig_stats_nic(st),
                                                    "device");
    JsonArray *pools = json_object_get_array_member(dev, "pools");
    GString *s = g_string_new(NULL);

    g_string_printf(s, "bufs %" G_GINT64_FORMAT ":",
                    json_object_get_int_member(dev, "rx-bufs-posted"));
    for (guint i = 0; i < json_array_get_length(pools); i++) {
        JsonObject *p = json_array_get_object_element(pools, i);

        g_string_append_printf(s, " %" G_GINT64_FORMAT ":%" G_GINT64_FORMAT,
                               json_object_get_int_member(p, "bufsize"),
                               json_object_get_int_member(p, "posted"));
    }
    return g_string_free(s, FALSE);
}

typedef struct MigrationWait {
    QTestState *qts;
    JsonObject *info;           /* the last "return" of query-migrate */
} MigrationWait;

static bool migration_settled(void *opaque)
{
    MigrationWait *w = opaque;
    g_autoptr(JsonObject) rsp = qmp_ok(w->qts,
                                       "{'execute': 'query-migrate'}");
    const char *status;

    g_clear_pointer(&w->info, json_object_unref);
    w->info = json_object_ref(json_object_get_object_member(rsp, "return"));
    status = json_object_get_string_member_with_default(w->info, "status",
                                                        "none");
    return !strcmp(status, "completed") || !strcmp(status, "failed");
}

/* Polls query-migrate until it settles; returns the reply's "return". */
JsonObject *wait_migration(QTestState *qts)
{
    MigrationWait w = { .qts = qts };

    qtest_wait_until(migration_settled, &w, QTEST_WAIT_S,
                     "query-migrate to say completed or failed");
    return w.info;
}

void assert_completed(QTestState *qts)
{
    g_autoptr(JsonObject) info = wait_migration(qts);

    if (strcmp(json_object_get_string_member(info, "status"), "completed")) {
        g_error("migration failed: %s",
                json_object_get_string_member(info, "error-desc"));
    }
}

void migrate(QTestState *qts, const char *uri)
{
    g_autofree char *cmd = g_strdup_printf(
        "{'execute': 'migrate', 'arguments': {'uri': '%s'}}", uri);
    g_autofree char *state = NULL;

    json_object_unref(qmp_ok(qts, cmd));
    assert_completed(qts);
    state = run_state(qts);
    g_assert_cmpstr(state, ==, "postmigrate");
}

void migrate_start(QTestState *qts, const char *uri)
{
    g_autofree char *cmd = g_strdup_printf(
        "{'execute': 'migrate', 'arguments': {'uri': '%s'}}", uri);

    json_object_unref(qmp_ok(qts, cmd));
}

JsonObject *query_migrate(QTestState *qts)
{
    g_autoptr(JsonObject) rsp = qmp_ok(qts, "{'execute': 'query-migrate'}");

    return json_object_ref(json_object_get_object_member(rsp, "return"));
}

typedef struct StatusWait {
    QTestState *qts;
    const char *status;
    gint64 min;
    gint64 last;                /* ram.transferred at the last poll */
} StatusWait;

static bool has_status(void *opaque)
{
    StatusWait *w = opaque;
    g_autoptr(JsonObject) info = query_migrate(w->qts);

    return !g_strcmp0(json_object_get_string_member_with_default(
                          info, "status", "none"), w->status);
}

void wait_migration_status(QTestState *qts, const char *status)
{
    StatusWait w = { .qts = qts, .status = status };

    qtest_wait_until(has_status, &w, QTEST_WAIT_S,
                     "query-migrate to say %s", status);
}

static gint64 ram_transferred(JsonObject *info)
{
    return json_object_get_int_member(
        json_object_get_object_member(info, "ram"), "transferred");
}

static bool moved_enough(void *opaque)
{
    StatusWait *w = opaque;
    g_autoptr(JsonObject) info = query_migrate(w->qts);
    const char *status = json_object_get_string_member(info, "status");

    /* A destination is in setup until the source connects. */
    if (!strcmp(status, "setup")) {
        return false;
    }
    g_assert_cmpstr(status, ==, "active");
    w->last = ram_transferred(info);
    return w->last > 0 && w->last >= w->min;
}

gint64 wait_migration_moved(QTestState *qts, gint64 min)
{
    StatusWait w = { .qts = qts, .min = min };

    qtest_wait_until(moved_enough, &w, QTEST_WAIT_S,
                     "an active migration to move %" G_GINT64_FORMAT
                     " bytes", min);
    return w.last;
}

gint64 migration_transferred(QTestState *qts)
{
    g_autoptr(JsonObject) info = query_migrate(qts);

    return ram_transferred(info);
}

typedef struct WholeStream {
    QTestState *qts;
    const char *file;
} WholeStream;

static bool has_whole_stream(void *opaque)
{
    WholeStream *w = opaque;
    g_autofree char *data = NULL;
    gsize len = 0;

    return g_file_get_contents(w->file, &data, &len, NULL) && len &&
           data[len - 1] == '}' &&
           (gint64)len == migration_transferred(w->qts);
}

void wait_whole_stream(QTestState *qts, const char *file)
{
    WholeStream w = { qts, file };

    qtest_wait_until(has_whole_stream, &w, QTEST_WAIT_S,
                     "%s to hold the whole stream", file);
}

static int unix_stream(const char *path, struct sockaddr_un *addr)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    g_assert_cmpint(fd, >=, 0);
    *addr = (struct sockaddr_un){ .sun_family = AF_UNIX };
    g_assert_cmpuint(strlen(path), <, sizeof(addr->sun_path));
    strcpy(addr->sun_path, path);
    return fd;
}

int stall_listen(const char *path)
{
    struct sockaddr_un addr;
    int fd = unix_stream(path, &addr);

    unlink(path);
    g_assert_cmpint(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), ==, 0);
    g_assert_cmpint(listen(fd, 1), ==, 0);
    return fd;
}

int stall_connect(const char *path)
{
    struct sockaddr_un addr;
    int fd = unix_stream(path, &addr);

    g_assert_cmpint(connect(fd, (struct sockaddr *)&addr, sizeof(addr)), ==,
                    0);
    return fd;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

QmpLatency qmp_latency(QTestState *qts, int n)
{
    g_autofree double *ms = g_new(double, n);

    for (int i = 0; i < n; i++) {
        gint64 t0 = g_get_monotonic_time();

        json_object_unref(qmp_ok(qts, "{'execute': 'query-status'}"));
        ms[i] = (g_get_monotonic_time() - t0) / 1000.0;
    }
    qsort(ms, n, sizeof(*ms), compare_doubles);
    return (QmpLatency){ ms[n / 2], ms[(n * 99) / 100] };
}
