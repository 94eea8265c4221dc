/*
 * The main thread's post queue (include/qemu/main-loop.h): a list under a
 * lock and an eventfd that the main loop watches.
 */
#include "qemu/main-loop.h"
#include "qemu/thread.h"

#include <glib-unix.h>
#include <sys/eventfd.h>
#include <unistd.h>

typedef struct Posted {
    MainLoopFn fn;
    void *opaque;
} Posted;

static QemuMutex lock = { PTHREAD_MUTEX_INITIALIZER };
static GArray *queue;           /* of Posted, under lock */
static int wake_fd = -1;
static guint watch;
static bool initialised;       /* atomic */
static __thread bool is_main;

static void run_posted(void)
{
    GArray *batch;

    qemu_mutex_lock(&lock);
    batch = queue;
    queue = NULL;
    qemu_mutex_unlock(&lock);
    for (guint i = 0; batch && i < batch->len; i++) {
        Posted *p = &g_array_index(batch, Posted, i);

        p->fn(p->opaque);
    }
    if (batch) {
        g_array_free(batch, TRUE);
    }
}

static gboolean posted_ready(gint fd, GIOCondition cond, gpointer opaque)
{
    eventfd_t ignored;

    (void)cond, (void)opaque;
    eventfd_read(fd, &ignored);
    run_posted();
    return G_SOURCE_CONTINUE;
}

void main_loop_init(void)
{
    g_assert(!initialised);
    is_main = true;
    __atomic_store_n(&initialised, true, __ATOMIC_RELEASE);
    wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    g_assert(wake_fd >= 0);
    watch = g_unix_fd_add(wake_fd, G_IO_IN, posted_ready, NULL);
}

void main_loop_cleanup(void)
{
    if (!initialised) {
        return;
    }
    run_posted();
    g_source_remove(watch);
    close(wake_fd);
    wake_fd = -1;
    __atomic_store_n(&initialised, false, __ATOMIC_RELEASE);
}

bool qemu_in_main_thread(void)
{
    return is_main || !__atomic_load_n(&initialised, __ATOMIC_ACQUIRE);
}

void main_loop_run_or_post(MainLoopFn fn, void *opaque)
{
    if (qemu_in_main_thread()) {
        fn(opaque);
        return;
    }
    qemu_mutex_lock(&lock);
    if (!queue) {
        queue = g_array_new(FALSE, FALSE, sizeof(Posted));
    }
    g_array_append_val(queue, ((Posted){ fn, opaque }));
    eventfd_write(wake_fd, 1);
    qemu_mutex_unlock(&lock);
}
