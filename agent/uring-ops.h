/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_URING_OPS_H
#define DC_URING_OPS_H

#include <stddef.h>

/*
 * The record name of an io_uring opcode: the lower-case IORING_OP_* suffix
 * ("read", "writev", "openat", "statx"), or "op_<n>" for an opcode newer than
 * this table, written into buf (at least 8 bytes). Never NULL.
 */
const char *uring_op_name(unsigned opcode, char *buf, size_t len);

#endif
