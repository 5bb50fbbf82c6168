// SPDX-License-Identifier: Apache-2.0
#include "tap.h"
#include "window.h"

int main(void)
{
	struct dc_windows ws;
	struct dc_window w, prev;
	const uint64_t ms = 1000000;

	windows_init(&ws, 100 * ms, false, 1000 * ms, 5000000);
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
	windows_set_interval(&ws, 50 * ms, false);
	CHECK_U64(windows_deadline(&ws, 1300 * ms), 1350 * ms, "new interval from the next window");
	CHECK(window_seconds(&w) > 0.099 && window_seconds(&w) < 0.101,
	      "duration from the monotonic clock");

	/* aligned: ends on the wall clock's multiples of the interval. The
	 * wall clock reads 5.03 s where the monotonic one reads 1.0 s. */
	windows_init(&ws, 100 * ms, true, 1000 * ms, 5030000);
	CHECK_U64(
	    windows_deadline(&ws, 1000 * ms), 1070 * ms,
	    "aligned: window 0 ends at the wall clock's 5.1 s (more than half an interval on)");
	windows_init(&ws, 100 * ms, true, 1000 * ms, 5060000);
	CHECK_U64(windows_deadline(&ws, 1000 * ms), 1140 * ms,
		  "aligned: 5.06 s + half an interval is past 5.1: window 0 ends at 5.2 s");
	{
		/* another node, its monotonic clock elsewhere, started at 5.07 s */
		struct dc_windows other;

		windows_init(&other, 100 * ms, true, 777 * ms, 5070000);
		CHECK_U64(windows_deadline(&other, 777 * ms) + (5070 - 777) * ms, 5200 * ms,
			  "aligned: another node's window 0 ends at the same wall-clock time");
	}
	windows_close(&ws, 1141 * ms, 5201000, &w);
	CHECK_U64(w.end_real_us, 5201000, "aligned: the window's end as the clock read it");
	CHECK_U64(windows_deadline(&ws, 1141 * ms), 1240 * ms,
		  "aligned: a late close shortens the next window, the grid stays");
	/* the wall clock stepped forward to 9.0 s meanwhile */
	windows_close(&ws, 1240 * ms, 9000000, &w);
	CHECK_U64(windows_deadline(&ws, 1240 * ms), 1340 * ms,
		  "aligned: after a step the windows end on the new reading's grid (9.1 s)");
	CHECK_U64(windows_deadline(&ws, 1555 * ms), 1640 * ms,
		  "aligned: missed ends skipped to the grid after now (9.4 s)");
	/* and back, to 2.0 s: the stamps do not go back, the grid follows */
	windows_close(&ws, 1340 * ms, 2000000, &w);
	CHECK_U64(w.end_real_us, 9000000, "aligned: a step back never makes end < start");
	CHECK_U64(windows_deadline(&ws, 1340 * ms), 1440 * ms,
		  "aligned: after a step back the next end is 2.1 s on the clock, not 9.1 s");
	windows_set_interval(&ws, 1000 * ms, true);
	CHECK_U64(windows_deadline(&ws, 1340 * ms), 2340 * ms,
		  "aligned: a new interval: the current window ends on its grid (3.0 s)");
	windows_set_interval(&ws, 1000 * ms, false);
	CHECK_U64(windows_deadline(&ws, 1340 * ms), 2340 * ms,
		  "alignment off: the current window ends an interval after its start");
	/* 10^15 us is 0.1 s past a multiple of 0.3 s */
	windows_init(&ws, 300 * ms, true, 0, 1000000000000000ULL);
	CHECK_U64(windows_deadline(&ws, 0), 200 * ms,
		  "aligned: the grid counts from the epoch, for an interval not dividing a second");
	return tap_done();
}
