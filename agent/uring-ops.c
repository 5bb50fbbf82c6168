// SPDX-License-Identifier: Apache-2.0
#include <linux/io_uring.h>
#include <stdio.h>

#include "datacrumbs/uring.h"
#include "macro.h"
#include "uring-ops.h"

/* the BPF side's copies of the opcodes it tests (datacrumbs/uring.h) */
_Static_assert(DC_URING_OP_READV == IORING_OP_READV, "READV");
_Static_assert(DC_URING_OP_WRITEV == IORING_OP_WRITEV, "WRITEV");
_Static_assert(DC_URING_OP_READ_FIXED == IORING_OP_READ_FIXED, "READ_FIXED");
_Static_assert(DC_URING_OP_WRITE_FIXED == IORING_OP_WRITE_FIXED, "WRITE_FIXED");
_Static_assert(DC_URING_OP_READ == IORING_OP_READ, "READ");
_Static_assert(DC_URING_OP_WRITE == IORING_OP_WRITE, "WRITE");
/* the numbered entries below continue from here */
_Static_assert(IORING_OP_SENDMSG_ZC == 48, "SENDMSG_ZC");

/*
 * Indexed by opcode. The build's <linux/io_uring.h> may be older than the
 * running kernel: opcodes after IORING_OP_SENDMSG_ZC (6.1, Debian 12's
 * headers) are spelled by number, which the UAPI never reassigns.
 */
static const char *const names[] = {
    [IORING_OP_NOP] = "nop",
    [IORING_OP_READV] = "readv",
    [IORING_OP_WRITEV] = "writev",
    [IORING_OP_FSYNC] = "fsync",
    [IORING_OP_READ_FIXED] = "read_fixed",
    [IORING_OP_WRITE_FIXED] = "write_fixed",
    [IORING_OP_POLL_ADD] = "poll_add",
    [IORING_OP_POLL_REMOVE] = "poll_remove",
    [IORING_OP_SYNC_FILE_RANGE] = "sync_file_range",
    [IORING_OP_SENDMSG] = "sendmsg",
    [IORING_OP_RECVMSG] = "recvmsg",
    [IORING_OP_TIMEOUT] = "timeout",
    [IORING_OP_TIMEOUT_REMOVE] = "timeout_remove",
    [IORING_OP_ACCEPT] = "accept",
    [IORING_OP_ASYNC_CANCEL] = "async_cancel",
    [IORING_OP_LINK_TIMEOUT] = "link_timeout",
    [IORING_OP_CONNECT] = "connect",
    [IORING_OP_FALLOCATE] = "fallocate",
    [IORING_OP_OPENAT] = "openat",
    [IORING_OP_CLOSE] = "close",
    [IORING_OP_FILES_UPDATE] = "files_update",
    [IORING_OP_STATX] = "statx",
    [IORING_OP_READ] = "read",
    [IORING_OP_WRITE] = "write",
    [IORING_OP_FADVISE] = "fadvise",
    [IORING_OP_MADVISE] = "madvise",
    [IORING_OP_SEND] = "send",
    [IORING_OP_RECV] = "recv",
    [IORING_OP_OPENAT2] = "openat2",
    [IORING_OP_EPOLL_CTL] = "epoll_ctl",
    [IORING_OP_SPLICE] = "splice",
    [IORING_OP_PROVIDE_BUFFERS] = "provide_buffers",
    [IORING_OP_REMOVE_BUFFERS] = "remove_buffers",
    [IORING_OP_TEE] = "tee",
    [IORING_OP_SHUTDOWN] = "shutdown",
    [IORING_OP_RENAMEAT] = "renameat",
    [IORING_OP_UNLINKAT] = "unlinkat",
    [IORING_OP_MKDIRAT] = "mkdirat",
    [IORING_OP_SYMLINKAT] = "symlinkat",
    [IORING_OP_LINKAT] = "linkat",
    [IORING_OP_MSG_RING] = "msg_ring",
    [IORING_OP_FSETXATTR] = "fsetxattr",
    [IORING_OP_SETXATTR] = "setxattr",
    [IORING_OP_FGETXATTR] = "fgetxattr",
    [IORING_OP_GETXATTR] = "getxattr",
    [IORING_OP_SOCKET] = "socket",
    [IORING_OP_URING_CMD] = "uring_cmd",
    [IORING_OP_SEND_ZC] = "send_zc",
    [IORING_OP_SENDMSG_ZC] = "sendmsg_zc",
    [49] = "read_multishot",
    [50] = "waitid",
    [51] = "futex_wait",
    [52] = "futex_wake",
    [53] = "futex_waitv",
    [54] = "fixed_fd_install",
    [55] = "ftruncate",
    [56] = "bind",
    [57] = "listen",
    [58] = "recv_zc",
    [59] = "epoll_wait",
    [DC_URING_OP_READV_FIXED] = "readv_fixed",
    [DC_URING_OP_WRITEV_FIXED] = "writev_fixed",
    [62] = "pipe",
};

const char *uring_op_name(unsigned opcode, char *buf, size_t len)
{
	if (opcode < ELEMENTSOF(names) && names[opcode])
		return names[opcode];
	snprintf(buf, len, "op_%u", opcode);
	return buf;
}
