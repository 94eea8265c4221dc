/*
 * The stream.  Sections are written in registration order with ids
 * handed out at registration, as QEMU does; the description JSON is
 * built alongside the bytes by the same walk that writes them, so the
 * two cannot disagree.
 */
#include "migration/savevm.h"
#include "migration/carry.h"
#include "migration/vmstate.h"
#include "qemu/bswap.h"
#include "qemu/json-writer.h"
#include "qemu/option.h"
#include "trace/trace-migration.h"

#include <errno.h>
#include <string.h>

#define RAM_SECTION_ID  0
/* Nothing this build writes is close; the limit keeps hostile input from
 * making us skip gigabytes. */
#define VMDESC_MAX_LEN  (64u << 20)
/* The description illan parses to carry sections: QEMU's for a pseries
 * guest is about 10 KB; parsing costs far more memory than the text. */
#define VMDESC_PARSE_MAX_LEN    (1u << 20)
/* What a QEMU stream holds from its first section illan does not model
 * to its end: its device sections and description, a few MiB for a
 * pseries guest (the nvram, TCE tables and CPU). */
#define HOLD_MAX_LEN    (256u << 20)

typedef struct SaveStateEntry {
    char *idstr;
    uint32_t instance_id;
    uint32_t section_id;
    const VMStateDescription *vmsd;
    const VMStateImageOps *ops;
    void *obj;
    void *image;                /* while a load is in progress */
} SaveStateEntry;

typedef struct VMStateType {
    const char *name;
    const VMStateDescription *vmsd;
    bool carried_if_absent;
} VMStateType;

static GPtrArray *entries;      /* SaveStateEntry *, in registration order */
static GPtrArray *types;        /* VMStateType * */
static uint32_t next_section_id = RAM_SECTION_ID + 1;

/* Bytes held so far by the load in progress, for query-migrate. */
static uint64_t held_bytes;
/* What the last accepted stream carried; its writers run on the main
 * thread (commit), its readers take a reference under the lock. */
static GMutex layout_lock;
static StreamLayout *committed_layout;
static StreamLayout *pending_layout;    /* loaded, not yet committed */

uint64_t qemu_loadvm_held_bytes(void)
{
    return __atomic_load_n(&held_bytes, __ATOMIC_RELAXED);
}

static StreamLayout *layout_get(void)
{
    StreamLayout *l;

    g_mutex_lock(&layout_lock);
    l = committed_layout ? stream_layout_ref(committed_layout) : NULL;
    g_mutex_unlock(&layout_lock);
    return l;
}

/* What the machine carries from now on (a reference is taken). */
static void layout_set(StreamLayout *l)
{
    StreamLayout *old;

    g_mutex_lock(&layout_lock);
    old = g_steal_pointer(&committed_layout);
    committed_layout = l ? stream_layout_ref(l) : NULL;
    g_mutex_unlock(&layout_lock);
    stream_layout_unref(old);
}

void qemu_loadvm_forget_carried(void)
{
    layout_set(NULL);
}

bool qemu_loadvm_carried(uint64_t *bytes, unsigned *sections)
{
    g_autoptr(StreamLayout) l = layout_get();

    if (!l) {
        return false;
    }
    *bytes = stream_layout_carried_bytes(l);
    *sections = stream_layout_carried_sections(l);
    return true;
}

void vmstate_register(const char *idstr, uint32_t instance_id,
                      const VMStateDescription *vmsd,
                      const VMStateImageOps *ops, void *obj)
{
    SaveStateEntry *se = g_new0(SaveStateEntry, 1);

    g_assert(strlen(idstr) < 128);
    if (!entries) {
        entries = g_ptr_array_new();
    }
    se->idstr = g_strdup(idstr);
    se->instance_id = instance_id;
    se->section_id = next_section_id++;
    se->vmsd = vmsd;
    se->ops = ops;
    se->obj = obj;
    g_ptr_array_add(entries, se);
}

bool qemu_savevm_may_save(GError **errp)
{
    for (guint i = 0; entries && i < entries->len; i++) {
        SaveStateEntry *se = g_ptr_array_index(entries, i);

        if (se->ops && se->ops->may_save && !se->ops->may_save(se->obj,
                                                               errp)) {
            return false;
        }
    }
    return true;
}

void vmstate_unregister(void *obj)
{
    for (guint i = 0; entries && i < entries->len; i++) {
        SaveStateEntry *se = g_ptr_array_index(entries, i);

        if (se->obj == obj) {
            g_ptr_array_remove_index(entries, i);
            g_free(se->idstr);
            g_free(se);
            return;
        }
    }
}

static void register_type(const char *type_name,
                          const VMStateDescription *vmsd,
                          bool carried_if_absent)
{
    VMStateType *t = g_new0(VMStateType, 1);

    if (!types) {
        types = g_ptr_array_new();
    }
    t->name = type_name;
    t->vmsd = vmsd;
    t->carried_if_absent = carried_if_absent;
    g_ptr_array_add(types, t);
}

void vmstate_register_type(const char *type_name,
                           const VMStateDescription *vmsd)
{
    register_type(type_name, vmsd, false);
}

void vmstate_register_part_type(const char *type_name,
                                const VMStateDescription *vmsd)
{
    register_type(type_name, vmsd, true);
}

/* Whether a section named @idstr ("unit@reg/vmsd" or "vmsd") is of a
 * device type a user adds here: one missing is the user's mistake. */
static bool section_of_user_type(const char *idstr)
{
    const char *slash = strrchr(idstr, '/');
    const char *vmsd_name = slash ? slash + 1 : idstr;

    for (guint i = 0; types && i < types->len; i++) {
        VMStateType *t = g_ptr_array_index(types, i);

        if (!t->carried_if_absent && !strcmp(t->vmsd->name, vmsd_name)) {
            return true;
        }
    }
    return false;
}

