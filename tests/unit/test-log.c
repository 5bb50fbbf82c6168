// SPDX-License-Identifier: Apache-2.0
#include "log.h"
#include "tap.h"

int main(void)
{
	char out[64];
	size_t n;

	CHECK(log_parse_level("debug") == LOG_DEBUG && log_parse_level("err") == LOG_ERR &&
		  log_parse_level("WARNING") == LOG_WARNING &&
		  log_parse_level("warn") == LOG_WARNING,
	      "level names, any case, with the usual aliases");
	CHECK(log_parse_level("loud") < 0, "an unknown level refused");

	CHECK(log_journal_stream_is("8:12345", 8, 12345), "device:inode of the stream");
	CHECK(!log_journal_stream_is("8:12346", 8, 12345), "another inode");
	CHECK(!log_journal_stream_is("9:12345", 8, 12345), "another device");
	CHECK(!log_journal_stream_is(NULL, 8, 12345), "unset");
	CHECK(!log_journal_stream_is("", 0, 0) && !log_journal_stream_is("0:", 0, 0) &&
		  !log_journal_stream_is(":0", 0, 0) && !log_journal_stream_is("0:0x", 0, 0) &&
		  !log_journal_stream_is("-0:0", 0, 0) && !log_journal_stream_is(" 0:0", 0, 0),
	      "malformed values never match");

	n = log_format(out, sizeof(out), LOG_WARNING, true, "disk full");
	/* (compared without printing them: TAP is line based) */
	CHECK(!strcmp(out, "<4>disk full\n"), "journal: the priority prefix");
	CHECK(n == strlen(out), "returns the length written");
	log_format(out, sizeof(out), LOG_DEBUG, true, "verifier:\n0: r0 = 1\n1: exit\n");
	CHECK(!strcmp(out, "<7>verifier:\n<7>0: r0 = 1\n<7>1: exit\n"),
	      "journal: every line keeps the priority, no empty last line");
	log_format(out, sizeof(out), LOG_ERR, false, "bad config\n");
	CHECK(!strcmp(out, "datacrumbs: bad config\n"), "terminal: named, no priority");
	n = log_format(out, 8, LOG_ERR, true, "0123456789");
	CHECK(n == 14 && strlen(out) == 7 && !strncmp(out, "<3>0123", 7),
	      "snprintf-like: cut to size, full length returned (%zu)", n);
	return tap_done();
}
