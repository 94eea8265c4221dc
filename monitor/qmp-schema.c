/*
 * query-qmp-schema (monitor/qmp-schema.h).  The tables below say, in a
 * short notation, what each command and event carries; the builder turns
 * them into QEMU's SchemaInfo list, emitting each type a command or event
 * reaches once.  Members are "name:type", "*name:type" when optional;
 * "[T]" is an array of T.  A command's or event's arguments become an
 * object type of their own, named as QEMU names it ("q_obj_NAME-arg"),
 * but for "=Type": the named object type itself, as QEMU's boxed
 * arguments; "q_empty" is the object with no members.
 */
#include "monitor/qmp-schema.h"
#include "guest/ibmveth-guest.h"
#include "net/net.h"
#include "qemu/module.h"
#include "qemu/qmp-registry.h"

#include <string.h>

typedef struct SchemaCommand {
    const char *name;
    const char *args;       /* members, NULL for none */
    const char *ret;        /* a type, NULL for the empty object */
} SchemaCommand;

typedef struct SchemaEvent {
    const char *name;
    const char *data;       /* members, NULL for none */
} SchemaEvent;

typedef struct SchemaObject {
    const char *name;
    const char *members;
    const char *tag;        /* a union's discriminator member */
    const char *variants;   /* "case:Type ..." */
} SchemaObject;

typedef struct SchemaEnum {
    const char *name;
    const char *values;     /* space-separated */
} SchemaEnum;

static const SchemaCommand commands[] = {
    { "qmp_capabilities", "*enable:[QMPCapability]", NULL },
    { "query-version", NULL, "VersionInfo" },
    { "query-commands", NULL, "[CommandInfo]" },
    { "query-qmp-schema", NULL, "[SchemaInfo]" },
    { "query-status", NULL, "StatusInfo" },
    { "query-name", NULL, "NameInfo" },
    { "query-machines", "*compat-props:bool", "[MachineInfo]" },
    { "query-cpus-fast", NULL, "[CpuInfoFast]" },
    { "stop", NULL, NULL },
    { "cont", NULL, NULL },
    { "system_reset", NULL, NULL },
    { "quit", NULL, NULL },
    { "x-exit-preconfig", NULL, NULL },
    { "query-rx-filter", "*name:str", "[RxFilterInfo]" },
    { "set_link", "name:str up:bool", NULL },
    { "announce-self", "initial:int max:int rounds:int step:int "
      "*interfaces:[str] *id:str", NULL },
    { "netdev_add", "type:str id:str", NULL },
    { "netdev_del", "id:str", NULL },
    { "x-query-net-stats", NULL, "NetStats" },
    { "x-query-guest-stats", NULL, "GuestStatsInfo" },
    { "x-guest-set-mac", "id:str mac:str", NULL },
    { "x-guest-set-mtu", "id:str mtu:int", NULL },
    { "x-guest-set-offloads", "id:str rx-csum:bool tso:bool", NULL },
    { "x-guest-set-link", "id:str up:bool", NULL },
    { "x-guest-add-multicast", "id:str mac:str", NULL },
    { "x-guest-del-multicast", "id:str mac:str", NULL },
    { "qom-list", "path:str", "[ObjectPropertyInfo]" },
    { "qom-get", "path:str property:str", "any" },
    { "qom-set", "path:str property:str value:any", NULL },
    { "qom-list-get", "paths:[str]", "[ObjectPropertiesValues]" },
    { "qom-list-types", "*implements:str *abstract:bool",
      "[ObjectTypeInfo]" },
    { "qom-list-properties", "typename:str", "[ObjectPropertyInfo]" },
    { "device-list-properties", "typename:str", "[ObjectPropertyInfo]" },
    { "object-add", "qom-type:str id:str *size:int", NULL },
    { "object-del", "id:str", NULL },
    { "blockdev-add", "=BlockdevOptions", NULL },
    { "blockdev-del", "node-name:str", NULL },
    { "human-monitor-command", "command-line:str *cpu-index:int", "str" },
    { "pmemsave", "val:int size:int filename:str", NULL },
    { "migrate", "uri:str *detach:bool", NULL },
    { "migrate_cancel", NULL, NULL },
    { "migrate-incoming", "uri:str", NULL },
    { "query-migrate", NULL, "MigrationInfo" },
    { "migrate-set-capabilities",
      "capabilities:[MigrationCapabilityStatus]", NULL },
    { "query-migrate-capabilities", NULL, "[MigrationCapabilityStatus]" },
    { "migrate-set-parameters", "*downtime-limit:int *max-bandwidth:int "
      "*avail-switchover-bandwidth:int", NULL },
    { "query-migrate-parameters", NULL, "MigrationParameters" },
    { "getfd", "fdname:str", NULL },
    { "closefd", "fdname:str", NULL },
    { "trace-event-get-state", "name:str *vcpu:int", "[TraceEventInfo]" },
    { "trace-event-set-state", "name:str enable:bool "
      "*ignore-unavailable:bool *vcpu:int", NULL },
};