/* The configuration section: the machine type, compared on load. */

static bool (*same_machine)(const char *a, const char *b);

void qemu_loadvm_set_machine_matcher(bool (*same)(const char *a,
                                                  const char *b))
{
    same_machine = same;
}

typedef struct ConfigImage {
    uint32_t len;
    char *name;
    const char *local;
} ConfigImage;

static bool config_len_ok(void *opaque, int version_id)
{
    (void)version_id;
    return ((ConfigImage *)opaque)->len < 256;
}

static bool config_post_load(void *opaque, int version_id, GError **errp)
{
    ConfigImage *c = opaque;
    g_autofree char *theirs = g_strndup(c->name, c->len);

    (void)version_id;
    /* An old name that is now an alias (pseries-1.0) is the same type. */
    if (strlen(theirs) != c->len ||
        (strcmp(theirs, c->local) &&
         !(same_machine && same_machine(theirs, c->local)))) {
        g_set_error(errp, ILLAN_ERROR, 0, "machine type mismatch: the stream "
                    "is from '%s' and this machine is '%s'; start the "
                    "destination with -M %s", c->name, c->local, c->name);
        return false;
    }
    return true;
}

static const VMStateDescription vmstate_configuration = {
    .name = "configuration",
    .version_id = 1,
    .minimum_version_id = 0,
    .post_load = config_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(len, ConfigImage),
        VMSTATE_VALIDATE("len", "must be under 256 (the machine type "
                         "name's length)", config_len_ok),
        VMSTATE_VBUFFER_ALLOC_UINT32(name, ConfigImage, 0, NULL, len),
        VMSTATE_END_OF_LIST()
    },
};

/* Save. */

static void put_section_header(QEMUFile *f, uint8_t type, uint32_t id,
                               const char *idstr, uint32_t instance,
                               uint32_t version)
{
    qemu_put_byte(f, type);
    qemu_put_be32(f, id);
    if (type == QEMU_VM_SECTION_START || type == QEMU_VM_SECTION_FULL) {
        qemu_put_counted_string(f, idstr);
        qemu_put_be32(f, instance);
        qemu_put_be32(f, version);
    }
}

static void put_section_footer(QEMUFile *f, uint32_t id)
{
    qemu_put_byte(f, QEMU_VM_SECTION_FOOTER);
    qemu_put_be32(f, id);
}

/* A device's state as captured with the machine stopped, for a stream
 * written later, maybe on another thread. */
typedef struct SavedDevice {
    char *idstr;
    uint32_t instance_id;
    uint32_t section_id;
    const VMStateDescription *vmsd;
    const VMStateImageOps *ops;
    void *image;
} SavedDevice;

struct SaveVMImages {
    GArray *devices;            /* SavedDevice, in registration order */
    StreamLayout *layout;       /* what the machine carries, or NULL */
};

static bool (*carried_hook)(StreamLayout *copy, void *opaque);
static void *carried_hook_opaque;
static void (*commit_hook)(void *opaque);
static void *commit_hook_opaque;
/* Outcome name -> count, under layout_lock: written by the hook (main
 * thread), read by query-migrate. */
static GHashTable *carried_irq_counts;

void qemu_savevm_count_carried_irq(const char *outcome)
{
    gpointer n;

    g_mutex_lock(&layout_lock);
    if (!carried_irq_counts) {
        carried_irq_counts = g_hash_table_new(g_str_hash, g_str_equal);
    }
    n = g_hash_table_lookup(carried_irq_counts, outcome);
    g_hash_table_insert(carried_irq_counts, (gpointer)outcome,
                        GUINT_TO_POINTER(GPOINTER_TO_UINT(n) + 1));
    g_mutex_unlock(&layout_lock);
}

GHashTable *qemu_savevm_carried_irq_counts(void)
{
    GHashTable *copy = NULL;
    GHashTableIter it;
    gpointer k, v;

    g_mutex_lock(&layout_lock);
    if (carried_irq_counts) {
        copy = g_hash_table_new(g_str_hash, g_str_equal);
        g_hash_table_iter_init(&it, carried_irq_counts);
        while (g_hash_table_iter_next(&it, &k, &v)) {
            g_hash_table_insert(copy, k, v);
        }
    }
    g_mutex_unlock(&layout_lock);
    return copy;
}

void qemu_loadvm_set_commit_hook(void (*hook)(void *opaque), void *opaque)
{
    commit_hook = hook;
    commit_hook_opaque = opaque;
}

void qemu_savevm_set_carried_hook(bool (*hook)(StreamLayout *copy,
                                               void *opaque),
                                  void *opaque)
{
    carried_hook = hook;
    carried_hook_opaque = opaque;
}

/* The carried sections as they stand now: the hook may change a copy
 * (state that moved while illan held the machine), which then is the
 * machine's. */
static StreamLayout *carried_now(void)
{
    StreamLayout *l = layout_get(), *copy;

    if (!l || !carried_hook) {
        return l;
    }
    copy = stream_layout_copy(l);
    stream_layout_unref(l);
    if (carried_hook(copy, carried_hook_opaque)) {
        layout_set(copy);
    }
    return copy;
}

SaveVMImages *qemu_savevm_capture(void)
{
    SaveVMImages *s = g_new0(SaveVMImages, 1);

    s->devices = g_array_new(FALSE, FALSE, sizeof(SavedDevice));
    s->layout = carried_now();
    for (guint i = 0; entries && i < entries->len; i++) {
        SaveStateEntry *se = g_ptr_array_index(entries, i);
        SavedDevice d = { g_strdup(se->idstr), se->instance_id,
                          se->section_id, se->vmsd, se->ops,
                          g_malloc0(se->ops->size) };

        se->ops->capture(se->obj, d.image);
        g_array_append_val(s->devices, d);
    }
    return s;
}

