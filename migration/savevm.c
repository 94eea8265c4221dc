/*
 * The stream.  Sections are written in registration order with ids
 * handed out at registration, as QEMU does; the description JSON is
 * built alongside the bytes by the same walk that writes them, so the
 * two cannot disagree.
 */
#include "migration/savevm.h"
#include "migration/vmstate.h"
#include "qemu/bswap.h"
#include "qemu/json-writer.h"
#include "qemu/option.h"

#include <errno.h>
#include <string.h>

#define RAM_SECTION_ID  0
/* Nothing this build writes is close; the limit keeps hostile input from
 * making us skip gigabytes. */
#define VMDESC_MAX_LEN  (64u << 20)

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
} VMStateType;

static GPtrArray *entries;      /* SaveStateEntry *, in registration order */
static GPtrArray *types;        /* VMStateType * */
static uint32_t next_section_id = RAM_SECTION_ID + 1;

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

void vmstate_register_type(const char *type_name,
                           const VMStateDescription *vmsd)
{
    VMStateType *t = g_new0(VMStateType, 1);

    if (!types) {
        types = g_ptr_array_new();
    }
    t->name = type_name;
    t->vmsd = vmsd;
    g_ptr_array_add(types, t);
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
};

SaveVMImages *qemu_savevm_capture(void)
{
    SaveVMImages *s = g_new0(SaveVMImages, 1);

    s->devices = g_array_new(FALSE, FALSE, sizeof(SavedDevice));
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
    g_free(s);
}

