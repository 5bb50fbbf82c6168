// SPDX-License-Identifier: Apache-2.0
/*
 * The system-call numbers the agent's system-call layer traces on this
 * build's architecture (agent/ops.c's table), one line, for the suite's
 * bpftrace script that aggregates the same calls (bench/suite.py).
 * usage: opnrs
 */
#include <stdint.h>
#include <stdio.h>

#include "datacrumbs/syscall.h"
#include "ops.h"

int main(void)
{
	uint8_t tbl[DC_NR_MAX];
	const char *sep = "";

	if (ops_fill_nr_table(tbl, sizeof(tbl)) <= 0) {
		fprintf(stderr, "opnrs: no system call of the agent's table exists here\n");
		return 1;
	}
	for (int nr = 0; nr < DC_NR_MAX; nr++)
		if (tbl[nr]) {
			printf("%s%d", sep, nr);
			sep = " ";
		}
	printf("\n");
	return 0;
}