void qemu_savevm_images_free(SaveVMImages *s)
{
    if (!s) {
        return;
    }
    for (guint i = 0; i < s->devices->len; i++) {
        SavedDevice *d = &g_array_index(s->devices, SavedDevice, i);

        if (d->ops->release) {
            d->ops->release(d->image);
        }
        g_free(d->image);
        g_free(d->idstr);
    }
    g_array_free(s->devices, TRUE);
    stream_layout_unref(s->layout);
    g_free(s);
}

static void save_device(QEMUFile *f, const SavedDevice *d, uint32_t id,
                        JsonWriter *desc)
{
    if (!d->vmsd->needed || d->vmsd->needed(d->image)) {
        trace_savevm_section_start(d->idstr, id);
        put_section_header(f, QEMU_VM_SECTION_FULL, id, d->idstr,
                           d->instance_id, d->vmsd->version_id);
        json_writer_start_object(desc, NULL);
        json_writer_str(desc, "name", d->idstr);
        json_writer_int(desc, "instance_id", d->instance_id);
        vmstate_save_state(f, d->vmsd, d->image, desc);
        json_writer_end_object(desc);
        put_section_footer(f, id);
        trace_savevm_section_end(d->idstr, id, 0);
    }
}

/* Writing a stream for a machine that carries another's sections: they
 * go where they were, with their ids, and illan's own take the ids the
 * stream gave them; any other of illan's go after, numbered above. */
typedef struct CarriedSave {
    QEMUFile *f;
    JsonWriter *desc;
    const SaveVMImages *images;
    bool *written;              /* per device */
} CarriedSave;

static int saved_device_index(const SaveVMImages *images, const char *idstr,
                              uint32_t instance)
{
    for (guint i = 0; i < images->devices->len; i++) {
        SavedDevice *d = &g_array_index(images->devices, SavedDevice, i);

        if (d->instance_id == instance && !strcmp(d->idstr, idstr)) {
            return i;
        }
    }
    return -1;
}

static void put_modelled(void *opaque, const char *idstr, uint32_t instance,
                         uint32_t section_id)
{
    CarriedSave *cs = opaque;
    int i = saved_device_index(cs->images, idstr, instance);

    if (i >= 0) {
        save_device(cs->f, &g_array_index(cs->images->devices, SavedDevice,
                                          i), section_id, cs->desc);
        cs->written[i] = true;
    }
}

static void put_carried(void *opaque, const char *idstr, uint32_t instance,
                        uint32_t version, uint32_t section_id, GBytes *body,
                        const char *desc_json)
{
    CarriedSave *cs = opaque;
    gsize len;
    const void *data = g_bytes_get_data(body, &len);

    put_section_header(cs->f, QEMU_VM_SECTION_FULL, section_id, idstr,
                       instance, version);
    qemu_put_buffer(cs->f, data, len);
    put_section_footer(cs->f, section_id);
    json_writer_raw(cs->desc, NULL, desc_json);
}

static void save_devices(QEMUFile *f, const SaveVMImages *images,
                         JsonWriter *desc)
{
    static const StreamLayoutVisitor visit = { put_modelled, put_carried };
    g_autofree bool *written = g_new0(bool, images->devices->len);
    CarriedSave cs = { f, desc, images, written };
    uint32_t next_id = images->layout
                       ? stream_layout_max_id(images->layout) + 1 : 0;

    if (images->layout) {
        stream_layout_visit_full(images->layout, &visit, &cs);
    }
    for (guint i = 0; i < images->devices->len; i++) {
        SavedDevice *d = &g_array_index(images->devices, SavedDevice, i);

        if (!written[i]) {
            save_device(f, d, images->layout ? next_id++ : d->section_id,
                        desc);
        }
    }
}

/* QEMU's analyzer finds the description by searching back for the last
 * NUL and then the first '{'; a length byte of '{' after the length's
 * last NUL would fool it. */
static bool vmdesc_len_confuses_analyzer(uint32_t len)
{
    uint8_t be[4];
    int start = 0;

    stn_be_p(be, 4, len);
    for (int i = 0; i < 4; i++) {
        if (be[i] == 0) {
            start = i + 1;
        }
    }
    for (int i = start; i < 4; i++) {
        if (be[i] == '{') {
            return true;
        }
    }
    return false;
}

static void put_vmdesc(QEMUFile *f, JsonWriter *desc)
{
    g_autoptr(GString) json = g_string_new(json_writer_text(desc));

    while (vmdesc_len_confuses_analyzer(json->len)) {
        g_string_append_c(json, ' ');
    }
    qemu_put_byte(f, QEMU_VM_VMDESCRIPTION);
    qemu_put_be32(f, json->len);
    qemu_put_buffer(f, json->str, json->len);
}

struct SaveVMStream {
    QEMUFile *f;
    JsonWriter *desc;
    StreamLayout *layout;       /* what the machine carries, or NULL */
    uint32_t ram_id;
};

