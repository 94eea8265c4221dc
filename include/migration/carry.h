/*
 * Sections illan does not model, carried byte-exact.  A QEMU guest's
 * stream holds its CPU, interrupt controllers, firmware state and more;
 * illan models only RAM, the LAN and the LAN's TCE table.  The rest is
 * kept as the bytes QEMU wrote and written back in QEMU's order with
 * QEMU's section ids, so that the guest can go back to QEMU.
 *
 * Records carry no length.  A FULL section's length comes from the VM
 * description QEMU writes after the EOF marker (so the loader holds the
 * stream from the first section it does not model to the end);
 * spapr/htab has a format of its own and is parsed as it comes.
 */
#ifndef MIGRATION_CARRY_H
#define MIGRATION_CARRY_H

#include "migration/qemu-file.h"

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

/* The iterative section QEMU's pseries machine writes for its hash
 * table, the one iterative section besides RAM that can be carried. */
#define HTAB_SECTION_NAME   "spapr/htab"

/* What a loaded stream held, in its order; immutable once built. */
typedef struct StreamLayout StreamLayout;

StreamLayout *stream_layout_new(void);
StreamLayout *stream_layout_ref(StreamLayout *l);
void stream_layout_unref(StreamLayout *l);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(StreamLayout, stream_layout_unref)

/* Building, while a stream loads. */
void stream_layout_set_ram_id(StreamLayout *l, uint32_t section_id);
/* A FULL section illan loads into a device of its own. */
void stream_layout_add_modelled(StreamLayout *l, const char *idstr,
                                uint32_t instance, uint32_t section_id);
/* A FULL section kept as bytes, with its description's JSON. */
void stream_layout_add_carried(StreamLayout *l, const char *idstr,
                               uint32_t instance, uint32_t version,
                               uint32_t section_id, GBytes *body,
                               const char *desc_json);
/* A record of an iterative carried section (START gives its name). */
void stream_layout_add_iterative(StreamLayout *l, uint8_t type,
                                 const char *idstr, uint32_t instance,
                                 uint32_t version, uint32_t section_id,
                                 GBytes *body);
/* Whether @section_id is an iterative section being carried. */
bool stream_layout_has_iterative(const StreamLayout *l, uint32_t section_id);
/* Whether it carries anything (else it is no different from none). */
bool stream_layout_carries(const StreamLayout *l);

/* Reading back, to write a stream. */
bool stream_layout_ram_id(const StreamLayout *l, uint32_t *section_id);
/* The section id a modelled section had, if it was in the stream. */
bool stream_layout_modelled_id(const StreamLayout *l, const char *idstr,
                               uint32_t instance, uint32_t *section_id);
uint32_t stream_layout_max_id(const StreamLayout *l);
uint64_t stream_layout_carried_bytes(const StreamLayout *l);
unsigned stream_layout_carried_sections(const StreamLayout *l);

/* Writes the carried iterative records: the START ones (@starts), or
 * the PART and END ones. */
void stream_layout_put_iterative(const StreamLayout *l, QEMUFile *f,
                                 bool starts);

/* The FULL sections in stream order, each handed to @v as carried
 * bytes or as a section illan writes itself. */
typedef struct StreamLayoutVisitor {
    void (*modelled)(void *opaque, const char *idstr, uint32_t instance,
                     uint32_t section_id);
    void (*carried)(void *opaque, const char *idstr, uint32_t instance,
                    uint32_t version, uint32_t section_id, GBytes *body,
                    const char *desc_json);
} StreamLayoutVisitor;
void stream_layout_visit_full(const StreamLayout *l,
                              const StreamLayoutVisitor *v, void *opaque);

/* A copy whose carried bodies may be changed (stream_layout_body). */
StreamLayout *stream_layout_copy(const StreamLayout *l);
/* The body of carried FULL section @idstr/@instance, to change in place
 * in a copy; NULL when it carries no such section. */
uint8_t *stream_layout_body(StreamLayout *l, const char *idstr,
                            uint32_t instance, size_t *len);
/* Where a field of that section lies in its body, by the section's
 * description: element @index of top-level field @field (0 for one that
 * is not an array), and in it struct member @member (or the whole
 * element when NULL).  False when the description has no such field or
 * element. */
bool stream_layout_find_field(const StreamLayout *l, const char *idstr,
                              uint32_t instance, const char *field,
                              unsigned index, const char *member,
                              size_t *offset, size_t *size);

/* The body of carried FULL section @idstr/@instance, to read; NULL when
 * it carries no such section. */
const uint8_t *stream_layout_peek_body(const StreamLayout *l,
                                       const char *idstr, uint32_t instance,
                                       size_t *len);
/* Where field @field of that section's top-level subsection @subsection
 * lies in its body, by the section's description. */
bool stream_layout_find_subsection_field(const StreamLayout *l,
                                         const char *idstr,
                                         uint32_t instance,
                                         const char *subsection,
                                         const char *field, size_t *offset,
                                         size_t *size);

/* One spapr/htab record body, its bytes appended to @out, which may
 * grow to @max bytes. */
bool htab_record_read(QEMUFile *f, GByteArray *out, size_t max,
                      GError **errp);

/* A stream's VM description, found at the end of the held bytes. */
typedef struct VMDesc VMDesc;

/* The description record that ends @held, or NULL with errp (code
 * VMDESC_ABSENT when there is none).  *@start is where the record (its
 * 0x06 marker) begins. */
#define VMDESC_ABSENT   1
VMDesc *vmdesc_find(GBytes *held, size_t max_len, size_t *start,
                    GError **errp);
void vmdesc_free(VMDesc *d);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(VMDesc, vmdesc_free)
/* The @i-th section the description covers: its name, instance, the
 * length of its body (what lies between header and footer) and its JSON.
 * False with errp when there is none or its description is malformed. */
bool vmdesc_section(const VMDesc *d, unsigned i, const char **name,
                    uint32_t *instance, uint64_t *body_len, char **json,
                    GError **errp);
unsigned vmdesc_sections(const VMDesc *d);

#endif
