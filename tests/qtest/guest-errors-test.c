/*
 * -d guest_errors: every hcall refused for the guest's mistake writes one
 * line to the -D file naming the hcall, the argument and the rule; no
 * line without -d; HMP "log" turns the item on and off in a running
 * illan.
 */
#include "hw/ppc/hcall.h"
#include "libqos/trace-log.h"
#include "libqtest.h"

#define UNIT        0x71000000ULL
#define BD_VALID    0x8000000000000000ULL
#define BD(len, addr) (BD_VALID | (uint64_t)(len) << 32 | (addr))

/* Guest layout: I/O addresses equal guest-physical ones. */
#define BUF_LIST    0x100000ULL
#define FILTER      0x101000ULL
#define RXQ         0x102000ULL
#define RXQ_LEN     0x1000
#define BUFS        0x200000ULL
#define UNMAPPED    0x800000ULL
#define READ_ONLY   0x900000ULL
#define GOOD_MAC    0x525400123456ULL

/* What the adapter has been through before the refused call. */
typedef enum Setup {
    CLOSED,
    OPEN,
    OPEN_BUF_LIST_UNMAPPED,     /* registered, then its page unmapped */
} Setup;

typedef struct Refusal {
    const char *name;
    const char *device_opts;
    Setup setup;
    uint64_t opcode;
    unsigned nargs;
    uint64_t args[9];
    int64_t ret;
    const char *line;   /* NULL: a refusal that is no guest mistake */
} Refusal;

