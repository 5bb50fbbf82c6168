// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "kbtf.h"
#include "tap.h"

/* A BTF blob: the 24-byte header, 8 bytes of "types", then strings. */
static size_t blob(unsigned char *b, const char *strs, size_t slen)
{
	uint16_t magic = 0xeB9F;
	uint32_t hdr_len = 24, type_off = 0, type_len = 8, str_off = 8, str_len = (uint32_t)slen;

	memset(b, 0, 24 + 8);
	memcpy(b, &magic, 2);
	b[2] = 1;
	memcpy(b + 4, &hdr_len, 4);
	memcpy(b + 8, &type_off, 4);
	memcpy(b + 12, &type_len, 4);
	memcpy(b + 16, &str_off, 4);
	memcpy(b + 20, &str_len, 4);
	memcpy(b + 32, strs, slen);
	return 32 + slen;
}

int main(void)
{
	static const char strs[] = "\0int\0bpf_rdonly_cast\0bpf_cast_to_kern_ctx_x\0";
	unsigned char b[256];
	size_t n = blob(b, strs, sizeof(strs));

	CHECK(btf_has_string(b, n, "bpf_rdonly_cast") == 1, "a whole string is found");
	CHECK(btf_has_string(b, n, "int") == 1, "the first string after the empty one");
	CHECK(btf_has_string(b, n, "bpf_cast_to_kern_ctx") == 0,
	      "a prefix of a longer string is not the string");
	CHECK(btf_has_string(b, n, "rdonly_cast") == 0, "nor is a suffix");
	CHECK(btf_has_string(b, n, "bpf_obj_new") == 0, "an absent name");
	CHECK(btf_has_string(b, n, "") == 0, "the empty name is never asked for");
	/* the types' bytes are not searched: a name there is not a string */
	memcpy(b + 24, "\0int\0", 5);
	n = blob(b + 128, "\0long\0", 6);
	memcpy(b + 128 + 24, "\0int\0", 5);
	CHECK(btf_has_string(b + 128, n, "int") == 0 && btf_has_string(b + 128, n, "long") == 1,
	      "only the string section is read");
	n = blob(b, strs, sizeof(strs));
	CHECK(btf_has_string(b, 10, "int") == -EINVAL, "a blob shorter than the header");
	b[0] ^= 0xff;
	CHECK(btf_has_string(b, n, "int") == -EINVAL, "bad magic");
	b[0] ^= 0xff;
	CHECK(btf_has_string(b, n - 1, "int") == -EINVAL, "a string section past the end");
	CHECK(kallsyms_line_names("ffffffff82a14ec8 D __preempt_count\n", "__preempt_count"),
	      "a kallsyms line names its symbol");
	CHECK(kallsyms_line_names("0000000000000000 D pcpu_hot\n", "pcpu_hot"),
	      "with its address hidden (kptr_restrict) too");
	CHECK(kallsyms_line_names("ffffffffc0a01000 t ext4_sync_file\t[ext4]\n", "ext4_sync_file"),
	      "and a module's, before its tab");
	CHECK(!kallsyms_line_names("ffffffff82a14ec8 D __preempt_count_x\n", "__preempt_count"),
	      "a longer symbol is not the symbol");
	CHECK(!kallsyms_line_names("ffffffff82a14ec8 D x__preempt_count\n", "__preempt_count"),
	      "nor one it ends");
	CHECK(!kallsyms_line_names("garbage\n", "garbage"), "a line without its three fields");
	CHECK(!kallsyms_line_names("ffffffff82a14ec8 D \n", ""),
	      "the empty name is never asked for");
	return tap_done();
}
