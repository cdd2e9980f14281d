/*
 * sysdelta's launcher of measured commands: a small process that creates
 * each measured command (`/bin/sh -c COMMAND`, another shell, or the
 * program itself when no shell is wanted) on sysdelta's behalf, so that the
 * command's max RSS is its own (see launcher.rs for why and for the Rust
 * side of the protocol below).
 *
 * It is started by sysdelta with one end of a stream socket as its stdin
 * and /dev/null as its stdout and stderr, and serves requests one at a
 * time until the socket reaches end of file (sysdelta has exited):
 *
 *   request: struct request_header, then payload_len bytes of payload,
 *            with exactly 3 descriptors (the command's stdin, stdout and
 *            stderr) in an SCM_RIGHTS message on its first byte. Payload:
 *            "PROGRAM\0CWD\0CGROUP_PROCS\0" (PROGRAM the path to exec; an
 *            empty CWD or CGROUP_PROCS means none) followed by n_argv
 *            argument strings (argv[0] first) and n_env "NAME=VALUE\0"
 *            strings.
 *   reply:   struct reply.
 *
 * The command's process is created with clone(CLONE_VM | CLONE_VFORK |
 * CLONE_PARENT): it is sysdelta's child, not ours (sysdelta waits for it,
 * kills its group and reads its rusage as before), and it runs on this
 * process's small memory until its exec, which is what the kernel counts
 * into its max RSS. Between clone and exec it only makes system calls.
 *
 * All integers are in the machine's byte order: both ends run on the same
 * machine, from the same build.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#define MAGIC 0x3276657474736473ULL /* "sdstetv2": request format 2 */
#define CPU_WORDS 16                /* 1024 CPUs, as glibc's cpu_set_t */
/* Larger requests are a bug on sysdelta's side (exec takes far less). */
#define MAX_PAYLOAD (64u << 20)
/* After a request this large, give its memory back and reset this
 * process's peak RSS, which every later command would otherwise inherit. */
#define SHRINK_AFTER (256u << 10)

struct request_header {
    uint64_t magic;
    uint64_t payload_len;
    uint64_t n_argv;
    uint64_t n_env;
    uint64_t has_cpus;
    uint64_t cpus[CPU_WORDS]; /* bit c of word c / 64: CPU c */
};

/* What failed, for sysdelta's error message. */
enum stage {
    STAGE_NONE = 0,
    STAGE_CLONE = 1,
    STAGE_PGID = 2,
    STAGE_AFFINITY = 3,
    STAGE_CGROUP = 4,
    STAGE_CWD = 5,
    STAGE_STDIO = 6,
    STAGE_EXEC = 7,
};

/* pid > 0 and err == 0: the command runs. pid > 0 and err != 0: its
 * process failed before its exec and exits with status 127 (sysdelta
 * reaps it). pid <= 0: no process was made. */
struct reply {
    int32_t pid;
    int32_t err;
    int32_t stage;
    int32_t reserved;
};

/* One command to start, shared with its process until that process execs
 * (CLONE_VM): it reports a failure in err and stage. */
struct job {
    const char *cwd;
    const char *cgroup_procs;
    const char *program;
    char **argv;
    char **envp;
    int stdio[3];
    int has_cpus;
    cpu_set_t cpus;
    volatile int err;
    volatile int stage;
};

/* The command's process runs on this stack until its exec. */
static char child_stack[64 * 1024] __attribute__((aligned(16)));

static int fail(struct job *j, int stage)
{
    j->err = errno ? errno : EIO;
    j->stage = stage;
    _exit(127);
}

/* The command's process, between clone and exec: system calls only. */
static int child_main(void *arg)
{
    struct job *j = arg;
    int i;
    if (setpgid(0, 0) != 0)
        return fail(j, STAGE_PGID);
    if (j->has_cpus && sched_setaffinity(0, sizeof j->cpus, &j->cpus) != 0)
        return fail(j, STAGE_AFFINITY);
    if (j->cgroup_procs[0]) {
        /* Joined before exec, so that no descendant escapes the limit;
         * "0" means the writing process itself. */
        int fd = open(j->cgroup_procs, O_WRONLY | O_CLOEXEC);
        ssize_t n;
        if (fd < 0)
            return fail(j, STAGE_CGROUP);
        n = write(fd, "0\n", 2);
        if (n != 2) {
            if (n >= 0)
                errno = EIO;
            return fail(j, STAGE_CGROUP);
        }
        close(fd);
    }
    if (j->cwd[0] && chdir(j->cwd) != 0)
        return fail(j, STAGE_CWD);
    /* The received descriptors are all above 2 (0-2 are held open), so
     * no dup2 overwrites one still to be copied. */
    for (i = 0; i < 3; i++)
        if (dup2(j->stdio[i], i) < 0)
            return fail(j, STAGE_STDIO);
    execve(j->program, j->argv, j->envp);
    return fail(j, STAGE_EXEC);
}

