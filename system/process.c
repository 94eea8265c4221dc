/*
 * The process's ties to its parent and the host (include/system/process.h).
 */
#include "system/process.h"
#include "qemu/option.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static int daemon_pipe = -1;    /* the daemon's end: one status byte */
static char *pidfile_path;
static int pidfile_fd = -1;
static pid_t first_parent;

static void error_errno(GError **errp, const char *what)
{
    g_set_error(errp, ILLAN_ERROR, 0, "%s: %s", what, g_strerror(errno));
}

/* The parent's side: the child's status byte, or 1 when it died
 * without sending one. */
static G_NORETURN void wait_for_daemon(int fd, pid_t child)
{
    unsigned char status = 1;
    ssize_t n;

    do {
        n = read(fd, &status, 1);
    } while (n < 0 && errno == EINTR);
    if (n != 1) {
        int wstatus;

        /* It died before it could tell: its exit status is the answer. */
        waitpid(child, &wstatus, 0);
        _exit(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) ?
              WEXITSTATUS(wstatus) : 1);
    }
    _exit(status);
}

bool process_daemonize(GError **errp)
{
    int fds[2];
    pid_t pid;

    if (pipe2(fds, O_CLOEXEC) < 0) {
        error_errno(errp, "cannot make a pipe");
        return false;
    }
    fflush(NULL);
    pid = fork();
    if (pid < 0) {
        error_errno(errp, "cannot fork");
        close(fds[0]);
        close(fds[1]);
        return false;
    }
    if (pid > 0) {
        close(fds[1]);
        wait_for_daemon(fds[0], pid);
    }
    close(fds[0]);
    daemon_pipe = fds[1];
    if (setsid() < 0) {
        error_errno(errp, "setsid");
        return false;
    }
    return true;
}

static void daemon_report(unsigned char status)
{
    if (daemon_pipe >= 0) {
        ssize_t n;

        do {
            n = write(daemon_pipe, &status, 1);
        } while (n < 0 && errno == EINTR);
        close(daemon_pipe);
        daemon_pipe = -1;
    }
}

void process_daemon_ready(void)
{
    int null;

    if (daemon_pipe < 0) {
        return;
    }
    /* Errors from here on have no terminal: the monitor reports them. */
    fflush(NULL);
    null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
        dup2(null, STDIN_FILENO);
        dup2(null, STDOUT_FILENO);
        dup2(null, STDERR_FILENO);
        close(null);
    }
    daemon_report(0);
}

void process_daemon_exit(int status)
{
    daemon_report(status);
}

bool process_pidfile_create(const char *path, GError **errp)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    g_autofree char *pid = g_strdup_printf("%d\n", (int)getpid());
    struct flock lock = { .l_type = F_WRLCK, .l_whence = SEEK_SET };

    if (fd < 0) {
        error_errno(errp, "cannot open the pid file");
        return false;
    }
    if (fcntl(fd, F_SETLK, &lock) < 0) {
        error_errno(errp, "cannot lock the pid file (is another illan "
                    "using it?)");
        close(fd);
        return false;
    }
    if (ftruncate(fd, 0) < 0 ||
        write(fd, pid, strlen(pid)) != (ssize_t)strlen(pid)) {
        error_errno(errp, "cannot write the pid file");
        unlink(path);
        close(fd);
        return false;
    }
    pidfile_fd = fd;
    pidfile_path = g_strdup(path);
    return true;
}

void process_pidfile_remove(void)
{
    if (pidfile_fd < 0) {
        return;
    }
    /* Still ours: we hold the lock, so no other process rewrote it. */
    unlink(pidfile_path);
    close(pidfile_fd);
    pidfile_fd = -1;
    g_clear_pointer(&pidfile_path, g_free);
}

void process_note_parent(void)
{
    first_parent = getppid();
}

bool process_exit_with_parent(GError **errp)
{
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0) {
        error_errno(errp, "cannot ask for the parent's death signal");
        return false;
    }
    /* The parent may have died before prctl(): we have been re-parented. */
    if (getppid() != first_parent) {
        raise(SIGTERM);
    }
    return true;
}
