// SPDX-License-Identifier: Apache-2.0
/*
 * Where each source line of a loaded BPF program starts in its JIT image,
 * from the kernel's own line info (jited_line_info, line_info and the
 * program's BTF): what a perf sample's offset into bpf_prog_<tag>_<name>
 * needs to be read as a line of the BPF sources. Debian 12's bpftool cannot
 * disassemble (no libbfd), so it cannot say this. bench/prog_profile.py
 * runs it on the agent's programs.
 *
 *   proglines PROG_ID   one line per line-info record, in JIT order:
 *                       "<offset hex> <line> <source text>"
 */
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info), n_li, n_jli, li_size, jli_size, btf_id;
	struct bpf_line_info *li = NULL;
	struct btf *btf = NULL;
	__u64 *jli = NULL;
	int fd, r = 1;

	if (argc != 2 || atoi(argv[1]) <= 0) {
		fprintf(stderr, "usage: proglines PROG_ID\n");
		return 2;
	}
	fd = bpf_prog_get_fd_by_id((__u32)atoi(argv[1]));
	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len)) {
		fprintf(stderr, "proglines: program %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	n_li = info.nr_line_info;
	n_jli = info.nr_jited_line_info;
	li_size = info.line_info_rec_size;
	jli_size = info.jited_line_info_rec_size;
	btf_id = info.btf_id;
	if (!n_li || n_li != n_jli || jli_size != sizeof(__u64) ||
	    li_size < sizeof(struct bpf_line_info)) {
		fprintf(stderr, "proglines: program %s has no JIT line info (%u, %u)\n", argv[1],
			n_li, n_jli);
		goto out;
	}
	li = calloc(n_li, li_size);
	jli = calloc(n_jli, jli_size);
	if (!li || !jli)
		goto out;
	memset(&info, 0, sizeof(info));
	info.nr_line_info = n_li;
	info.line_info_rec_size = li_size;
	info.line_info = (__u64)(unsigned long)li;
	info.nr_jited_line_info = n_jli;
	info.jited_line_info_rec_size = jli_size;
	info.jited_line_info = (__u64)(unsigned long)jli;
	len = sizeof(info);
	if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
		fprintf(stderr, "proglines: program %s: %s\n", argv[1], strerror(errno));
		goto out;
	}
	btf = btf__load_from_kernel_by_id(btf_id);
	for (__u32 i = 0; i < n_li; i++) {
		const struct bpf_line_info *l = (const void *)((const char *)li + i * li_size);
		const char *src = btf ? btf__name_by_offset(btf, l->line_off) : NULL;

		/* offsets from the first record: the program's own start */
		printf("%llx %u %s\n", (unsigned long long)(jli[i] - jli[0]),
		       BPF_LINE_INFO_LINE_NUM(l->line_col), src ? src : "");
	}
	r = 0;
out:
	btf__free(btf);
	free(li);
	free(jli);
	close(fd);
	return r;
}
