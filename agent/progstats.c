// SPDX-License-Identifier: Apache-2.0
#include <bpf/bpf.h>
#include <string.h>

#include "progstats.h"

uint64_t progs_recursion_misses(struct bpf_object *obj)
{
	struct bpf_program *prog;
	uint64_t total = 0;

	bpf_object__for_each_program(prog, obj)
	{
		struct bpf_prog_info info;
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(prog);

		if (fd < 0)
			continue;
		memset(&info, 0, sizeof(info));
		if (!bpf_obj_get_info_by_fd(fd, &info, &len))
			total += info.recursion_misses;
	}
	return total;
}