SaveVMStream *qemu_savevm_begin(QEMUFile *f, const char *machine_type,
                                GuestRam *ram)
{
    SaveVMStream *s = g_new0(SaveVMStream, 1);
    ConfigImage config = { .len = strlen(machine_type),
                           .name = (char *)machine_type };

    trace_savevm_state_setup();
    s->f = f;
    s->desc = json_writer_new(false);
    s->layout = layout_get();
    if (!s->layout || !stream_layout_ram_id(s->layout, &s->ram_id)) {
        s->ram_id = RAM_SECTION_ID;
    }
    qemu_put_be32(f, QEMU_VM_FILE_MAGIC);
    qemu_put_be32(f, QEMU_VM_FILE_VERSION);
    qemu_put_byte(f, QEMU_VM_CONFIGURATION);
    json_writer_start_object(s->desc, NULL);
    json_writer_start_object(s->desc, "configuration");
    vmstate_save_state(f, &vmstate_configuration, &config, s->desc);
    json_writer_end_object(s->desc);
    json_writer_int(s->desc, "page_size", MIGRATION_PAGE_SIZE);
    json_writer_start_array(s->desc, "devices");
    put_section_header(f, QEMU_VM_SECTION_START, s->ram_id,
                       RAM_SECTION_NAME, 0, RAM_SECTION_VERSION);
    ram_save_setup(f, ram);
    put_section_footer(f, s->ram_id);
    if (s->layout) {
        stream_layout_put_iterative(s->layout, f, true);
    }
    return s;
}

void qemu_savevm_ram_part_open(SaveVMStream *s, bool last)
{
    trace_savevm_section_start(RAM_SECTION_NAME, s->ram_id);
    put_section_header(s->f, last ? QEMU_VM_SECTION_END
                                  : QEMU_VM_SECTION_PART,
                       s->ram_id, NULL, 0, 0);
}

void qemu_savevm_ram_part_close(SaveVMStream *s)
{
    ram_save_eos(s->f);
    put_section_footer(s->f, s->ram_id);
    trace_savevm_section_end(RAM_SECTION_NAME, s->ram_id, 0);
}

void qemu_savevm_abandon(SaveVMStream *s)
{
    if (s) {
        json_writer_free(s->desc);
        stream_layout_unref(s->layout);
        g_free(s);
    }
}

bool qemu_savevm_finish(SaveVMStream *s, const SaveVMImages *images,
                        GError **errp)
{
    bool ok;

    if (!s->layout != !images->layout) {
        g_set_error(errp, ILLAN_ERROR, 0, "the machine was reset while it "
                    "migrated, and what it carried for a guest taken over "
                    "from QEMU went with it: migrate again");
        qemu_savevm_abandon(s);
        return false;
    }
    if (s->layout) {
        stream_layout_put_iterative(s->layout, s->f, false);
    }
    save_devices(s->f, images, s->desc);
    qemu_put_byte(s->f, QEMU_VM_EOF);
    json_writer_end_array(s->desc);
    json_writer_end_object(s->desc);
    put_vmdesc(s->f, s->desc);
    ok = qemu_file_check(s->f, errp);
    if (!ok) {
        g_prefix_error(errp, "writing the stream: ");
    }
    qemu_savevm_abandon(s);
    return ok;
}

/* Stopped, so the RAM goes in one part and the end part is empty. */
bool qemu_savevm_state(QEMUFile *f, const char *machine_type, GuestRam *ram,
                       RamStats *stats, GError **errp)
{
    SaveVMImages *images = qemu_savevm_capture();
    SaveVMStream *s;
    RamSaver *rs;
    bool ok;

    *stats = (RamStats){ 0 };
    s = qemu_savevm_begin(f, machine_type, ram);
    rs = ram_saver_new(f, ram, stats);
    ram_saver_mark_all(rs);
    qemu_savevm_ram_part_open(s, false);
    ram_saver_begin_part(rs);
    ram_saver_send(rs, UINT64_MAX);
    qemu_savevm_ram_part_close(s);
    trace_savevm_state_complete_precopy();
    qemu_savevm_ram_part_open(s, true);
    qemu_savevm_ram_part_close(s);
    ram_saver_free(rs);
    ok = qemu_savevm_finish(s, images, errp);
    qemu_savevm_images_free(images);
    return ok;
}

/* Load. */

static SaveStateEntry *find_entry(const char *idstr, uint32_t instance_id)
{
    for (guint i = 0; entries && i < entries->len; i++) {
        SaveStateEntry *se = g_ptr_array_index(entries, i);

        if (!strcmp(se->idstr, idstr) && se->instance_id == instance_id) {
            return se;
        }
    }
    return NULL;
}

void qemu_loadvm_commit(bool commit)
{
    StreamLayout *loaded;

    g_mutex_lock(&layout_lock);
    loaded = g_steal_pointer(&pending_layout);
    g_mutex_unlock(&layout_lock);
    if (commit) {
        layout_set(loaded);
    }
    stream_layout_unref(loaded);
    if (commit && commit_hook) {
        commit_hook(commit_hook_opaque);
    }
    for (guint i = 0; entries && i < entries->len; i++) {
        SaveStateEntry *se = g_ptr_array_index(entries, i);

        if (!se->image) {
            continue;
        }
        if (commit) {
            se->ops->commit(se->obj, se->image);
        }
        if (se->ops->release) {
            se->ops->release(se->image);
        }
        g_clear_pointer(&se->image, g_free);
    }
}

static bool check_header(QEMUFile *f, GError **errp)
{
    uint32_t magic = qemu_get_be32(f), version = qemu_get_be32(f);

    if (!qemu_file_check(f, errp)) {
        return false;
    }
    if (magic != QEMU_VM_FILE_MAGIC) {
        g_set_error(errp, ILLAN_ERROR, 0, "not a migration stream (magic "
                    "0x%08x, expected 0x%08x \"QEVM\")", magic,
                    QEMU_VM_FILE_MAGIC);
        return false;
    }
    if (version != QEMU_VM_FILE_VERSION) {
        g_set_error(errp, ILLAN_ERROR, 0, version == QEMU_VM_FILE_VERSION_COMPAT
                    ? "migration stream version %u is obsolete (expected %u)"
                    : "unsupported migration stream version %u (expected %u)",
                    version, QEMU_VM_FILE_VERSION);
        return false;
    }
    return true;
}

