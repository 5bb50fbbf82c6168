// SPDX-License-Identifier: Apache-2.0
#include <ctype.h>
#include <errno.h>
#include <string.h>

#include "procstat.h"

int procstat_start_ticks(const char *stat, uint64_t *ticks)
{
	/* the name may hold spaces and parentheses: it ends at the last ')',
	 * every field after it is a number or the state's letter */
	const char *p = strrchr(stat, ')');
	uint64_t v = 0;

	if (!p)
		return -EINVAL;
	p++;
	/* fields 3 (the state) to 21 */
	for (int field = 3; field < 22; field++) {
		if (*p != ' ')
			return -EINVAL;
		while (*p == ' ')
			p++;
		if (!*p || *p == '\n')
			return -EINVAL;
		while (*p && *p != ' ' && *p != '\n')
			p++;
	}
	if (*p != ' ')
		return -EINVAL;
	p++;
	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++) {
		if (v > (UINT64_MAX - 9) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (*p && *p != ' ' && *p != '\n')
		return -EINVAL;
	*ticks = v;
	return 0;
}

uint64_t proc_start_floor(uint64_t ns, long hz)
{
	uint64_t tick;

	if (hz <= 0 || hz > 1000000000L)
		return ns;
	tick = 1000000000ULL / (uint64_t)hz;
	return ns - ns % tick;
}
