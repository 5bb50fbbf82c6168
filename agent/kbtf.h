/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_KBTF_H
#define DC_KBTF_H

#include <linux/btf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Whether the kernel's BTF names something, from its string section alone:
 * enough to tell that a kfunc is missing (bpf_rdonly_cast before 6.2)
 * before loading programs that call it, which a verifier refuses only
 * after the whole object's maps and earlier programs were loaded. A name
 * found may still belong to something else: the caller then loads as it
 * would have, and falls back as before.
 */

/* Pure: where a BTF blob of len bytes keeps its strings (*off, *slen), or
 * -EINVAL if h is not a BTF header or the section lies past len. */
int btf_strings_at(const struct btf_header *h, uint64_t len, uint64_t *off, uint32_t *slen);

/* Pure: whether a BTF string section (NUL-separated, "" first) has name. */
bool btf_strings_have(const char *strs, size_t slen, const char *name);

/* Both over a whole blob in memory: 1, 0, or -EINVAL (not BTF). */
int btf_has_string(const void *btf, size_t len, const char *name);

/* The same for the running kernel's /sys/kernel/btf/vmlinux (its header
 * and string section read, not its types); -errno when it cannot be read. */
int kernel_btf_has_string(const char *name);
/* Whether it has every one of names, its string section read once: 1, 0,
 * or -errno. */
int kernel_btf_has_strings(const char *const *names, size_t count);

/* Whether a line of /proc/kallsyms names the symbol name. */
bool kallsyms_line_names(const char *line, const char *name);

/* Whether /proc/kallsyms lists name: 1, 0, or -errno. The verifier finds
 * a program's typed kernel variables there, so a data symbol missing from
 * it (a kernel without CONFIG_KALLSYMS_ALL) cannot be read by a program
 * even where the kernel's BTF names it. */
int kernel_has_symbol(const char *name);

#endif