/* Read exactly len bytes; 0 at a clean end of file before any, -1 else. */
static int read_all(int fd, void *buf, size_t len, size_t done)
{
    while (done < len) {
        ssize_t n = read(fd, (char *)buf + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        done += (size_t)n;
    }
    return 1;
}

/* Receive one request's header and its 3 descriptors. Returns 1, 0 at
 * end of file (sysdelta has exited), or -1 on a malformed request. */
static int receive_header(int sock, struct request_header *h, int stdio[3])
{
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(3 * sizeof(int))];
    } control;
    struct iovec iov = {h, sizeof *h};
    struct msghdr msg;
    struct cmsghdr *c;
    ssize_t n;
    int got = 0;
    memset(&msg, 0, sizeof msg);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.buf;
    msg.msg_controllen = sizeof control.buf;
    do
        n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    if (n == 0)
        return 0;
    if (n < 0)
        return -1;
    for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            size_t i;
            for (i = 0; i < k; i++) {
                int fd;
                memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
                if (got < 3)
                    stdio[got++] = fd;
                else
                    close(fd);
            }
        }
    }
    if (got != 3 || (msg.msg_flags & MSG_CTRUNC))
        return -1;
    if (read_all(sock, h, sizeof *h, (size_t)n) < 0)
        return -1;
    if (h->magic != MAGIC || h->payload_len > MAX_PAYLOAD || h->n_env > h->payload_len ||
        h->n_argv == 0 || h->n_argv > h->payload_len)
        return -1;
    return 1;
}

/* Point the job at the payload's strings; -1 if it is malformed. strs
 * has room for n_argv + 1 + n_env + 1 pointers: argv, NULL, envp, NULL. */
static int parse_payload(struct job *j, char *p, size_t len, size_t n_argv, size_t n_env,
                         char **strs)
{
    char *end = p + len;
    const char *fields[3];
    size_t i;
    for (i = 0; i < 3 + n_argv + n_env; i++) {
        char *nul = memchr(p, 0, (size_t)(end - p));
        if (!nul)
            return -1;
        if (i < 3)
            fields[i] = p;
        else if (i < 3 + n_argv)
            strs[i - 3] = p;
        else
            strs[i - 2] = p;
        p = nul + 1;
    }
    strs[n_argv] = NULL;
    strs[n_argv + 1 + n_env] = NULL;
    j->program = fields[0];
    j->cwd = fields[1];
    j->cgroup_procs = fields[2];
    j->argv = strs;
    j->envp = strs + n_argv + 1;
    return 0;
}

static void cpus_from_words(cpu_set_t *set, const uint64_t *words)
{
    int c;
    CPU_ZERO(set);
    for (c = 0; c < CPU_WORDS * 64 && c < CPU_SETSIZE; c++)
        if ((words[c / 64] >> (c % 64)) & 1)
            CPU_SET(c, set);
}

/* Start one command; fills the reply. */
static void start(struct job *j, struct reply *r)
{
    pid_t pid;
    j->err = 0;
    j->stage = STAGE_NONE;
    /* CLONE_PARENT: the child's exit signal is ours (SIGCHLD). */
    pid = clone(child_main, child_stack + sizeof child_stack,
                CLONE_VM | CLONE_VFORK | CLONE_PARENT | SIGCHLD, j);
    if (pid < 0) {
        r->pid = 0;
        r->err = errno;
        r->stage = STAGE_CLONE;
        return;
    }
    r->pid = pid;
    r->err = j->err;
    r->stage = j->stage;
}

/* Forget this process's peak RSS (a large request raised it): the
 * commands it starts would report it as theirs. Best effort. */
static void reset_peak_rss(void)
{
    int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (write(fd, "5", 1) < 0) {
            /* nothing to do: the peak stays */
        }
        close(fd);
    }
}

int main(void)
{
    char *payload = NULL;
    char **envp = NULL;
    size_t payload_cap = 0, envp_cap = 0;
    int sock, null;
    /* The socket moves above 2 and closes on exec; 0-2 stay held by
     * /dev/null so that received descriptors are never 0-2. */
    sock = fcntl(0, F_DUPFD_CLOEXEC, 3);
    null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (sock < 0 || null < 0 || dup2(null, 0) < 0)
        return 1;
    for (;;) {
        struct request_header h;
        struct reply r;
        struct job j;
        int i, ok;
        ok = receive_header(sock, &h, j.stdio);
        if (ok <= 0)
            return ok == 0 ? 0 : 2;
        if (h.payload_len + 1 > payload_cap) {
            free(payload);
            payload_cap = h.payload_len + 1;
            payload = malloc(payload_cap);
        }
        if (h.n_argv + h.n_env + 2 > envp_cap) {
            free(envp);
            envp_cap = h.n_argv + h.n_env + 2;
            envp = malloc(envp_cap * sizeof *envp);
        }
        if (!payload || !envp)
            return 3;
        if (read_all(sock, payload, h.payload_len, 0) < 0)
            return 2;
        if (parse_payload(&j, payload, h.payload_len, h.n_argv, h.n_env, envp) < 0)
            return 2;
        j.has_cpus = h.has_cpus != 0;
        cpus_from_words(&j.cpus, h.cpus);
        if (j.has_cpus) {
            /* The child inherits our affinity: set it only if it differs
             * (the common case is the same). */
            cpu_set_t own;
            if (sched_getaffinity(0, sizeof own, &own) == 0 && CPU_EQUAL(&own, &j.cpus))
                j.has_cpus = 0;
        }
        memset(&r, 0, sizeof r);
        start(&j, &r);
        for (i = 0; i < 3; i++)
            close(j.stdio[i]);
        while (send(sock, &r, sizeof r, MSG_NOSIGNAL) < 0)
            if (errno != EINTR)
                return 2;
        if (payload_cap > SHRINK_AFTER || envp_cap * sizeof *envp > SHRINK_AFTER) {
            free(payload);
            free(envp);
            payload = NULL;
            envp = NULL;
            payload_cap = envp_cap = 0;
            reset_peak_rss();
        }
    }
}
