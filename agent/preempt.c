// SPDX-License-Identifier: Apache-2.0
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "preempt.h"

const char *preempt_name(enum dc_preempt p)
{
	switch (p) {
	case DC_PREEMPT_NONE:
		return "none";
	case DC_PREEMPT_VOLUNTARY:
		return "voluntary";
	case DC_PREEMPT_FULL:
		return "full";
	case DC_PREEMPT_LAZY:
		return "lazy";
	case DC_PREEMPT_RT:
		return "rt";
	default:
		return "unknown";
	}
}

static enum dc_preempt from_word(const char *w, size_t n)
{
	static const struct {
		const char *name;
		enum dc_preempt p;
	} words[] = {
	    {"none", DC_PREEMPT_NONE},
	    {"voluntary", DC_PREEMPT_VOLUNTARY},
	    {"full", DC_PREEMPT_FULL},
	    {"lazy", DC_PREEMPT_LAZY},
	};

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strlen(words[i].name) == n && !strncmp(words[i].name, w, n))
			return words[i].p;
	return DC_PREEMPT_UNKNOWN;
}

/* Is word (a whole token) in s? */
static const char *find_token(const char *s, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = strstr(s, word); p; p = strstr(p + 1, word)) {
		bool start = p == s || p[-1] == ' ' || p[-1] == '\n';
		bool end = p[n] == 0 || p[n] == ' ' || p[n] == '\n';

		if (start && end)
			return p;
	}
	return NULL;
}

static bool config_has(const char *config, const char *line)
{
	const char *p = strstr(config, line);

	/* whole line: at the start or after a newline, and ending there */
	while (p) {
		size_t n = strlen(line);

		if ((p == config || p[-1] == '\n') && (p[n] == '\n' || p[n] == 0))
			return true;
		p = strstr(p + 1, line);
	}
	return false;
}

enum dc_preempt preempt_parse(const char *debugfs, const char *uname_version, const char *config,
			      const char *cmdline, const char **why)
{
	const char *p, *q;
	bool dynamic;

	/* "none (voluntary) full lazy": the live mode is in parentheses */
	if (debugfs && (p = strchr(debugfs, '(')) && (q = strchr(p, ')'))) {
		enum dc_preempt m = from_word(p + 1, (size_t)(q - p - 1));

		if (m != DC_PREEMPT_UNKNOWN) {
			*why = "debugfs sched/preempt";
			return m;
		}
	}
	if (!uname_version) {
		*why = "no kernel version string";
		return DC_PREEMPT_UNKNOWN;
	}
	if (strstr(uname_version, "PREEMPT_RT")) {
		*why = "uname -v";
		return DC_PREEMPT_RT;
	}
	dynamic = strstr(uname_version, "PREEMPT_DYNAMIC") != NULL;
	if (dynamic) {
		if (cmdline && (p = strstr(cmdline, "preempt=")) &&
		    (p == cmdline || p[-1] == ' ')) {
			size_t n = strcspn(p + 8, " \n");
			enum dc_preempt m = from_word(p + 8, n);

			if (m != DC_PREEMPT_UNKNOWN) {
				*why = "preempt= on the kernel command line";
				return m;
			}
		}
		if (config) {
			*why = "the dynamic kernel's configured default";
			if (config_has(config, "CONFIG_PREEMPT_NONE=y"))
				return DC_PREEMPT_NONE;
			if (config_has(config, "CONFIG_PREEMPT_VOLUNTARY=y"))
				return DC_PREEMPT_VOLUNTARY;
			if (config_has(config, "CONFIG_PREEMPT_LAZY=y"))
				return DC_PREEMPT_LAZY;
			if (config_has(config, "CONFIG_PREEMPT=y"))
				return DC_PREEMPT_FULL;
		}
		*why = "dynamic preemption with its mode unreadable";
		return DC_PREEMPT_UNKNOWN;
	}
	*why = "uname -v";
	if (find_token(uname_version, "PREEMPT_LAZY"))
		return DC_PREEMPT_LAZY;
	if (find_token(uname_version, "PREEMPT"))
		return DC_PREEMPT_FULL;
	/* built without kernel preemption: "#1 SMP Debian ..." */
	return DC_PREEMPT_VOLUNTARY;
}
