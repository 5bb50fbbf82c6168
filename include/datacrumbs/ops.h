/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The operations datacrumbs counts at the system-call layer.
 *
 * One X-macro list so that the operation id (BPF map keys, records), its name
 * (JSON keys), its class and where its byte count comes from can never drift
 * apart. Operation ids are ABI: append only, never reorder or reuse.
 *
 * DC_OP(name, class, size source)
 *   size source: DC_SZ_NONE  no byte count
 *                DC_SZ_RET   the return value, when >= 0 (bytes transferred)
 *                DC_SZ_ARG1..DC_SZ_ARG3  that argument (0-based), e.g. mmap's length
 */
#ifndef DATACRUMBS_OPS_H
#define DATACRUMBS_OPS_H

enum dc_op_class {
	DC_CLASS_DATA_READ = 0,
	DC_CLASS_DATA_WRITE = 1,
	DC_CLASS_METADATA = 2,
	DC_CLASS_SYNC = 3,
	DC_CLASS_ASYNC = 4,
	/* file to file, pipe or socket in one call: neither a read nor a
	 * write of the caller's (a cp by copy_file_range read nothing) */
	DC_CLASS_DATA_COPY = 5,
	DC_CLASS_MAX = 6,
};

enum dc_size_src {
	DC_SZ_NONE = 0,
	DC_SZ_RET = 1,
	DC_SZ_ARG1 = 2,
	DC_SZ_ARG2 = 3,
	DC_SZ_ARG3 = 4,
};

#define DC_OPS(X)                                         \
	X(read, DC_CLASS_DATA_READ, DC_SZ_RET)            \
	X(write, DC_CLASS_DATA_WRITE, DC_SZ_RET)          \
	X(pread64, DC_CLASS_DATA_READ, DC_SZ_RET)         \
	X(pwrite64, DC_CLASS_DATA_WRITE, DC_SZ_RET)       \
	X(readv, DC_CLASS_DATA_READ, DC_SZ_RET)           \
	X(writev, DC_CLASS_DATA_WRITE, DC_SZ_RET)         \
	X(preadv, DC_CLASS_DATA_READ, DC_SZ_RET)          \
	X(pwritev, DC_CLASS_DATA_WRITE, DC_SZ_RET)        \
	X(preadv2, DC_CLASS_DATA_READ, DC_SZ_RET)         \
	X(pwritev2, DC_CLASS_DATA_WRITE, DC_SZ_RET)       \
	X(open, DC_CLASS_METADATA, DC_SZ_NONE)            \
	X(openat, DC_CLASS_METADATA, DC_SZ_NONE)          \
	X(openat2, DC_CLASS_METADATA, DC_SZ_NONE)         \
	X(creat, DC_CLASS_METADATA, DC_SZ_NONE)           \
	X(close, DC_CLASS_METADATA, DC_SZ_NONE)           \
	X(lseek, DC_CLASS_METADATA, DC_SZ_NONE)           \
	X(fsync, DC_CLASS_SYNC, DC_SZ_NONE)               \
	X(fdatasync, DC_CLASS_SYNC, DC_SZ_NONE)           \
	X(sync, DC_CLASS_SYNC, DC_SZ_NONE)                \
	X(syncfs, DC_CLASS_SYNC, DC_SZ_NONE)              \
	X(sync_file_range, DC_CLASS_SYNC, DC_SZ_ARG2)     \
	X(fallocate, DC_CLASS_METADATA, DC_SZ_ARG3)       \
	X(ftruncate, DC_CLASS_METADATA, DC_SZ_NONE)       \
	X(truncate, DC_CLASS_METADATA, DC_SZ_NONE)        \
	X(statx, DC_CLASS_METADATA, DC_SZ_NONE)           \
	X(newfstatat, DC_CLASS_METADATA, DC_SZ_NONE)      \
	X(fstat, DC_CLASS_METADATA, DC_SZ_NONE)           \
	X(getdents64, DC_CLASS_METADATA, DC_SZ_RET)       \
	X(unlink, DC_CLASS_METADATA, DC_SZ_NONE)          \
	X(unlinkat, DC_CLASS_METADATA, DC_SZ_NONE)        \
	X(rename, DC_CLASS_METADATA, DC_SZ_NONE)          \
	X(renameat, DC_CLASS_METADATA, DC_SZ_NONE)        \
	X(renameat2, DC_CLASS_METADATA, DC_SZ_NONE)       \
	X(mkdir, DC_CLASS_METADATA, DC_SZ_NONE)           \
	X(mkdirat, DC_CLASS_METADATA, DC_SZ_NONE)         \
	X(rmdir, DC_CLASS_METADATA, DC_SZ_NONE)           \
	X(mmap, DC_CLASS_METADATA, DC_SZ_ARG1)            \
	X(msync, DC_CLASS_SYNC, DC_SZ_ARG1)               \
	X(sendfile, DC_CLASS_DATA_COPY, DC_SZ_RET)        \
	X(splice, DC_CLASS_DATA_COPY, DC_SZ_RET)          \
	X(copy_file_range, DC_CLASS_DATA_COPY, DC_SZ_RET) \
	X(readahead, DC_CLASS_METADATA, DC_SZ_ARG2)       \
	X(fadvise64, DC_CLASS_METADATA, DC_SZ_ARG2)       \
	X(flock, DC_CLASS_METADATA, DC_SZ_NONE)           \
	X(io_uring_enter, DC_CLASS_ASYNC, DC_SZ_NONE)     \
	X(io_submit, DC_CLASS_ASYNC, DC_SZ_NONE)          \
	X(io_getevents, DC_CLASS_ASYNC, DC_SZ_NONE)       \
	X(stat, DC_CLASS_METADATA, DC_SZ_NONE)            \
	X(lstat, DC_CLASS_METADATA, DC_SZ_NONE)           \
	X(access, DC_CLASS_METADATA, DC_SZ_NONE)          \
	X(faccessat, DC_CLASS_METADATA, DC_SZ_NONE)       \
	X(faccessat2, DC_CLASS_METADATA, DC_SZ_NONE)      \
	X(fcntl, DC_CLASS_METADATA, DC_SZ_NONE)           \
	X(dup, DC_CLASS_METADATA, DC_SZ_NONE)             \
	X(dup2, DC_CLASS_METADATA, DC_SZ_NONE)            \
	X(dup3, DC_CLASS_METADATA, DC_SZ_NONE)            \
	X(close_range, DC_CLASS_METADATA, DC_SZ_NONE)     \
	X(io_pgetevents, DC_CLASS_ASYNC, DC_SZ_NONE)

/* Op 0 means "not an I/O call": the BPF side's syscall-number table is zero-filled. */
enum dc_op {
	DC_OP_NONE = 0,
#define DC_OP_ENUM(name, cls, sz) DC_OP_##name,
	DC_OPS(DC_OP_ENUM)
#undef DC_OP_ENUM
	    DC_OP_MAX,
};

#endif
