/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_KBTF_H
#define DC_KBTF_H

#include <stddef.h>

/*
 * Whether the kernel's BTF names something, from its string section alone:
 * enough to tell that a kfunc is missing (bpf_rdonly_cast before 6.2)
 * before loading programs that call it, which a verifier refuses only
 * after the whole object's maps and earlier programs were loaded. A name
 * found may still belong to something else: the caller then loads as it
 * would have, and falls back as before.
 */

/* Pure: 1 if the BTF blob btf (len bytes) has the string name, 0 if not,
 * -EINVAL if it is not BTF (bad magic, a section out of bounds). */
int btf_has_string(const void *btf, size_t len, const char *name);

/* The same for the running kernel's /sys/kernel/btf/vmlinux (its header
 * and string section read, not its types); -errno when it cannot be read. */
int kernel_btf_has_string(const char *name);

#endif
