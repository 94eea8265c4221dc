/*
 * QMP blockdev-add and blockdev-del.  illan has no block layer: a node is
 * kept by its node-name and used by nothing, for the QEMU clients and
 * tests that make one (null-co, null-aio, and blkdebug over an image
 * given inline), with QEMU's checks and errors.  blkdebug's config file
 * is read as QEMU reads it, so a FIFO holds the main thread until a
 * writer opens it, as in QEMU; a rule in it would inject errors into I/O
 * that never happens, so one is refused.
 */
#include "qemu/module.h"
#include "qemu/qmp-registry.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* QEMU's BlockDriverState.node_name: 32 bytes with the NUL. */
#define NODE_NAME_MAX   31

typedef struct BlockNode {
    char *name;
    struct BlockNode *owner;    /* the node whose image it is; NULL for
                                   the monitor's own, which blockdev-del
                                   removes */
} BlockNode;

static GPtrArray *nodes;        /* BlockNode *, owned; main thread only */

typedef enum NodeOptType {
    NODE_OPT_STR,
    NODE_OPT_INT,
    NODE_OPT_BOOL,
    NODE_OPT_NODE,              /* a nested node's options */
} NodeOptType;

typedef struct NodeOpt {
    const char *name;
    NodeOptType type;
} NodeOpt;

typedef struct BlockDriver {
    const char *name;
    const NodeOpt *opts;        /* ends with a NULL name */
} BlockDriver;

static const NodeOpt common_opts[] = {
    { "driver", NODE_OPT_STR }, { "node-name", NODE_OPT_STR },
    { "read-only", NODE_OPT_BOOL }, { "auto-read-only", NODE_OPT_BOOL },
    { "force-share", NODE_OPT_BOOL }, { NULL, 0 },
};

static const NodeOpt null_opts[] = {
    { "size", NODE_OPT_INT }, { "latency-ns", NODE_OPT_INT },
    { "read-zeroes", NODE_OPT_BOOL }, { NULL, 0 },
};

static const NodeOpt blkdebug_opts[] = {
    { "image", NODE_OPT_NODE }, { "config", NODE_OPT_STR },
    { "align", NODE_OPT_INT }, { NULL, 0 },
};

static const BlockDriver drivers[] = {
    { "blkdebug", blkdebug_opts },
    { "null-aio", null_opts },
    { "null-co", null_opts },
};

static BlockNode *find_node(const char *name)
{
    for (guint i = 0; nodes && i < nodes->len; i++) {
        BlockNode *n = g_ptr_array_index(nodes, i);

        if (!strcmp(n->name, name)) {
            return n;
        }
    }
    return NULL;
}

static const NodeOpt *find_opt(const NodeOpt *opts, const char *name)
{
    for (; opts->name; opts++) {
        if (!strcmp(opts->name, name)) {
            return opts;
        }
    }
    return NULL;
}

static bool opt_has_type(JsonNode *v, NodeOptType type)
{
    GType vt = JSON_NODE_HOLDS_VALUE(v) ? json_node_get_value_type(v)
                                        : G_TYPE_INVALID;

    switch (type) {
    case NODE_OPT_STR: return vt == G_TYPE_STRING;
    case NODE_OPT_INT: return vt == G_TYPE_INT64;
    case NODE_OPT_BOOL: return vt == G_TYPE_BOOLEAN;
    case NODE_OPT_NODE: return JSON_NODE_HOLDS_OBJECT(v);
    }
    g_assert_not_reached();
}

static const char *opt_type_name(NodeOptType type)
{
    switch (type) {
    case NODE_OPT_STR: return "string";
    case NODE_OPT_INT: return "integer";
    case NODE_OPT_BOOL: return "boolean";
    case NODE_OPT_NODE: return "object";
    }
    g_assert_not_reached();
}

/* QEMU's id_wellformed(): a letter, then letters, digits, '-', '.', '_'. */
static bool node_name_wellformed(const char *name)
{
    if (!g_ascii_isalpha(name[0])) {
        return false;
    }
    for (const char *p = name + 1; *p; p++) {
        if (!g_ascii_isalnum(*p) && !strchr("-._", *p)) {
            return false;
        }
    }
    return true;
}