static const SchemaEvent events[] = {
    { "STOP", NULL },
    { "RESUME", NULL },
    { "RESET", "guest:bool reason:ShutdownCause" },
    { "SHUTDOWN", "guest:bool reason:ShutdownCause" },
    { "MIGRATION", "status:MigrationStatus" },
    { "MIGRATION_PASS", "pass:int" },
    { "NIC_RX_FILTER_CHANGED", "*name:str path:str" },
    { "NETDEV_LINK_CHANGED", "netdev-id:str state:str detail:str" },
    { "NETDEV_STREAM_CONNECTED", "netdev-id:str addr:any" },
    { "NETDEV_STREAM_DISCONNECTED", "netdev-id:str" },
};

static const SchemaObject objects[] = {
    { "VersionTriple", "major:int minor:int micro:int", NULL, NULL },
    { "VersionInfo", "qemu:VersionTriple package:str", NULL, NULL },
    { "CommandInfo", "name:str", NULL, NULL },
    { "StatusInfo", "running:bool status:RunState", NULL, NULL },
    { "NameInfo", "*name:str", NULL, NULL },
    { "MachineInfo", "name:str *alias:str *is-default:bool cpu-max:int "
      "hotpluggable-cpus:bool numa-mem-supported:bool deprecated:bool "
      "*default-cpu-type:str *default-ram-id:str acpi:bool "
      "*compat-props:[CompatProperty]", NULL, NULL },
    { "CompatProperty", "qom-type:str property:str value:str", NULL, NULL },
    { "CpuInfoFast", "cpu-index:int qom-path:str thread-id:int "
      "target:SysEmuTarget", NULL, NULL },
    { "RxFilterInfo", "name:str promiscuous:bool multicast:RxState "
      "unicast:RxState vlan:RxState broadcast-allowed:bool "
      "multicast-overflow:bool unicast-overflow:bool main-mac:str "
      "vlan-table:[int] unicast-table:[str] multicast-table:[str]",
      NULL, NULL },
    { "NetStats", "nics:[NicStats] netdevs:[NetdevStats]", NULL, NULL },
    /* "device" and "backend" are what the device model or backend type
     * reports about itself (docs/interop/qmp.md). */
    { "NicStats", "name:str model:str netdev:StrOrNull link-up:bool "
      "rx:NetRxStats tx:NetTxStats *device:any", NULL, NULL },
    { "NetdevStats", "name:str type:str nic:StrOrNull rx:NetRxStats "
      "rx-errors:int tx:NetTxStats *backend:any", NULL, NULL },
    { "NetRxStats", "frames:int bytes:int batches:int delivered:int "
      "dropped:NetRxDropped", NULL, NULL },
    { "NetTxStats", "frames:int bytes:int errors:int dropped:int",
      NULL, NULL },
    { "GuestStatsInfo", "guests:[GuestStats] "
      "driver-memory:GuestDriverMemory", NULL, NULL },
    { "GuestDriverMemory", "in-use-bytes:int peak-bytes:int size-bytes:int "
      "refused-frees:int", NULL, NULL },
    /* frames-by-buffer-size is keyed by the pools' buffer sizes. */
    { "GuestStats", "id:str dev:str fwd:str poll:str dma:str rx-frames:int "
      "rx-bytes:int tx-frames:int tx-bytes:int tap-rx-frames:int "
      "rx-invalid:int tx-failed:int replenish-add-failures:int "
      "rx-no-buffer:int wakeups:int woken-late:int resets:int "
      "adapter-resets:int "
      "napi-polls:int offloads:GuestOffloads frames-by-buffer-size:any "
      "buffer-bytes:int memory:GuestMemoryStats reasm:GuestReasmStats "
      "drops:GuestDrops tce-hcalls:GuestTceHcalls "
      "tce-hcalls-per-frame:GuestTceHcallsPerFrame cpu-ns:int "
      "rx-latency:LatencyStats", NULL, NULL },
    { "GuestTceHcalls", "rx:int tx:int", NULL, NULL },
    { "GuestTceHcallsPerFrame", "rx:number tx:number", NULL, NULL },
    /* The quantiles are there once there is a sample. */
    { "LatencyStats", "samples:int *p50-ns:int *p90-ns:int *p99-ns:int "
      "*p99.9-ns:int *max-ns:int", NULL, NULL },
    { "GuestOffloads", "rx-csum:bool large-send:bool rx-csum-good:int "
      "csum-audit:bool rx-csum-audited:int rx-csum-lied:int "
      "rx-large:int tx-csum-offloaded:int tx-large-sends:int "
      "gro-packets:int gro-merged:int gro-csum-checked:int", NULL, NULL },
    { "GuestMemoryStats", "charged-bytes:int peak-bytes:int", NULL, NULL },
    { "GuestReasmStats", "fragments:int fragments-refused:int "
      "datagrams-ok:int datagrams-failed:int timeouts:int", NULL, NULL },
    { "ObjectPropertyInfo", "name:str type:str *description:str "
      "*default-value:any", NULL, NULL },
    { "ObjectPropertyValue", "name:str type:str *value:any", NULL, NULL },
    { "ObjectPropertiesValues", "properties:[ObjectPropertyValue]",
      NULL, NULL },
    { "ObjectTypeInfo", "name:str *abstract:bool *parent:str", NULL, NULL },
    { "MigrationInfo", "*status:MigrationStatus *error-desc:str "
      "*total-time:int *expected-downtime:int *downtime:int "
      "*setup-time:int *ram:MigrationStats "
      "*socket-address:[SocketAddress]", NULL, NULL },
    { "MigrationCapabilityStatus", "capability:MigrationCapability "
      "state:bool", NULL, NULL },
    { "MigrationParameters", "*downtime-limit:int *max-bandwidth:int "
      "*avail-switchover-bandwidth:int", NULL, NULL },
    { "BlockdevOptions", "driver:BlockdevDriver *node-name:str "
      "*read-only:bool *auto-read-only:bool *force-share:bool", "driver",
      "blkdebug:BlockdevOptionsBlkdebug null-aio:BlockdevOptionsNull "
      "null-co:BlockdevOptionsNull" },
    { "BlockdevOptionsBlkdebug", "image:BlockdevOptions *config:str "
      "*align:int", NULL, NULL },
    { "BlockdevOptionsNull", "*size:int *latency-ns:int *read-zeroes:bool",
      NULL, NULL },
    { "SocketAddress", "type:SocketAddressType", "type",
      "inet:InetSocketAddress unix:UnixSocketAddress" },
    { "InetSocketAddress", "host:str port:str *ipv4:bool *ipv6:bool",
      NULL, NULL },
    { "UnixSocketAddress", "path:str", NULL, NULL },
    { "MigrationStats", "transferred:int remaining:int total:int "
      "duplicate:int normal:int normal-bytes:int dirty-pages-rate:int "
      "mbps:number dirty-sync-count:int postcopy-requests:int "
      "page-size:int multifd-bytes:int pages-per-second:int "
      "precopy-bytes:int downtime-bytes:int postcopy-bytes:int "
      "dirty-sync-missed-zero-copy:int", NULL, NULL },
    { "TraceEventInfo", "name:str state:TraceEventState vcpu:bool",
      NULL, NULL },
    { "SchemaInfo", "name:str meta-type:SchemaMetaType *features:[str]",
      "meta-type", "builtin:SchemaInfoBuiltin enum:SchemaInfoEnum "
      "array:SchemaInfoArray object:SchemaInfoObject "
      "alternate:SchemaInfoAlternate command:SchemaInfoCommand "
      "event:SchemaInfoEvent" },
    { "SchemaInfoBuiltin", "json-type:JSONType", NULL, NULL },
    { "SchemaInfoEnum", "members:[SchemaInfoEnumMember] values:[str]",
      NULL, NULL },
    { "SchemaInfoEnumMember", "name:str *features:[str]", NULL, NULL },
    { "SchemaInfoArray", "element-type:str", NULL, NULL },
    { "SchemaInfoObject", "members:[SchemaInfoObjectMember] *tag:str "
      "*variants:[SchemaInfoObjectVariant]", NULL, NULL },
    { "SchemaInfoObjectMember", "name:str type:str *default:any "
      "*features:[str]", NULL, NULL },
    { "SchemaInfoObjectVariant", "case:str type:str", NULL, NULL },
    { "SchemaInfoAlternate", "members:[SchemaInfoAlternateMember]",
      NULL, NULL },
    { "SchemaInfoAlternateMember", "type:str", NULL, NULL },
    { "SchemaInfoCommand", "arg-type:str ret-type:str *allow-oob:bool",
      NULL, NULL },
    { "SchemaInfoEvent", "arg-type:str", NULL, NULL },
};

