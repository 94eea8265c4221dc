/*
 * The migration loader fed a whole stream, as -incoming file: reads it,
 * into a fresh 16 MiB machine with spapr-vlan twice: with receive buffer
 * pools on, then off.  A refused stream must be refused with an error
 * and no sanitizer report; an accepted one must leave a device that
 * still receives, with its counters balanced.  The machine type is the
 * one the stream names, when there is such a type, so that the committed
 * fixtures load.
 */
#include "fuzz-machine.h"
#include "hw/boards.h"
#include "migration/qemu-file.h"
#include "migration/savevm.h"
#include "qemu/runstate.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define RAM_SIZE    (16ULL << 20)
#define CONFIG_AT   8       /* after magic and version */

/* The machine type of the stream's configuration section, if it has one
 * we know; else the default. */
static const char *stream_machine(const uint8_t *data, size_t size)
{
    static char name[256];
    uint32_t len;

    if (size < CONFIG_AT + 5 || data[CONFIG_AT] != QEMU_VM_CONFIGURATION) {
        return "pseries";
    }
    len = (uint32_t)data[CONFIG_AT + 1] << 24 | data[CONFIG_AT + 2] << 16 |
          data[CONFIG_AT + 3] << 8 | data[CONFIG_AT + 4];
    if (len >= sizeof(name) || size < CONFIG_AT + 5 + len) {
        return "pseries";
    }
    memcpy(name, data + CONFIG_AT + 5, len);
    name[len] = '\0';
    return machine_class_find(name) ? name : "pseries";
}

/* A loaded device still takes frames, each counted once. */
static void receive_after_load(SpaprVlanState *lan, NetClientState *backend)
{
    static uint8_t frame[9018];
    static const uint32_t lens[] = { 60, 1514, 9018 };
    MACAddr mac = spapr_vlan_get_mac(lan);
    NetFrame frames[G_N_ELEMENTS(lens)];
    NetClientStats st;
    SpaprVlanStats vs;
    uint64_t sum = 0;

    memcpy(frame, mac.a, 6);
    for (size_t i = 0; i < G_N_ELEMENTS(lens); i++) {
        frames[i] = (NetFrame){ .data = frame, .len = lens[i] };
    }
    net_backend_deliver(backend, frames, G_N_ELEMENTS(frames));
    net_client_get_stats(spapr_vlan_nic(lan), &st);
    spapr_vlan_get_stats(lan, &vs);
    for (int i = 0; i < NET_RX__MAX; i++) {
        sum += st.rx_results[i];
    }
    fuzz_check(st.rx_frames == G_N_ELEMENTS(lens) && sum == st.rx_frames,
          "frames after the load do not balance");
    fuzz_check(vs.rx_frames == st.rx_results[NET_RX_DELIVERED],
          "device rx-frames != delivered after the load");
}

static void load_into(int fd, const char *machine, bool pools)
{
    GError *err = NULL;
    FuzzMachine m;
    QEMUFile *qf;
    bool ok;

    fuzz_machine_init(&m, machine, RAM_SIZE, pools, NULL, NULL);
    runstate_set(RUN_STATE_INMIGRATE);
    fuzz_check(lseek(fd, 0, SEEK_SET) == 0, "lseek");
    qf = qemu_file_new_input(fd);
    ok = qemu_loadvm_state(qf, spapr_machine_type(m.spapr), spapr_ram(m.spapr),
                           &err);
    qemu_file_close(qf, NULL);
    /* A refusal says why; an acceptance says nothing. */
    fuzz_check(ok == (err == NULL), ok ? "accepted with an error"
                                       : "refused without an error");
    if (!ok && getenv("FUZZ_VERBOSE")) {
        fprintf(stderr, "refused (pools %s): %s\n", pools ? "on" : "off",
                err->message);
    }
    g_clear_error(&err);
    if (ok) {
        runstate_set(RUN_STATE_RUNNING);
        receive_after_load(m.lan, m.backend);
    }
    fuzz_machine_free(&m);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    qemu_loadvm_set_machine_matcher(machine_class_same);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("fuzz-migration", MFD_CLOEXEC);
    const char *machine = stream_machine(data, size);

    fuzz_check(fd >= 0 && write(fd, data, size) == (ssize_t)size, "memfd");
    load_into(fd, machine, true);
    load_into(fd, machine, false);
    close(fd);
    return 0;
}
