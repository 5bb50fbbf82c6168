// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "kbtf.h"

/* struct btf_header (include/uapi/linux/btf.h), little or big endian as
 * the kernel that wrote it: only the host's own is read here */
#define BTF_MAGIC 0xeB9F
struct hdr {
	uint16_t magic;
	uint8_t version, flags;
	uint32_t hdr_len, type_off, type_len, str_off, str_len;
};

int btf_has_string(const void *btf, size_t len, const char *name)
{
	const char *p = btf;
	size_t n = strlen(name);
	char needle[256];
	struct hdr h;
	uint64_t start;

	if (len < sizeof(h))
		return -EINVAL;
	memcpy(&h, btf, sizeof(h));
	start = (uint64_t)h.hdr_len + h.str_off;
	if (h.magic != BTF_MAGIC || h.hdr_len < sizeof(h) || start + h.str_len > len)
		return -EINVAL;
	if (!n || n + 2 > sizeof(needle))
		return 0;
	/* the section starts with "" and separates strings by NULs: a whole
	 * name is NUL on both sides */
	needle[0] = '\0';
	memcpy(needle + 1, name, n);
	needle[n + 1] = '\0';
	return memmem(p + start, h.str_len, needle, n + 2) != NULL;
}