static const SchemaEnum enums[] = {
    { "QMPCapability", "oob" },
    { "BlockdevDriver", "blkdebug null-aio null-co" },
    { "RunState", "prelaunch running paused shutdown inmigrate postmigrate "
      "finish-migrate" },
    { "ShutdownCause", "host-error host-qmp-quit host-qmp-system-reset "
      "host-signal host-ui" },
    { "MigrationStatus", "none setup active completed failed cancelling "
      "cancelled" },
    { "MigrationCapability", "xbzrle rdma-pin-all auto-converge events "
      "postcopy-ram x-colo release-ram return-path pause-before-switchover "
      "multifd dirty-bitmaps postcopy-blocktime late-block-activate "
      "x-ignore-shared validate-uuid background-snapshot zero-copy-send "
      "postcopy-preempt switchover-ack dirty-limit mapped-ram" },
    { "SocketAddressType", "inet unix" },
    { "RxState", "normal none all" },
    { "TraceEventState", "unavailable disabled enabled" },
    { "SysEmuTarget", "ppc64" },
    { "SchemaMetaType", "builtin enum array object alternate command event" },
    { "JSONType", "string number int boolean null object array value" },
};

static const SchemaEnum alternates[] = {
    { "StrOrNull", "str null" },
};

static const SchemaEnum builtins[] = {
    { "str", "string" }, { "int", "int" }, { "bool", "boolean" },
    { "number", "number" }, { "null", "null" }, { "any", "value" },
};

