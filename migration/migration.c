/*
 * The migration state machine and QEMU's statuses, each change announced
 * to notifiers (the monitor makes them MIGRATION events).  The stream
 * moves on a thread of its own (mig/src, mig/dst), so that the main loop
 * keeps serving QMP, qtest and the netdevs, and a peer that stops reading
 * or sending stalls nothing but that thread.
 *
 * The source's thread sends RAM while the machine runs (migration/
 * precopy.c); guest RAM's dirty log, which every writer marks, tells it
 * what to send again.  It reads RAM and nothing else the pause guards,
 * so it never registers with the pause.  At the switchover it asks the
 * main thread to stop the machine and capture the devices, and waits.
 * The destination's thread reads into RAM and images while the machine
 * waits in inmigrate (everything parked); the images are committed on
 * the main thread after it ends.  Status changes, and so the events, all
 * happen on the main thread: the thread posts them there.
 */
#include "migration/migration.h"
#include "migration/channel.h"
#include "migration/precopy.h"
#include "migration/savevm.h"
#include "qemu/main-loop.h"
#include "qemu/option.h"
#include "qemu/pause.h"
#include "qemu/runstate.h"
#include "qemu/thread.h"

#include <glib-unix.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* How often a wait for an exec: command looks for a cancel. */
#define CHANNEL_WAIT_POLL_US    10000

typedef struct Notifier {
    MigrationNotifier fn;
    void *opaque;
} Notifier;

static const char *const status_names[] = {
    "none", "setup", "active", "completed", "failed", "cancelling",
    "cancelled",
};

typedef enum Switchover {
    SWITCHOVER_NOT_YET,
    SWITCHOVER_REQUESTED,       /* the thread waits for the main thread */
    SWITCHOVER_ANSWERED,        /* also when the job ended unasked */
} Switchover;

/* One stream on its thread.  The main thread creates it, may cancel its
 * file, and frees it after the join; the thread alone does the I/O and
 * closes the channel. */
typedef struct MigrationJob {
    GThread *thread;
    bool outgoing;
    QEMUFile *f;
    MigrationChannel *ch;
    QemuMutex lock;             /* guards the switchover's handshake: */
    QemuCond answered;
    Switchover switchover;
    SaveVMImages *images;       /* the devices, captured stopped; NULL
                                   when cancelled first */
    bool ok;                    /* the thread's result, */
    GError *err;                /* before done */
    bool done;                  /* atomic */
} MigrationJob;

static struct {
    GuestRam *ram;
    const char *machine_type;
    MigrationStatus status;
    char *error;
    PrecopyStats stats;         /* the source thread counts, atomically */
    uint64_t transferred;       /* once the job is over */
    int64_t start_us, total_ms;
    int64_t setup_ms;           /* -1 while in setup */
    int64_t stop_us, downtime_ms;   /* source: the switchover's pause */
    void (*pass_notifier)(uint64_t pass);
    MigrationJob *job;          /* a stream in progress */
    RunState vm_old_state;      /* source: the run state to go back to */
    int64_t switchover_delay_us;    /* test only; set before the thread */
    /* Destination. */
    bool deferred;              /* -incoming defer, not yet given a URI */
    bool exit_on_error;         /* -incoming URI: a refused stream ends
                                   the run, as in QEMU */
    GError *fatal;              /* why it ended, for main() */
    bool autostart;
    char *incoming_uri;
    MigrationChannel *incoming;
    /* -incoming URI without -M or -m: the stream already connected and
     * its beginning read, before the machine was made. */
    MigrationChannel *early_ch;
    QEMUFile *early_f;
    GArray *notifiers;          /* Notifier */
} mig;

const char *migration_status_name(MigrationStatus status)
{
    return status_names[status];
}

void migration_set_machine(GuestRam *ram, const char *machine_type)
{
    mig.ram = ram;
    mig.machine_type = machine_type;
}

