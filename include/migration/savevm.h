/*
 * The migration stream as QEMU writes it (QEVM version 3): header,
 * configuration (the machine type), the RAM section (its setup, parts,
 * and end), one FULL section per registered device, EOF, then the
 * VM-description JSON.  Also the
 * registry of what migrates and the -dump-vmstate file.
 *
 * Devices do not hand their live structs to the stream.  Each registers a
 * vmsd that describes an image of its state, with ops that capture the
 * image under the device's lock and commit it back.  A load fills images
 * for every section first and commits them only once the whole stream has
 * been read and validated, so a refused stream leaves devices untouched.
 */
#ifndef MIGRATION_SAVEVM_H
#define MIGRATION_SAVEVM_H

#include "migration/qemu-file.h"
#include "migration/stream-format.h"
#include "migration/ram.h"
#include "qemu/guest-ram.h"

typedef struct VMStateDescription VMStateDescription;
typedef struct StreamLayout StreamLayout;


/* How a registered object's live state maps to the image its vmsd
 * describes. */
typedef struct VMStateImageOps {
    size_t size;                                    /* of the image */
    /* Live state into a zeroed image; also run before a load, so that
     * "equal" fields compare with this machine's values. */
    void (*capture)(void *obj, void *image);
    /* A loaded, validated image back into the live object. */
    void (*commit)(void *obj, const void *image);
    /* Frees what capture allocated inside the image; may be NULL. */
    void (*release)(void *image);
    /* A stream read to its end without this section: false refuses it,
     * errp saying why.  NULL: the object keeps its state. */
    bool (*absent)(void *obj, GError **errp);
    /* Every image loaded with these ops, in registration order, checked
     * together once the stream is read and before any commits: what no
     * one image shows, such as memory two objects both claim.  May be
     * NULL. */
    bool (*check_together)(void *const *images, unsigned n, GError **errp);
    /* Whether the object's state can be saved now: false refuses the
     * migration as it starts, errp saying why.  May be NULL. */
    bool (*may_save)(void *obj, GError **errp);
} VMStateImageOps;

/* A section "@idstr" with @instance_id; it lasts until unregistered. */
void vmstate_register(const char *idstr, uint32_t instance_id,
                      const VMStateDescription *vmsd,
                      const VMStateImageOps *ops, void *obj);
void vmstate_unregister(void *obj);
/* A device type whose state migrates, for -dump-vmstate.  A stream with
 * a section of this type that no device here has is refused: the
 * destination lacks a device the source had. */
void vmstate_register_type(const char *type_name,
                           const VMStateDescription *vmsd);
/* The same for a part of the machine that QEMU's pseries has more of
 * than illan (TCE tables of its PCI host bridge): a section for one that
 * illan lacks is carried, as sections of types illan lacks are. */
void vmstate_register_part_type(const char *type_name,
                                const VMStateDescription *vmsd);

/* The whole stream for @machine_type; RAM counts go to @stats. */
bool qemu_savevm_state(QEMUFile *f, const char *machine_type, GuestRam *ram,
                       RamStats *stats, GError **errp);
/*
 * A stream written in steps on a thread of its own, for live migration:
 * the header, configuration and RAM's setup; then parts of the RAM
 * section while the machine runs (pages go in with a RamSaver); at the
 * switchover the machine stops, every device's image is captured (main
 * thread), RAM's last part is written, and the images finish it.
 */
typedef struct SaveVMImages SaveVMImages;
typedef struct SaveVMStream SaveVMStream;
SaveVMImages *qemu_savevm_capture(void);
/* Every registered object's may_save, in registration order: false at
 * the first that refuses. */
bool qemu_savevm_may_save(GError **errp);
/* Run by qemu_savevm_capture() (main thread, machine stopped) on a copy
 * of the sections the machine carries, when it carries any: @hook
 * changes what moved while illan held the machine (an interrupt it
 * raised, in the carried interrupt controller) and returns true if it
 * changed anything; the copy then is what the machine carries. */
void qemu_savevm_set_carried_hook(bool (*hook)(StreamLayout *copy,
                                               void *opaque),
                                  void *opaque);
/* A hook's account of one interrupt it handled, by outcome (a static
 * string): query-migrate shows the counts as x-carried-irqs. */
void qemu_savevm_count_carried_irq(const char *outcome);
/* The counts so far (outcome -> count, a new table), or NULL if none. */
GHashTable *qemu_savevm_carried_irq_counts(void);
void qemu_savevm_images_free(SaveVMImages *images);
SaveVMStream *qemu_savevm_begin(QEMUFile *f, const char *machine_type,
                                GuestRam *ram);
/* @last: the END part, at the switchover. */
void qemu_savevm_ram_part_open(SaveVMStream *s, bool last);
void qemu_savevm_ram_part_close(SaveVMStream *s);
/* The devices, EOF and the description; frees @s. */
bool qemu_savevm_finish(SaveVMStream *s, const SaveVMImages *images,
                        GError **errp);
/* Frees @s of a stream that will not be finished. */
void qemu_savevm_abandon(SaveVMStream *s);

/* Reads a whole stream; devices change only if all of it is accepted.
 * Errors name the section (and subsection and field) and say why. */
bool qemu_loadvm_state(QEMUFile *f, const char *machine_type, GuestRam *ram,
                       GError **errp);
/* qemu_loadvm_state() in two steps: the stream read into images and RAM
 * (any thread, with the machine waiting in inmigrate), then the images
 * committed, or dropped when !@commit (main thread, everything parked). */
bool qemu_loadvm_read(QEMUFile *f, const char *machine_type, GuestRam *ram,
                      GError **errp);
void qemu_loadvm_commit(bool commit);
/* Run by qemu_loadvm_commit() once a stream is accepted (main thread,
 * everything parked): what illan did before it no longer matters to the
 * carried sections. */
void qemu_loadvm_set_commit_hook(void (*hook)(void *opaque), void *opaque);
/* What the beginning of the stream in @f says, without reading it: its
 * machine type (a new string) and the size of its RAM block, each left
 * as it was when the stream does not say. */
void qemu_loadvm_peek(QEMUFile *f, char **machine_type, uint64_t *ram_size);
/* Bytes of a stream held in memory by the load in progress (or the last
 * one): from the first section illan does not model to the end.  Any
 * thread. */
uint64_t qemu_loadvm_held_bytes(void);
/* What the machine carries from the last stream it accepted, for the
 * sections it does not model (a QEMU guest's CPU, interrupt controllers,
 * ...): false when nothing.  Any thread. */
bool qemu_loadvm_carried(uint64_t *bytes, unsigned *sections);
/* Run on a stream that carries sections, once it is read and before it
 * commits (the loading thread): false refuses it, @errp saying why.  For
 * what the carried sections say that must agree with this machine. */
void qemu_loadvm_set_carried_check(bool (*check)(const StreamLayout *l,
                                                 void *opaque,
                                                 GError **errp),
                                   void *opaque);
/* The machine was reset: what it carried for a guest is gone.  Main
 * thread. */
void qemu_loadvm_forget_carried(void);
/* Whether a stream's machine type names this machine under another
 * name (an alias such as pseries-1.0); set by main().  Without it the
 * names must be equal. */
void qemu_loadvm_set_machine_matcher(bool (*same)(const char *a,
                                                  const char *b));
/* -dump-vmstate: QEMU's JSON for every registered device type. */
bool qemu_dump_vmstate(const char *path, const char *machine_type,
                       GError **errp);

#endif
