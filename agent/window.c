// SPDX-License-Identifier: Apache-2.0
#include "window.h"

static int64_t real_off(uint64_t now_mono_ns, uint64_t now_real_us)
{
	return (int64_t)(now_real_us * 1000 - now_mono_ns);
}

void windows_init(struct dc_windows *ws, uint64_t interval_ns, bool align, uint64_t now_mono_ns,
		  uint64_t now_real_us)
{
	*ws = (struct dc_windows){
	    .interval_ns = interval_ns,
	    .origin_mono_ns = now_mono_ns,
	    .align = align,
	    .real_off_ns = real_off(now_mono_ns, now_real_us),
	    .cur = {.seq = 0, .start_real_us = now_real_us, .start_mono_ns = now_mono_ns},
	};
}

void windows_close(struct dc_windows *ws, uint64_t now_mono_ns, uint64_t now_real_us,
		   struct dc_window *closed)
{
	struct dc_window *c = &ws->cur;

	c->end_mono_ns = now_mono_ns;
	/* the wall clock may step backwards; a window never ends before it starts */
	c->end_real_us = now_real_us >= c->start_real_us ? now_real_us : c->start_real_us;
	*closed = *c;
	/* the clock as it reads, stepped or not: the next end is a multiple of
	 * the interval on it, whatever this window's stamps were clamped to */
	ws->real_off_ns = real_off(now_mono_ns, now_real_us);
	*c = (struct dc_window){
	    .seq = closed->seq + 1,
	    .start_real_us = closed->end_real_us,
	    .start_mono_ns = closed->end_mono_ns,
	};
}

/* The first multiple of the interval on the wall clock after mono_ns (a
 * monotonic time, read through the offset), as a monotonic time. Modulo
 * 2^64: the offset is the wall clock's ~1.8e18 ns less the uptime. */
static uint64_t grid_after(const struct dc_windows *ws, uint64_t mono_ns)
{
	uint64_t off = (uint64_t)ws->real_off_ns, real = mono_ns + off;

	return (real / ws->interval_ns + 1) * ws->interval_ns - off;
}

uint64_t windows_deadline(const struct dc_windows *ws, uint64_t now_mono_ns)
{
	uint64_t d = ws->cur.start_mono_ns + ws->interval_ns;
	uint64_t k;

	if (ws->align) {
		d = grid_after(ws, ws->cur.start_mono_ns + ws->interval_ns / 2);
		return d > now_mono_ns ? d : grid_after(ws, now_mono_ns);
	}
	/* align to the origin's grid so windows keep their phase */
	if (ws->cur.start_mono_ns >= ws->origin_mono_ns) {
		k = (ws->cur.start_mono_ns - ws->origin_mono_ns) / ws->interval_ns + 1;
		d = ws->origin_mono_ns + k * ws->interval_ns;
	}
	if (d <= now_mono_ns) {
		k = (now_mono_ns - ws->origin_mono_ns) / ws->interval_ns + 1;
		d = ws->origin_mono_ns + k * ws->interval_ns;
	}
	return d;
}

void windows_set_interval(struct dc_windows *ws, uint64_t interval_ns, bool align)
{
	ws->interval_ns = interval_ns;
	ws->align = align;
	ws->origin_mono_ns = ws->cur.start_mono_ns;
}

double window_seconds(const struct dc_window *w)
{
	return (double)(w->end_mono_ns - w->start_mono_ns) / 1e9;
}