static bool load_configuration(QEMUFile *f, const char *machine_type,
                               GError **errp)
{
    ConfigImage config = { .local = machine_type };
    uint8_t type = qemu_get_byte(f);
    bool ok;

    if (!qemu_file_check(f, errp)) {
        return false;
    }
    if (type != QEMU_VM_CONFIGURATION) {
        g_set_error(errp, ILLAN_ERROR, 0, "configuration section missing "
                    "(got section type 0x%02x)", type);
        return false;
    }
    ok = vmstate_load_state(f, &vmstate_configuration, &config, 0, errp) &&
         qemu_file_check(f, errp);
    g_free(config.name);
    if (!ok) {
        g_prefix_error(errp, "configuration: ");
    }
    return ok;
}

static bool check_footer(QEMUFile *f, uint32_t section_id, GError **errp)
{
    uint8_t marker = qemu_get_byte(f);
    uint32_t id = qemu_get_be32(f);

    if (!qemu_file_check(f, errp)) {
        return false;
    }
    if (marker != QEMU_VM_SECTION_FOOTER) {
        g_set_error(errp, ILLAN_ERROR, 0, "missing section footer (got 0x%02x "
                    "where 0x%02x belongs: the section holds more or less "
                    "than this build reads)", marker, QEMU_VM_SECTION_FOOTER);
        return false;
    }
    if (id != section_id) {
        g_set_error(errp, ILLAN_ERROR, 0, "mismatched section id in footer "
                    "(%u, header said %u)", id, section_id);
        return false;
    }
    return true;
}

/* Loader state across sections. */
typedef struct LoadState {
    QEMUFile *f;                /* the channel, then the held bytes */
    QEMUFile *held;             /* owned, once holding */
    size_t held_size;
    GuestRam *ram;
    bool ram_started;
    uint32_t ram_section_id;
    StreamLayout *layout;
    VMDesc *desc;               /* once holding */
    size_t desc_start;          /* where the description's record begins */
    unsigned full_sections;     /* FULL sections so far */
} LoadState;


static bool load_device(LoadState *ls, SaveStateEntry *se, uint32_t version,
                        GError **errp)
{
    if (se->image) {
        g_set_error(errp, ILLAN_ERROR, 0, "the section appears twice");
        return false;
    }
    trace_vmstate_load(se->idstr, se->vmsd->name);
    se->image = g_malloc0(se->ops->size);
    se->ops->capture(se->obj, se->image);
    return vmstate_load_state(ls->f, se->vmsd, se->image,
                              MIN(version, (uint32_t)INT32_MAX), errp);
}

/*
 * From the first FULL section illan does not model, the rest of the
 * stream is read into memory: only the description at its end says how
 * long that section is.  Parsing goes on from the held bytes.
 */
static bool hold_rest(LoadState *ls, GError **errp)
{
    g_autoptr(GBytes) rest = qemu_file_read_to_end(ls->f, HOLD_MAX_LEN,
                                                   &held_bytes);
    gsize size;
    const uint8_t *data;
    g_autoptr(GError) why = NULL;

    if (!rest) {
        qemu_file_check(ls->f, errp);
        g_prefix_error(errp, "illan does not model it, and holding the "
                       "stream from here: ");
        return false;
    }
    data = g_bytes_get_data(rest, &size);
    ls->desc = vmdesc_find(rest, VMDESC_PARSE_MAX_LEN, &ls->desc_start,
                           &why);
    if (!ls->desc && !g_error_matches(why, ILLAN_ERROR, VMDESC_ABSENT)) {
        g_propagate_prefixed_error(errp, g_steal_pointer(&why),
                                   "illan does not model it, and the "
                                   "stream's description is bad: ");
        return false;
    }
    if (!ls->desc) {
        /* A stream QEMU wrote without the description ends with the
         * last section's footer and the EOF marker. */
        if (size >= 6 && data[size - 1] == QEMU_VM_EOF &&
            data[size - 6] == QEMU_VM_SECTION_FOOTER) {
            g_set_error(errp, ILLAN_ERROR, 0, "illan does not model it and "
                        "the stream has no VM description to carry it by "
                        "(QEMU's -machine suppress-vmdesc=on); start the "
                        "source without suppress-vmdesc");
        } else {
            g_set_error(errp, ILLAN_ERROR, 0, "illan does not model it, and "
                        "the stream ends at byte %" G_GUINT64_FORMAT
                        " without the EOF marker and VM description that "
                        "close it (truncated?): %s",
                        qemu_file_transferred(ls->f), why->message);
        }
        return false;
    }
    ls->held = qemu_file_new_from_bytes(rest);
    ls->held_size = size;
    ls->f = ls->held;
    return true;
}

/* The FULL section's length, from its entry in the description, which
 * must be the same section. */
static bool described_length(LoadState *ls, const char *idstr,
                             uint32_t instance, uint64_t *len, char **json,
                             GError **errp)
{
    const char *name;
    uint32_t inst;

    if (!vmdesc_section(ls->desc, ls->full_sections - 1, &name, &inst, len,
                        json, errp)) {
        return false;
    }
    if (strcmp(name, idstr) || inst != instance) {
        g_clear_pointer(json, g_free);
        g_set_error(errp, ILLAN_ERROR, 0, "the VM description does not cover "
                    "it (its entry %u is '%s' instance %u)",
                    ls->full_sections - 1, name, inst);
        return false;
    }
    return true;
}

