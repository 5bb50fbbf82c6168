// SPDX-License-Identifier: Apache-2.0
#include "tap.h"
#include "window.h"

int main(void)
{
	struct dc_windows ws;
	struct dc_window w, prev;
	const uint64_t ms = 1000000;

	windows_init(&ws, 100 * ms, 1000 * ms, 5000000);
	CHECK_U64(windows_deadline(&ws, 1000 * ms), 1100 * ms, "first deadline one interval on");
	windows_close(&ws, 1101 * ms, 5101000, &w);
	CHECK_U64(w.seq, 0, "first window is 0");
	CHECK_U64(w.start_real_us, 5000000, "start stamp");
	CHECK_U64(w.end_real_us, 5101000, "end stamp");
	CHECK_U64(windows_deadline(&ws, 1101 * ms), 1200 * ms,
		  "late wake-up does not drift the grid");
	prev = w;
	windows_close(&ws, 1200 * ms, 5200000, &w);
	CHECK_U64(w.seq, 1, "sequence increments");
	CHECK_U64(w.start_real_us, prev.end_real_us, "windows tile: start == previous end (wall)");
	CHECK_U64(w.start_mono_ns, prev.end_mono_ns, "windows tile: start == previous end (mono)");
	/* stalled for 3.5 intervals: missed deadlines are skipped */
	CHECK_U64(windows_deadline(&ws, 1550 * ms), 1600 * ms, "missed deadlines skipped");
	/* wall clock stepped back */
	prev = w;
	windows_close(&ws, 1300 * ms, 4000000, &w);
	CHECK(w.end_real_us >= w.start_real_us, "a wall-clock step back never makes end < start");
	CHECK_U64(w.seq, 2, "sequence keeps going");
	windows_set_interval(&ws, 50 * ms);
	CHECK_U64(windows_deadline(&ws, 1300 * ms), 1350 * ms, "new interval from the next window");
	CHECK(window_seconds(&w) > 0.099 && window_seconds(&w) < 0.101,
	      "duration from the monotonic clock");
	return tap_done();
}
