/*
 * What QMP may change while the machine does not run.  A built-in guest
 * (-guest ibmveth) acts, with x-guest-set-mac and x-guest-set-mtu, only
 * while the machine runs: in prelaunch, paused, inmigrate, finish-migrate
 * and postmigrate it is refused.  system_reset is refused in
 * finish-migrate, where the device state has been captured and the last
 * pages are still being sent, and allowed while paused and in
 * postmigrate, as in QEMU.  finish-migrate is held by an exec: command
 * that keeps running after it read the whole stream.
 */
#include "migration-helpers.h"

#include <string.h>

#define GUEST       "-guest ibmveth,id=g0,dev=net0,fwd=macswap"
#define SET_MAC     "{'execute': 'x-guest-set-mac', 'arguments': " \
                    "{'id': 'g0', 'mac': '52:54:00:ab:cd:02'}}"
#define SET_MTU     "{'execute': 'x-guest-set-mtu', 'arguments': " \
                    "{'id': 'g0', 'mtu': 9000}}"
#define RESET       "{'execute': 'system_reset'}"

/* An illan with the built-in guest on its spapr-vlan, and @extra. */
static QTestState *start(Rig *r, const char *extra)
{
    g_autofree char *args = g_strdup_printf("%s %s", GUEST, extra);

    return qrig_spawn(&r->base, &(QRigOpts){
        .mem = "64M", .nic = ",id=net0", .extra = args });
}

static void assert_refused(QTestState *qts, const char *cmd,
                           const char *desc)
{
    g_autoptr(JsonObject) rsp = qtest_qmp(qts, "%s", cmd);

    if (!json_object_has_member(rsp, "error")) {
        g_error("%s succeeded; it must be refused with '%s'", cmd, desc);
    }
    g_assert_cmpstr(json_object_get_string_member(
                        json_object_get_object_member(rsp, "error"), "desc"),
                    ==, desc);
}

/* Both guest commands are refused, naming the run state @status. */
static void assert_guest_refused(QTestState *qts, const char *status)
{
    g_autofree char *mac = g_strdup_printf(
        "guest 'g0' is not running (status: %s): x-guest-set-mac acts only "
        "while the machine runs", status);
    g_autofree char *mtu = g_strdup_printf(
        "guest 'g0' is not running (status: %s): x-guest-set-mtu acts only "
        "while the machine runs", status);
    g_autofree char *state = run_state(qts);

    g_assert_cmpstr(state, ==, status);
    assert_refused(qts, SET_MAC, mac);
    assert_refused(qts, SET_MTU, mtu);
}

static void assert_guest_acts(QTestState *qts)
{
    json_object_unref(qmp_ok(qts, SET_MAC));
    json_object_unref(qmp_ok(qts, SET_MTU));
}

/* prelaunch (-S), then running, paused (where system_reset is allowed),
 * running again, postmigrate (system_reset allowed too). */
static void test_source_states(void)
{
    Rig r;
    g_autofree char *file = NULL, *uri = NULL;

    rig_init(&r);
    file = rig_path(&r, "stream");
    uri = g_strdup_printf("file:%s", file);
    r.src = start(&r, "-S");
    assert_guest_refused(r.src, "prelaunch");
    json_object_unref(qmp_ok(r.src, "{'execute': 'cont'}"));
    assert_guest_acts(r.src);
    json_object_unref(qmp_ok(r.src, "{'execute': 'stop'}"));
    assert_guest_refused(r.src, "paused");
    json_object_unref(qmp_ok(r.src, RESET));
    json_object_unref(qmp_ok(r.src, "{'execute': 'cont'}"));
    assert_guest_acts(r.src);
    migrate(r.src, uri);
    assert_guest_refused(r.src, "postmigrate");
    json_object_unref(qmp_ok(r.src, RESET));
    qtest_quit(r.src);
    rig_free(&r);
}

/* A destination waiting for its stream. */
static void test_inmigrate(void)
{
    Rig r;

    rig_init(&r);
    r.dst = start(&r, "-incoming defer");
    assert_guest_refused(r.dst, "inmigrate");
    qtest_quit(r.dst);
    rig_free(&r);
}

/* Stopped for the switchover, all three are refused; once cancelled and
 * running again, the guest acts and the reset goes through. */
static void test_finish_migrate(void)
{
    Rig r;
    g_autofree char *file = NULL, *uri = NULL;

    rig_init(&r);
    file = rig_path(&r, "stream");
    uri = g_strdup_printf("exec:cat > %s; exec sleep 60", file);
    r.src = start(&r, "");
    migrate_start(r.src, uri);
    wait_whole_stream(r.src, file);
    assert_guest_refused(r.src, "finish-migrate");
    assert_refused(r.src, RESET, "Migration is not finalized yet: retry "
                   "system_reset once query-migrate says completed, failed "
                   "or cancelled");
    json_object_unref(qmp_ok(r.src, "{'execute': 'migrate_cancel'}"));
    wait_migration_status(r.src, "cancelled");
    assert_guest_acts(r.src);
    json_object_unref(qmp_ok(r.src, RESET));
    qtest_quit(r.src);
    rig_free(&r);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/migration/stopped/source-states", test_source_states);
    g_test_add_func("/migration/stopped/inmigrate", test_inmigrate);
    g_test_add_func("/migration/stopped/finish-migrate",
                    test_finish_migrate);
    return g_test_run();
}
