/*
 * The migration state machine and QEMU's statuses, each change announced
 * to notifiers (the monitor makes them MIGRATION events).  The stream
 * moves in one step with the machine stopped, but on a thread of its own
 * (mig/src, mig/dst), so that the main loop keeps serving QMP, qtest and
 * the netdevs, and a peer that stops reading or sending stalls nothing
 * but that thread.
 *
 * The thread touches no state the pause guards: the run state already
 * parks every vCPU and I/O thread (finish-migrate on the source,
 * inmigrate on the destination), the source's device images are
 * captured on the main thread before the thread starts, and the
 * destination's images are committed on the main thread after it ends.
 * So the thread never registers with the pause, and stop, reset and exit
 * never wait for it.  Status changes, and so the events, all happen on
 * the main thread: the thread posts its end there.
 */
#include "migration/migration.h"
#include "migration/channel.h"
#include "migration/savevm.h"
#include "qemu/main-loop.h"
#include "qemu/option.h"
#include "qemu/runstate.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct Notifier {
    MigrationNotifier fn;
    void *opaque;
} Notifier;

static const char *const status_names[] = {
    "none", "setup", "active", "completed", "failed", "cancelling",
    "cancelled",
};

/* One stream on its thread.  The main thread creates it, may cancel its
 * file, and frees it after the join; the thread alone does the I/O and
 * closes the channel. */
typedef struct MigrationJob {
    GThread *thread;
    bool outgoing;
    QEMUFile *f;
    MigrationChannel *ch;
    SaveVMImages *images;       /* source: the devices, captured stopped */
    bool ok;                    /* the thread's result, */
    GError *err;                /* before done */
    bool done;                  /* atomic */
} MigrationJob;

static struct {
    GuestRam *ram;
    const char *machine_type;
    MigrationStatus status;
    char *error;
    RamStats ram_stats;         /* the source thread counts, atomically */
    uint64_t transferred;       /* once the job is over */
    int64_t start_us, total_ms;
    MigrationJob *job;          /* a stream in progress */
    RunState vm_old_state;      /* source: the run state to go back to */
    /* Destination. */
    bool deferred;              /* -incoming defer, not yet given a URI */
    bool exit_on_error;         /* -incoming URI: a refused stream ends
                                   the run, as in QEMU */
    GError *fatal;              /* why it ended, for main() */
    bool autostart;
    char *incoming_uri;
    MigrationChannel *incoming;
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
        mig.ram_stats = (RamStats){ 0 };
        mig.transferred = 0;
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

/* The thread's end, on the main thread. */

static void outgoing_finished(bool ok, GError *err);
static void incoming_finished(bool ok, GError *err);

static void finish_job(void)
{
    MigrationJob *job = g_steal_pointer(&mig.job);

    g_thread_join(job->thread);
    mig.transferred = qemu_file_io_bytes(job->f);
    qemu_file_free(job->f);
    qemu_savevm_images_free(job->images);
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

static void start_job(const char *name, bool outgoing, MigrationChannel *ch,
                      SaveVMImages *images, GThreadFunc fn)
{
    MigrationJob *job = g_new0(MigrationJob, 1);
    int fd = migration_channel_fd(ch);

    job->outgoing = outgoing;
    job->ch = ch;
    job->images = images;
    job->f = outgoing ? qemu_file_new_output(fd) : qemu_file_new_input(fd);
    mig.job = job;
    job->thread = g_thread_new(name, fn, job);
}

/* Destination. */

static gpointer incoming_thread(gpointer opaque)
{
    MigrationJob *job = opaque;
    GError *err = NULL;
    bool ok = qemu_loadvm_read(job->f, mig.machine_type, mig.ram, &err);

    ok = migration_channel_close(job->ch, ok ? &err : NULL) && ok;
    job->ch = NULL;
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
    start_job("mig/dst", false, ch, NULL, incoming_thread);
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
    return listen_incoming(uri, errp);
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

static gpointer outgoing_thread(gpointer opaque)
{
    MigrationJob *job = opaque;
    GError *err = NULL;
    bool ok = qemu_savevm_write(job->f, mig.machine_type, mig.ram,
                                job->images, &mig.ram_stats, &err);

    ok = qemu_file_finish(job->f, ok ? &err : NULL) && ok;
    ok = migration_channel_close(job->ch, ok ? &err : NULL) && ok;
    job->ch = NULL;
    job_end(job, ok, err);
    return NULL;
}

/* A stream written to its end completes even if a cancel came too late
 * to stop it: the destination has it all and may run. */
static void outgoing_finished(bool ok, GError *err)
{
    bool stopped = runstate_get() == RUN_STATE_FINISH_MIGRATE;

    if (ok) {
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
        return;                 /* the run is ending */
    }
    if (mig.vm_old_state == RUN_STATE_RUNNING) {
        runstate_set(RUN_STATE_PAUSED);
        vm_start();
    } else {
        runstate_set(mig.vm_old_state);
    }
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
    ch = migration_channel_open_outgoing(uri, errp);
    if (!ch) {
        return false;
    }
    set_status(MIGRATION_STATUS_SETUP);
    /* Stopped, frames are dropped before they touch guest memory; the
     * devices' locks make sure no batch is half delivered when captured.
     * finish-migrate keeps cont away until the stream is done. */
    mig.vm_old_state = runstate_get();
    vm_stop();
    runstate_set(RUN_STATE_FINISH_MIGRATE);
    set_status(MIGRATION_STATUS_ACTIVE);
    start_job("mig/src", true, ch, qemu_savevm_capture(), outgoing_thread);
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

JsonObject *migration_query(void)
{
    JsonObject *info = json_object_new(), *ram;
    JsonArray *addrs;

    if (mig.status == MIGRATION_STATUS_NONE) {
        return info;
    }
    json_object_set_string_member(info, "status", status_names[mig.status]);
    if (mig.status == MIGRATION_STATUS_FAILED) {
        json_object_set_string_member(info, "error-desc", mig.error);
    }
    if (mig.status == MIGRATION_STATUS_COMPLETED ||
        mig.status == MIGRATION_STATUS_FAILED ||
        mig.status == MIGRATION_STATUS_CANCELLED) {
        json_object_set_int_member(info, "total-time", mig.total_ms);
    }
    if ((addrs = migration_channel_socket_addresses(mig.incoming))) {
        json_object_set_array_member(info, "socket-address", addrs);
    }
    ram = json_object_new();
    json_object_set_int_member(ram, "transferred", mig.job
                               ? qemu_file_io_bytes(mig.job->f)
                               : mig.transferred);
    json_object_set_int_member(ram, "total",
                               read_count(&mig.ram_stats.total));
    json_object_set_int_member(ram, "normal",
                               read_count(&mig.ram_stats.normal));
    json_object_set_int_member(ram, "duplicate",
                               read_count(&mig.ram_stats.duplicate));
    json_object_set_int_member(ram, "page-size", MIGRATION_PAGE_SIZE);
    json_object_set_object_member(info, "ram", ram);
    return info;
}

GError *migration_take_fatal_error(void)
{
    return g_steal_pointer(&mig.fatal);
}

void migration_cleanup(void)
{
    migration_channel_close(mig.incoming, NULL);
    mig.incoming = NULL;
    g_clear_pointer(&mig.incoming_uri, g_free);
    g_clear_pointer(&mig.error, g_free);
}