void migration_add_notifier(MigrationNotifier fn, void *opaque)
{
    if (!mig.notifiers) {
        mig.notifiers = g_array_new(FALSE, FALSE, sizeof(Notifier));
    }
    g_array_append_val(mig.notifiers, ((Notifier){ fn, opaque }));
}

void migration_remove_notifier(MigrationNotifier fn, void *opaque)
{
    for (guint i = 0; mig.notifiers && i < mig.notifiers->len; i++) {
        Notifier *n = &g_array_index(mig.notifiers, Notifier, i);

        if (n->fn == fn && n->opaque == opaque) {
            g_array_remove_index(mig.notifiers, i);
            return;
        }
    }
}

static void set_status(MigrationStatus status)
{
    mig.status = status;
    if (status == MIGRATION_STATUS_SETUP) {
        mig.start_us = g_get_monotonic_time();
        g_clear_pointer(&mig.error, g_free);
        mig.stats = (PrecopyStats){ 0 };
        mig.transferred = 0;
        mig.setup_ms = -1;
        mig.downtime_ms = -1;
    }
    if (status == MIGRATION_STATUS_ACTIVE && mig.setup_ms < 0) {
        mig.setup_ms = (g_get_monotonic_time() - mig.start_us) / 1000;
    }
    if (status == MIGRATION_STATUS_COMPLETED ||
        status == MIGRATION_STATUS_FAILED ||
        status == MIGRATION_STATUS_CANCELLED) {
        mig.total_ms = (g_get_monotonic_time() - mig.start_us) / 1000;
    }
    for (guint i = 0; mig.notifiers && i < mig.notifiers->len; i++) {
        Notifier *n = &g_array_index(mig.notifiers, Notifier, i);

        n->fn(status, n->opaque);
    }
}

static void fail(const GError *err)
{
    mig.error = g_strdup(err->message);
    set_status(MIGRATION_STATUS_FAILED);
}

/* The switchover's answer, on the main thread: once, and before the
 * thread is joined, since it may be waiting for it.  Given before the
 * request (the job is ending), it stands: a thread that asks after it
 * gets no images and does not wait for a main thread that is joining
 * it. */
static void answer_switchover(MigrationJob *job, SaveVMImages *images)
{
    qemu_mutex_lock(&job->lock);
    if (job->switchover != SWITCHOVER_ANSWERED) {
        job->images = g_steal_pointer(&images);
        job->switchover = SWITCHOVER_ANSWERED;
        qemu_cond_broadcast(&job->answered);
    }
    qemu_mutex_unlock(&job->lock);
    qemu_savevm_images_free(images);
}

/* The thread's end, on the main thread. */

static void outgoing_finished(bool ok, GError *err);
static void incoming_finished(bool ok, GError *err);

static void finish_job(void)
{
    MigrationJob *job = g_steal_pointer(&mig.job);

    answer_switchover(job, NULL);
    g_thread_join(job->thread);
    mig.transferred = qemu_file_io_bytes(job->f);
    qemu_file_free(job->f);
    qemu_mutex_destroy(&job->lock);
    qemu_cond_destroy(&job->answered);
    if (job->outgoing) {
        outgoing_finished(job->ok, job->err);
    } else {
        incoming_finished(job->ok, job->err);
    }
    g_clear_error(&job->err);
    g_free(job);
}

/* Posted by the thread as its last act; migration_shutdown() may have
 * joined it already. */
static void job_done(void *opaque)
{
    (void)opaque;
    if (mig.job && __atomic_load_n(&mig.job->done, __ATOMIC_ACQUIRE)) {
        finish_job();
    }
}

static void job_end(MigrationJob *job, bool ok, GError *err)
{
    job->ok = ok;
    job->err = err;
    __atomic_store_n(&job->done, true, __ATOMIC_RELEASE);
    main_loop_run_or_post(job_done, NULL);
}