static const Refusal refusals[] = {
    { "put-tce-liobn", "", CLOSED, H_PUT_TCE, 3, { 0x1234, 0, 3 },
      H_PARAMETER, "h_put_tce: liobn 0x1234 names no TCE table" },
    { "put-tce-ioba", "", CLOSED, H_PUT_TCE, 3, { UNIT, 0x10000000, 3 },
      H_PARAMETER, "h_put_tce: ioba 0x10000000 is outside the window of "
      "liobn 0x71000000 (0x10000000 bytes)" },
    { "get-tce-ioba", "", CLOSED, H_GET_TCE, 2, { UNIT, 0x10000000 },
      H_PARAMETER, "h_get_tce: ioba 0x10000000 is outside the window of "
      "liobn 0x71000000 (0x10000000 bytes)" },
    { "stuff-tce-npages", "", CLOSED, H_STUFF_TCE, 4, { UNIT, 0, 0, 0x10001 },
      H_PARAMETER, "h_stuff_tce: npages 65537 is more than the 65536 "
      "entries of liobn 0x71000000" },
    { "stuff-tce-none", "", CLOSED, H_STUFF_TCE, 4, { UNIT, 0, 0, 0 },
      H_PARAMETER, "h_stuff_tce: npages 0: no entry to put" },
    { "put-tce-indirect-none", "", CLOSED, H_PUT_TCE_INDIRECT, 4,
      { UNIT, 0, BUF_LIST, 0 }, H_PARAMETER, "h_put_tce_indirect: npages 0: "
      "no entry to put" },
    { "stuff-tce-ioba", "", CLOSED, H_STUFF_TCE, 4,
      { UNIT, 0xFFFF000, 0, 2 }, H_PARAMETER, "h_stuff_tce: ioba "
      "0x10000000 is outside the window of liobn 0x71000000 (0x10000000 "
      "bytes)" },
    { "put-tce-indirect-npages", "", CLOSED, H_PUT_TCE_INDIRECT, 4,
      { UNIT, 0, BUF_LIST, 513 }, H_PARAMETER, "h_put_tce_indirect: npages "
      "513 is more than the 512 entries of one list page" },
    { "put-tce-indirect-align", "", CLOSED, H_PUT_TCE_INDIRECT, 4,
      { UNIT, 0, BUF_LIST + 8, 1 }, H_PARAMETER, "h_put_tce_indirect: "
      "tce_list 0x100008 is not 4 KiB aligned" },
    { "put-tce-indirect-ram", "", CLOSED, H_PUT_TCE_INDIRECT, 4,
      { UNIT, 0, 0x100000000ULL, 1 }, H_PARAMETER, "h_put_tce_indirect: "
      "tce_list 0x100000000 entry 0 is outside guest RAM" },
    { "put-tce-indirect-ioba", "", CLOSED, H_PUT_TCE_INDIRECT, 4,
      { UNIT, 0x10000000, BUF_LIST, 1 }, H_PARAMETER, "h_put_tce_indirect: "
      "ioba 0x10000000 is outside the window of liobn 0x71000000 "
      "(0x10000000 bytes)" },
    { "vio-signal-unit", "", CLOSED, H_VIO_SIGNAL, 2, { UNIT + 1, 1 },
      H_PARAMETER, "h_vio_signal: unit 0x71000001 does not exist" },
    { "vio-signal-mode", "", CLOSED, H_VIO_SIGNAL, 2, { UNIT, 2 },
      H_PARAMETER, "h_vio_signal: mode 0x2 sets bits outside the unit's "
      "mask 0x1" },
    { "register-unit", "", CLOSED, H_REGISTER_LOGICAL_LAN, 5,
      { UNIT + 1, BUF_LIST, BD(RXQ_LEN, RXQ), FILTER, GOOD_MAC },
      H_PARAMETER, "h_register_logical_lan: unit 0x71000001 is not a "
      "logical LAN" },
    { "register-twice", "", OPEN, H_REGISTER_LOGICAL_LAN, 5,
      { UNIT, BUF_LIST, BD(RXQ_LEN, RXQ), FILTER, GOOD_MAC },
      H_RESOURCE, "h_register_logical_lan: unit 0x71000000 is already "
      "registered (h_free_logical_lan first)" },
    { "register-mac", "", CLOSED, H_REGISTER_LOGICAL_LAN, 5,
      { UNIT, BUF_LIST, BD(RXQ_LEN, RXQ), FILTER, 0x010000000001ULL },
      H_PARAMETER, "h_register_logical_lan: mac 0x10000000001 is not a "
      "48-bit unicast MAC other than 0" },
    { "register-buf-list-align", "", CLOSED, H_REGISTER_LOGICAL_LAN, 5,
      { UNIT, BUF_LIST + 1, BD(RXQ_LEN, RXQ), FILTER, GOOD_MAC },
      H_PARAMETER, "h_register_logical_lan: buf_list 0x100001 is not 4 KiB "
      "aligned" },
    { "register-buf-list-4g", "", CLOSED, H_REGISTER_LOGICAL_LAN, 5,
      { UNIT, 0x100000000ULL, BD(RXQ_LEN, RXQ), FILTER, GOOD_MAC },
      H_PARAMETER, "h_register_logical_lan: buf_list 0x100000000 is above "
      "4 GiB" },
    { "register-buf-list-unmapped", "", CLOSED, H_REGISTER_LOGICAL_LAN, 5,
      { UNIT, UNMAPPED, BD(RXQ_LEN, RXQ), FILTER, GOOD_MAC },
      H_PARAMETER, "h_register_logical_lan: buf_list 0x800000 is not mapped "
      "for read and write" },
    { "register-filter-read-only", "", CLOSED, H_REGISTER_LOGICAL_LAN, 5,
      { UNIT, BUF_LIST, BD(RXQ_LEN, RXQ), READ_ONLY, GOOD_MAC },
      H_PARAMETER, "h_register_logical_lan: filter_list 0x900000 is not "
      "mapped for read and write" },
    { "register-rxq-valid", "", CLOSED, H_REGISTER_LOGICAL_LAN, 5,
      { UNIT, BUF_LIST, (uint64_t)RXQ_LEN << 32 | RXQ, FILTER, GOOD_MAC },
      H_PARAMETER, "h_register_logical_lan: rec_queue 0x100000102000 lacks "
      "the VALID bit" },
    { "register-rxq-align", "", CLOSED, H_REGISTER_LOGICAL_LAN, 5,
      { UNIT, BUF_LIST, BD(RXQ_LEN, RXQ + 8), FILTER, GOOD_MAC },
      H_PARAMETER, "h_register_logical_lan: rec_queue 0x8000100000102008: "
      "address 0x102008 or length 4096 is not a multiple of 16" },
    { "register-rxq-length", "", CLOSED, H_REGISTER_LOGICAL_LAN, 5,
      { UNIT, BUF_LIST, BD(0, RXQ), FILTER, GOOD_MAC },
      H_PARAMETER, "h_register_logical_lan: rec_queue 0x8000000000102000: "
      "length 0 is below the minimum of 16" },
    { "register-rxq-unmapped", "", CLOSED, H_REGISTER_LOGICAL_LAN, 5,
      { UNIT, BUF_LIST, BD(RXQ_LEN, UNMAPPED), FILTER, GOOD_MAC },
      H_PARAMETER, "h_register_logical_lan: rec_queue 0x8000100000800000: "
      "4096 bytes at 0x800000 are not mapped for read and write" },
    { "free-closed", "", CLOSED, H_FREE_LOGICAL_LAN, 1, { UNIT },
      H_RESOURCE, "h_free_logical_lan: unit 0x71000000 is not registered "
      "(h_register_logical_lan first)" },
    { "free-unit", "", CLOSED, H_FREE_LOGICAL_LAN, 1, { UNIT + 1 },
      H_PARAMETER, "h_free_logical_lan: unit 0x71000001 is not a logical "
      "LAN" },
    { "add-buffer-length", "", OPEN, H_ADD_LOGICAL_LAN_BUFFER, 2,
      { UNIT, BD(8, BUFS) }, H_PARAMETER, "h_add_logical_lan_buffer: buffer "
      "0x8000000800200000: length 8 is below the minimum of 16" },
    { "add-buffer-align", "", OPEN, H_ADD_LOGICAL_LAN_BUFFER, 2,
      { UNIT, BD(64, BUFS + 2) }, H_PARAMETER, "h_add_logical_lan_buffer: "
      "buffer 0x8000004000200002: address 0x200002 or length 64 is not a "
      "multiple of 4" },
    { "add-buffer-unmapped", "", OPEN, H_ADD_LOGICAL_LAN_BUFFER, 2,
      { UNIT, BD(64, UNMAPPED) }, H_PARAMETER, "h_add_logical_lan_buffer: "
      "buffer 0x8000004000800000: 64 bytes at 0x800000 are not mapped for "
      "read and write" },
    { "add-buffer-closed", "", CLOSED, H_ADD_LOGICAL_LAN_BUFFER, 2,
      { UNIT, BD(64, BUFS) }, H_RESOURCE, "h_add_logical_lan_buffer: unit "
      "0x71000000 is not registered (h_register_logical_lan first)" },
    { "add-buffer-page-unmapped", ",use-rx-buffer-pools=off",
      OPEN_BUF_LIST_UNMAPPED, H_ADD_LOGICAL_LAN_BUFFER, 2,
      { UNIT, BD(64, BUFS) }, H_PARAMETER, "h_add_logical_lan_buffer: "
      "buf_list 0x100000 is no longer mapped for read and write" },
    { "add-buffers-length", "", OPEN, H_ADD_LOGICAL_LAN_BUFFERS, 9,
      { UNIT, BD(64, BUFS), BD(12, BUFS + 64) }, H_PARAMETER,
      "h_add_logical_lan_buffers: buffer 0x8000000c00200040: length 12 is "
      "below the minimum of 16" },
    { "add-buffers-closed", "", CLOSED, H_ADD_LOGICAL_LAN_BUFFERS, 9,
      { UNIT, BD(64, BUFS) }, H_RESOURCE, "h_add_logical_lan_buffers: unit "
      "0x71000000 is not registered (h_register_logical_lan first)" },
    { "add-buffers-page-unmapped", ",use-rx-buffer-pools=off",
      OPEN_BUF_LIST_UNMAPPED, H_ADD_LOGICAL_LAN_BUFFERS, 9,
      { UNIT, BD(64, BUFS) }, H_PARAMETER, "h_add_logical_lan_buffers: "
      "buf_list 0x100000 is no longer mapped for read and write" },
    { "add-buffers-unit", "", CLOSED, H_ADD_LOGICAL_LAN_BUFFERS, 9,
      { UNIT + 1, BD(64, BUFS) }, H_PARAMETER, "h_add_logical_lan_buffers: "
      "unit 0x71000001 is not a logical LAN" },
    { "send-unit", "", OPEN, H_SEND_LOGICAL_LAN, 9, { UNIT + 1, BD(64, BUFS) },
      H_PARAMETER, "h_send_logical_lan: unit 0x71000001 is not a logical "
      "LAN" },
    { "send-closed", "", CLOSED, H_SEND_LOGICAL_LAN, 9, { UNIT, BD(64, BUFS) },
      H_DROPPED, "h_send_logical_lan: unit 0x71000000 is not registered "
      "(h_register_logical_lan first)" },
    { "send-continuation", "", OPEN, H_SEND_LOGICAL_LAN, 9,
      { UNIT, BD(64, BUFS), 0, 0, 0, 0, 0, 7 }, H_HARDWARE,
      "h_send_logical_lan: continuation token 0x7 continues no call" },
    { "send-too-long", "", OPEN, H_SEND_LOGICAL_LAN, 9,
      { UNIT, BD(0x8000, BUFS), BD(0x8001, BUFS) }, H_RESOURCE,
      "h_send_logical_lan: the descriptors hold 65537 bytes, more than the "
      "maximum frame of 65536" },
    { "send-unmapped", "", OPEN, H_SEND_LOGICAL_LAN, 9,
      { UNIT, BD(64, BUFS), BD(64, UNMAPPED) }, H_DEST_PARM,
      "h_send_logical_lan: descriptor 1 0x8000004000800000 is not mapped "
      "for reading" },
    { "multicast-flags", "", OPEN, H_MULTICAST_CTRL, 3,
      { UNIT, 0x100000004ULL, 0 }, H_PARAMETER, "h_multicast_ctrl: flags "
      "0x100000004 set unknown bits 0x100000004" },
    { "multicast-unicast", "", OPEN, H_MULTICAST_CTRL, 3,
      { UNIT, 1, 0x525400000001ULL }, H_PARAMETER, "h_multicast_ctrl: "
      "address 0x525400000001 is not a 48-bit multicast MAC" },
    { "multicast-remove-absent", "", OPEN, H_MULTICAST_CTRL, 3,
      { UNIT, 2, 0x01005E000001ULL }, H_NOT_FOUND, "h_multicast_ctrl: "
      "address 0x1005e000001 to remove is not in the filter table" },
    { "multicast-unit", "", OPEN, H_MULTICAST_CTRL, 3, { UNIT + 1, 0, 0 },
      H_PARAMETER, "h_multicast_ctrl: unit 0x71000001 is not a logical "
      "LAN" },
    { "change-mac", "", OPEN, H_CHANGE_LOGICAL_LAN_MAC, 2, { UNIT, 0 },
      H_PARAMETER, "h_change_logical_lan_mac: mac 0x0 is not a 48-bit "
      "unicast MAC other than 0" },
    { "change-mac-multicast", "", OPEN, H_CHANGE_LOGICAL_LAN_MAC, 2,
      { UNIT, 0x01005E000001ULL }, H_PARAMETER, "h_change_logical_lan_mac: "
      "mac 0x1005e000001 is not a 48-bit unicast MAC other than 0" },
    /* Well formed, declined by the device: no guest mistake, no line. */
    { "attributes-fixed", "", CLOSED, H_ILLAN_ATTRIBUTES, 3, { UNIT, 0, 1 },
      H_CONSTRAINED, NULL },
    { "attributes-unit", "", CLOSED, H_ILLAN_ATTRIBUTES, 3,
      { UNIT + 1, 0, 0 }, H_PARAMETER, "h_illan_attributes: unit 0x71000001 "
      "is not a logical LAN" },
};