/* The builder's state: the list, the names already in it, the types
 * referenced but not yet emitted, and the implicit argument objects. */
typedef struct SchemaBuild {
    JsonArray *list;
    GHashTable *emitted;
    GQueue pending;
    GHashTable *implicit;   /* name -> members */
} SchemaBuild;

static JsonObject *entity(const char *name, const char *meta)
{
    JsonObject *o = json_object_new();

    json_object_set_string_member(o, "name", name);
    json_object_set_string_member(o, "meta-type", meta);
    return o;
}

static void want(SchemaBuild *b, const char *type)
{
    if (!g_hash_table_contains(b->emitted, type)) {
        g_queue_push_tail(&b->pending, g_strdup(type));
    }
}

static JsonArray *object_members(SchemaBuild *b, const char *spec)
{
    g_auto(GStrv) words = g_strsplit(spec ? spec : "", " ", -1);
    JsonArray *members = json_array_new();

    for (char **w = words; *w; w++) {
        g_auto(GStrv) nt = g_strsplit(**w == '*' ? *w + 1 : *w, ":", 2);
        JsonObject *m = json_object_new();

        if (!**w) {
            json_object_unref(m);
            continue;
        }
        g_assert(nt[1]);
        json_object_set_string_member(m, "name", nt[0]);
        json_object_set_string_member(m, "type", nt[1]);
        if (**w == '*') {
            json_object_set_null_member(m, "default");
        }
        want(b, nt[1]);
        json_array_add_object_element(members, m);
    }
    return members;
}

