// SPDX-License-Identifier: Apache-2.0
/* Load one comparison variant of baseline.bpf.c, print "ready", wait for a
 * signal. usage: baseline empty|minagg
 *                baseline uprobe LIBRARY FUNCTION...  (entry and return probes,
 *                on every process)
 *                baseline floor POINT...  (an empty program on each point:
 *                raw:NAME, a raw tracepoint, or tp:GROUP/NAME, a tracepoint) */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "baseline.skel.h"

#define MAX_LINKS 128 /* uprobes: two per function, a handful; floor: the agent's ~40 points */

static int attach_uprobes(struct baseline_bpf *skel, const char *lib, char **funcs, int n,
			  struct bpf_link **links)
{
	int k = 0;

	for (int i = 0; i < n && k + 2 <= MAX_LINKS; i++) {
		for (int ret = 1; ret >= 0; ret--) {
			LIBBPF_OPTS(bpf_uprobe_opts, o, .func_name = funcs[i], .retprobe = ret);
			struct bpf_program *prog =
			    ret ? skel->progs.empty_uretprobe : skel->progs.empty_uprobe;

			links[k] = bpf_program__attach_uprobe_opts(prog, -1, lib, 0, &o);
			if (!links[k]) {
				fprintf(stderr, "baseline: cannot probe %s in %s: %m\n", funcs[i],
					lib);
				return -1;
			}
			k++;
		}
	}
	return k;
}

static int attach_points(struct baseline_bpf *skel, char **points, int n, struct bpf_link **links)
{
	if (n > MAX_LINKS) {
		fprintf(stderr, "baseline: more than %d attach points\n", MAX_LINKS);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		char *p = points[i], *slash = strchr(p, '/');

		if (!strncmp(p, "raw:", 4))
			links[i] =
			    bpf_program__attach_raw_tracepoint(skel->progs.floor_raw_tp, p + 4);
		else if (!strncmp(p, "tp:", 3) && slash) {
			*slash = 0;
			links[i] =
			    bpf_program__attach_tracepoint(skel->progs.floor_tp, p + 3, slash + 1);
			*slash = '/';
		} else {
			fprintf(stderr,
				"baseline: bad attach point '%s' (raw:NAME, tp:GROUP/NAME)\n", p);
			return -1;
		}
		if (!links[i]) {
			fprintf(stderr, "baseline: cannot attach to %s: %m\n", p);
			return -1;
		}
	}
	return n;
}

int main(int argc, char **argv)
{
	struct bpf_link *links[MAX_LINKS] = {};
	struct baseline_bpf *skel;
	bool empty, uprobe, floor;
	int n_links = 0;
	sigset_t set;
	int sig;

	uprobe = argc >= 4 && !strcmp(argv[1], "uprobe");
	floor = argc >= 3 && !strcmp(argv[1], "floor");
	if (!uprobe && !floor &&
	    (argc != 2 || (strcmp(argv[1], "empty") && strcmp(argv[1], "minagg")))) {
		fprintf(stderr, "usage: baseline empty|minagg\n"
				"       baseline uprobe LIBRARY FUNCTION...\n"
				"       baseline floor raw:NAME|tp:GROUP/NAME...\n");
		return 2;
	}
	empty = !strcmp(argv[1], "empty");
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	skel = baseline_bpf__open();
	if (!skel)
		return 1;
	bpf_program__set_autoload(skel->progs.empty_enter, empty);
	bpf_program__set_autoload(skel->progs.empty_exit, empty);
	bpf_program__set_autoload(skel->progs.minagg_enter, !empty && !uprobe && !floor);
	bpf_program__set_autoload(skel->progs.minagg_exit, !empty && !uprobe && !floor);
	bpf_program__set_autoload(skel->progs.minagg_rq_issue, !empty && !uprobe && !floor);
	bpf_program__set_autoload(skel->progs.minagg_rq_complete, !empty && !uprobe && !floor);
	bpf_program__set_autoload(skel->progs.floor_raw_tp, floor);
	bpf_program__set_autoload(skel->progs.floor_tp, floor);
	bpf_program__set_autoload(skel->progs.empty_uprobe, uprobe);
	bpf_program__set_autoload(skel->progs.empty_uretprobe, uprobe);
	if (baseline_bpf__load(skel) ||
	    (uprobe  ? (n_links = attach_uprobes(skel, argv[2], argv + 3, argc - 3, links)) < 0
	     : floor ? (n_links = attach_points(skel, argv + 2, argc - 2, links)) < 0
		     : baseline_bpf__attach(skel) != 0)) {
		fprintf(stderr, "baseline: cannot load or attach\n");
		for (int i = 0; i < MAX_LINKS; i++)
			bpf_link__destroy(links[i]);
		baseline_bpf__destroy(skel);
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	sigwait(&set, &sig);
	for (int i = 0; i < n_links; i++)
		bpf_link__destroy(links[i]);
	baseline_bpf__destroy(skel);
	return 0;
}