/* A log file of its own (libqos/trace-log) and the options writing to
 * it: @d_opts, then -D. */
static char *log_start(TraceLog *l, const char *d_opts)
{
    trace_log_init(l);
    return g_strdup_printf("%s-D %s", d_opts, l->path);
}

static QTestState *start(const char *device_opts, const char *log_opts)
{
    QTestState *qts = qtest_initf("-nodefaults -device spapr-vlan%s %s",
                                  device_opts, log_opts);

    qtest_tce_map(qts, UNIT, BUF_LIST, BUF_LIST, 0x3000, 3);
    qtest_tce_map(qts, UNIT, BUFS, BUFS, 0x100000, 3);
    qtest_tce_map(qts, UNIT, READ_ONLY, READ_ONLY, 0x2000, 1);
    return qts;
}

static void set_up(QTestState *qts, Setup setup)
{
    if (setup == CLOSED) {
        return;
    }
    g_assert_cmpint(qtest_hcallv(qts, H_REGISTER_LOGICAL_LAN, UNIT, BUF_LIST,
                                 BD(RXQ_LEN, RXQ), FILTER, GOOD_MAC), ==,
                    H_SUCCESS);
    if (setup == OPEN_BUF_LIST_UNMAPPED) {
        g_assert_cmpint(qtest_hcallv(qts, H_PUT_TCE, UNIT, BUF_LIST, 0), ==,
                        H_SUCCESS);
    }
}

