/* gpulab: preloaded into the Slurm daemons of a simulated node (assessor/sim/slurm_node).
 *
 * The node is a user namespace whose root is an unprivileged user: the kernel refuses setgroups() there, and
 * slurmctld (SlurmUser=root) and slurmstepd call it, fatally. Inside, the supplementary groups cannot differ
 * anyway, so the call succeeds without changing anything.
 *
 * The node's /dev/nvidia* are regular files (nobody can make a device node in a user namespace); slurmd's
 * gres/gpu plugin refuses a gres.conf File= that is not a character device. stat() reports them as the
 * driver's character devices, major 195 (minor N for /dev/nvidiaN, 255 for /dev/nvidiactl), as on a real
 * node. Its MIG capability files /dev/nvidia-caps/nvidia-capN (assessor/sim/mig_caps.py) are the nvidia-caps
 * driver's character devices, minor N, under the major that module gives them (NVIDIA_CAPS_MAJOR).
 *
 * The node has no cgroup hierarchy of its own, and slurmd refuses to start when its cgroup plugin finds none
 * under /sys/fs/cgroup, even with proctrack/linuxproc and task/none (which use no cgroup): statfs() answers
 * for /sys/fs/cgroup as for a cgroup v1 tmpfs with its systemd hierarchy, as on a hybrid host. Nothing else
 * is changed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <grp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/types.h>

#ifndef NVIDIA_CAPS_MAJOR
#define NVIDIA_CAPS_MAJOR 508
#endif

int setgroups(size_t size, const gid_t *list) {
    (void)size;
    (void)list;
    return 0;
}

int initgroups(const char *user, gid_t group) {
    (void)user;
    (void)group;
    return 0;
}

static void as_device(const char *path, struct stat *st) {
    const char *prefix = "/dev/nvidia";
    const char *caps = "/dev/nvidia-caps/nvidia-cap";
    size_t n = strlen(prefix);
    if (strncmp(path, prefix, n) != 0 || !S_ISREG(st->st_mode)) return;
    const char *rest = path + n;
    unsigned major = 195, minor = 254;
    if (strncmp(path, caps, strlen(caps)) == 0) {
        rest = path + strlen(caps);
        if (*rest < '0' || *rest > '9') return;
        major = NVIDIA_CAPS_MAJOR;
        minor = (unsigned)strtoul(rest, NULL, 10);
    } else if (*rest >= '0' && *rest <= '9') {
        minor = (unsigned)strtoul(rest, NULL, 10);
    } else if (strcmp(rest, "ctl") == 0) {
        minor = 255;
    }
    st->st_mode = (st->st_mode & 07777) | S_IFCHR;
    st->st_rdev = makedev(major, minor);
    st->st_size = 0;
}

int stat(const char *path, struct stat *st) {
    static int (*real)(const char *, struct stat *);
    if (real == NULL) real = (int (*)(const char *, struct stat *))dlsym(RTLD_NEXT, "stat");
    int rc = real(path, st);
    if (rc == 0) as_device(path, st);
    return rc;
}

int statfs(const char *path, struct statfs *buf) {
    static int (*real)(const char *, struct statfs *);
    if (real == NULL) real = (int (*)(const char *, struct statfs *))dlsym(RTLD_NEXT, "statfs");
    if (strncmp(path, "/sys/fs/cgroup", 14) == 0) {
        const char *rest = path + 14;
        if (*rest == '\0' || strcmp(rest, "/") == 0) {
            memset(buf, 0, sizeof(*buf));
            buf->f_type = 0x01021994; /* TMPFS_MAGIC */
            return 0;
        }
        if (strcmp(rest, "/systemd") == 0 || strcmp(rest, "/systemd/") == 0) {
            memset(buf, 0, sizeof(*buf));
            buf->f_type = 0x27e0eb; /* CGROUP_SUPER_MAGIC */
            return 0;
        }
    }
    return real(path, buf);
}
