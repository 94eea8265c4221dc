/*
 * The migration state machine and QEMU's statuses, each change announced
 * to notifiers (the monitor makes them MIGRATION events).  Both ends
 * move the whole stream in one step on the main loop: the source with
 * its machine stopped (so no frame touches guest memory while the stream
 * is written), the destination before its machine first runs.
 */
#include "migration/migration.h"
#include "migration/channel.h"
#include "migration/savevm.h"
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
    "none", "setup", "active", "completed", "failed",
};

static struct {
    GuestRam *ram;
    const char *machine_type;
    MigrationStatus status;
    char *error;
    RamStats ram_stats;
    uint64_t transferred;
    int64_t start_us, total_ms;
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
        status == MIGRATION_STATUS_FAILED) {
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

/* Destination. */

static void load_incoming(MigrationChannel *ch, void *opaque)
{
    QEMUFile *f = qemu_file_new_input(migration_channel_fd(ch));
    g_autoptr(GError) err = NULL;
    bool ok;

    (void)opaque;
    set_status(MIGRATION_STATUS_ACTIVE);
    ok = qemu_loadvm_state(f, mig.machine_type, mig.ram, &err);
    mig.transferred = qemu_file_transferred(f);
    qemu_file_close(f, NULL);
    mig.incoming = NULL;
    migration_channel_close(ch, ok ? &err : NULL);
    if (!ok || err) {
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
    runstate_set(RUN_STATE_PAUSED);
    if (mig.autostart) {
        vm_start();
    }
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

bool migration_outgoing(const char *uri, GError **errp)
{
    MigrationChannel *ch;
    QEMUFile *f;
    g_autoptr(GError) err = NULL;
    bool was_running = runstate_is_running(), ok;

    if (runstate_get() == RUN_STATE_INMIGRATE) {
        g_set_error(errp, ILLAN_ERROR, 0, "Guest is waiting for an incoming "
                    "migration");
        return false;
    }
    ch = migration_channel_open_outgoing(uri, errp);
    if (!ch) {
        return false;
    }
    set_status(MIGRATION_STATUS_SETUP);
    /* Stopped, frames are dropped before they touch guest memory; the
     * devices' locks make sure no batch is half delivered when saved. */
    vm_stop();
    set_status(MIGRATION_STATUS_ACTIVE);
    f = qemu_file_new_output(migration_channel_fd(ch));
    ok = qemu_savevm_state(f, mig.machine_type, mig.ram, &mig.ram_stats,
                           &err);
    mig.transferred = qemu_file_transferred(f);
    ok = qemu_file_close(f, ok ? &err : NULL) && ok;
    ok = migration_channel_close(ch, ok ? &err : NULL) && ok;
    if (!ok) {
        fail(err);
        if (was_running) {
            vm_start();
        }
        return true;
    }
    set_status(MIGRATION_STATUS_COMPLETED);
    runstate_set(RUN_STATE_POSTMIGRATE);
    return true;
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
        mig.status == MIGRATION_STATUS_FAILED) {
        json_object_set_int_member(info, "total-time", mig.total_ms);
    }
    if ((addrs = migration_channel_socket_addresses(mig.incoming))) {
        json_object_set_array_member(info, "socket-address", addrs);
    }
    ram = json_object_new();
    json_object_set_int_member(ram, "transferred", mig.transferred);
    json_object_set_int_member(ram, "total", mig.ram_stats.total);
    json_object_set_int_member(ram, "normal", mig.ram_stats.normal);
    json_object_set_int_member(ram, "duplicate", mig.ram_stats.duplicate);
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
