/*
 * Migration URIs as QEMU spells them: file:PATH[,offset=N], unix:PATH,
 * tcp:HOST:PORT, fd:NAME or fd:N, and exec:COMMAND.  An outgoing channel
 * is a descriptor to write the stream to; an incoming one hands over a
 * descriptor to read from once it is ready (at once for file:, fd: and
 * exec:, when the source connects for unix: and tcp:).
 */
#ifndef MIGRATION_CHANNEL_H
#define MIGRATION_CHANNEL_H

#include <glib.h>
#include <json-glib/json-glib.h>
#include <stdbool.h>

typedef struct MigrationChannel MigrationChannel;

/* Opens @uri to write a stream; errors say what is wrong with it. */
MigrationChannel *migration_channel_open_outgoing(const char *uri,
                                                  GError **errp);
/* The descriptor to read or write. */
int migration_channel_fd(const MigrationChannel *ch);

/* Called once, on the main loop, when the incoming stream can be read. */
typedef void (*MigrationChannelReady)(MigrationChannel *ch, void *opaque);
/* Prepares @uri to receive a stream; @ready runs from the main loop. */
MigrationChannel *migration_channel_open_incoming(const char *uri,
                                                  MigrationChannelReady ready,
                                                  void *opaque,
                                                  GError **errp);

/* An incoming unix: or tcp: channel's listening address as QEMU's
 * query-migrate lists it in "socket-address" (with the port the kernel
 * chose for port 0); NULL for other channels. */
JsonArray *migration_channel_socket_addresses(const MigrationChannel *ch);

/* Polled while an exec: command is waited for; it may sleep a little,
 * and returns false to give the wait up. */
typedef bool (*MigrationChannelWait)(void *opaque);
/* Closes the descriptor.  For exec:, waits for the command as long as
 * @wait says (fails unless it exited with status 0); @wait NULL (a
 * stream that failed), or once it gives up, the command is ended:
 * SIGTERM, then SIGKILL a second later if it is still there. */
bool migration_channel_close(MigrationChannel *ch, MigrationChannelWait wait,
                             void *opaque, GError **errp);

#endif