/* @f: the channel's file when its first bytes were already read. */
static void start_job(const char *name, bool outgoing, MigrationChannel *ch,
                      QEMUFile *f, GThreadFunc fn)
{
    MigrationJob *job = g_new0(MigrationJob, 1);
    int fd = migration_channel_fd(ch);

    job->outgoing = outgoing;
    job->ch = ch;
    qemu_mutex_init(&job->lock);
    qemu_cond_init(&job->answered);
    job->f = f ? f : outgoing ? qemu_file_new_output(fd)
                              : qemu_file_new_input(fd);
    mig.job = job;
    job->thread = g_thread_new(name, fn, job);
}

/* While an exec: command finishes after a whole stream: until the job
 * is cancelled (migrate_cancel, the exit). */
static bool not_cancelled(void *opaque)
{
    MigrationJob *job = opaque;

    return qemu_file_sleep(job->f, CHANNEL_WAIT_POLL_US);
}

/* The thread's last use of its channel: a failed stream's command is
 * ended at once. */
static bool close_channel(MigrationJob *job, bool ok, GError **errp)
{
    MigrationChannel *ch = g_steal_pointer(&job->ch);

    return migration_channel_close(ch, ok ? not_cancelled : NULL, job,
                                   ok ? errp : NULL) && ok;
}

/* Destination. */

static gpointer incoming_thread(gpointer opaque)
{
    MigrationJob *job = opaque;
    GError *err = NULL;
    bool ok = qemu_loadvm_read(job->f, mig.machine_type, mig.ram, &err);

    ok = close_channel(job, ok, &err);
    job_end(job, ok, err);
    return NULL;
}

/* Everything is parked (inmigrate), so the images go in as one. */
static void incoming_finished(bool ok, GError *err)
{
    bool waiting = runstate_get() == RUN_STATE_INMIGRATE;

    qemu_loadvm_commit(ok);
    if (!ok) {
        /* Devices are as reset left them: after migrate-incoming the
         * machine keeps waiting for another stream. */
        fail(err);
        if (mig.exit_on_error) {
            mig.fatal = g_error_new(ILLAN_ERROR, 0, "-incoming %s: %s",
                                    mig.incoming_uri, err->message);
            qemu_system_shutdown("host-error");
            return;
        }
        fprintf(stderr, "illan: -incoming %s: %s\n", mig.incoming_uri,
                err->message);
        return;
    }
    set_status(MIGRATION_STATUS_COMPLETED);
    if (!waiting) {
        return;                 /* the run is ending */
    }
    runstate_set(RUN_STATE_PAUSED);
    if (mig.autostart) {
        vm_start();
    }
}

static void load_incoming(MigrationChannel *ch, void *opaque)
{
    (void)opaque;
    mig.incoming = NULL;
    set_status(MIGRATION_STATUS_ACTIVE);
    start_job("mig/dst", false, ch, g_steal_pointer(&mig.early_f),
              incoming_thread);
}

static bool listen_incoming(const char *uri, GError **errp)
{
    mig.incoming = migration_channel_open_incoming(uri, load_incoming, NULL,
                                                   errp);
    if (!mig.incoming) {
        return false;
    }
    g_free(mig.incoming_uri);
    mig.incoming_uri = g_strdup(uri);
    set_status(MIGRATION_STATUS_SETUP);
    return true;
}

bool migration_incoming_start(const char *uri, bool autostart, GError **errp)
{
    mig.autostart = autostart;
    runstate_set(RUN_STATE_INMIGRATE);
    mig.exit_on_error = strcmp(uri, "defer") != 0;
    if (!mig.exit_on_error) {
        mig.deferred = true;
        return true;
    }
    if (mig.early_ch) {
        g_free(mig.incoming_uri);
        mig.incoming_uri = g_strdup(uri);
        set_status(MIGRATION_STATUS_SETUP);
        load_incoming(g_steal_pointer(&mig.early_ch), NULL);
        return true;
    }
    return listen_incoming(uri, errp);
}

/* The wait for a stream before the machine exists: the channel's
 * connection, then its first bytes, read on a thread of their own so
 * that SIGINT and SIGTERM still end the wait. */
