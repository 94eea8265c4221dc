/*
 * The QMP monitor: unix-socket servers and client connections speaking
 * QEMU's machine protocol (JSON objects, CRLF-terminated replies), with
 * the commands of include/qemu/qmp-registry.h, and events.  The sockets
 * are served by a monitor thread; commands run on the main thread.  These
 * functions are the main thread's, but for qmp_event_emit().
 */
#ifndef MONITOR_QMP_H
#define MONITOR_QMP_H

#include <json-glib/json-glib.h>
#include <stdbool.h>

/* The QEMU release whose interfaces illan follows, as the greeting and
 * query-version report it. */
#define QMP_QEMU_VERSION_MAJOR  10
#define QMP_QEMU_VERSION_MINOR  1
#define QMP_QEMU_VERSION_MICRO  0

/* -qmp unix:PATH,server=on: listens for any number of clients; with
 * @wait, blocks until the first one connects. */
bool qmp_listen(const char *path, bool wait, GError **errp);
/* -chardev socket,path=PATH (no server=on) + -mon: connects to PATH. */
bool qmp_connect(const char *path, GError **errp);
/* -chardev socket,fd=N + -mon: an inherited socket, served as a
 * listener if it listens (SO_ACCEPTCONN), else as a connected client.
 * The monitor owns @fd from then on. */
bool qmp_attach_fd(int fd, GError **errp);
void qmp_cleanup(void);

/* Sends @name (with @data, taken; may be NULL) to every client past
 * capability negotiation.  Any thread: off the main thread the event is
 * posted to it, stamped with the time it was raised. */
void qmp_event_emit(const char *name, JsonObject *data);

/* The events of the layers below, which announce their changes to
 * notifiers: run state, migration, NIC filters, netdev links
 * (monitor/qmp-events.c).  Subscribe once the machine is built;
 * unsubscribe at exit. */
void qmp_events_subscribe(void);
void qmp_events_unsubscribe(void);

#endif
