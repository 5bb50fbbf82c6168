// SPDX-License-Identifier: Apache-2.0
#include <string.h>
#include <sys/syscall.h>

#include "ops.h"

/*
 * Syscall numbers come from the C library's <sys/syscall.h> for the build
 * architecture, and reach the BPF side through its .rodata table, so the BPF
 * object itself is architecture-neutral. arm64 lacks the legacy calls (open,
 * creat, stat, rename, ...): those ops simply never occur there.
 */
static int nr_for(const char *name);

static const struct dc_op_info op_table[DC_OP_MAX] = {
    [DC_OP_NONE] = {"none", DC_CLASS_METADATA, DC_SZ_NONE},
#define X(n, c, s) [DC_OP_##n] = {#n, c, s},
    DC_OPS(X)
#undef X
};

static int nr_for(const char *name)
{
	static const struct {
		const char *name;
		int nr;
	} nrs[] = {
#define N(n) {#n, SYS_##n},
	    N(read) N(write) N(pread64) N(pwrite64) N(readv) N(writev) N(preadv) N(pwritev)
		N(preadv2) N(pwritev2) N(openat) N(openat2) N(close) N(lseek) N(fsync) N(fdatasync)
		    N(sync) N(syncfs) N(sync_file_range) N(fallocate) N(ftruncate) N(truncate)
			N(statx) N(newfstatat) N(fstat) N(getdents64) N(unlinkat) N(renameat2)
			    N(mkdirat) N(mmap) N(msync) N(sendfile) N(splice) N(copy_file_range)
				N(readahead) N(fadvise64) N(flock) N(io_uring_enter) N(io_submit)
				    N(io_getevents) N(faccessat) N(faccessat2) N(fcntl) N(dup)
					N(dup3) N(close_range) N(io_pgetevents)
#ifdef SYS_open
					    N(open) N(creat) N(unlink) N(rename) N(mkdir) N(rmdir)
						N(stat) N(lstat) N(access) N(dup2)
#endif
#ifdef SYS_renameat
						    N(renameat)
#endif
#undef N
	};

	for (size_t i = 0; i < sizeof(nrs) / sizeof(nrs[0]); i++)
		if (!strcmp(nrs[i].name, name))
			return nrs[i].nr;
	return -1;
}

const struct dc_op_info *ops_get(unsigned op)
{
	return op < DC_OP_MAX ? &op_table[op] : NULL;
}

const char *ops_class_name(enum dc_op_class cls)
{
	switch (cls) {
	case DC_CLASS_DATA_READ:
		return "data_read";
	case DC_CLASS_DATA_WRITE:
		return "data_write";
	case DC_CLASS_METADATA:
		return "metadata";
	case DC_CLASS_SYNC:
		return "sync";
	case DC_CLASS_ASYNC:
		return "async";
	case DC_CLASS_DATA_COPY:
		return "data_copy";
	default:
		return "unknown";
	}
}

int ops_find(const char *name)
{
	for (unsigned op = 1; op < DC_OP_MAX; op++)
		if (!strcmp(op_table[op].name, name))
			return op;
	return -1;
}

int ops_fill_nr_table(uint8_t *tbl, size_t n)
{
	int mapped = 0;

	memset(tbl, 0, n);
	for (unsigned op = 1; op < DC_OP_MAX; op++) {
		int nr = nr_for(op_table[op].name);

		if (nr < 0 || (size_t)nr >= n)
			continue;
		tbl[nr] = (uint8_t)op;
		mapped++;
	}
	return mapped;
}