static bool check_node_name(const char *name, GPtrArray *names,
                            QmpError *err)
{
    if (!node_name_wellformed(name)) {
        qmp_error_set(err, QMP_ERROR_GENERIC, "Invalid node-name: '%s'",
                      name);
        return false;
    }
    if (find_node(name) ||
        g_ptr_array_find_with_equal_func(names, name, g_str_equal, NULL)) {
        qmp_error_set(err, QMP_ERROR_GENERIC,
                      "Duplicate nodes with node-name='%s'", name);
        return false;
    }
    if (strlen(name) > NODE_NAME_MAX) {
        qmp_error_set(err, QMP_ERROR_GENERIC, "Node name too long");
        return false;
    }
    g_ptr_array_add(names, (gpointer)name);
    return true;
}

static const BlockDriver *node_driver(JsonObject *o, const char *prefix,
                                      QmpError *err)
{
    JsonNode *v = json_object_get_member(o, "driver");

    if (!v) {
        qmp_error_set(err, QMP_ERROR_GENERIC, "Parameter '%sdriver' is "
                      "missing", prefix);
        return NULL;
    }
    if (!opt_has_type(v, NODE_OPT_STR)) {
        qmp_error_set(err, QMP_ERROR_GENERIC, "Invalid parameter type for "
                      "'%sdriver', expected: string", prefix);
        return NULL;
    }
    for (size_t i = 0; i < G_N_ELEMENTS(drivers); i++) {
        if (!strcmp(drivers[i].name, json_node_get_string(v))) {
            return &drivers[i];
        }
    }
    qmp_error_set(err, QMP_ERROR_GENERIC, "Parameter '%sdriver' does not "
                  "accept value '%s'", prefix, json_node_get_string(v));
    return NULL;
}

/*
 * The options of a node (@prefix names its place, "" for the root, as
 * "image." for its image), and of its image, by QEMU's schema; the
 * node-names they give are added to @names.
 */
static bool check_node(JsonObject *o, const char *prefix, GPtrArray *names,
                       QmpError *err)
{
    const BlockDriver *drv = node_driver(o, prefix, err);
    g_autoptr(GList) members = json_object_get_members(o);

    if (!drv) {
        return false;
    }
    for (GList *l = members; l; l = l->next) {
        const NodeOpt *opt = find_opt(common_opts, l->data);

        opt = opt ? opt : find_opt(drv->opts, l->data);
        if (!opt) {
            qmp_error_set(err, QMP_ERROR_GENERIC, "Parameter '%s%s' is "
                          "unexpected", prefix, (char *)l->data);
            return false;
        }
        if (!opt_has_type(json_object_get_member(o, opt->name), opt->type)) {
            qmp_error_set(err, QMP_ERROR_GENERIC, "Invalid parameter type "
                          "for '%s%s', expected: %s", prefix, opt->name,
                          opt_type_name(opt->type));
            return false;
        }
    }
    if (find_opt(drv->opts, "image") && !json_object_has_member(o, "image")) {
        qmp_error_set(err, QMP_ERROR_GENERIC, "Parameter '%simage' is "
                      "missing", prefix);
        return false;
    }
    if (!*prefix && !json_object_has_member(o, "node-name")) {
        qmp_error_set(err, QMP_ERROR_GENERIC,
                      "'node-name' must be specified for the root node");
        return false;
    }
    if (json_object_has_member(o, "node-name") &&
        !check_node_name(json_object_get_string_member(o, "node-name"),
                         names, err)) {
        return false;
    }
    if (json_object_has_member(o, "image")) {
        g_autofree char *image = g_strdup_printf("%simage.", prefix);

        return check_node(json_object_get_object_member(o, "image"), image,
                          names, err);
    }
    return true;
}

/* What QEMU's config parser says of the first line it does not skip
 * (one that starts with its end or a '#'): a group is a rule, which
 * illan refuses; a setting outside any group and a line with no word are
 * QEMU's errors. */