static void run_refusal(QTestState *qts, const Refusal *r)
{
    set_up(qts, r->setup);
    g_assert_cmpint(qtest_hcall(qts, r->opcode, r->nargs, r->args, NULL, 0),
                    ==, r->ret);
}

/* Each refusal, on an illan of its own: exactly its one line, or none. */
static void test_refusal(gconstpointer data)
{
    const Refusal *r = data;
    TraceLog l;
    g_autofree char *opts = log_start(&l, "-d guest_errors ");
    g_autofree char *want = r->line ? g_strdup_printf("%s\n", r->line)
                                    : g_strdup("");
    QTestState *qts = start(r->device_opts, opts);
    g_autofree char *setup_text = trace_log_read(&l);
    g_autofree char *text = NULL;

    g_assert_cmpstr(setup_text, ==, "");
    run_refusal(qts, r);
    text = trace_log_read(&l);
    g_assert_cmpstr(text, ==, want);
    qtest_quit(qts);
    trace_log_free(&l);
}

/* Off by default: the same mistakes, with -D but no -d, write nothing. */
static void test_off_by_default(void)
{
    TraceLog l;
    g_autofree char *opts = log_start(&l, "");

    for (size_t i = 0; i < G_N_ELEMENTS(refusals); i++) {
        QTestState *qts = start(refusals[i].device_opts, opts);
        g_autofree char *text = NULL;

        run_refusal(qts, &refusals[i]);
        qtest_quit(qts);
        text = trace_log_read(&l);
        g_assert_cmpstr(text, ==, "");
    }
    trace_log_free(&l);
}

