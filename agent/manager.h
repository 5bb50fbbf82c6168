/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_MANAGER_H
#define DC_MANAGER_H

#include "config.h"

/*
 * The agent: one sd-event loop owning the probes, the window timer, the
 * signal handlers and the sinks. Each timer tick closes a window: flip the
 * kernel maps, drain, build records, hand them to the sinks.
 */
struct manager;

int manager_new(const struct dc_config *cfg, double duration_sec, struct manager **ret);
int manager_run(struct manager *m);
struct manager *manager_free(struct manager *m);

#endif
