/*
 * HMP commands, reached through QMP's human-monitor-command.  As with QMP
 * (qemu/qmp-registry.h), each module registers the commands that show or
 * change its own state, from its own file with illan_init(); "info X"
 * commands are registered under the name "info X".  Handlers run on the
 * main thread and append HMP's text, lines ending in "\r\n", to @out.
 */
#ifndef QEMU_HMP_REGISTRY_H
#define QEMU_HMP_REGISTRY_H

#include <glib.h>
#include <stddef.h>

typedef struct HmpCommand {
    const char *name;       /* "system_reset", "info network" */
    const char *params;     /* for help: "[-f] filename", "" for none */
    const char *help;
    /* @args is the rest of the line after the name, trimmed. */
    void (*fn)(const char *args, GString *out);
} HmpCommand;

/* Adds @n commands, which must live as long as the program; a name may
 * be registered once. */
void hmp_register_commands(const HmpCommand *cmds, size_t n);
const HmpCommand *hmp_find_command(const char *name);
/* Every command, sorted by name. */
void hmp_foreach_command(void (*fn)(const HmpCommand *cmd, void *opaque),
                         void *opaque);

#endif
