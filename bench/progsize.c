// SPDX-License-Identifier: Apache-2.0
/*
 * What the kernel's verifier walked for each loaded datacrumbs program
 * (instructions verified: the bulk of the agent's start-up time) and the
 * size of its JIT image. Run while an agent runs; bpftool of Debian 12 does
 * not print verified_insns (kernel 5.16+).
 *
 *   progsize [NAME_PREFIX]   one line per program: name, verified, jited bytes
 */
#include <bpf/bpf.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	const char *prefix = argc > 1 ? argv[1] : "dc_";
	__u32 id = 0;
	int n = 0;

	while (!bpf_prog_get_next_id(id, &id)) {
		struct bpf_prog_info info;
		__u32 len = sizeof(info);
		int fd = bpf_prog_get_fd_by_id(id);

		if (fd < 0)
			continue;
		memset(&info, 0, sizeof(info));
		if (!bpf_obj_get_info_by_fd(fd, &info, &len) &&
		    !strncmp(info.name, prefix, strlen(prefix))) {
			printf("%-20s %8u %8u\n", info.name, info.verified_insns,
			       info.jited_prog_len);
			n++;
		}
		close(fd);
	}
	if (!n) {
		fprintf(stderr, "progsize: no loaded program named %s*\n", prefix);
		return 1;
	}
	return 0;
}
