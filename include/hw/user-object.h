/*
 * Objects made with -object and QMP's object-add, listed under /objects
 * in the QOM tree.  The one type is QEMU's memory-backend-ram, kept with
 * its size so that management tools and QEMU's tests can create, read
 * and delete it; the machine never maps one (its RAM is -m).
 */
#ifndef HW_USER_OBJECT_H
#define HW_USER_OBJECT_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct UserObject {
    char *id;
    const char *type;       /* "memory-backend-ram" */
    uint64_t size;
} UserObject;

/* -object TYPE,id=ID[,size=SIZE]: false with *errp set when refused. */
bool user_object_add_opts(const char *optarg, GError **errp);
/* Every object, in creation order.  Main thread. */
void user_object_foreach(void (*fn)(UserObject *obj, void *opaque),
                         void *opaque);

#endif
