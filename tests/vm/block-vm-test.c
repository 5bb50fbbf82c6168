// SPDX-License-Identifier: Apache-2.0
/*
 * The block family on a stock distribution kernel, through the agent's own
 * probe_block_new(): its programs read struct request, bio and gendisk,
 * whose layouts differ from one kernel to the next, and only that kernel's
 * verifier and relocations can tell. The device is null_blk (blk-mq,
 * completions in softirq, no storage behind it), loaded with configfs from
 * the kernel package's own modules (run-vm-test.sh puts them in /modules).
 * By each mechanism (tp_btf, raw_tp), a child reads N blocks with O_DIRECT:
 * one window must hold N read requests of BS bytes each for the child, on
 * null_blk's device, and their queue time (from the kernel's start stamp,
 * rq->start_time_ns) plus device time must be more than 0 and fit in the
 * time the child spent in its reads, made one at a time.
 *
 * block_vm_writeback(): the kernel's writeback charged to the cgroup whose
 * process dirtied the pages. With cgroup2 alone mounted (memory and io on
 * it: cgroup writeback) a child in a cgroup of its own writes N blocks to
 * null_blk's device through the page cache and exits without syncing; the
 * flusher (a kernel thread) writes them back, and the windows must hold N
 * blocks' bytes of write requests by tgid 0 under that cgroup's id, which
 * the agent publishes as pid 0 of the cgroup. This host's hybrid cgroups
 * (io on v1) cannot show it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "probe-block.h"
#include "vm-test.h"

#define N  64
#define BS 4096

static int load_module(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), r;

	if (fd < 0)
		return -errno;
	r = (int)syscall(SYS_finit_module, fd, "", 0);
	r = r < 0 && errno != EEXIST ? -errno : 0;
	close(fd);
	return r;
}

/* the child's time inside its reads, ns: a page shared with the parent */
static uint64_t *read_ns;

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

/* the child's whole life: N direct reads of distinct blocks */
static int read_blocks(void)
{
	void *buf;
	int fd = open("/dev/nullb0", O_RDONLY | O_DIRECT);

	if (fd < 0 || posix_memalign(&buf, BS, BS))
		return 1;
	for (int i = 0; i < N; i++) {
		uint64_t t0 = now_ns();

		if (pread(fd, buf, BS, (off_t)i * BS) != BS)
			return 1;
		*read_ns += now_ns() - t0;
	}
	return close(fd) != 0;
}

/* the family on mechanism mech, or NULL (said) */
static struct probe_block *attach(const char *name, const char *mech)
{
	static struct dc_config cfg;
	struct probe_block *p = NULL;
	int r;

	config_defaults(&cfg);
	snprintf(cfg.block_mechanism, sizeof(cfg.block_mechanism), "%s", mech);
	r = probe_block_new(&cfg, NULL, -1, &p);
	if (r < 0) {
		printf("VMTEST %s FAIL attach: %s\n", name, strerror(-r));
		return NULL;
	}
	return p;
}

int block_vm_run(const char *mech)
{
	char name[64];
	struct probe_block *p = NULL;
	struct dc_blk_drain d = {};
	uint64_t reqs = 0, bytes = 0, other = 0, qns = 0, dns = 0;
	struct stat st;
	int r, status = -1, ok;
	pid_t pid;

	snprintf(name, sizeof(name), "block/%s", mech);
	/* one page for both mechanisms' runs */
	if (!read_ns) {
		void *m = mmap(NULL, sizeof(*read_ns), PROT_READ | PROT_WRITE,
			       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

		if (m == MAP_FAILED) {
			printf("VMTEST %s FAIL mmap: %m\n", name);
			return 1;
		}
		read_ns = m;
	}
	r = load_module("/modules/configfs.ko");
	if (!r)
		r = load_module("/modules/null_blk.ko");
	if (r < 0) {
		printf("VMTEST %s FAIL loading configfs and null_blk: %s\n", name, strerror(-r));
		return 1;
	}
	/* the device node: no udev here */
	if (stat("/dev/nullb0", &st))
		mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
	if (stat("/dev/nullb0", &st) || !S_ISBLK(st.st_mode)) {
		printf("VMTEST %s FAIL no /dev/nullb0 after loading null_blk: %m\n", name);
		return 1;
	}
	p = attach(name, mech);
	if (!p)
		return 1;
	r = probe_block_flip_and_drain(p, &d);
	if (r < 0) {
		printf("VMTEST %s FAIL first drain: %s\n", name, strerror(-r));
		probe_block_free(p);
		return 1;
	}
	*read_ns = 0;
	pid = vm_child(read_blocks, &status);
	if (pid < 0) {
		printf("VMTEST %s FAIL fork/wait: %m\n", name);
		probe_block_free(p);
		return 1;
	}
	r = probe_block_flip_and_drain(p, &d);
	for (size_t i = 0; !r && i < d.n; i++) {
		if (d.entries[i].tgid != (uint32_t)pid)
			continue;
		/* the agent's encoding of dev_t: major << 20 | minor */
		if (d.entries[i].op == DC_BLK_READ &&
		    d.entries[i].dev == (major(st.st_rdev) << 20 | minor(st.st_rdev))) {
			reqs += d.entries[i].v.count;
			bytes += d.entries[i].v.bytes;
			qns += d.entries[i].v.queue_ns;
			dns += d.entries[i].v.device_ns;
		} else
			other += d.entries[i].v.count;
	}
	ok = !r && status == 0 && reqs == N && bytes == (uint64_t)N * BS && !other && qns > 0 &&
	     dns > 0 && qns + dns <= *read_ns;
	printf("VMTEST %s %s reads=%llu bytes=%llu (want %d, %d), queue %llu ns + device %llu ns "
	       "(the child's reads %llu ns), other requests %llu, child status %d, drain %s, "
	       "mechanism "
	       "%s [%s]\n",
	       name, ok ? "PASS" : "FAIL", (unsigned long long)reqs, (unsigned long long)bytes, N,
	       N * BS, (unsigned long long)qns, (unsigned long long)dns,
	       (unsigned long long)*read_ns, (unsigned long long)other, status,
	       r < 0 ? strerror(-r) : "ok", probe_block_mechanism(p), probe_block_detail(p));
	probe_block_free(p);
	return !ok;
}

#define WB_CG "/sys/fs/cgroup/dcwb"

/* the child's whole life: into its cgroup, N buffered writes, no sync */
static int dirty_blocks(void)
{
	char buf[BS], pid[32];
	int fd = open(WB_CG "/cgroup.procs", O_WRONLY), n;

	n = snprintf(pid, sizeof(pid), "%d", getpid());
	if (fd < 0 || write(fd, pid, (size_t)n) != n || close(fd))
		return 2;
	memset(buf, 'w', sizeof(buf));
	fd = open("/dev/nullb0", O_WRONLY);
	if (fd < 0)
		return 1;
	for (int i = 0; i < N; i++)
		if (pwrite(fd, buf, BS, (off_t)i * BS) != BS)
			return 1;
	return close(fd) != 0;
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY), r;

	if (fd < 0)
		return -errno;
	r = write(fd, text, strlen(text)) == (ssize_t)strlen(text) ? 0 : -errno;
	close(fd);
	return r;
}

