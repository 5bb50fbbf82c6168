// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "procstat.h"
#include "tap.h"

/* a real line of this machine's, starttime 4242 */
#define TAIL                                                                      \
	" S 1 456 456 0 -1 4194560 120 0 0 0 3 1 0 0 20 0 1 0 4242 8286208 1520 " \
	"18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 0 0 0\n"

static void start_of(const char *line, int want_r, uint64_t want, const char *what)
{
	uint64_t t = 7;
	int r = procstat_start_ticks(line, &t);

	CHECK(r == want_r && (r < 0 || t == want), "%s: r %d, ticks %llu", what, r,
	      (unsigned long long)t);
}

int main(void)
{
	char line[512];

	start_of("456 (dd)" TAIL, 0, 4242, "plain name");
	start_of("456 (a b) c)" TAIL, 0, 4242, "a name with spaces and a ')'");
	start_of("456 ())" TAIL, 0, 4242, "a name that is ')'");
	start_of("456 ( 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 )" TAIL, 0, 4242,
		 "a name of numbers");
	start_of("456 (dd) S 1 456 456 0 -1 4194560 120 0 0 0 3 1 0 0 20 0 1 0 99", 0, 99,
		 "the line ends at starttime");
	start_of("456 (dd) S 1 456 456 0 -1 4194560 120 0 0 0 3 1 0 0 20 0 1 0", -EINVAL, 0,
		 "no starttime");
	start_of("456 (dd) S 1 456 456 0 -1 4194560 120 0 0 0 3 1 0 0 20 0 1 0 x9 1", -EINVAL, 0,
		 "starttime not a number");
	start_of("456 (dd) S 1 456 456 0 -1 4194560 120 0 0 0 3 1 0 0 20 0 1 0 9x 1", -EINVAL, 0,
		 "starttime followed by junk");
	start_of("456 dd S 1 456 456 0 -1 4194560 120 0 0 0 3 1 0 0 20 0 1 0 9 1", -EINVAL, 0,
		 "no name");
	start_of(
	    "456 (dd) S 1 456 456 0 -1 4194560 120 0 0 0 3 1 0 0 20 0 1 0 99999999999999999999",
	    -EINVAL, 0, "starttime past 64 bits");
	start_of("", -EINVAL, 0, "empty");

	/* this process's own line parses, to a start before now */
	{
		FILE *f = fopen("/proc/self/stat", "re");
		uint64_t t = 0;
		struct timespec ts;
		long hz = sysconf(_SC_CLK_TCK);
		int r = -1;

		if (f && fgets(line, sizeof(line), f))
			r = procstat_start_ticks(line, &t);
		if (f)
			fclose(f);
		clock_gettime(CLOCK_BOOTTIME, &ts);
		CHECK(r == 0 && hz > 0 && t <= (uint64_t)ts.tv_sec * (uint64_t)hz + (uint64_t)hz,
		      "own /proc/self/stat: %llu ticks, booted %lld s ago", (unsigned long long)t,
		      (long long)ts.tv_sec);
	}

	CHECK(proc_start_floor(1234567891ULL, 100) == 1230000000ULL, "floored to 10 ms at 100 Hz");
	CHECK(proc_start_floor(1230000000ULL, 100) == 1230000000ULL, "a whole tick stays");
	CHECK(proc_start_floor(1234567891ULL, 0) == 1234567891ULL &&
		  proc_start_floor(1234567891ULL, 2000000000L) == 1234567891ULL,
	      "no tick: ns itself");
	return tap_done();
}