/* A generated member list: a counter for each of @n names. */
static char *counter_members(const char *(*name)(int), int first, int n)
{
    GString *s = g_string_new(NULL);

    for (int i = first; i < n; i++) {
        g_string_append_printf(s, "%s%s:int", s->len ? " " : "", name(i));
    }
    return g_string_free(s, false);
}

static const char *rx_result_name(int r)
{
    return net_rx_result_name(r);
}

static const char *guest_drop_counter(int d)
{
    return guest_drop_name(d);
}

static void add_object(SchemaBuild *b, const char *name, const char *members,
                       const char *tag, const char *variants)
{
    JsonObject *o = entity(name, "object");

    json_object_set_array_member(o, "members", object_members(b, members));
    if (tag) {
        g_auto(GStrv) words = g_strsplit(variants, " ", -1);
        JsonArray *vs = json_array_new();

        json_object_set_string_member(o, "tag", tag);
        for (char **w = words; *w; w++) {
            g_auto(GStrv) ct = g_strsplit(*w, ":", 2);
            JsonObject *v = json_object_new();

            json_object_set_string_member(v, "case", ct[0]);
            json_object_set_string_member(v, "type", ct[1]);
            want(b, ct[1]);
            json_array_add_object_element(vs, v);
        }
        json_object_set_array_member(o, "variants", vs);
    }
    json_array_add_object_element(b->list, o);
}

static void add_enum(SchemaBuild *b, const SchemaEnum *e)
{
    g_auto(GStrv) words = g_strsplit(e->values, " ", -1);
    JsonObject *o = entity(e->name, "enum");
    JsonArray *members = json_array_new(), *values = json_array_new();

    for (char **w = words; *w; w++) {
        JsonObject *m = json_object_new();

        json_object_set_string_member(m, "name", *w);
        json_array_add_object_element(members, m);
        json_array_add_string_element(values, *w);
    }
    json_object_set_array_member(o, "members", members);
    json_object_set_array_member(o, "values", values);
    json_array_add_object_element(b->list, o);
}

static void add_alternate(SchemaBuild *b, const SchemaEnum *a)
{
    g_auto(GStrv) words = g_strsplit(a->values, " ", -1);
    JsonObject *o = entity(a->name, "alternate");
    JsonArray *members = json_array_new();

    for (char **w = words; *w; w++) {
        JsonObject *m = json_object_new();

        json_object_set_string_member(m, "type", *w);
        want(b, *w);
        json_array_add_object_element(members, m);
    }
    json_object_set_array_member(o, "members", members);
    json_array_add_object_element(b->list, o);
}

static const SchemaEnum *find_named(const SchemaEnum *t, size_t n,
                                    const char *name)
{
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(t[i].name, name)) {
            return &t[i];
        }
    }
    return NULL;
}

static bool add_counters(SchemaBuild *b, const char *name)
{
    g_autofree char *members = NULL;

    if (!strcmp(name, "NetRxDropped")) {
        members = counter_members(rx_result_name, NET_RX_DELIVERED + 1,
                                  NET_RX__MAX);
    } else if (!strcmp(name, "GuestDrops")) {
        members = counter_members(guest_drop_counter, 0, GUEST_DROP__MAX);
    } else {
        return false;
    }
    add_object(b, name, members, NULL, NULL);
    return true;
}