static bool carry_full(LoadState *ls, const char *idstr, uint32_t instance,
                       uint32_t version, uint32_t id, GError **errp)
{
    g_autofree char *json = NULL;
    g_autofree uint8_t *body = NULL;
    g_autoptr(GBytes) bytes = NULL;
    uint64_t len;

    if (!described_length(ls, idstr, instance, &len, &json, errp)) {
        return false;
    }
    if (len > ls->held_size - qemu_file_transferred(ls->f)) {
        g_set_error(errp, ILLAN_ERROR, 0, "its description says %"
                    G_GUINT64_FORMAT " bytes, more than the stream holds",
                    len);
        return false;
    }
    body = g_malloc(len);
    qemu_get_buffer(ls->f, body, len);
    if (!qemu_file_check(ls->f, errp)) {
        return false;
    }
    bytes = g_bytes_new_take(g_steal_pointer(&body), len);
    stream_layout_add_carried(ls->layout, idstr, instance, version, id,
                              bytes, json);
    return true;
}

/* A modelled section in a described stream: what illan read must be
 * what the description says QEMU wrote. */
static bool load_described(LoadState *ls, SaveStateEntry *se,
                           uint32_t version, GError **errp)
{
    g_autofree char *json = NULL;
    uint64_t len, start = qemu_file_transferred(ls->f), read;

    if (!described_length(ls, se->idstr, se->instance_id, &len, &json,
                          errp) ||
        !load_device(ls, se, version, errp)) {
        return false;
    }
    read = qemu_file_transferred(ls->f) - start;
    if (read != len) {
        g_set_error(errp, ILLAN_ERROR, 0, "illan read %" G_GUINT64_FORMAT
                    " bytes where the stream's VM description says %"
                    G_GUINT64_FORMAT, read, len);
        return false;
    }
    return true;
}

static bool load_full(LoadState *ls, const char *idstr, uint32_t instance,
                      uint32_t version, uint32_t id, GError **errp)
{
    SaveStateEntry *se = find_entry(idstr, instance);

    ls->full_sections++;
    if (!se && !ls->desc && !hold_rest(ls, errp)) {
        return false;
    }
    if (se) {
        stream_layout_add_modelled(ls->layout, idstr, instance, id);
        return ls->desc ? load_described(ls, se, version, errp)
                        : load_device(ls, se, version, errp);
    }
    return carry_full(ls, idstr, instance, version, id, errp);
}

static bool carry_iterative(LoadState *ls, uint8_t type, const char *idstr,
                            uint32_t instance, uint32_t version, uint32_t id,
                            GError **errp)
{
    g_autoptr(GByteArray) body = g_byte_array_new();
    g_autoptr(GBytes) bytes = NULL;
    uint64_t carried = stream_layout_carried_bytes(ls->layout);

    /* A source could send hash table chunks without end. */
    if (!htab_record_read(ls->f, body, HOLD_MAX_LEN - MIN(carried,
                                                         HOLD_MAX_LEN),
                          errp)) {
        return false;
    }
    bytes = g_byte_array_free_to_bytes(g_steal_pointer(&body));
    stream_layout_add_iterative(ls->layout, type, idstr, instance, version,
                                id, bytes);
    return true;
}

static bool load_ram_start(LoadState *ls, uint32_t id, uint32_t version,
                           GError **errp)
{
    if (version != RAM_SECTION_VERSION) {
        g_set_error(errp, ILLAN_ERROR, 0, "version %u is not %u, the one "
                    "this build reads", version, RAM_SECTION_VERSION);
        return false;
    }
    ls->ram_started = true;
    ls->ram_section_id = id;
    stream_layout_set_ram_id(ls->layout, id);
    return ram_load(ls->f, ls->ram, true, errp);
}

/* For a device of a type this machine has at another unit address
 * ("l-lan@71000002/spapr_llan" where the device here is at 71000000):
 * the section it has, and the reg= that would match. */
static char *same_type_hint(const char *idstr)
{
    const char *slash = strrchr(idstr, '/'), *at = strchr(idstr, '@');

    for (guint i = 0; slash && entries && i < entries->len; i++) {
        SaveStateEntry *se = g_ptr_array_index(entries, i);
        const char *other = strrchr(se->idstr, '/');

        if (other && !strcmp(other, slash)) {
            return at && at < slash
                   ? g_strdup_printf(" (it has '%s': give its -device "
                                     "reg=0x%.*s)", se->idstr,
                                     (int)(slash - at - 1), at + 1)
                   : g_strdup_printf(" (it has '%s')", se->idstr);
        }
    }
    return g_strdup("");
}

static bool load_section_start(LoadState *ls, uint8_t type, GError **errp)
{
    uint32_t id = qemu_get_be32(ls->f), instance, version;
    char idstr[256];
    bool ok;

    qemu_get_counted_string(ls->f, idstr);
    instance = qemu_get_be32(ls->f);
    version = qemu_get_be32(ls->f);
    if (!qemu_file_check(ls->f, errp)) {
        g_prefix_error(errp, "section header: ");
        return false;
    }
    trace_qemu_loadvm_state_section_startfull(id, idstr, instance, version);
    if (type == QEMU_VM_SECTION_FULL && !find_entry(idstr, instance) &&
        section_of_user_type(idstr)) {
        g_autofree char *hint = same_type_hint(idstr);

        g_set_error(errp, ILLAN_ERROR, 0, "unknown section '%s' instance %u "
                    "(type 0x%02x): this machine has no such device%s",
                    idstr, instance, type, hint);
        return false;
    }
    if (type == QEMU_VM_SECTION_FULL) {
        ok = load_full(ls, idstr, instance, version, id, errp);
    } else if (!strcmp(idstr, RAM_SECTION_NAME) && instance == 0 &&
               !ls->ram_started) {
        ok = load_ram_start(ls, id, version, errp);
    } else if (!strcmp(idstr, HTAB_SECTION_NAME) &&
               !stream_layout_has_iterative(ls->layout, id)) {
        ok = carry_iterative(ls, type, idstr, instance, version, id, errp);
    } else {
        g_set_error(errp, ILLAN_ERROR, 0, "an iterative section illan "
                    "neither models nor can carry (only '%s' and '%s' are "
                    "read as they come)", RAM_SECTION_NAME,
                    HTAB_SECTION_NAME);
        ok = false;
    }
    if (!ok || !check_footer(ls->f, id, errp)) {
        g_prefix_error(errp, "section '%s' instance %u: ", idstr, instance);
        return false;
    }
    return true;
}