typedef struct EarlyWait {
    GMainLoop *loop;
    bool interrupted;
    bool peeked;                /* atomic: the peek thread is done */
    char *machine_type;
    uint64_t ram_size;
} EarlyWait;

static void early_ready(MigrationChannel *ch, void *opaque)
{
    EarlyWait *w = opaque;

    mig.early_ch = ch;
    g_main_loop_quit(w->loop);
}

static gboolean early_interrupted(gpointer opaque)
{
    EarlyWait *w = opaque;

    w->interrupted = true;
    if (mig.early_f) {
        qemu_file_cancel(mig.early_f, "interrupted");
    }
    g_main_loop_quit(w->loop);
    return G_SOURCE_CONTINUE;
}

static gboolean early_peeked(gpointer opaque)
{
    g_main_loop_quit(((EarlyWait *)opaque)->loop);
    return G_SOURCE_REMOVE;
}

static gpointer early_peek_thread(gpointer opaque)
{
    EarlyWait *w = opaque;

    qemu_loadvm_peek(mig.early_f, &w->machine_type, &w->ram_size);
    __atomic_store_n(&w->peeked, true, __ATOMIC_RELEASE);
    g_idle_add(early_peeked, w);
    return NULL;
}

static void early_run_until(EarlyWait *w, bool (*done)(EarlyWait *w))
{
    while (!w->interrupted && !done(w)) {
        g_main_loop_run(w->loop);
    }
}

static bool early_connected(EarlyWait *w)
{
    (void)w;
    return mig.early_ch != NULL;
}

static bool early_peek_done(EarlyWait *w)
{
    return __atomic_load_n(&w->peeked, __ATOMIC_ACQUIRE);
}

bool migration_incoming_peek(const char *uri, char **machine_type,
                             uint64_t *ram_size, bool *interrupted,
                             GError **errp)
{
    g_autoptr(GMainLoop) loop = g_main_loop_new(NULL, FALSE);
    EarlyWait w = { .loop = loop };
    MigrationChannel *listener;
    GThread *peek;
    guint term, intr;

    listener = migration_channel_open_incoming(uri, early_ready, &w, errp);
    if (!listener) {
        return false;
    }
    term = g_unix_signal_add(SIGTERM, early_interrupted, &w);
    intr = g_unix_signal_add(SIGINT, early_interrupted, &w);
    early_run_until(&w, early_connected);
    if (mig.early_ch) {
        mig.early_f = qemu_file_new_input(
            migration_channel_fd(mig.early_ch));
        peek = g_thread_new("mig/peek", early_peek_thread, &w);
        early_run_until(&w, early_peek_done);
        if (w.interrupted) {
            qemu_file_cancel(mig.early_f, "interrupted");
        }
        g_thread_join(peek);
    } else {
        migration_channel_close(listener, NULL, NULL, NULL);
    }
    g_source_remove(term);
    g_source_remove(intr);
    /* The peek's idle callback, if it has not run, must not outlive @w. */
    while (g_source_remove_by_user_data(&w)) {
    }
    *interrupted = w.interrupted;
    *machine_type = g_steal_pointer(&w.machine_type);
    *ram_size = w.ram_size;
    return true;
}

/* After -incoming defer, or after a refused stream: the machine is
 * still as reset left it, so another stream may come. */
bool migration_incoming_deferred(const char *uri, GError **errp)
{
    bool may_retry = mig.status == MIGRATION_STATUS_FAILED && !mig.incoming;

    if (runstate_get() != RUN_STATE_INMIGRATE) {
        g_set_error(errp, ILLAN_ERROR, 0, "'-incoming' was not specified on "
                    "the command line");
        return false;
    }
    if (!mig.deferred && !may_retry) {
        g_set_error(errp, ILLAN_ERROR, 0, "The incoming migration has already "
                    "been started");
        return false;
    }
    if (!listen_incoming(uri, errp)) {
        return false;
    }
    mig.deferred = false;
    return true;
}

/* Source. */

/* Posted by the source's thread. */

