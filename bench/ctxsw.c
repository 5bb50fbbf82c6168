// SPDX-License-Identifier: Apache-2.0
/*
 * Context-switch-heavy load for bench/stacks_bench.py: two processes on one
 * CPU pass a byte back and forth through two pipes, so every round trip is
 * two blocking reads and two context switches.
 *
 *   ctxsw ROUNDS   prints "ROUNDS NS_TOTAL NS_PER_ROUND"
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 100000;
	int ab[2], ba[2];
	char c = 'x';
	long long t0;
	pid_t pid;

	if (rounds <= 0 || pipe(ab) || pipe(ba))
		return 2;
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		for (long i = 0; i < rounds; i++)
			if (read(ab[0], &c, 1) != 1 || write(ba[1], &c, 1) != 1)
				_exit(1);
		_exit(0);
	}
	t0 = now_ns();
	for (long i = 0; i < rounds; i++)
		if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1)
			return 1;
	t0 = now_ns() - t0;
	waitpid(pid, NULL, 0);
	printf("%ld %lld %.1f\n", rounds, t0, (double)t0 / (double)rounds);
	return 0;
}
