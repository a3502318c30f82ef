/* gpulab's libnvidia-ml.so.1: the wire half.
 *
 * Every exported NVML function (generated into exports.c from assessor/sim/nvml_lib/exports.py) hands its
 * arguments to gl_call(), which writes one request line to the simulator and copies the answer into the
 * caller's output pointers. The simulator answers with gpulab's own NVML semantics (assessor.sim.mock_nvml),
 * so this file holds no NVML rule at all: only transport and marshalling.
 *
 * Who answers:
 *   - inside a simulated node (gpulab sim shell): the node's agent, through /run/gpulab/node.sock;
 *   - elsewhere: a server process this library starts on the first nvmlInit,
 *       GPULAB_PYTHON -E -m assessor.sim.nvml_lib.serve "$GPULAB_SIM_STATE"
 *     talking over a socketpair; it ends when this process closes its end.
 *
 * Wire format (one line each way, ASCII):
 *   request:  NAME TOKEN...   one token per C parameter, by kind:
 *             h u i U  decimal value (a handle is its pointer value)
 *             s        hex of the C string, or "-" for NULL
 *             o S a    "1" when the output pointer is not NULL, else "0"
 *             n v      hex of the 4 bytes it points to (a count, a struct version), or "-" for NULL
 *             p b x    hex of the bytes it points to (fixed size / element size * previous argument)
 *   reply:    RC TOKEN...     one token per output parameter (o S a n v b x) in order: "-" or hex bytes,
 *             copied into that pointer.
 *
 * Before each nvmlInit* the library sends gpulab's own request
 *   gpulabJob TOKEN...         one token per Slurm job variable (gl_job_variables, written by build.py) set in
 *                              this process's environment: the hex of NAME=VALUE
 * so that a program inside a job step sees only the job's GPUs, as the simulated nvidia-smi there does. Its
 * reply is RC alone; an nvmlInit whose job request is refused returns that code (it never sees the whole node
 * by mistake).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef GPULAB_PYTHON
#define GPULAB_PYTHON "/usr/bin/python3"
#endif
#define NODE_SOCKET "/run/gpulab/node.sock"
#define REPLY_TIMEOUT_MS 60000
#define MAX_REPLY (16 * 1024 * 1024)

#define RC_UNINITIALIZED 1
#define RC_DRIVER_NOT_LOADED 9
#define RC_TIMEOUT 10
#define RC_UNKNOWN 999
#define JOB_REQUEST "gpulabJob"

extern char **environ;
extern const char *const gl_job_variables[];  /* NULL-terminated; in exports.c */

static pthread_mutex_t gl_lock = PTHREAD_MUTEX_INITIALIZER;
static int gl_fd = -1;
static pid_t gl_server = 0;
static int gl_atfork_set = 0;
static char gl_node[4096];  /* the GPULAB_SIM_STATE and GPULAB_SIM_EUID the running server was started for */

struct gl_buf {
    char *p;
    size_t n, cap;
};

