/*
 * Migration capabilities and parameters.  Of QEMU's capabilities illan
 * has "events" only; the others are listed, off, and refused when asked
 * for, rather than accepted and ignored.
 */
#include "migration/options.h"
#include "qemu/option.h"

#include <string.h>

static const char *const capability_names[] = {
    "xbzrle", "rdma-pin-all", "auto-converge", "events", "postcopy-ram",
    "x-colo", "release-ram", "return-path", "pause-before-switchover",
    "multifd", "dirty-bitmaps", "postcopy-blocktime", "late-block-activate",
    "x-ignore-shared", "validate-uuid", "background-snapshot",
    "zero-copy-send", "postcopy-preempt", "switchover-ack", "dirty-limit",
    "mapped-ram",
};

/* QEMU's parameters that illan does not have. */
static const char *const unsupported_parameters[] = {
    "announce-initial", "announce-max", "announce-rounds", "announce-step",
    "throttle-trigger-threshold", "cpu-throttle-initial",
    "cpu-throttle-increment", "cpu-throttle-tailslow", "tls-creds",
    "tls-hostname", "tls-authz", "x-checkpoint-delay", "multifd-channels",
    "xbzrle-cache-size", "max-postcopy-bandwidth", "max-cpu-throttle",
    "multifd-compression", "multifd-zlib-level", "multifd-qatzip-level",
    "multifd-zstd-level", "block-bitmap-mapping", "x-vcpu-dirty-limit-period",
    "vcpu-dirty-limit", "mode", "zero-page-detection",
    "direct-io", "cpr-exec-command",
};

/* Written by the main thread, read by any with relaxed loads. */
static struct {
    bool events;
    int64_t downtime_limit_ms;
    uint64_t max_bandwidth;
    uint64_t avail_switchover_bandwidth;
} opts = {
    .downtime_limit_ms = MIGRATE_DEFAULT_DOWNTIME_LIMIT_MS,
    .max_bandwidth = MIGRATE_DEFAULT_MAX_BANDWIDTH,
};

bool migrate_events(void)
{
    return __atomic_load_n(&opts.events, __ATOMIC_RELAXED);
}

int64_t migrate_downtime_limit_ms(void)
{
    return __atomic_load_n(&opts.downtime_limit_ms, __ATOMIC_RELAXED);
}

uint64_t migrate_max_bandwidth(void)
{
    return __atomic_load_n(&opts.max_bandwidth, __ATOMIC_RELAXED);
}

uint64_t migrate_avail_switchover_bandwidth(void)
{
    return __atomic_load_n(&opts.avail_switchover_bandwidth,
                           __ATOMIC_RELAXED);
}

JsonArray *migrate_capabilities_query(void)
{
    JsonArray *caps = json_array_new();

    for (size_t i = 0; i < G_N_ELEMENTS(capability_names); i++) {
        JsonObject *c = json_object_new();

        json_object_set_string_member(c, "capability", capability_names[i]);
        json_object_set_boolean_member(c, "state",
                                       !strcmp(capability_names[i], "events")
                                       && migrate_events());
        json_array_add_object_element(caps, c);
    }
    return caps;
}

static bool known_capability(const char *name)
{
    for (size_t i = 0; i < G_N_ELEMENTS(capability_names); i++) {
        if (!strcmp(name, capability_names[i])) {
            return true;
        }
    }
    return false;
}

/* One element of migrate-set-capabilities' list: true with *events set
 * when it names "events". */
