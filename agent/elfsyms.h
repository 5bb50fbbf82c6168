/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_ELFSYMS_H
#define DC_ELFSYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Functions of an ELF file whose names match fnmatch patterns, one per
 * address: aliases (pwrite and pwrite64 are one function in glibc) would
 * otherwise be probed, and counted, twice. Among aliases the name kept is
 * the first of: no leading underscore, shortest, alphabetical.
 */
struct elf_func {
	char name[128];
	uint64_t offset; /* file offset, what a uprobe attaches to */
};

/* Is a a better name than b for the same address (the rule above)? */
bool elf_better_name(const char *a, const char *b);

/* patterns: newline-separated. Returns the count found (*ret malloc'ed) or -errno. */
int elf_find_funcs(const char *path, const char *patterns, struct elf_func **ret, char *err,
		   size_t errlen);

#endif