static int buf_grow(struct gl_buf *b, size_t more) {
    if (b->n + more + 1 <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + more + 1) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

static int put(struct gl_buf *b, const char *s, size_t len) {
    if (buf_grow(b, len)) return -1;
    memcpy(b->p + b->n, s, len);
    b->n += len;
    b->p[b->n] = 0;
    return 0;
}

static int put_text(struct gl_buf *b, const char *s) { return put(b, s, strlen(s)); }

static int put_hex(struct gl_buf *b, const void *data, size_t len) {
    static const char digits[] = "0123456789abcdef";
    const unsigned char *d = data;
    if (buf_grow(b, 2 * len + 1)) return -1;
    if (len == 0) return put_text(b, "x");  /* an empty buffer still takes a token */
    for (size_t i = 0; i < len; i++) {
        b->p[b->n++] = digits[d[i] >> 4];
        b->p[b->n++] = digits[d[i] & 15];
    }
    b->p[b->n] = 0;
    return 0;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

static void gl_child_after_fork(void) {
    /* a forked child must not talk on its parent's connection: it starts its own on its next nvmlInit */
    if (gl_fd >= 0) close(gl_fd);
    gl_fd = -1;
    gl_server = 0;
    pthread_mutex_init(&gl_lock, NULL);
}

static int write_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int connect_node_socket(void) {
    struct sockaddr_un addr;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    strncpy(addr.sun_path, NODE_SOCKET, sizeof addr.sun_path - 1);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
        close(fd);
        return -1;
    }
    char hello[64];
    snprintf(hello, sizeof hello, "gpulab-nvml 1 %u\n", (unsigned)geteuid());
    if (write_all(fd, hello, strlen(hello))) {
        close(fd);
        return -1;
    }
    return fd;
}

static int spawn_server(const char *state) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) return -1;
    size_t count = 0;
    while (environ && environ[count]) count++;
    char **envp = calloc(count + 2, sizeof *envp);
    if (!envp) {
        close(sv[0]);
        close(sv[1]);
        return -1;
    }
    size_t k = 0;
    for (size_t i = 0; i < count; i++) {
        /* the server reads the state from its argument; LD_PRELOAD tricks of the caller stay with it */
        if (strncmp(environ[i], "GPULAB_SIM_STATE=", 17) == 0) continue;
        if (strncmp(environ[i], "LD_PRELOAD=", 11) == 0) continue;
        envp[k++] = environ[i];
    }
    envp[k++] = (char *)"GPULAB_NVML_SERVER=1";  /* its Python must not load this library in turn */
    envp[k] = NULL;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, sv[1], 0);
    posix_spawn_file_actions_adddup2(&actions, sv[1], 1);
    char *argv[] = {(char *)GPULAB_PYTHON, (char *)"-E", (char *)"-m", (char *)"assessor.sim.nvml_lib.serve",
                    (char *)state, NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, GPULAB_PYTHON, &actions, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&actions);
    free(envp);
    close(sv[1]);
    if (rc != 0) {
        close(sv[0]);
        return -1;
    }
    gl_server = pid;
    return sv[0];
}

static void node_key(char *out, size_t size) {
    const char *state = getenv("GPULAB_SIM_STATE");
    const char *euid = getenv("GPULAB_SIM_EUID");
    snprintf(out, size, "%s\n%s", state ? state : "", euid ? euid : "");
}

static void gl_drop(void);

static int gl_open(int init) {
    if (gl_fd >= 0 && init && gl_server > 0) {
        /* a program (a test) that points GPULAB_SIM_STATE at another node before nvmlInit gets that node */
        char key[sizeof gl_node];
        node_key(key, sizeof key);
        if (strcmp(key, gl_node) != 0) gl_drop();
    }
    if (gl_fd >= 0) return 0;
    if (!gl_atfork_set) {
        pthread_atfork(NULL, NULL, gl_child_after_fork);
        gl_atfork_set = 1;
    }
    if (access(NODE_SOCKET, F_OK) == 0) {
        gl_fd = connect_node_socket();
    } else {
        const char *state = getenv("GPULAB_SIM_STATE");
        if (state && *state) gl_fd = spawn_server(state);
        if (gl_fd >= 0) node_key(gl_node, sizeof gl_node);
    }
    return gl_fd >= 0 ? 0 : -1;
}

static void gl_drop(void) {
    if (gl_fd >= 0) close(gl_fd);
    gl_fd = -1;
    if (gl_server > 0) waitpid(gl_server, NULL, WNOHANG);
    gl_server = 0;
}

