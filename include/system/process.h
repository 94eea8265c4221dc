/*
 * The process's ties to its parent and to the host: -daemonize,
 * -pidfile and -run-with exit-with-parent=on.
 */
#ifndef SYSTEM_PROCESS_H
#define SYSTEM_PROCESS_H

#include <glib.h>
#include <stdbool.h>

/* Forks; the parent waits and exits with the status the child reports
 * through process_daemon_ready() or process_daemon_exit().  The child
 * returns, in a session of its own. */
bool process_daemonize(GError **errp);
/* The daemon is serving (monitors and qtest up): the parent exits 0, and
 * standard input, output and error go to /dev/null.  No-op otherwise. */
void process_daemon_ready(void);
/* The daemon ends before it was ready: the parent exits with @status. */
void process_daemon_exit(int status);

/* Writes our pid to @path and holds a lock on it; refused while another
 * process holds it.  The file goes away with process_pidfile_remove(). */
bool process_pidfile_create(const char *path, GError **errp);
void process_pidfile_remove(void);

/* Remembers who started us, before anything can go wrong. */
void process_note_parent(void);
/* SIGTERM when the parent dies; raised at once if it already has. */
bool process_exit_with_parent(GError **errp);

#endif