static void precopy_active(void *opaque)
{
    (void)opaque;
    if (mig.job && mig.status == MIGRATION_STATUS_SETUP) {
        set_status(MIGRATION_STATUS_ACTIVE);
    }
}

static void precopy_pass(void *opaque)
{
    if (mig.pass_notifier) {
        mig.pass_notifier(GPOINTER_TO_SIZE(opaque));
    }
}

/* The one pause: the machine stops as it is and its devices are
 * captured.  Not after a cancel, and not for a job that is gone (the
 * request was posted before an exit joined it). */
static void switchover(void *opaque)
{
    MigrationJob *job = mig.job;

    (void)opaque;
    if (!job || !job->outgoing || mig.status == MIGRATION_STATUS_CANCELLING) {
        if (job) {
            answer_switchover(job, NULL);
        }
        return;
    }
    mig.vm_old_state = runstate_get();
    mig.stop_us = g_get_monotonic_time();
    vm_stop_force_state(RUN_STATE_FINISH_MIGRATE);
    answer_switchover(job, qemu_savevm_capture());
}

static void hook_active(void *opaque)
{
    (void)opaque;
    main_loop_run_or_post(precopy_active, NULL);
}

static void hook_pass(uint64_t pass, void *opaque)
{
    (void)opaque;
    main_loop_run_or_post(precopy_pass, GSIZE_TO_POINTER(pass));
}

static SaveVMImages *hook_switchover(void *opaque)
{
    MigrationJob *job = opaque;
    SaveVMImages *images;
    bool asked;

    if (mig.switchover_delay_us) {
        qemu_file_sleep(job->f, mig.switchover_delay_us);
    }
    qemu_mutex_lock(&job->lock);
    asked = job->switchover == SWITCHOVER_NOT_YET;
    if (asked) {
        job->switchover = SWITCHOVER_REQUESTED;
    }
    qemu_mutex_unlock(&job->lock);
    if (asked) {
        main_loop_run_or_post(switchover, NULL);
    }
    qemu_mutex_lock(&job->lock);
    while (job->switchover != SWITCHOVER_ANSWERED) {
        qemu_cond_wait(&job->answered, &job->lock);
    }
    images = g_steal_pointer(&job->images);
    qemu_mutex_unlock(&job->lock);
    return images;
}

static gpointer outgoing_thread(gpointer opaque)
{
    MigrationJob *job = opaque;
    PrecopyHooks hooks = { hook_active, hook_pass, hook_switchover, job };
    GError *err = NULL;
    bool ok = precopy_save(job->f, mig.machine_type, mig.ram, &hooks,
                           &mig.stats, &err);

    ok = qemu_file_finish(job->f, ok ? &err : NULL) && ok;
    ok = close_channel(job, ok, &err);
    job_end(job, ok, err);
    return NULL;
}

/* A stream written to its end completes even if a cancel came too late
 * to stop it: the destination has it all and may run.  Otherwise the
 * machine goes back to what it was before the switchover, if it got
 * that far. */
static void outgoing_finished(bool ok, GError *err)
{
    bool stopped = runstate_get() == RUN_STATE_FINISH_MIGRATE;

    guest_ram_dirty_log_stop(mig.ram);
    if (ok) {
        mig.downtime_ms = (g_get_monotonic_time() - mig.stop_us) / 1000;
        set_status(MIGRATION_STATUS_COMPLETED);
        if (stopped) {
            runstate_set(RUN_STATE_POSTMIGRATE);
        }
        return;
    }
    if (mig.status == MIGRATION_STATUS_CANCELLING) {
        set_status(MIGRATION_STATUS_CANCELLED);
    } else {
        fail(err);
    }
    if (!stopped) {
        return;                 /* still running, or the run is ending */
    }
    if (mig.vm_old_state == RUN_STATE_RUNNING) {
        runstate_set(RUN_STATE_PAUSED);
        vm_start();
    } else {
        runstate_set(mig.vm_old_state);
    }
}