static char *hmp(QTestState *qts, const char *line)
{
    g_autoptr(JsonObject) rsp = qtest_qmp(qts, "{'execute': "
                                          "'human-monitor-command', "
                                          "'arguments': {'command-line': "
                                          "'%s'}}", line);

    g_assert_true(json_object_has_member(rsp, "return"));
    return g_strdup(json_object_get_string_member(rsp, "return"));
}

static void change_mac_to_zero(QTestState *qts)
{
    g_assert_cmpint(qtest_hcallv(qts, H_CHANGE_LOGICAL_LAN_MAC, UNIT, 0),
                    ==, H_PARAMETER);
}

/* What QEMU's HMP prints for "help log" and for a bad item, with
 * illan's items. */
#define LOG_ITEMS \
    "Log items (comma separated):\r\n" \
    "none            remove all logs\r\n" \
    "guest_errors    log when the guest does something invalid (an hcall " \
    "refused for the guest's mistake: its name, the argument and the " \
    "rule)\r\n" \
    "trace:PATTERN   enable trace events\r\n" \
    "\r\n" \
    "Use \"log trace:help\" to get a list of trace events.\r\n" \
    "\r\n"

/* HMP "log guest_errors" turns the item on in a running illan, "log
 * none" off; a bad item prints QEMU's list of the items and changes
 * nothing. */
