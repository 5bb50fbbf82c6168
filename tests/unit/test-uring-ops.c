// SPDX-License-Identifier: Apache-2.0
#include <linux/io_uring.h>

#include "datacrumbs/uring.h"
#include "tap.h"
#include "uring-ops.h"

int main(void)
{
	char buf[16];
	int named = 0, dup = 0;

	CHECK_STR(uring_op_name(IORING_OP_READ, buf, sizeof(buf)), "read", "IORING_OP_READ");
	CHECK_STR(uring_op_name(IORING_OP_WRITEV, buf, sizeof(buf)), "writev", "IORING_OP_WRITEV");
	CHECK_STR(uring_op_name(IORING_OP_OPENAT, buf, sizeof(buf)), "openat", "IORING_OP_OPENAT");
	CHECK_STR(uring_op_name(IORING_OP_STATX, buf, sizeof(buf)), "statx", "IORING_OP_STATX");
	CHECK_STR(uring_op_name(IORING_OP_NOP, buf, sizeof(buf)), "nop", "opcode 0 is named");
	CHECK_STR(uring_op_name(DC_URING_OP_WRITEV_FIXED, buf, sizeof(buf)), "writev_fixed",
		  "an opcode newer than the build's header, by number");
	CHECK_STR(uring_op_name(200, buf, sizeof(buf)), "op_200", "unknown opcode");
	CHECK_STR(uring_op_name(DC_URING_OP_MAX - 1, buf, sizeof(buf)), "op_255",
		  "the largest opcode the kernel can pass");
	/* every opcode of the build's header is named, and no name is used twice:
	 * a record's io_uring members would otherwise merge or collide */
	for (unsigned i = 0; i < DC_URING_OP_MAX; i++) {
		char a[16], b[16];
		const char *x = uring_op_name(i, a, sizeof(a));

		if (i < IORING_OP_LAST && strncmp(x, "op_", 3))
			named++;
		for (unsigned k = 0; k < i; k++)
			if (!strcmp(x, uring_op_name(k, b, sizeof(b))))
				dup++;
	}
	CHECK(named == IORING_OP_LAST, "all %d opcodes of <linux/io_uring.h> named (%d)",
	      IORING_OP_LAST, named);
	CHECK(dup == 0, "names are unique (%d duplicates)", dup);
	return tap_done();
}