static void refuse_config_line(const char *line, QmpError *err)
{
    char word[64];

    if (sscanf(line, "[%63[^]]", word) == 1) {
        qmp_error_set(err, QMP_ERROR_GENERIC, "blkdebug config file: illan "
                      "does no block I/O to inject errors into; give a file "
                      "with no rules");
    } else if (sscanf(line, " %63s", word) == 1) {
        qmp_error_set(err, QMP_ERROR_GENERIC, "no group defined");
    } else {
        qmp_error_set(err, QMP_ERROR_GENERIC, "parse error");
    }
}

/* Read with fopen(), as QEMU's blkdebug does: a FIFO waits for a writer.
 * A line at a time in QEMU's 1 KiB, up to the first that is neither
 * empty nor a comment, so that a file with no end (/dev/zero) is not
 * read to the end. */
static bool read_blkdebug_config(const char *path, QmpError *err)
{
    char line[1024];
    FILE *f = fopen(path, "r");
    bool ok = true;

    if (!f) {
        qmp_error_set(err, QMP_ERROR_GENERIC, "Could not read blkdebug "
                      "config file: %s", g_strerror(errno));
        return false;
    }
    while (ok && fgets(line, sizeof(line), f)) {
        if (line[0] != '\n' && line[0] != '#') {
            refuse_config_line(line, err);
            ok = false;
        }
    }
    if (ok && ferror(f)) {
        qmp_error_set(err, QMP_ERROR_GENERIC, "Cannot read config file: %s",
                      g_strerror(errno));
        ok = false;
    }
    fclose(f);
    return ok;
}

/* The root's config first, then its image's, as QEMU opens them. */
static bool read_configs(JsonObject *o, QmpError *err)
{
    for (; o; o = json_object_has_member(o, "image") ?
                  json_object_get_object_member(o, "image") : NULL) {
        if (json_object_has_member(o, "config") &&
            !read_blkdebug_config(json_object_get_string_member(o, "config"),
                                  err)) {
            return false;
        }
    }
    return true;
}

static void node_free(gpointer p)
{
    BlockNode *n = p;

    g_free(n->name);
    g_free(n);
}

static JsonNode *blockdev_add(JsonObject *args, QmpError *err)
{
    g_autoptr(GPtrArray) names = g_ptr_array_new();
    BlockNode *root = NULL;

    if (!check_node(args, "", names, err) || !read_configs(args, err)) {
        return NULL;
    }
    if (!nodes) {
        nodes = g_ptr_array_new_with_free_func(node_free);
    }
    for (guint i = 0; i < names->len; i++) {
        BlockNode *n = g_new0(BlockNode, 1);

        n->name = g_strdup(g_ptr_array_index(names, i));
        n->owner = root;
        root = root ? root : n;
        g_ptr_array_add(nodes, n);
    }
    return qmp_return_empty();
}

/* The node and the images added with it. */
static void remove_node(BlockNode *n)
{
    for (guint i = 0; i < nodes->len;) {
        BlockNode *m = g_ptr_array_index(nodes, i);

        if (m->owner == n) {
            g_ptr_array_remove_index(nodes, i);
        } else {
            i++;
        }
    }
    g_ptr_array_remove(nodes, n);
}

static JsonNode *blockdev_del(JsonObject *args, QmpError *err)
{
    const char *name = json_object_get_string_member(args, "node-name");
    BlockNode *n = find_node(name);

    if (!n) {
        qmp_error_set(err, QMP_ERROR_GENERIC, "Failed to find node with "
                      "node-name='%s'", name);
        return NULL;
    }
    if (n->owner) {
        qmp_error_set(err, QMP_ERROR_GENERIC, "Node %s is not owned by the "
                      "monitor", name);
        return NULL;
    }
    remove_node(n);
    return qmp_return_empty();
}

static const QmpArg blockdev_add_args[] = {
    { "node-name", QMP_ARG_STR, true }, { NULL, 0, false }
};

static const QmpArg blockdev_del_args[] = {
    { "node-name", QMP_ARG_STR, false }, { NULL, 0, false }
};

static const QmpCommand blockdev_commands[] = {
    { "blockdev-add", blockdev_add_args, true, blockdev_add, false },
    { "blockdev-del", blockdev_del_args, false, blockdev_del, false },
};

static void blockdev_commands_register(void)
{
    qmp_register_commands(blockdev_commands,
                          G_N_ELEMENTS(blockdev_commands));
}
illan_init(blockdev_commands_register)
