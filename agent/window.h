/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_WINDOW_H
#define DC_WINDOW_H

#include <stdbool.h>
#include <stdint.h>

/*
 * Window bookkeeping. A window is [start, end) on the agent's timeline; the
 * next starts exactly where the last ended, so windows tile time with no gap
 * and no overlap. Wall-clock stamps (for records, comparable across nodes)
 * and monotonic stamps (for durations, immune to clock steps) are both kept.
 * Deadlines are start + k * interval on the monotonic clock, so a late wake-up
 * does not drift the schedule; or, aligned, the multiples of the interval on
 * the wall clock, so that every node's windows cover the same spans (records
 * of a job's many nodes join on their bounds). An aligned window ends at the
 * first such multiple more than half an interval after it starts, read
 * through the clocks' offset at its start: window 0 lasts at least half an
 * interval (up to one and a half, more where the start-up takes past
 * that end); a close late by less than half an interval shortens the next
 * window, a later one leaves it to the multiple after, the grid never
 * shifts; and a step of the wall clock is followed at the next window.
 */
struct dc_window {
	uint64_t seq;		/* 0, 1, 2, ... per agent run */
	uint64_t start_real_us; /* CLOCK_REALTIME, microseconds since the epoch */
	uint64_t end_real_us;
	uint64_t start_mono_ns; /* CLOCK_MONOTONIC */
	uint64_t end_mono_ns;
};

struct dc_windows {
	uint64_t interval_ns;
	uint64_t origin_mono_ns; /* deadline k is origin + (k + 1) * interval */
	bool align;
	int64_t real_off_ns; /* aligned: CLOCK_REALTIME - CLOCK_MONOTONIC at cur's start */
	struct dc_window cur;
};

void windows_init(struct dc_windows *ws, uint64_t interval_ns, bool align, uint64_t now_mono_ns,
		  uint64_t now_real_us);
/* Close the current window at the given time; *closed gets it, the next opens. */
void windows_close(struct dc_windows *ws, uint64_t now_mono_ns, uint64_t now_real_us,
		   struct dc_window *closed);
/* Monotonic deadline of the current window, never in the past relative to now:
 * deadlines missed entirely (a stalled agent) are skipped, not replayed. */
uint64_t windows_deadline(const struct dc_windows *ws, uint64_t now_mono_ns);
/* Change the interval and alignment: the current window ends by them
 * (where that end is past, at the next deadline after now). */
void windows_set_interval(struct dc_windows *ws, uint64_t interval_ns, bool align);
double window_seconds(const struct dc_window *w);

#endif
