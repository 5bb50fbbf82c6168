// SPDX-License-Identifier: Apache-2.0
#include "args.h"
#include "tap.h"

#define PARSE(a, ...)                                                                 \
	({                                                                            \
		char *argv[] = {"datacrumbs", __VA_ARGS__, NULL};                     \
		args_parse((int)(sizeof(argv) / sizeof(argv[0])) - 1, argv, (a), err, \
			   sizeof(err));                                              \
	})

int main(void)
{
	struct dc_args a;
	char err[256];

	CHECK(PARSE(&a, "--interval", "0.25", "--duration", "3", "-o", "-") == 0, "valid options");
	CHECK_STR(a.interval, "0.25", "interval kept as text for the config table");
	CHECK(a.duration == 3, "duration");
	CHECK_STR(a.output, "-", "output");
	CHECK(a.action == DC_ACTION_RUN, "run by default");
	CHECK(PARSE(&a, "-c", "/x.conf") == 0 && !strcmp(a.config, "/x.conf"), "config path");
	CHECK(PARSE(&a, "--version") == 0 && a.action == DC_ACTION_VERSION, "version");
	CHECK(PARSE(&a, "--help") == 0 && a.action == DC_ACTION_HELP, "help");
	CHECK(PARSE(&a, "--check-config=/y.conf") == 0 && a.action == DC_ACTION_CHECK_CONFIG &&
		  !strcmp(a.config, "/y.conf"),
	      "check-config with a file");
	CHECK(PARSE(&a, "--bogus") < 0 && strstr(err, "--bogus"), "unknown option named: %s", err);
	CHECK(PARSE(&a, "--duration", "abc") < 0 && strstr(err, "abc"), "bad duration: %s", err);
	CHECK(PARSE(&a, "--duration", "-1") < 0, "negative duration refused");
	CHECK(PARSE(&a, "--duration", "nan") < 0, "NaN duration refused");
	CHECK(PARSE(&a, "--duration", "2e13") < 0 && strstr(err, "2e13"),
	      "a duration whose microseconds would wrap refused: %s", err);
	CHECK(PARSE(&a, "--duration", "1e9") == 0, "a duration of 1e9 s taken");
	CHECK(PARSE(&a, "--check-config=") < 0 && strstr(err, "empty file name"),
	      "--check-config= with no file refused: %s", err);
	CHECK(PARSE(&a, "-c", "") < 0 && strstr(err, "empty file name"),
	      "-c with an empty file name refused: %s", err);
	CHECK(PARSE(&a, "--interval") < 0 && strstr(err, "needs a value"), "missing value: %s",
	      err);
	CHECK(PARSE(&a, "stray") < 0 && strstr(err, "stray"), "stray argument: %s", err);
	CHECK(PARSE(&a, "-o", "") < 0, "empty output refused");
	return tap_done();
}