static bool load_section_part(LoadState *ls, uint8_t type, GError **errp)
{
    uint32_t id = qemu_get_be32(ls->f);
    bool ok;

    if (!qemu_file_check(ls->f, errp)) {
        return false;
    }
    trace_qemu_loadvm_state_section_partend(id);
    if (ls->ram_started && id == ls->ram_section_id) {
        ok = ram_load(ls->f, ls->ram, false, errp) &&
             check_footer(ls->f, id, errp);
        if (!ok) {
            g_prefix_error(errp, "section '%s': ", RAM_SECTION_NAME);
        }
        return ok;
    }
    if (stream_layout_has_iterative(ls->layout, id)) {
        ok = carry_iterative(ls, type, NULL, 0, 0, id, errp) &&
             check_footer(ls->f, id, errp);
        if (!ok) {
            g_prefix_error(errp, "section '%s': ", HTAB_SECTION_NAME);
        }
        return ok;
    }
    g_set_error(errp, ILLAN_ERROR, 0, "part of section id %u, which was "
                "never started", id);
    return false;
}

static bool load_command(QEMUFile *f, GError **errp)
{
    uint16_t cmd = qemu_get_be16(f), len = qemu_get_be16(f);

    if (!qemu_file_check(f, errp)) {
        return false;
    }
    if (cmd != MIG_CMD_SWITCHOVER_START || len != 0) {
        g_set_error(errp, ILLAN_ERROR, 0, "unsupported migration command %u "
                    "(length %u)", cmd, len);
        return false;
    }
    return true;
}

/* The description after EOF is for tools; it is skipped if present,
 * and one cut short is no error, as in QEMU.  A shutdown while it is
 * read interrupts the load as it would one byte earlier. */
static bool skip_vmdesc(QEMUFile *f, GError **errp)
{
    if (qemu_peek_byte(f, 0) == QEMU_VM_VMDESCRIPTION) {
        uint32_t len;

        qemu_get_byte(f);
        len = qemu_get_be32(f);
        qemu_file_skip(f, MIN(len, VMDESC_MAX_LEN));
    }
    if (qemu_file_cancelled(f) && !qemu_file_check(f, errp)) {
        g_prefix_error(errp, "in the VM description: ");
        return false;
    }
    return true;
}

/* The description that was found must be what follows the EOF marker:
 * else the sections held more or less than it said. */
static bool check_held_end(LoadState *ls, GError **errp)
{
    if (qemu_file_transferred(ls->f) != ls->desc_start) {
        g_set_error(errp, ILLAN_ERROR, 0, "the EOF marker is %"
                    G_GUINT64_FORMAT " bytes into the held stream, but the "
                    "VM description begins at %zu",
                    qemu_file_transferred(ls->f), ls->desc_start);
        return false;
    }
    return true;
}

static bool load_sections(LoadState *ls, GError **errp)
{
    for (;;) {
        uint64_t offset = qemu_file_transferred(ls->f);
        uint8_t type = qemu_get_byte(ls->f);
        bool ok;

        if (!qemu_file_check(ls->f, errp)) {
            g_prefix_error(errp, "before the EOF marker: ");
            return false;
        }
        trace_qemu_loadvm_state_section(type);
        switch (type) {
        case QEMU_VM_EOF:
            return ls->desc ? check_held_end(ls, errp)
                            : skip_vmdesc(ls->f, errp);
        case QEMU_VM_SECTION_START:
        case QEMU_VM_SECTION_FULL:
            ok = load_section_start(ls, type, errp);
            break;
        case QEMU_VM_SECTION_PART:
        case QEMU_VM_SECTION_END:
            ok = load_section_part(ls, type, errp);
            break;
        case QEMU_VM_COMMAND:
            ok = load_command(ls->f, errp);
            break;
        default:
            g_set_error(errp, ILLAN_ERROR, 0, "unknown section type 0x%02x "
                        "at byte %" G_GUINT64_FORMAT, type, offset);
            return false;
        }
        if (!ok) {
            return false;
        }
    }
}

/* Objects that cannot do without their section (a built-in guest,
 * whose CPU state only the stream has). */
static bool check_absent_sections(GError **errp)
{
    for (guint i = 0; entries && i < entries->len; i++) {
        SaveStateEntry *se = g_ptr_array_index(entries, i);

        if (!se->image && se->ops->absent && !se->ops->absent(se->obj, errp)) {
            return false;
        }
    }
    return true;
}

static bool check_images_of(const VMStateImageOps *ops, GError **errp)
{
    g_autoptr(GPtrArray) images = g_ptr_array_new();

    for (guint i = 0; i < entries->len; i++) {
        SaveStateEntry *se = g_ptr_array_index(entries, i);

        if (se->image && se->ops == ops) {
            g_ptr_array_add(images, se->image);
        }
    }
    return ops->check_together(images->pdata, images->len, errp);
}

