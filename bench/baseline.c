// SPDX-License-Identifier: Apache-2.0
/* Load one comparison variant of baseline.bpf.c, print "ready", wait for a
 * signal. usage: baseline empty|minagg */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "baseline.skel.h"

int main(int argc, char **argv)
{
	struct baseline_bpf *skel;
	bool empty;
	sigset_t set;
	int sig;

	if (argc != 2 || (strcmp(argv[1], "empty") && strcmp(argv[1], "minagg"))) {
		fprintf(stderr, "usage: baseline empty|minagg\n");
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
	bpf_program__set_autoload(skel->progs.minagg_enter, !empty);
	bpf_program__set_autoload(skel->progs.minagg_exit, !empty);
	if (baseline_bpf__load(skel) || baseline_bpf__attach(skel)) {
		fprintf(stderr, "baseline: cannot load or attach\n");
		baseline_bpf__destroy(skel);
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	sigwait(&set, &sig);
	baseline_bpf__destroy(skel);
	return 0;
}
