/*
 * A migration stream as a buffered, big-endian byte channel over a file
 * descriptor (file, socket, pipe).  Errors are sticky: once a read runs
 * past the end or a write fails, reads return zeros and writes are
 * dropped, and qemu_file_check() reports the first error.  So the
 * formats above read straight through and check at points that can name
 * what was being read.
 */
#ifndef MIGRATION_QEMU_FILE_H
#define MIGRATION_QEMU_FILE_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct QEMUFile QEMUFile;

/* The file borrows @fd, and makes it non-blocking; whoever opened it
 * closes it.  One thread does the file's I/O. */
QEMUFile *qemu_file_new_output(int fd);
QEMUFile *qemu_file_new_input(int fd);
/* Input from @bytes (a reference is taken), for a stream held in memory. */
QEMUFile *qemu_file_new_from_bytes(GBytes *bytes);
/* Flushes an output file, then frees; false with *errp on any error. */
bool qemu_file_close(QEMUFile *f, GError **errp);
/* The two halves of qemu_file_close(), for a file another thread may
 * still cancel: the I/O thread finishes, the owner frees. */
bool qemu_file_finish(QEMUFile *f, GError **errp);
void qemu_file_free(QEMUFile *f);

/* Any thread, until the file is freed: the I/O in progress, and all
 * after it, fails with "@why at byte N" (@why a static string). */
void qemu_file_cancel(QEMUFile *f, const char *why);
/* Whether qemu_file_cancel() was called; any thread. */
bool qemu_file_cancelled(QEMUFile *f);

/* Flushes an output file, then waits @us microseconds, or less if the
 * file is cancelled meanwhile; false once the file has failed.  For a
 * writer that keeps to a bandwidth. */
bool qemu_file_sleep(QEMUFile *f, int64_t us);

/* False with *errp set once the file has failed. */
bool qemu_file_check(QEMUFile *f, GError **errp);
/* Bytes written or consumed so far. */
uint64_t qemu_file_transferred(const QEMUFile *f);
/* Bytes that went through the descriptor so far (written to it, or read
 * from it, read-ahead included).  Any thread. */
uint64_t qemu_file_io_bytes(const QEMUFile *f);

void qemu_put_byte(QEMUFile *f, uint8_t v);
void qemu_put_be16(QEMUFile *f, uint16_t v);
void qemu_put_be32(QEMUFile *f, uint32_t v);
void qemu_put_be64(QEMUFile *f, uint64_t v);
void qemu_put_buffer(QEMUFile *f, const void *buf, size_t len);
/* One length byte, then the bytes (no NUL); @s is under 256 bytes. */
void qemu_put_counted_string(QEMUFile *f, const char *s);

uint8_t qemu_get_byte(QEMUFile *f);
uint16_t qemu_get_be16(QEMUFile *f);
uint32_t qemu_get_be32(QEMUFile *f);
uint64_t qemu_get_be64(QEMUFile *f);
void qemu_get_buffer(QEMUFile *f, void *buf, size_t len);
/* Reads a counted string into @buf (256 bytes), NUL-terminated. */
void qemu_get_counted_string(QEMUFile *f, char buf[256]);
/* Everything left until the stream ends, at most @max bytes; the count
 * so far goes to *@held (atomic, for another thread to show).  NULL once
 * the file fails, or would hold more than @max (the file fails then). */
GBytes *qemu_file_read_to_end(QEMUFile *f, size_t max, uint64_t *held);
/* Discards @len bytes. */
void qemu_file_skip(QEMUFile *f, uint64_t len);

/* Copies up to @len bytes at @offset past the read position without
 * consuming them; returns how many were there (fewer at end of stream).
 * @offset + @len is at most 512. */
size_t qemu_peek_buffer(QEMUFile *f, void *buf, size_t len, size_t offset);
/* The byte at @offset past the read position, or -1 at end of stream. */
int qemu_peek_byte(QEMUFile *f, size_t offset);

#endif
