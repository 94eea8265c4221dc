/* The fuzz targets' machine (fuzz-machine.h). */
#include "fuzz-machine.h"
#include "qemu/runstate.h"

#include <stdio.h>
#include <stdlib.h>

static bool sink_send(void *opaque, const uint8_t *data, size_t len)
{
    (void)opaque, (void)data, (void)len;
    return true;
}

static void no_cleanup(void *opaque)
{
    (void)opaque;
}

const NetBackendOps fuzz_sink_ops = {
    .send = sink_send,
    .cleanup = no_cleanup,
};

void fuzz_check(bool ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz: %s\n", what);
        abort();
    }
}

void fuzz_machine_init(FuzzMachine *m, const char *type, uint64_t ram_size,
                       bool pools, const NetBackendOps *ops, void *opaque)
{
    MachineOptions mo = { .ram_size = ram_size };
    DeviceState *dev;
    GError *err = NULL;

    m->spapr = spapr_machine_new(machine_class_find(type), &mo, &err);
    fuzz_check(m->spapr != NULL, "no machine");
    m->backend = net_backend_new("n0", ops ? ops : &fuzz_sink_ops, opaque);
    dev = device_new(device_class_find("spapr-vlan"), &err);
    fuzz_check(dev && device_set_prop(dev, "netdev", "n0", &err) &&
               device_set_prop(dev, "mac", "52:54:00:12:34:56", &err) &&
               device_set_prop(dev, "use-rx-buffer-pools",
                               pools ? "on" : "off", &err) &&
               spapr_machine_plug(m->spapr, dev, &err), "no device");
    m->lan = spapr_vlan_from_vio((SpaprVioDevice *)dev);
    m->unit = ((SpaprVioDevice *)dev)->reg;
    spapr_machine_reset(m->spapr);
    runstate_set(RUN_STATE_RUNNING);
}

void fuzz_machine_free(FuzzMachine *m)
{
    runstate_set(RUN_STATE_PRELAUNCH);
    spapr_machine_free(m->spapr);
    net_cleanup();
}