static bool check_capability(JsonNode *node, guint i, int *events,
                             GError **errp)
{
    JsonObject *c = JSON_NODE_HOLDS_OBJECT(node) ?
                    json_node_get_object(node) : NULL;
    JsonNode *name = c ? json_object_get_member(c, "capability") : NULL;
    JsonNode *state = c ? json_object_get_member(c, "state") : NULL;
    const char *cap;

    if (!name || !state || json_node_get_value_type(name) != G_TYPE_STRING ||
        json_node_get_value_type(state) != G_TYPE_BOOLEAN ||
        json_object_get_size(c) != 2) {
        g_set_error(errp, ILLAN_ERROR, 0, "Parameter 'capabilities[%u]' "
                    "expects an object with 'capability' (a string) and "
                    "'state' (a bool)", i);
        return false;
    }
    cap = json_node_get_string(name);
    if (!known_capability(cap)) {
        g_set_error(errp, ILLAN_ERROR, 0, "Parameter 'capabilities[%u]."
                    "capability' does not accept value '%s'", i, cap);
        return false;
    }
    if (!strcmp(cap, "events")) {
        *events = json_node_get_boolean(state);
    } else if (json_node_get_boolean(state)) {
        g_set_error(errp, ILLAN_ERROR, 0, "Capability '%s' is not supported "
                    "by illan (its only capability is 'events')", cap);
        return false;
    }
    return true;
}

bool migrate_capabilities_set(JsonArray *caps, GError **errp)
{
    int events = -1;

    for (guint i = 0; i < json_array_get_length(caps); i++) {
        if (!check_capability(json_array_get_element(caps, i), i, &events,
                              errp)) {
            return false;
        }
    }
    if (events >= 0) {
        __atomic_store_n(&opts.events, events, __ATOMIC_RELAXED);
    }
    return true;
}

JsonObject *migrate_parameters_query(void)
{
    JsonObject *p = json_object_new();

    json_object_set_int_member(p, "downtime-limit",
                               migrate_downtime_limit_ms());
    json_object_set_int_member(p, "max-bandwidth", migrate_max_bandwidth());
    json_object_set_int_member(p, "avail-switchover-bandwidth",
                               migrate_avail_switchover_bandwidth());
    return p;
}

static bool check_parameter_name(const char *name, GError **errp)
{
    if (!strcmp(name, "downtime-limit") || !strcmp(name, "max-bandwidth") ||
        !strcmp(name, "avail-switchover-bandwidth")) {
        return true;
    }
    for (size_t i = 0; i < G_N_ELEMENTS(unsupported_parameters); i++) {
        if (!strcmp(name, unsupported_parameters[i])) {
            g_set_error(errp, ILLAN_ERROR, 0, "Parameter '%s' is not "
                        "supported by illan (it has downtime-limit, "
                        "max-bandwidth and avail-switchover-bandwidth)",
                        name);
            return false;
        }
    }
    g_set_error(errp, ILLAN_ERROR, 0, "Parameter '%s' is unexpected", name);
    return false;
}

/* The registry has checked the types: these members are integers. */
static bool get_param(JsonObject *params, const char *name, int64_t max,
                      const char *range, int64_t *val, GError **errp)
{
    if (!json_object_has_member(params, name)) {
        return true;
    }
    *val = json_object_get_int_member(params, name);
    if (*val < 0 || *val > max) {
        g_set_error(errp, ILLAN_ERROR, 0, "Parameter '%s' expects %s", name,
                    range);
        return false;
    }
    return true;
}

bool migrate_parameters_set(JsonObject *params, GError **errp)
{
    int64_t downtime = migrate_downtime_limit_ms();
    int64_t bandwidth = migrate_max_bandwidth();
    int64_t avail = migrate_avail_switchover_bandwidth();
    g_autoptr(GList) names = json_object_get_members(params);

    for (GList *l = names; l; l = l->next) {
        if (!check_parameter_name(l->data, errp)) {
            return false;
        }
    }
    if (!get_param(params, "downtime-limit", MIGRATE_MAX_DOWNTIME_LIMIT_MS,
                   "an integer in the range of 0 to 2000000 ms", &downtime,
                   errp) ||
        !get_param(params, "max-bandwidth", INT64_MAX,
                   "a byte rate of 0 or more", &bandwidth, errp) ||
        !get_param(params, "avail-switchover-bandwidth", INT64_MAX,
                   "a byte rate of 0 or more", &avail, errp)) {
        return false;
    }
    __atomic_store_n(&opts.downtime_limit_ms, downtime, __ATOMIC_RELAXED);
    __atomic_store_n(&opts.max_bandwidth, bandwidth, __ATOMIC_RELAXED);
    __atomic_store_n(&opts.avail_switchover_bandwidth, avail,
                     __ATOMIC_RELAXED);
    return true;
}
