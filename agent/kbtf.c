// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <string.h>

#include "kbtf.h"

/* Only the host's own byte order is read: the kernel's BTF is in it. */
int btf_strings_at(const struct btf_header *h, uint64_t len, uint64_t *off, uint32_t *slen)
{
	uint64_t start = (uint64_t)h->hdr_len + h->str_off;

	if (h->magic != BTF_MAGIC || h->hdr_len < sizeof(*h) || start + h->str_len > len)
		return -EINVAL;
	*off = start;
	*slen = h->str_len;
	return 0;
}

bool btf_strings_have(const char *strs, size_t slen, const char *name)
{
	size_t n = strlen(name);
	char needle[256];

	if (!n || n + 2 > sizeof(needle))
		return false;
	/* a whole name is NUL on both sides (the first string is "") */
	needle[0] = '\0';
	memcpy(needle + 1, name, n);
	needle[n + 1] = '\0';
	return memmem(strs, slen, needle, n + 2) != NULL;
}

int btf_has_string(const void *btf, size_t len, const char *name)
{
	struct btf_header h;
	uint64_t off;
	uint32_t slen;

	if (len < sizeof(h))
		return -EINVAL;
	memcpy(&h, btf, sizeof(h));
	if (btf_strings_at(&h, len, &off, &slen))
		return -EINVAL;
	return btf_strings_have((const char *)btf + off, slen, name);
}

bool kallsyms_line_names(const char *line, const char *name)
{
	const char *p = strchr(line, ' ');
	size_t n = strlen(name);

	/* "address type name", then a tab and "[module]" for a module's */
	if (!p || !(p = strchr(p + 1, ' ')))
		return false;
	p++;
	return n && !strncmp(p, name, n) && (p[n] == '\n' || p[n] == '\t' || p[n] == '\0');
}
