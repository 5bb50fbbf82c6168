/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_ARGS_H
#define DC_ARGS_H

/* --duration's bound: about 31 years, far from where microseconds wrap */
#define DC_DURATION_MAX_SEC 1e9

#include <stdbool.h>
#include <stddef.h>

enum dc_action {
	DC_ACTION_RUN,
	DC_ACTION_HELP,
	DC_ACTION_VERSION,
	DC_ACTION_HELP_CONFIG,
	DC_ACTION_CHECK_CONFIG,
};

struct dc_args {
	enum dc_action action;
	const char *config; /* NULL: DC_CONFIG_DEFAULT_PATH if it exists, else built-in defaults */
	const char *interval; /* overrides, kept as text and validated by the config table */
	const char *output;
	double duration; /* seconds; 0 = run until stopped */
};

/* Pure: no printing, no exit. Returns 0, or -EINVAL with a message in err. */
int args_parse(int argc, char **argv, struct dc_args *a, char *err, size_t errlen);
void args_usage(const char *prog, char *out, size_t len);

#endif
