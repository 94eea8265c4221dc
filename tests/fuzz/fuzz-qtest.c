/*
 * The qtest server's line parser and dispatcher fed an input as the
 * client's bytes, against a fresh 16 MiB machine with spapr-vlan (so
 * that hcall, the memory verbs and the interrupt verbs all reach
 * something).  The server, the machine and the virtual clock are made
 * anew for each input.  Transfers stop at 64 KiB instead of 16 MiB: an
 * input of 200 largest reads would otherwise spend 200 s copying under
 * the fuzzer's instrumentation, a hang by our 10 s rule that is only
 * volume; the size checks and copies are the same code either way.
 */
#include "fuzz-machine.h"
#include "qemu/timer.h"
#include "system/qtest.h"

static void on_closed(void *opaque)
{
    (void)opaque;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FuzzMachine m;
    QTestServer *qs;

    fuzz_machine_init(&m, "pseries", 16ULL << 20, true, NULL, NULL);
    qs = qtest_server_start("null", NULL, m.spapr, on_closed, NULL, NULL);
    qtest_server_set_max_transfer(qs, 64u << 10);

    qtest_server_feed(qs, (const char *)data, size);
    /* A last line without its newline is served too, as at hang-up. */
    qtest_server_feed(qs, "\n", 1);
    qtest_server_free(qs);
    fuzz_machine_free(&m);
    virtual_clock_reset_for_test();
    return 0;
}
