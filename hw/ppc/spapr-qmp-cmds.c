/*
 * The pseries machine's QMP command pmemsave, of its RAM.  The QOM
 * commands are in spapr-qom.c.
 */
#include "hw/ppc/spapr.h"
#include "qemu/module.h"
#include "qemu/qmp-registry.h"

#include <string.h>

/* QEMU's pmemsave: guest-physical memory to a file, as it is now. */
static JsonNode *pmemsave(JsonObject *args, QmpError *err)
{
    gint64 addr = json_object_get_int_member(args, "val");
    gint64 size = json_object_get_int_member(args, "size");
    const char *path = json_object_get_string_member(args, "filename");
    SpaprMachineState *spapr = spapr_machine_current();
    GuestRam *ram = spapr ? spapr_ram(spapr) : NULL;
    void *data;
    g_autoptr(GError) gerr = NULL;

    data = ram && addr >= 0 && size >= 0 ? guest_ram_ptr(ram, addr, size)
                                         : NULL;
    if (!data) {
        qmp_error_set(err, QMP_ERROR_GENERIC, "Invalid parameter 'val': "
                      "0x%" G_GINT64_MODIFIER "x+%" G_GINT64_FORMAT
                      " is not guest RAM", addr, size);
        return NULL;
    }
    if (!g_file_set_contents(path, data, size, &gerr)) {
        qmp_error_set(err, QMP_ERROR_GENERIC, "Could not open '%s': %s",
                      path, gerr->message);
        return NULL;
    }
    return qmp_return_empty();
}

static const QmpArg pmemsave_args[] = {
    { "val", QMP_ARG_INT, false }, { "size", QMP_ARG_INT, false },
    { "filename", QMP_ARG_STR, false }, { NULL, 0, false }
};

static const QmpCommand spapr_commands[] = {
    { "pmemsave", pmemsave_args, false, pmemsave, false },
};

static void spapr_commands_register(void)
{
    qmp_register_commands(spapr_commands, G_N_ELEMENTS(spapr_commands));
}
illan_init(spapr_commands_register)