/* Test only (docs/devel/qtest.md): ILLAN_TEST_SWITCHOVER_DELAY_MS holds
 * the source's thread that long, or until a cancel, between its last
 * pass and its switchover request, so that a test can end the run in
 * that window. */
static int64_t test_switchover_delay_us(void)
{
    const char *ms = g_getenv("ILLAN_TEST_SWITCHOVER_DELAY_MS");

    return ms ? g_ascii_strtoll(ms, NULL, 10) * 1000 : 0;
}

bool migration_outgoing(const char *uri, GError **errp)
{
    MigrationChannel *ch;

    if (runstate_get() == RUN_STATE_INMIGRATE) {
        g_set_error(errp, ILLAN_ERROR, 0, "Guest is waiting for an incoming "
                    "migration");
        return false;
    }
    if (mig.job) {
        g_set_error(errp, ILLAN_ERROR, 0, "There's a migration process in "
                    "progress");
        return false;
    }
    if (!qemu_savevm_may_save(errp)) {
        return false;
    }
    ch = migration_channel_open_outgoing(uri, errp);
    if (!ch) {
        return false;
    }
    set_status(MIGRATION_STATUS_SETUP);
    mig.switchover_delay_us = test_switchover_delay_us();
    /* Under the pause, so that every write from now on sees the log on
     * (its writers read the switch without ordering of their own). */
    pause_all_from("migration");
    guest_ram_dirty_log_start(mig.ram);
    resume_all();
    start_job("mig/src", true, ch, NULL, outgoing_thread);
    return true;
}

void migration_cancel(void)
{
    if (!mig.job || !mig.job->outgoing ||
        mig.status == MIGRATION_STATUS_CANCELLING) {
        return;
    }
    set_status(MIGRATION_STATUS_CANCELLING);
    qemu_file_cancel(mig.job->f, "cancelled");
}

void migration_shutdown(void)
{
    if (!mig.job) {
        return;
    }
    if (mig.job->outgoing) {
        migration_cancel();
    } else {
        qemu_file_cancel(mig.job->f, "interrupted by shutdown");
    }
    finish_job();
}

static uint64_t read_count(const uint64_t *counter)
{
    return __atomic_load_n(counter, __ATOMIC_RELAXED);
}

/* QEMU's MigrationStats. */
static JsonObject *ram_info(void)
{
    const RamStats *st = &mig.stats.ram;
    JsonObject *ram = json_object_new();
    uint64_t normal = read_count(&st->normal);
    uint64_t bandwidth = read_count(&st->bandwidth);
    static const char *const never[] = {
        "postcopy-requests", "multifd-bytes", "postcopy-bytes",
        "dirty-sync-missed-zero-copy",
    };

    json_object_set_int_member(ram, "transferred", mig.job
                               ? qemu_file_io_bytes(mig.job->f)
                               : mig.transferred);
    json_object_set_int_member(ram, "remaining", read_count(&st->remaining));
    json_object_set_int_member(ram, "total", read_count(&st->total));
    json_object_set_int_member(ram, "duplicate", read_count(&st->duplicate));
    json_object_set_int_member(ram, "normal", normal);
    json_object_set_int_member(ram, "normal-bytes",
                               normal * MIGRATION_PAGE_SIZE);
    json_object_set_int_member(ram, "dirty-pages-rate",
                               read_count(&st->dirty_pages_rate));
    json_object_set_double_member(ram, "mbps", bandwidth * 8 / 1e6);
    json_object_set_int_member(ram, "dirty-sync-count",
                               read_count(&st->dirty_sync_count));
    json_object_set_int_member(ram, "page-size", MIGRATION_PAGE_SIZE);
    json_object_set_int_member(ram, "pages-per-second",
                               read_count(&st->pages_per_second));
    json_object_set_int_member(ram, "precopy-bytes",
                               read_count(&st->precopy_bytes));
    json_object_set_int_member(ram, "downtime-bytes",
                               read_count(&st->downtime_bytes));
    for (size_t i = 0; i < G_N_ELEMENTS(never); i++) {
        json_object_set_int_member(ram, never[i], 0);
    }
    return ram;
}

