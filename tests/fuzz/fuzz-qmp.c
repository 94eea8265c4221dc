/*
 * The QMP monitor fed an input as one client's byte stream, over a real
 * socket pair: the JSON stream splitter, the parser, the envelope and
 * argument checks and every command's dispatcher, against a fresh
 * machine with spapr-vlan.  Commands that would reach outside the process
 * are unregistered first (they answer CommandNotFound): quit, pmemsave
 * and migrate write or end things, migrate-incoming, netdev_add and
 * blockdev-add open files, sockets or programs the input names.  After each input the
 * client is gone and everything it changed is put back: the machine, the
 * net registry, migration's capabilities and parameters, user objects,
 * self-announce's timers, the run state.
 */
#include "fuzz-machine.h"
#include "migration/migration.h"
#include "migration/options.h"
#include "monitor/qmp.h"
#include "net/announce.h"
#include "qemu/qmp-registry.h"
#include "qemu/runstate.h"
#include "hw/user-object.h"

#include <errno.h>
#include <glib-unix.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

static const char *const out_of_reach[] = {
    "quit", "pmemsave", "migrate", "migrate-incoming", "netdev_add",
    "blockdev-add",
};

static JsonArray *default_caps;
static JsonObject *default_params;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    for (size_t i = 0; i < G_N_ELEMENTS(out_of_reach); i++) {
        qmp_unregister_command(out_of_reach[i]);
    }
    default_caps = migrate_capabilities_query();
    default_params = migrate_parameters_query();
    return 0;
}

static void collect_id(UserObject *obj, void *opaque)
{
    g_ptr_array_add(opaque, g_strdup(obj->id));
}

/* object-del for each object the input added. */
static void delete_user_objects(void)
{
    g_autoptr(GPtrArray) ids = g_ptr_array_new_with_free_func(g_free);
    const QmpCommand *del = qmp_find_command("object-del");

    user_object_foreach(collect_id, ids);
    for (guint i = 0; i < ids->len; i++) {
        g_autoptr(JsonObject) args = json_object_new();
        QmpError err = { 0 };
        JsonNode *ret;

        json_object_set_string_member(args, "id", ids->pdata[i]);
        ret = del->fn(args, &err);
        fuzz_check(ret != NULL, "object-del of an object that exists");
        json_node_unref(ret);
    }
}

static gboolean reply_ready(gint fd, GIOCondition cond, gpointer opaque)
{
    (void)fd, (void)cond, (void)opaque;
    return G_SOURCE_CONTINUE;
}

/* Writes what the socket takes, reads and drops the replies, and runs
 * the commands the monitor thread hands the main loop, until the monitor
 * has hung up.  Once all is sent, the loop sleeps until a command or a
 * reply comes, so that the monitor thread has the CPU. */
static void converse(int fd, const uint8_t *data, size_t size)
{
    guint watch = g_unix_fd_add(fd, G_IO_IN | G_IO_HUP | G_IO_ERR,
                                reply_ready, NULL);
    size_t sent = 0;
    char buf[65536];

    for (;;) {
        ssize_t n;

        if (sent < size) {
            n = send(fd, data + sent, size - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
            sent += n > 0 ? (size_t)n : 0;
            if (sent == size) {
                shutdown(fd, SHUT_WR);
            }
        }
        g_main_context_iteration(NULL, sent == size);
        n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
            g_source_remove(watch);
            return;
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FuzzMachine m;
    int fds[2];

    fuzz_machine_init(&m, "pseries", 16ULL << 20, true, NULL, NULL);
    spapr_machine_set_current(m.spapr);
    migration_set_machine(spapr_ram(m.spapr), spapr_machine_type(m.spapr));
    qmp_events_subscribe();
    fuzz_check(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0,
               "socketpair");
    fuzz_check(qmp_attach_fd(fds[0], NULL), "attach");
    if (size == 0) {
        shutdown(fds[1], SHUT_WR);
    }
    converse(fds[1], data, size);
    close(fds[1]);
    qmp_cleanup();
    qmp_events_unsubscribe();
    announce_cleanup();
    delete_user_objects();
    fuzz_check(migrate_capabilities_set(default_caps, NULL) &&
               migrate_parameters_set(default_params, NULL),
               "migration's defaults back");
    migration_set_machine(NULL, NULL);
    spapr_machine_set_current(NULL);
    fuzz_machine_free(&m);
    /* What the commands queued for the main loop, with nothing left to
     * act on, so that it cannot reach the next input. */
    while (g_main_context_iteration(NULL, FALSE)) {
    }
    return 0;
}