static void save_device(QEMUFile *f, const SavedDevice *d, JsonWriter *desc)
{
    if (!d->vmsd->needed || d->vmsd->needed(d->image)) {
        put_section_header(f, QEMU_VM_SECTION_FULL, d->section_id,
                           d->idstr, d->instance_id, d->vmsd->version_id);
        json_writer_start_object(desc, NULL);
        json_writer_str(desc, "name", d->idstr);
        json_writer_int(desc, "instance_id", d->instance_id);
        vmstate_save_state(f, d->vmsd, d->image, desc);
        json_writer_end_object(desc);
        put_section_footer(f, d->section_id);
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
};

SaveVMStream *qemu_savevm_begin(QEMUFile *f, const char *machine_type,
                                GuestRam *ram)
{
    SaveVMStream *s = g_new0(SaveVMStream, 1);
    ConfigImage config = { .len = strlen(machine_type),
                           .name = (char *)machine_type };

    s->f = f;
    s->desc = json_writer_new(false);
    qemu_put_be32(f, QEMU_VM_FILE_MAGIC);
    qemu_put_be32(f, QEMU_VM_FILE_VERSION);
    qemu_put_byte(f, QEMU_VM_CONFIGURATION);
    json_writer_start_object(s->desc, NULL);
    json_writer_start_object(s->desc, "configuration");
    vmstate_save_state(f, &vmstate_configuration, &config, s->desc);
    json_writer_end_object(s->desc);
    json_writer_int(s->desc, "page_size", MIGRATION_PAGE_SIZE);
    json_writer_start_array(s->desc, "devices");
    put_section_header(f, QEMU_VM_SECTION_START, RAM_SECTION_ID,
                       RAM_SECTION_NAME, 0, RAM_SECTION_VERSION);
    ram_save_setup(f, ram);
    put_section_footer(f, RAM_SECTION_ID);
    return s;
}

void qemu_savevm_ram_part_open(SaveVMStream *s, bool last)
{
    put_section_header(s->f, last ? QEMU_VM_SECTION_END
                                  : QEMU_VM_SECTION_PART,
                       RAM_SECTION_ID, NULL, 0, 0);
}

void qemu_savevm_ram_part_close(SaveVMStream *s)
{
    ram_save_eos(s->f);
    put_section_footer(s->f, RAM_SECTION_ID);
}

void qemu_savevm_abandon(SaveVMStream *s)
{
    if (s) {
        json_writer_free(s->desc);
        g_free(s);
    }
}

bool qemu_savevm_finish(SaveVMStream *s, const SaveVMImages *images,
                        GError **errp)
{
    bool ok;

    for (guint i = 0; i < images->devices->len; i++) {
        save_device(s->f, &g_array_index(images->devices, SavedDevice, i),
                    s->desc);
    }
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
    QEMUFile *f;
    GuestRam *ram;
    bool ram_started;
    uint32_t ram_section_id;
} LoadState;

static bool load_device(LoadState *ls, SaveStateEntry *se, uint32_t version,
                        GError **errp)
{
    if (se->image) {
        g_set_error(errp, ILLAN_ERROR, 0, "the section appears twice");
        return false;
    }
    se->image = g_malloc0(se->ops->size);
    se->ops->capture(se->obj, se->image);
    return vmstate_load_state(ls->f, se->vmsd, se->image,
                              MIN(version, (uint32_t)INT32_MAX), errp);
}

static bool load_section_start(LoadState *ls, uint8_t type, GError **errp)
{
    uint32_t id = qemu_get_be32(ls->f), instance, version;
    char idstr[256];
    SaveStateEntry *se;

    qemu_get_counted_string(ls->f, idstr);
    instance = qemu_get_be32(ls->f);
    version = qemu_get_be32(ls->f);
    if (!qemu_file_check(ls->f, errp)) {
        g_prefix_error(errp, "section header: ");
        return false;
    }
    if (type == QEMU_VM_SECTION_START && !strcmp(idstr, RAM_SECTION_NAME) &&
        instance == 0 && !ls->ram_started) {
        if (version != RAM_SECTION_VERSION) {
            g_set_error(errp, ILLAN_ERROR, 0, "section 'ram': version %u is "
                        "not %u, the one this build reads", version,
                        RAM_SECTION_VERSION);
            return false;
        }
        ls->ram_started = true;
        ls->ram_section_id = id;
        if (!ram_load(ls->f, ls->ram, true, errp) ||
            !check_footer(ls->f, id, errp)) {
            g_prefix_error(errp, "section 'ram': ");
            return false;
        }
        return true;
    }
    se = type == QEMU_VM_SECTION_FULL ? find_entry(idstr, instance) : NULL;
    if (!se) {
        g_set_error(errp, ILLAN_ERROR, 0, "unknown section '%s' instance %u "
                    "(type 0x%02x): this machine has no such device",
                    idstr, instance, type);
        return false;
    }
    if (!load_device(ls, se, version, errp) ||
        !check_footer(ls->f, id, errp)) {
        g_prefix_error(errp, "section '%s' instance %u: ", idstr, instance);
        return false;
    }
    return true;
}

static bool load_section_part(LoadState *ls, GError **errp)
{
    uint32_t id = qemu_get_be32(ls->f);

    if (!qemu_file_check(ls->f, errp)) {
        return false;
    }
    if (!ls->ram_started || id != ls->ram_section_id) {
        g_set_error(errp, ILLAN_ERROR, 0, "part of section id %u, which was "
                    "never started", id);
        return false;
    }
    if (!ram_load(ls->f, ls->ram, false, errp) ||
        !check_footer(ls->f, id, errp)) {
        g_prefix_error(errp, "section 'ram': ");
        return false;
    }
    return true;
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
        switch (type) {
        case QEMU_VM_EOF:
            return skip_vmdesc(ls->f, errp);
        case QEMU_VM_SECTION_START:
        case QEMU_VM_SECTION_FULL:
            ok = load_section_start(ls, type, errp);
            break;
        case QEMU_VM_SECTION_PART:
        case QEMU_VM_SECTION_END:
            ok = load_section_part(ls, errp);
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

bool qemu_loadvm_read(QEMUFile *f, const char *machine_type, GuestRam *ram,
                      GError **errp)
{
    LoadState ls = { .f = f, .ram = ram };

    return check_header(f, errp) &&
           load_configuration(f, machine_type, errp) &&
           load_sections(&ls, errp) && check_absent_sections(errp) &&
           check_images_together(errp);
}

bool qemu_loadvm_state(QEMUFile *f, const char *machine_type, GuestRam *ram,
                       GError **errp)
{
    bool ok = qemu_loadvm_read(f, machine_type, ram, errp);

    qemu_loadvm_commit(ok);
    return ok;
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
