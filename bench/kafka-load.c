// SPDX-License-Identifier: Apache-2.0
/*
 * Publishing throughput of the agent's Kafka sink alone: real feature
 * records (read from a JSON-lines file, cycled) pushed through the same
 * sink-kafka.c + spool the agent uses, window after window, as fast as the
 * sink takes them; then waits until every record is delivered.
 *
 * usage: kafka-load BROKERS SPOOL_DIR RECORDS.jsonl WINDOWS RECORDS_PER_WINDOW [PROPERTY...]
 * prints: records bytes wall_s cpu_s wire_bytes payload_bytes
 * (wire and payload bytes from librdkafka's statistics, as in the agent record)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <systemd/sd-event.h>
#include <time.h>

#include "log.h"
#include "sink.h"

static double now(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
	char **lines = NULL, *line = NULL, props[4096] = "", err[1024];
	size_t cap = 0, n = 0, bytes = 0;
	long windows, per;
	struct dc_sink *sink;
	sd_event *e;
	double t0, c0;
	FILE *f;
	ssize_t l;
	uint64_t total;

	if (argc < 6) {
		fprintf(
		    stderr,
		    "usage: kafka-load BROKERS SPOOL RECORDS.jsonl WINDOWS PER_WINDOW [PROP...]\n");
		return 2;
	}
	windows = atol(argv[4]);
	per = atol(argv[5]);
	for (int i = 6; i < argc; i++) {
		strncat(props, argv[i], sizeof(props) - strlen(props) - 2);
		strcat(props, "\n");
	}
	f = fopen(argv[3], "re");
	if (!f)
		return perror(argv[3]), 1;
	while ((l = getline(&line, &cap, f)) > 0) {
		if (!strstr(line, "\"type\":\"features\""))
			continue;
		lines = realloc(lines, (n + 1) * sizeof(*lines));
		lines[n++] = strdup(line);
	}
	fclose(f);
	if (!n)
		return fprintf(stderr, "kafka-load: no features records in %s\n", argv[3]), 1;

	log_init();
	log_set_max_level(LOG_WARNING);
	sd_event_default(&e);
	struct sink_kafka_params p = {
	    .brokers = argv[1],
	    .properties = props,
	    .topic_features = "datacrumbs.features",
	    .topic_agent = "datacrumbs.agent",
	    .host = "bench",
	    .run = "bench-run",
	    .spool_dir = argv[2],
	    .spool_max_bytes = 1ULL << 40,
	    .spool_fsync = true,
	    .flush_timeout_ms = 60000,
	    .start_timeout_ms = 5000,
	};
	if (sink_kafka_new(&p, e, &sink, err, sizeof(err)) < 0)
		return fprintf(stderr, "kafka-load: %s\n", err), 1;

	t0 = now(CLOCK_MONOTONIC);
	c0 = cpu();
	total = (uint64_t)windows * (uint64_t)per;
	for (long w = 0; w < windows; w++) {
		struct dc_window win = {.seq = (uint64_t)w};

		for (long r = 0; r < per; r++) {
			const char *s = lines[(size_t)(w * per + r) % n];

			sink_write(sink, DC_REC_FEATURES, &win, s, strlen(s));
			bytes += strlen(s);
		}
		sink_flush(sink);
		/* serve delivery reports between windows, as the agent's loop does */
		while (sd_event_run(e, 0) > 0)
			;
	}
	while (sink->stats.records < total)
		sd_event_run(e, 100000);
	double wall = now(CLOCK_MONOTONIC) - t0, used = cpu() - c0;
	/* one more statistics interval, so the byte totals include the last batch */
	for (double until = now(CLOCK_MONOTONIC) + 1.5; now(CLOCK_MONOTONIC) < until;)
		sd_event_run(e, 100000);
	struct dc_buf b = {};
	struct dc_json j;
	const char *w, *pl;

	json_init(&j, &b);
	json_obj_begin(&j);
	sink_report(sink, &j);
	json_obj_end(&j);
	buf_putc(&b, 0);
	w = strstr(b.data, "\"wire_bytes\":");
	pl = strstr(b.data, "\"payload_bytes\":");
	printf("%llu %zu %.3f %.3f %llu %llu\n", (unsigned long long)total, bytes, wall, used,
	       w ? strtoull(w + 13, NULL, 10) : 0ULL, pl ? strtoull(pl + 16, NULL, 10) : 0ULL);
	buf_free(&b);
	sink_free(sink);
	sd_event_unref(e);
	return 0;
}