static void test_hmp_log(void)
{
    static const char line[] = "h_change_logical_lan_mac: mac 0x0 is not a "
                               "48-bit unicast MAC other than 0\n";
    TraceLog l;
    g_autofree char *opts = log_start(&l, "");
    QTestState *qts = start("", opts);
    g_autofree char *bad = NULL, *missing = NULL, *on = NULL, *off = NULL;
    g_autofree char *before = NULL, *after_on = NULL, *after_off = NULL;
    g_autofree char *after_bad = NULL, *help = NULL;

    change_mac_to_zero(qts);
    before = trace_log_read(&l);
    g_assert_cmpstr(before, ==, "");

    on = hmp(qts, "log guest_errors");
    g_assert_cmpstr(on, ==, "");
    change_mac_to_zero(qts);
    after_on = trace_log_read(&l);
    g_assert_cmpstr(after_on, ==, line);

    bad = hmp(qts, "log bogus");
    g_assert_cmpstr(bad, ==, LOG_ITEMS);
    help = hmp(qts, "help log");
    g_assert_cmpstr(help, ==, LOG_ITEMS);
    missing = hmp(qts, "log");
    g_assert_cmpstr(missing, ==, "log: string expected\r\n"
                    "Try \"help log\" for more information\r\n");
    change_mac_to_zero(qts);
    after_bad = trace_log_read(&l);
    g_assert_cmpstr(after_bad, ==, "h_change_logical_lan_mac: mac 0x0 is "
                    "not a 48-bit unicast MAC other than 0\n"
                    "h_change_logical_lan_mac: mac 0x0 is not a 48-bit "
                    "unicast MAC other than 0\n");

    off = hmp(qts, "log none");
    g_assert_cmpstr(off, ==, "");
    change_mac_to_zero(qts);
    after_off = trace_log_read(&l);
    g_assert_cmpstr(after_off, ==, after_bad);
    qtest_quit(qts);
    trace_log_free(&l);
}

/* As QEMU's: "log ...,trace:PATTERN" switches trace events on, and says
 * so in the monitor when one does not exist. */
static void test_hmp_log_trace(void)
{
    QTestState *qts = start("", "");
    g_autofree char *on = hmp(qts, "log guest_errors,trace:spapr_iommu_get");
    g_autofree char *state = hmp(qts, "info trace-events spapr_iommu_get");
    g_autofree char *nosuch = hmp(qts, "log trace:nosuch");

    g_assert_cmpstr(on, ==, "");
    g_assert_cmpstr(state, ==, "spapr_iommu_get : state 1\r\n");
    g_assert_cmpstr(nosuch, ==, "warning: trace event 'nosuch' does not "
                    "exist\r\n");
    qtest_quit(qts);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    for (size_t i = 0; i < G_N_ELEMENTS(refusals); i++) {
        g_autofree char *path = g_strdup_printf("/guest-errors/refusal/%s",
                                                refusals[i].name);

        g_test_add_data_func(path, &refusals[i], test_refusal);
    }
    g_test_add_func("/guest-errors/off-by-default", test_off_by_default);
    g_test_add_func("/guest-errors/hmp-log", test_hmp_log);
    g_test_add_func("/guest-errors/hmp-log-trace", test_hmp_log_trace);
    return g_test_run();
}