/* Read one reply line into *out (malloc'd); 0 on success. */
static int read_line(struct gl_buf *out) {
    for (;;) {
        if (out->n > 0 && out->p[out->n - 1] == '\n') return 0;
        if (out->n > MAX_REPLY) return -1;
        struct pollfd pfd = {gl_fd, POLLIN, 0};
        int ready = poll(&pfd, 1, REPLY_TIMEOUT_MS);
        if (ready < 0 && errno == EINTR) continue;
        if (ready == 0) return -2;
        if (ready < 0) return -1;
        if (buf_grow(out, 65536)) return -1;
        ssize_t r = recv(gl_fd, out->p + out->n, 65536, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        out->n += (size_t)r;
        out->p[out->n] = 0;
    }
}

static int is_output(char kind) { return kind && strchr("oSanvbx", kind) != NULL; }

/* Send one request line and read the reply line into *rep. 0, or the code the caller gets when the
 * connection failed (it is dropped then: the next nvmlInit opens a new one). */
static int exchange(const struct gl_buf *req, struct gl_buf *rep, int init) {
    if (write_all(gl_fd, req->p, req->n)) {
        gl_drop();
        return init ? RC_DRIVER_NOT_LOADED : RC_UNKNOWN;
    }
    int got = read_line(rep);
    if (got != 0) {
        gl_drop();
        return got == -2 ? RC_TIMEOUT : RC_UNKNOWN;
    }
    return 0;
}

/* Tell the server which Slurm job this process is in (the variables as they are now); the reply's code. */
static int send_job(void) {
    struct gl_buf req = {0}, rep = {0};
    int rc = RC_UNKNOWN;
    if (put_text(&req, JOB_REQUEST)) goto done;
    for (size_t i = 0; gl_job_variables[i]; i++) {
        const char *name = gl_job_variables[i];
        const char *value = getenv(name);
        if (!value) continue;
        if (put_text(&req, " ") || put_hex(&req, name, strlen(name)) || put_hex(&req, "=", 1)) goto done;
        if (*value && put_hex(&req, value, strlen(value))) goto done;  /* an empty value adds nothing */
    }
    if (put_text(&req, "\n")) goto done;
    rc = exchange(&req, &rep, 1);
    if (rc != 0) goto done;
    char *end;
    long code = strtol(rep.p, &end, 10);
    rc = end == rep.p ? RC_UNKNOWN : (int)code;
done:
    free(req.p);
    free(rep.p);
    return rc;
}

int gl_call(const char *name, const char *kinds, const uint64_t *args, const size_t *sizes) {
    int init = strncmp(name, "nvmlInit", 8) == 0;
    struct gl_buf req = {0}, rep = {0};
    int rc = RC_UNKNOWN;
    pthread_mutex_lock(&gl_lock);
    if (gl_open(init) != 0) {
        rc = init ? RC_DRIVER_NOT_LOADED : RC_UNINITIALIZED;
        goto done;
    }
    if (init) {
        int job = send_job();
        if (job != 0) {
            rc = job;
            goto done;
        }
    }
    if (put_text(&req, name)) goto done;
    for (size_t i = 0; kinds[i]; i++) {
        char num[32];
        void *ptr = (void *)(uintptr_t)args[i];
        if (put_text(&req, " ")) goto done;
        switch (kinds[i]) {
            case 'h':
            case 'u':
            case 'U':
                snprintf(num, sizeof num, "%llu", (unsigned long long)args[i]);
                if (put_text(&req, num)) goto done;
                break;
            case 'i':
                snprintf(num, sizeof num, "%lld", (long long)(int64_t)args[i]);
                if (put_text(&req, num)) goto done;
                break;
            case 's':
                if (!ptr) {
                    if (put_text(&req, "-")) goto done;
                } else if (put_hex(&req, ptr, strnlen(ptr, 4096))) {
                    goto done;
                }
                break;
            case 'o':
            case 'S':
            case 'a':
                if (put_text(&req, ptr ? "1" : "0")) goto done;
                break;
            case 'n':
            case 'v':
                if (!ptr) {
                    if (put_text(&req, "-")) goto done;
                } else if (put_hex(&req, ptr, 4)) {
                    goto done;
                }
                break;
            case 'p':
            case 'b':
            case 'x': {
                size_t len = sizes ? sizes[i] : 0;
                if (kinds[i] == 'x') len *= (i > 0) ? (size_t)(uint32_t)args[i - 1] : 0;
                if (!ptr) {
                    if (put_text(&req, "-")) goto done;
                } else if (put_hex(&req, ptr, len)) {
                    goto done;
                }
                break;
            }
            default:
                goto done;
        }
    }
    if (put_text(&req, "\n")) goto done;
    int failed = exchange(&req, &rep, init);
    if (failed != 0) {
        rc = failed;
        goto done;
    }
    char *cursor = rep.p;
    char *end;
    long code = strtol(cursor, &end, 10);
    if (end == cursor) goto done;
    cursor = end;
    for (size_t i = 0; kinds[i]; i++) {
        if (!is_output(kinds[i])) continue;
        while (*cursor == ' ') cursor++;
        char *token = cursor;
        while (*cursor && *cursor != ' ' && *cursor != '\n') cursor++;
        size_t len = (size_t)(cursor - token);
        unsigned char *ptr = (unsigned char *)(uintptr_t)args[i];
        if (len == 0 || (len == 1 && (*token == '-' || *token == 'x')) || !ptr) continue;
        for (size_t j = 0; j + 1 < len; j += 2) {
            int hi = hexval(token[j]), lo = hexval(token[j + 1]);
            if (hi < 0 || lo < 0) break;
            ptr[j / 2] = (unsigned char)(hi << 4 | lo);
        }
    }
    rc = (int)code;
done:
    pthread_mutex_unlock(&gl_lock);
    free(req.p);
    free(rep.p);
    return rc;
}
