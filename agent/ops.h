/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_AGENT_OPS_H
#define DC_AGENT_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "datacrumbs/ops.h"

struct dc_op_info {
	const char *name;
	enum dc_op_class cls;
	enum dc_size_src size_src;
};

const struct dc_op_info *ops_get(unsigned op);
const char *ops_class_name(enum dc_op_class cls);
/* Fills a syscall-number -> op table; returns how many ops map on this arch. */
int ops_fill_nr_table(uint8_t *tbl, size_t n);
int ops_find(const char *name);

#endif
