/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_MANAGER_H
#define DC_MANAGER_H

#include <stdbool.h>

#include "config.h"

/*
 * The agent: one sd-event loop owning the probes, the window timer, the
 * signal handlers and the sinks. Each timer tick closes a window: flip the
 * kernel maps, drain, build records, hand them to the sinks.
 */
struct manager;

/* *config_error says a failure came from the configuration (exit code 2). */
int manager_new(const struct dc_config *cfg, double duration_sec, struct manager **ret,
		bool *config_error);
/* Runs until stopped: 0, or DC_STOP_LOST when the sinks gave up records at
 * the stop (logged; no agent record counts them), or a negative errno.
 * sysexits' EX_IOERR: systemd names 3 NOTIMPLEMENTED, after LSB. */
#define DC_STOP_LOST 74
int manager_run(struct manager *m);
/* How SIGHUP gets the new configuration: load() parses and validates it into
 * out (the command line's overrides applied), logging why when it fails. */
void manager_set_reload(struct manager *m, int (*load)(void *ctx, struct dc_config *out),
			void *ctx);
struct manager *manager_free(struct manager *m);

#endif
