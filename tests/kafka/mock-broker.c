// SPDX-License-Identifier: Apache-2.0
/*
 * A Kafka-protocol test broker: librdkafka's mock cluster on a loopback
 * port, driven from standard input so a test can take it down and up.
 *
 * usage: mock-broker [--brokers N] [--partitions P] TOPIC...
 * prints "bootstrap <host:port,...>" when ready, then reads commands:
 *   down | up     all brokers stop or resume answering
 *   rtt MS        add MS of latency to every broker
 *   create TOPIC  create a topic now (one the agent was started without)
 *   fail-pid ERR  answer the next producer-id request with error ERR (a
 *                 Kafka error code): 31, CLUSTER_AUTHORIZATION_FAILED, is
 *                 fatal to an idempotent producer
 *   fail-produce N ERR  answer the next N produce requests with error ERR
 *   topic-error TOPIC ERR  metadata answers for TOPIC carry error ERR from
 *                 now on (3, UNKNOWN_TOPIC_OR_PART: as if deleted); 0 clears
 *   quit          (or end of input) exit
 * Each command is answered "ok <command>" once it took effect.
 */
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Kafka API keys, not exported by rdkafka_mock.h */
#define RD_KAFKAP_Produce	 0
#define RD_KAFKAP_Metadata	 3
#define RD_KAFKAP_InitProducerId 22

int main(int argc, char **argv)
{
	int brokers = 1, partitions = 1, first = 1;
	rd_kafka_mock_cluster_t *mc;
	char err[512], line[256];
	rd_kafka_conf_t *conf;
	rd_kafka_t *rk;

	for (; first < argc && !strncmp(argv[first], "--", 2); first += 2) {
		if (first + 1 >= argc)
			return 2;
		if (!strcmp(argv[first], "--brokers"))
			brokers = atoi(argv[first + 1]);
		else if (!strcmp(argv[first], "--partitions"))
			partitions = atoi(argv[first + 1]);
		else
			return 2;
	}
	conf = rd_kafka_conf_new();
	rd_kafka_conf_set(conf, "log_level", "0", err, sizeof(err));
	rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
	if (!rk) {
		fprintf(stderr, "mock-broker: %s\n", err);
		return 1;
	}
	mc = rd_kafka_mock_cluster_new(rk, brokers);
	if (!mc) {
		fprintf(stderr, "mock-broker: cannot create the mock cluster\n");
		return 1;
	}
	/* Metadata v4 carries AllowAutoTopicCreation: with it the mock, like a
	 * real cluster, answers UNKNOWN_TOPIC for topics nobody created instead
	 * of creating them (v2, the default here, cannot say "do not create") */
	rd_kafka_mock_set_apiversion(mc, RD_KAFKAP_Metadata, 0, 4);
	for (int i = first; i < argc; i++) {
		rd_kafka_resp_err_t e = rd_kafka_mock_topic_create(mc, argv[i], partitions, 1);

		if (e) {
			fprintf(stderr, "mock-broker: topic %s: %s\n", argv[i],
				rd_kafka_err2str(e));
			return 1;
		}
	}
	printf("bootstrap %s\n", rd_kafka_mock_cluster_bootstraps(mc));
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = 0;
		if (!strcmp(line, "quit"))
			break;
		if (!strncmp(line, "create ", 7)) {
			rd_kafka_resp_err_t e =
			    rd_kafka_mock_topic_create(mc, line + 7, partitions, 1);

			if (e) {
				fprintf(stderr, "mock-broker: topic %s: %s\n", line + 7,
					rd_kafka_err2str(e));
				return 1;
			}
		}
		if (!strncmp(line, "topic-error ", 12)) {
			char *sp = strrchr(line + 12, ' ');

			if (!sp)
				return 2;
			*sp = 0;
			rd_kafka_mock_topic_set_error(mc, line + 12,
						      (rd_kafka_resp_err_t)atoi(sp + 1));
			*sp = ' ';
		}
		if (!strncmp(line, "fail-produce ", 13)) {
			rd_kafka_resp_err_t errs[64];
			int n = atoi(line + 13);
			const char *e = strchr(line + 13, ' ');

			if (n < 1 || n > 64 || !e)
				return 2;
			for (int i = 0; i < n; i++)
				errs[i] = (rd_kafka_resp_err_t)atoi(e + 1);
			rd_kafka_mock_push_request_errors_array(mc, RD_KAFKAP_Produce, (size_t)n,
								errs);
		}
		if (!strncmp(line, "fail-pid ", 9))
			rd_kafka_mock_push_request_errors(mc, RD_KAFKAP_InitProducerId, 1,
							  (rd_kafka_resp_err_t)atoi(line + 9));
		for (int b = 1; b <= brokers; b++) {
			if (!strcmp(line, "down"))
				rd_kafka_mock_broker_set_down(mc, b);
			else if (!strcmp(line, "up"))
				rd_kafka_mock_broker_set_up(mc, b);
			else if (!strncmp(line, "rtt ", 4))
				rd_kafka_mock_broker_set_rtt(mc, b, atoi(line + 4));
		}
		printf("ok %s\n", line);
		fflush(stdout);
	}
	rd_kafka_mock_cluster_destroy(mc);
	rd_kafka_destroy(rk);
	return 0;
}