/* Emits the type @name; every name a table uses must be defined. */
static void add_type(SchemaBuild *b, const char *name)
{
    const SchemaEnum *e;
    const char *implicit;
    size_t len = strlen(name);

    if ((e = find_named(builtins, G_N_ELEMENTS(builtins), name))) {
        JsonObject *o = entity(name, "builtin");

        json_object_set_string_member(o, "json-type", e->values);
        json_array_add_object_element(b->list, o);
        return;
    }
    if (name[0] == '[' && name[len - 1] == ']') {
        JsonObject *o = entity(name, "array");
        g_autofree char *elt = g_strndup(name + 1, len - 2);

        json_object_set_string_member(o, "element-type", elt);
        want(b, elt);
        json_array_add_object_element(b->list, o);
        return;
    }
    if ((e = find_named(enums, G_N_ELEMENTS(enums), name))) {
        add_enum(b, e);
        return;
    }
    if ((e = find_named(alternates, G_N_ELEMENTS(alternates), name))) {
        add_alternate(b, e);
        return;
    }
    if (g_hash_table_lookup_extended(b->implicit, name, NULL,
                                     (gpointer *)&implicit)) {
        add_object(b, name, implicit, NULL, NULL);
        return;
    }
    for (size_t i = 0; i < G_N_ELEMENTS(objects); i++) {
        if (!strcmp(objects[i].name, name)) {
            add_object(b, name, objects[i].members, objects[i].tag,
                       objects[i].variants);
            return;
        }
    }
    if (!add_counters(b, name)) {
        g_error("query-qmp-schema: type '%s' is not described", name);
    }
}

static char *arg_type(SchemaBuild *b, const char *name, const char *args)
{
    char *type;

    if (!args) {
        return g_strdup("q_empty");
    }
    if (args[0] == '=') {
        return g_strdup(args + 1);
    }
    type = g_strdup_printf("q_obj_%s-arg", name);
    g_hash_table_insert(b->implicit, g_strdup(type), (gpointer)args);
    return type;
}

JsonArray *qmp_schema_build(void)
{
    SchemaBuild b = {
        .list = json_array_new(),
        .emitted = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                         NULL),
        .implicit = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                          NULL),
    };
    char *name;

    g_queue_init(&b.pending);
    g_hash_table_insert(b.implicit, g_strdup("q_empty"), NULL);
    for (size_t i = 0; i < G_N_ELEMENTS(commands); i++) {
        JsonObject *o = entity(commands[i].name, "command");
        g_autofree char *args = arg_type(&b, commands[i].name,
                                         commands[i].args);
        const char *ret = commands[i].ret ? commands[i].ret : "q_empty";

        json_object_set_string_member(o, "arg-type", args);
        json_object_set_string_member(o, "ret-type", ret);
        json_array_add_object_element(b.list, o);
        want(&b, args);
        want(&b, ret);
    }
    for (size_t i = 0; i < G_N_ELEMENTS(events); i++) {
        JsonObject *o = entity(events[i].name, "event");
        g_autofree char *data = arg_type(&b, events[i].name, events[i].data);

        json_object_set_string_member(o, "arg-type", data);
        json_array_add_object_element(b.list, o);
        want(&b, data);
    }
    while ((name = g_queue_pop_head(&b.pending))) {
        if (g_hash_table_contains(b.emitted, name)) {
            g_free(name);
            continue;
        }
        add_type(&b, name);
        g_hash_table_add(b.emitted, name);
    }
    g_hash_table_destroy(b.emitted);
    g_hash_table_destroy(b.implicit);
    return b.list;
}

static JsonNode *query_qmp_schema(JsonObject *args, QmpError *err)
{
    (void)args, (void)err;
    return qmp_return_array(qmp_schema_build());
}

static const QmpCommand schema_commands[] = {
    { "query-qmp-schema", NULL, false, query_qmp_schema, true },
};

static void schema_commands_register(void)
{
    qmp_register_commands(schema_commands, G_N_ELEMENTS(schema_commands));
}
illan_init(schema_commands_register)
