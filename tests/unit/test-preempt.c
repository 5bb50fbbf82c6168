// SPDX-License-Identifier: Apache-2.0
#include "preempt.h"
#include "tap.h"

#define P(dbg, un, cfg, cmd) preempt_parse((dbg), (un), (cfg), (cmd), &why)

int main(void)
{
	const char *why;

	CHECK(P("none voluntary (full) lazy\n", "#1 SMP PREEMPT_DYNAMIC", NULL, NULL) ==
		  DC_PREEMPT_FULL,
	      "debugfs live mode wins");
	CHECK(P("(none) voluntary full\n", "#1 SMP PREEMPT_DYNAMIC", "CONFIG_PREEMPT=y\n",
		"preempt=full") == DC_PREEMPT_NONE,
	      "debugfs beats cmdline and config");
	CHECK(P(NULL, "#1 SMP PREEMPT_DYNAMIC Debian 6.1.0", NULL, "ro quiet preempt=voluntary") ==
		  DC_PREEMPT_VOLUNTARY,
	      "cmdline preempt= for a dynamic kernel (%s)", why);
	CHECK(P(NULL, "#1 SMP PREEMPT_DYNAMIC",
		"# x\nCONFIG_PREEMPT_NONE=y\nCONFIG_PREEMPT_DYNAMIC=y\n", "ro") == DC_PREEMPT_NONE,
	      "dynamic kernel's Kconfig default (%s)", why);
	CHECK(P(NULL, "#1 SMP PREEMPT_DYNAMIC", "CONFIG_PREEMPT_VOLUNTARY=y\n", NULL) ==
		  DC_PREEMPT_VOLUNTARY,
	      "Kconfig voluntary");
	CHECK(P(NULL, "#1 SMP PREEMPT_DYNAMIC", "CONFIG_PREEMPT=y\nCONFIG_PREEMPT_COUNT=y\n",
		NULL) == DC_PREEMPT_FULL,
	      "Kconfig full (PREEMPT_COUNT is not PREEMPT)");
	CHECK(P(NULL, "#1 SMP PREEMPT_DYNAMIC", "# CONFIG_PREEMPT_NONE is not set\n", NULL) ==
		  DC_PREEMPT_UNKNOWN,
	      "a commented-out option is not set");
	CHECK(P(NULL, "#1 SMP PREEMPT_DYNAMIC", NULL, NULL) == DC_PREEMPT_UNKNOWN,
	      "dynamic with nothing readable is unknown (%s)", why);
	CHECK(P(NULL, "#1 SMP PREEMPT_RT Tue", NULL, NULL) == DC_PREEMPT_RT, "RT");
	CHECK(P(NULL, "#1 SMP PREEMPT Fri Jan 1", NULL, NULL) == DC_PREEMPT_FULL, "static full");
	CHECK(P(NULL, "#1 SMP PREEMPT_LAZY Fri", NULL, NULL) == DC_PREEMPT_LAZY, "static lazy");
	CHECK(P(NULL, "#1 SMP Debian 5.10.0-20", NULL, NULL) == DC_PREEMPT_VOLUNTARY,
	      "no PREEMPT in the build string: not preemptible");
	CHECK(P(NULL, NULL, NULL, NULL) == DC_PREEMPT_UNKNOWN, "nothing known");
	CHECK(P(NULL, "#1 SMP PREEMPT_DYNAMIC", NULL, "xpreempt=none") == DC_PREEMPT_UNKNOWN,
	      "only a whole preempt= parameter counts");
	CHECK(preempt_allows_plain_updates(DC_PREEMPT_NONE) &&
		  preempt_allows_plain_updates(DC_PREEMPT_VOLUNTARY) &&
		  !preempt_allows_plain_updates(DC_PREEMPT_FULL) &&
		  !preempt_allows_plain_updates(DC_PREEMPT_LAZY) &&
		  !preempt_allows_plain_updates(DC_PREEMPT_RT) &&
		  !preempt_allows_plain_updates(DC_PREEMPT_UNKNOWN),
	      "plain updates only where a BPF program cannot be preempted");
	return tap_done();
}