/* The times, as QEMU shows them: total-time so far while it runs,
 * expected-downtime while active, downtime once completed. */
static void add_times(JsonObject *info)
{
    bool ended = mig.status == MIGRATION_STATUS_COMPLETED ||
                 mig.status == MIGRATION_STATUS_FAILED ||
                 mig.status == MIGRATION_STATUS_CANCELLED;

    json_object_set_int_member(info, "total-time", ended ? mig.total_ms :
                               (g_get_monotonic_time() - mig.start_us) /
                               1000);
    if (mig.setup_ms >= 0) {
        json_object_set_int_member(info, "setup-time", mig.setup_ms);
    }
    if (mig.status == MIGRATION_STATUS_ACTIVE && mig.job &&
        mig.job->outgoing) {
        json_object_set_int_member(info, "expected-downtime",
                                   __atomic_load_n(
                                       &mig.stats.expected_downtime_ms,
                                       __ATOMIC_RELAXED));
    }
    if (mig.status == MIGRATION_STATUS_COMPLETED && mig.downtime_ms >= 0) {
        json_object_set_int_member(info, "downtime", mig.downtime_ms);
    }
}

/* The interrupts illan raised and recorded in the carried interrupt
 * controller, by outcome. */
static void add_carried_irqs(JsonObject *info)
{
    g_autoptr(GHashTable) counts = qemu_savevm_carried_irq_counts();
    JsonObject *o;
    GList *names;

    if (!counts) {
        return;
    }
    o = json_object_new();
    names = g_list_sort(g_hash_table_get_keys(counts),
                        (GCompareFunc)g_strcmp0);
    for (GList *n = names; n; n = n->next) {
        json_object_set_int_member(o, n->data, GPOINTER_TO_UINT(
                                       g_hash_table_lookup(counts, n->data)));
    }
    g_list_free(names);
    json_object_set_object_member(info, "x-carried-irqs", o);
}

/* illan's own: what a load held in memory, and what the machine carries
 * for sections it does not model (docs/system/migration.md). */
static void add_carried(JsonObject *info)
{
    uint64_t held = qemu_loadvm_held_bytes(), bytes;
    unsigned sections;

    if (held) {
        json_object_set_int_member(info, "x-held-bytes", held);
    }
    if (qemu_loadvm_carried(&bytes, &sections)) {
        json_object_set_int_member(info, "x-carried-sections", sections);
        json_object_set_int_member(info, "x-carried-bytes", bytes);
    }
    add_carried_irqs(info);
}

JsonObject *migration_query(void)
{
    JsonObject *info = json_object_new();
    JsonArray *addrs;

    if (mig.status == MIGRATION_STATUS_NONE) {
        return info;
    }
    json_object_set_string_member(info, "status", status_names[mig.status]);
    if (mig.status == MIGRATION_STATUS_FAILED) {
        json_object_set_string_member(info, "error-desc", mig.error);
    }
    add_times(info);
    if ((addrs = migration_channel_socket_addresses(mig.incoming))) {
        json_object_set_array_member(info, "socket-address", addrs);
    }
    json_object_set_object_member(info, "ram", ram_info());
    add_carried(info);
    return info;
}

void migration_set_pass_notifier(void (*fn)(uint64_t pass))
{
    mig.pass_notifier = fn;
}

bool migration_in_progress(void)
{
    return mig.job != NULL;
}

GError *migration_take_fatal_error(void)
{
    return g_steal_pointer(&mig.fatal);
}

void migration_cleanup(void)
{
    migration_channel_close(mig.incoming, NULL, NULL, NULL);
    mig.incoming = NULL;
    g_clear_pointer(&mig.early_f, qemu_file_free);
    migration_channel_close(g_steal_pointer(&mig.early_ch), NULL, NULL,
                            NULL);
    g_clear_pointer(&mig.incoming_uri, g_free);
    g_clear_pointer(&mig.error, g_free);
}
