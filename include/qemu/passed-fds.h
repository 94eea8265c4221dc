/*
 * Descriptors handed to illan from outside, for fd: migration URIs and
 * af-xdp's sock-fds: those its parent left open across exec, and those a
 * QMP client passed with getfd under a name.  Anything else a number
 * could name (the monitor's socket, a netdev's, the standard streams)
 * belongs to illan and is refused, never closed.  Main thread only.
 */
#ifndef QEMU_PASSED_FDS_H
#define QEMU_PASSED_FDS_H

#include <glib.h>
#include <stdbool.h>

/* Notes every descriptor open without close-on-exec: first thing in
 * main(), before illan opens anything, these are exactly the inherited
 * ones. */
void passed_fds_record_inherited(void);
/* An option (-chardev fd=N) takes inherited descriptor @fd for itself and
 * makes it close-on-exec; false with errno if it is not open.  Options
 * that only set close-on-exec (a netdev's addr.type=fd) take it too. */
bool passed_fds_take(int fd);
/* fd:N: @fd if it is an inherited descriptor nobody took, now taken by
 * the caller; otherwise -1 and why. */
int passed_fds_claim_inherited(int fd, GError **errp);
/* af-xdp's sock-fds: why @fd is not an inherited AF_XDP socket nobody
 * took, or NULL if it is (passed_fds_take() then takes it). */
const char *passed_fds_xsk_refusal(int fd);

/* getfd: @name now names @fd, which this module owns; a descriptor the
 * name had is closed.  Names may not start with a digit (@fd is closed
 * then). */
bool passed_fds_add_named(const char *name, int fd, GError **errp);
/* closefd. */
bool passed_fds_close_named(const char *name, GError **errp);
/* fd:NAME: the descriptor, removed from the table for the caller. */
int passed_fds_claim_named(const char *name, GError **errp);
/* Closes every named descriptor, at exit. */
void passed_fds_cleanup(void);

#endif