int block_vm_writeback(const char *mech)
{
	char name[64];
	struct probe_block *p = NULL;
	struct dc_blk_drain d = {};
	uint64_t kbytes = 0, cg_id, own = 0;
	struct stat st, dev;
	int r, status = -1, ok, hold;
	pid_t pid;

	snprintf(name, sizeof(name), "block-writeback/%s", mech);
	mkdir("/sys/fs/cgroup", 0755);
	if (mount("cgroup2", "/sys/fs/cgroup", "cgroup2", 0, NULL) && errno != EBUSY) {
		printf("VMTEST %s FAIL mount cgroup2: %m\n", name);
		return 1;
	}
	r = write_file("/sys/fs/cgroup/cgroup.subtree_control", "+memory +io");
	if (!r && mkdir(WB_CG, 0755) && errno != EEXIST)
		r = -errno;
	if (r < 0 || stat(WB_CG, &st) || stat("/dev/nullb0", &dev)) {
		printf("VMTEST %s FAIL cgroup %s with memory and io, or /dev/nullb0: %s\n", name,
		       WB_CG, strerror(r < 0 ? -r : errno));
		return 1;
	}
	/* a cgroup2 id is its directory's inode number */
	cg_id = st.st_ino;
	/* the flusher, not the child's exit, writes the pages back, soon */
	write_file("/proc/sys/vm/dirty_expire_centisecs", "1");
	write_file("/proc/sys/vm/dirty_writeback_centisecs", "10");
	p = attach(name, mech);
	if (!p)
		return 1;
	/* held open here: the last close of a block device writes its dirty
	 * pages back, in the closing process (the child's, it was) */
	hold = open("/dev/nullb0", O_RDONLY);
	r = probe_block_flip_and_drain(p, &d);
	pid = r < 0 ? -1 : vm_child(dirty_blocks, &status);
	/* windows of 0.2 s until the flusher has written them (3 s at most) */
	for (int w = 0; r >= 0 && pid > 0 && w < 15 && kbytes < (uint64_t)N * BS; w++) {
		usleep(200000);
		r = probe_block_flip_and_drain(p, &d);
		for (size_t i = 0; r >= 0 && i < d.n; i++) {
			if (d.entries[i].op != DC_BLK_WRITE ||
			    d.entries[i].dev != (major(dev.st_rdev) << 20 | minor(dev.st_rdev)))
				continue;
			if (d.entries[i].tgid == 0 && d.entries[i].cgroup_id == cg_id)
				kbytes += d.entries[i].v.bytes;
			else if (d.entries[i].tgid == (uint32_t)pid)
				own += d.entries[i].v.bytes;
		}
	}
	ok = r >= 0 && pid > 0 && status == 0 && kbytes == (uint64_t)N * BS && !own;
	printf("VMTEST %s %s kernel threads' write bytes under the child's cgroup %llu (want %d), "
	       "the child's own %llu (want 0), child status %d, drain %s\n",
	       name, ok ? "PASS" : "FAIL", (unsigned long long)kbytes, N * BS,
	       (unsigned long long)own, status, r < 0 ? strerror(-r) : "ok");
	if (hold >= 0)
		close(hold);
	probe_block_free(p);
	return !ok;
}