static bool check_images_together(GError **errp)
{
    g_autoptr(GHashTable) checked = g_hash_table_new(NULL, NULL);

    for (guint i = 0; entries && i < entries->len; i++) {
        SaveStateEntry *se = g_ptr_array_index(entries, i);

        if (!se->image || !se->ops->check_together ||
            !g_hash_table_add(checked, (gpointer)se->ops)) {
            continue;
        }
        if (!check_images_of(se->ops, errp)) {
            return false;
        }
    }
    return true;
}

static bool (*carried_check)(const StreamLayout *l, void *opaque,
                             GError **errp);
static void *carried_check_opaque;

void qemu_loadvm_set_carried_check(bool (*check)(const StreamLayout *l,
                                                 void *opaque,
                                                 GError **errp),
                                   void *opaque)
{
    carried_check = check;
    carried_check_opaque = opaque;
}

static bool check_carried(const StreamLayout *l, GError **errp)
{
    return !stream_layout_carries(l) || !carried_check ||
           carried_check(l, carried_check_opaque, errp);
}

bool qemu_loadvm_read(QEMUFile *f, const char *machine_type, GuestRam *ram,
                      GError **errp)
{
    LoadState ls = { .f = f, .ram = ram, .layout = stream_layout_new() };
    bool ok;

    __atomic_store_n(&held_bytes, 0, __ATOMIC_RELAXED);
    ok = check_header(f, errp) &&
         load_configuration(f, machine_type, errp) &&
         load_sections(&ls, errp) && check_absent_sections(errp) &&
         check_images_together(errp) && check_carried(ls.layout, errp);
    qemu_file_free(ls.held);
    vmdesc_free(ls.desc);
    g_mutex_lock(&layout_lock);
    g_clear_pointer(&pending_layout, stream_layout_unref);
    if (ok && stream_layout_carries(ls.layout)) {
        pending_layout = g_steal_pointer(&ls.layout);
    }
    g_mutex_unlock(&layout_lock);
    stream_layout_unref(ls.layout);
    return ok;
}

bool qemu_loadvm_state(QEMUFile *f, const char *machine_type, GuestRam *ram,
                       GError **errp)
{
    bool ok = qemu_loadvm_read(f, machine_type, ram, errp);

    qemu_loadvm_commit(ok);
    return ok;
}

/* The stream's first records without taking them: header,
 * configuration, then the RAM section's setup with its block list.
 * Anything unexpected leaves the answers as they were; the load that
 * follows says what is wrong. */
void qemu_loadvm_peek(QEMUFile *f, char **machine_type, uint64_t *ram_size)
{
    uint8_t b[512];
    size_t n = qemu_peek_buffer(f, b, sizeof(b), 0), at;
    size_t name_len;

    if (n < 13 || ldn_be_p(b, 4) != QEMU_VM_FILE_MAGIC ||
        ldn_be_p(b + 4, 4) != QEMU_VM_FILE_VERSION ||
        b[8] != QEMU_VM_CONFIGURATION) {
        return;
    }
    name_len = ldn_be_p(b + 9, 4);
    if (name_len == 0 || name_len > 255 || 13 + name_len > n) {
        return;
    }
    *machine_type = g_strndup((const char *)b + 13, name_len);
    at = 13 + name_len;
    /* START, id, "ram", instance, version, then the size word and the
     * first block's name and length. */
    if (at + 1 + 4 + 4 + 8 + 8 > n || b[at] != QEMU_VM_SECTION_START ||
        b[at + 5] != strlen(RAM_SECTION_NAME) ||
        memcmp(b + at + 6, RAM_SECTION_NAME, strlen(RAM_SECTION_NAME))) {
        return;
    }
    at += 6 + strlen(RAM_SECTION_NAME) + 8 + 8;
    if (at + 1 > n || at + 1 + b[at] + 8 > n ||
        b[at] != strlen(RAM_BLOCK_NAME) ||
        memcmp(b + at + 1, RAM_BLOCK_NAME, b[at])) {
        return;
    }
    *ram_size = ldn_be_p(b + at + 1 + b[at], 8);
}

/* -dump-vmstate. */

static gint compare_types(gconstpointer a, gconstpointer b)
{
    const VMStateType *x = *(const VMStateType *const *)a;
    const VMStateType *y = *(const VMStateType *const *)b;

    return strcmp(x->name, y->name);
}

bool qemu_dump_vmstate(const char *path, const char *machine_type,
                       GError **errp)
{
    JsonWriter *w = json_writer_new(true);
    g_autofree char *text = NULL;
    bool ok;

    json_writer_start_object(w, NULL);
    json_writer_start_object(w, "vmschkmachine");
    json_writer_str(w, "Name", machine_type);
    json_writer_end_object(w);
    if (types) {
        g_ptr_array_sort(types, compare_types);
    }
    for (guint i = 0; types && i < types->len; i++) {
        const VMStateType *t = g_ptr_array_index(types, i);

        json_writer_start_object(w, t->name);
        json_writer_str(w, "Name", t->name);
        json_writer_int(w, "version_id", t->vmsd->version_id);
        json_writer_int(w, "minimum_version_id",
                        t->vmsd->minimum_version_id);
        json_writer_start_object(w, "Description");
        vmstate_dump_description(w, t->vmsd);
        json_writer_end_object(w);
        json_writer_end_object(w);
    }
    json_writer_end_object(w);
    text = g_strconcat(json_writer_text(w), "\n", NULL);
    json_writer_free(w);
    ok = g_file_set_contents(path, text, -1, errp);
    if (!ok) {
        g_prefix_error(errp, "cannot write: ");
    }
    return ok;
}
