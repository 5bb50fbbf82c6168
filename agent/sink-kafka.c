// SPDX-License-Identifier: Apache-2.0
/*
 * Kafka sink: at-least-once delivery through a write-ahead disk spool.
 *
 * Every window's records are sealed into one spool segment (zstd, CRC,
 * atomic rename) before any of them is produced, so a crash, a kill -9 or a
 * broker outage loses nothing that was closed. Segments are produced in
 * spool order; a segment's file is deleted only when every one of its
 * records has a delivery report saying the broker persisted it.
 *
 * Ordering: librdkafka keeps and retries queued messages itself, in order
 * (idempotent producer, message.timeout.ms = 0: never expire), so while the
 * broker is away the producer queue fills (bounded) and the rest waits on
 * disk, in order. A delivery failure is a permanent error (authorization,
 * unknown topic): the segment is produced again after a backoff, after the
 * segments that were already in flight, so only then can order and
 * duplicates differ; (host, run, window) in the headers identifies both.
 * A refusal of the records themselves (too large, invalid) is the one
 * exception to waiting: it is narrowed down, record by record, to those
 * refused alone (kseg.isolate), which are dropped and counted.
 *
 * Nothing here blocks the event loop: produce is non-blocking, delivery
 * reports are served when librdkafka signals its queue's fd, and only the
 * final flush at stop waits, for kafka.flush_timeout at most.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <systemd/sd-event.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "secrets.h"
#include "segment.h"
#include "sink.h"
#include "spool.h"

#define PUMP_TIMER_USEC	 (250 * 1000ULL) /* safety net beside the queue fd */
#define BACKOFF_MIN_USEC (1 * USEC_PER_SEC)
#define BACKOFF_MAX_USEC (60 * USEC_PER_SEC)
/* A segment that cannot be read (EIO, no memory for a foreign file's size)
 * is tried this many times, backing off, before the rest goes on without
 * it: in order, every later window waits for it */
#define SEG_READ_TRIES 5
#define LAT_RING       256
/*
 * Segments handed to librdkafka at once. Its own queue would take every
 * segment of a long outage (up to queue.buffering.max.kbytes), and a
 * segment librdkafka holds can be neither shed nor bounded by the spool:
 * keeping only a few in flight leaves the rest on disk, where the spool's
 * bound and its shedding order apply. One window a second needs one.
 */
#define MAX_INFLIGHT_SEGMENTS 8

struct kseg;

/* One record of a segment, the message's opaque: a segment produced again
 * after a delivery error skips those done (acknowledged, or given up on
 * for good), or each retry sent again every record the brokers had taken,
 * once a backoff for as long as the error lasted */
struct krec {
	struct kseg *g;
	bool done;
	bool alone; /* produced with nothing else in flight (kseg.isolate) */
};

struct kseg {
	struct kseg *next;
	struct dc_seg_meta meta;
	uint64_t file_bytes;
	struct dc_buf raw; /* records; empty when not loaded */
	bool loaded;
	size_t next_off;   /* next record to produce */
	uint32_t next_idx; /* its index in recs */
	struct krec *recs; /* n_recs, made at the first production; kept
			    * while the records' memory is let go */
	uint32_t n_recs;
	uint64_t outstanding; /* produced, no delivery report yet */
	uint64_t failed;      /* delivery reports with an error, this attempt */
	uint64_t faulted;     /* of those, refusals of the records (record_fault) */
	bool lost;	      /* at stop, neither delivered nor written: counted as lost */
	unsigned read_errors; /* reads that failed in a row (SEG_READ_TRIES) */
	int last_err;
	/* a broker refused records of it as too large or invalid: that
	 * verdict covers a whole batch, innocent records sent with the one
	 * at fault too, so they are produced again one at a time, each
	 * alone on the wire, and only a record refused alone is dropped (held,
	 * the refusal came back every backoff, for good) */
	bool isolate;
	uint64_t sealed_usec; /* CLOCK_MONOTONIC when sealed; 0 for a previous run's */
};

struct sink_kafka {
	struct dc_sink base;
	rd_kafka_t *rk;
	rd_kafka_topic_t *topic[DC_REC_MAX];
	char topic_name[DC_REC_MAX][256];
	bool key_cgroup;
	sd_event *event;
	sd_event_source *io, *timer;
	int pipe[2];
	struct spool *spool;
	uint64_t spool_max;
	uint64_t spool_bytes;
	struct kseg *head;
	struct dc_buf building;
	uint64_t building_n;
	/* trace batches: their own segments, which the bound sheds first */
	struct dc_buf building_tr;
	uint64_t building_tr_n;
	uint64_t flush_timeout_ms;
	char host[DC_SEG_HOST_MAX + 1];
	char run[DC_SEG_RUN_MAX + 1];
	struct dc_buf scratch;
	uint64_t resume_usec; /* pump paused until then after a failed segment */
	uint64_t backoff_usec;
	bool brokers_down;
	bool spool_failing;	   /* segments only memory holds wait for the spool */
	bool spool_gone;	   /* its directory removed: the files' losses counted */
	unsigned spool_recreated;  /* spool_recreated() when last looked at */
	uint64_t spool_err_usec;   /* when a write error was last logged */
	uint64_t spool_err_quiet;  /* write errors since, not logged */
	uint64_t refused_log_usec; /* when a record refused alone was last logged */
	uint64_t refused_quiet;	   /* refused alone since, not logged */
	uint64_t large_log_usec;   /* the same for records past message.max.bytes */
	uint64_t large_quiet;
	uint64_t company_log_usec; /* when a batch so refused was last logged */
	/* delivered segments the spool would not delete (read-only): tried
	 * again once it takes writes, or the next start would send them again */
	uint64_t *undeleted;
	size_t n_undeleted, cap_undeleted;
	bool stopped; /* sink_kafka_stop() ran */
	/* published in the agent record */
	uint64_t delivered, produced, dr_errors, queue_full, too_large, corrupt, spool_errors;
	uint64_t produce_errors; /* produce refused for now (topic, authorization): retried */
	uint64_t unrouted;	 /* spooled records of a type with no topic in this run */
	uint64_t restarts;	 /* producers recreated after a fatal error */
	rd_kafka_conf_t *conf;	 /* a copy, to recreate the producer after a fatal error */
	uint64_t shed_records[DC_SEG_KIND_MAX], shed_segments;
	uint64_t lat_ms[LAT_RING];
	unsigned lat_n;
	uint64_t segments_done;
	uint64_t tx_bytes, txmsg_bytes; /* librdkafka statistics: wire and payload bytes */
	char *props; /* the properties, to keep their secret values out of librdkafka's words */
};

static uint64_t now_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * USEC_PER_SEC + (uint64_t)ts.tv_nsec / 1000;
}

static void kseg_free(struct kseg *g)
{
	buf_free(&g->raw);
	free(g->recs);
	free(g);
}

/* Records the broker has acknowledged, over every attempt, or that were
 * given up on and counted already (too large, no topic). */
static uint64_t acknowledged(const struct kseg *g)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < g->n_recs; i++)
		n += g->recs[i].done;
	return n < g->meta.n_records ? n : g->meta.n_records;
}

/* g->recs for its loaded records; -ENOMEM */
static int seg_recs(struct kseg *g)
{
	struct dc_seg_rec rec;
	size_t off = 0;
	uint32_t n = 0;

	if (g->recs)
		return 0;
	while (seg_raw_next(g->raw.data, g->raw.len, &off, &rec) > 0)
		n++;
	g->recs = calloc(n ? n : 1, sizeof(*g->recs));
	if (!g->recs)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		g->recs[i].g = g;
	g->n_recs = n;
	return 0;
}

static void unlink_seg(struct sink_kafka *k, struct kseg *g)
{
	struct kseg **pp = &k->head;

	while (*pp && *pp != g)
		pp = &(*pp)->next;
	if (*pp)
		*pp = g->next;
}

/* The pump moves past a record at off: next_off and the index of its krec
 * go together */
static void seg_past(struct kseg *g, size_t off)
{
	g->next_off = off;
	g->next_idx++;
}

/* A segment given up on (damaged, deleted, unreadable): what the broker has
 * not taken is counted lost, and it leaves the list (its file is the
 * caller's business) */
static void seg_lost(struct sink_kafka *k, struct kseg *g)
{
	k->base.stats.dropped_records += g->meta.n_records - acknowledged(g);
	k->spool_bytes -= g->file_bytes < k->spool_bytes ? g->file_bytes : k->spool_bytes;
	unlink_seg(k, g);
	kseg_free(g);
}

static size_t seg_count(const struct sink_kafka *k)
{
	size_t n = 0;

	for (struct kseg *g = k->head; g; g = g->next)
		n += !g->lost;
	return n;
}

/* A segment's file, deleted; if the spool refuses (read-only), tried again
 * once it takes writes, or the next start would send it again. A segment
 * only memory held has no file to delete (and a read-only file system says
 * EROFS even for a name that is not there). */
static void seg_unlink(struct sink_kafka *k, struct kseg *g, const char *what)
{
	int r;
	uint64_t *u;

	if (!g->file_bytes)
		return;
	r = spool_remove(k->spool, g->meta.seq);
	if (r >= 0 || r == -ENOENT)
		return;
	u = VEC_PUSH(k->undeleted, k->n_undeleted, k->cap_undeleted);
	if (k->n_undeleted == 1 || !u)
		log_warning_errno(r,
				  "Cannot delete %s spool segment %" PRIu64
				  ": %m; trying again once the spool takes writes%s",
				  what, g->meta.seq,
				  u ? "" : " (out of memory: the next start sends it again)");
	if (u)
		*u = g->meta.seq;
}

/* All of a segment's records are persisted (or given up): it leaves custody. */
static void seg_done(struct sink_kafka *k, struct kseg *g)
{
	seg_unlink(k, g, "delivered");
	k->spool_bytes -= g->file_bytes < k->spool_bytes ? g->file_bytes : k->spool_bytes;
	if (g->sealed_usec) {
		k->lat_ms[k->lat_n % LAT_RING] = (now_usec() - g->sealed_usec) / 1000;
		k->lat_n++;
	}
	k->segments_done++;
	unlink_seg(k, g);
	kseg_free(g);
}

static int seg_load(struct sink_kafka *k, struct kseg *g)
{
	char err[256], path[512];
	struct dc_seg_meta meta;
	int r;

	if (g->loaded)
		return 0;
	r = spool_read(k->spool, g->meta.seq, &k->scratch);
	if (r < 0)
		return r;
	r = seg_decode(k->scratch.data, k->scratch.len, &meta, &g->raw, err, sizeof(err));
	/* the file's name is its place in the order, and what is read, set
	 * aside and deleted by: a header naming another segment (a spool
	 * renamed or merged by hand) is not trusted for either */
	if (r >= 0 && meta.seq != g->meta.seq) {
		snprintf(err, sizeof(err), "its header says segment %" PRIu64, meta.seq);
		buf_free(&g->raw);
		r = -EBADMSG;
	}
	if (r >= 0)
		g->meta = meta;
	if (r == -EBADMSG) {
		int q = spool_set_aside(k->spool, g->meta.seq);

		spool_path(k->spool, g->meta.seq, path, sizeof(path));
		if (q < 0)
			/* a read-only spool: the next start finds it again */
			log_error_errno(
			    q,
			    "Spool segment %s is unreadable (%s), and cannot be set "
			    "aside as %s.bad: %m; left where it is, delivering the rest",
			    path, err, path);
		else
			log_error("Spool segment %s is unreadable (%s): set aside as %s.bad, "
				  "delivering the rest",
				  path, err, path);
		k->corrupt++;
	}
	if (r < 0)
		return r;
	g->loaded = true;
	return 0;
}

/* The broker's verdict on the records themselves (their size, their
 * form): the same records are refused again, however long one waits. */
static bool record_fault(rd_kafka_resp_err_t err)
{
	return err == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE ||
	       err == RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE ||
	       err == RD_KAFKA_RESP_ERR_INVALID_RECORD;
}

/* A record dropped as refused alone: said once a minute at most (a topic
 * that refuses every window's would say so each window), with how many
 * since, in refused_records too */
static void log_refused(struct sink_kafka *k, const rd_kafka_message_t *m)
{
	uint64_t now = now_usec();
	rd_kafka_headers_t *h;
	const void *v;
	size_t n;
	char window[24] = "?", since[64] = "";

	if (k->refused_log_usec && now - k->refused_log_usec < 60 * USEC_PER_SEC) {
		k->refused_quiet++;
		return;
	}
	if (!rd_kafka_message_headers(m, &h) && !rd_kafka_header_get_last(h, "window", &v, &n) &&
	    v && n < sizeof(window)) {
		memcpy(window, v, n);
		window[n] = 0;
	}
	if (k->refused_quiet)
		snprintf(since, sizeof(since), " (and %" PRIu64 " more since last said)",
			 k->refused_quiet);
	log_error("Kafka refused a record of window %s (%zu bytes) for topic %s, alone: %s; "
		  "dropping it%s",
		  window, m->len, rd_kafka_topic_name(m->rkt), rd_kafka_err2str(m->err), since);
	k->refused_log_usec = now;
	k->refused_quiet = 0;
}

/* The producer's own refusal of a record larger than message.max.bytes:
 * said as the brokers' refusals are, once a minute with the count since
 * (a node whose trace batches pass the bound had a line every window) */
static void log_too_large(struct sink_kafka *k, const struct dc_seg_rec *rec,
			  rd_kafka_resp_err_t err)
{
	uint64_t now = now_usec();
	char since[64] = "";

	if (k->large_log_usec && now - k->large_log_usec < 60 * USEC_PER_SEC) {
		k->large_quiet++;
		return;
	}
	if (k->large_quiet)
		snprintf(since, sizeof(since), " (and %" PRIu64 " more since last said)",
			 k->large_quiet);
	log_error("Record of window %" PRIu64 " (%u bytes) refused by the producer: %s; "
		  "dropping it (refused_records; kafka.properties' message.max.bytes is the "
		  "bound, traces.batch_max_mib a trace batch's size)%s",
		  rec->window, rec->len, rd_kafka_err2str(err), since);
	k->large_log_usec = now;
	k->large_quiet = 0;
}

static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	struct sink_kafka *k = opaque;
	struct krec *kr = m->_private;
	struct kseg *g = kr->g;

	if (m->err || rd_kafka_message_status(m) != RD_KAFKA_MSG_STATUS_PERSISTED) {
		k->dr_errors++;
		if (record_fault(m->err) && kr->alone) {
			/* refused alone: this record, not its company */
			kr->done = true;
			k->too_large++;
			k->base.stats.dropped_records++;
			log_refused(k, m);
		} else {
			g->isolate |= record_fault(m->err);
			g->faulted += record_fault(m->err);
			g->failed++;
			g->last_err = m->err ? m->err : RD_KAFKA_RESP_ERR__FAIL;
		}
	} else {
		kr->done = true;
		k->delivered++;
		k->base.stats.records++;
		k->base.stats.bytes += m->len;
		/* the brokers take records again: the next failure starts over */
		k->backoff_usec = BACKOFF_MIN_USEC;
	}
	if (g->outstanding)
		g->outstanding--;
}

/* Pause the pump for the backoff, and double it for the next failure (a
 * delivery resets it: dr_cb). */
static void back_off(struct sink_kafka *k)
{
	k->resume_usec = now_usec() + k->backoff_usec;
	k->backoff_usec =
	    k->backoff_usec * 2 > BACKOFF_MAX_USEC ? BACKOFF_MAX_USEC : k->backoff_usec * 2;
}

/* A segment's failed attempt, in the log. Refusals of the records alone
 * are said once a minute: a topic refusing a record of every window would
 * say so every window. */
static void settle_say(struct sink_kafka *k, const struct kseg *g)
{
	const char *kind = g->meta.kind == DC_SEG_TRACES ? "traces" : "records";
	uint64_t now = now_usec();

	if (g->faulted < g->failed) {
		log_error("Kafka did not accept %" PRIu64 " records of spool segment %" PRIu64
			  " (%s): %s; producing it again in %" PRIu64 " s%s",
			  g->failed, g->meta.seq, kind, rd_kafka_err2str(g->last_err),
			  (uint64_t)(k->backoff_usec / USEC_PER_SEC),
			  g->isolate ? ", one record at a time" : "");
		return;
	}
	if (k->company_log_usec && now - k->company_log_usec < 60 * USEC_PER_SEC)
		return;
	k->company_log_usec = now;
	log_error("Kafka refused %" PRIu64 " records of spool segment %" PRIu64
		  " (%s) with their batch: %s; producing them again one at a time, to drop "
		  "only those refused alone (said once a minute at most)",
		  g->failed, g->meta.seq, kind, rd_kafka_err2str(g->last_err));
}

/* After delivery reports: retire finished segments, schedule failed ones. */
static void settle(struct sink_kafka *k)
{
	struct kseg *g = k->head, *next;

	for (; g; g = next) {
		next = g->next;
		if (!g->loaded || g->next_off < g->raw.len || g->outstanding)
			continue;
		if (!g->failed) {
			seg_done(k, g);
			continue;
		}
		settle_say(k, g);
		/* a refusal of the records comes back however long one
		 * waits: only other errors earn a pause */
		if (g->faulted < g->failed)
			back_off(k);
		g->failed = 0;
		g->faulted = 0;
		g->next_off = 0;
		g->next_idx = 0;
	}
}

static int produce_one(struct sink_kafka *k, struct krec *kr, const struct dc_seg_rec *rec)
{
	const struct kseg *g = kr->g;
	rd_kafka_headers_t *h = rd_kafka_headers_new(6);
	char window[24], schema[8], key[DC_SEG_HOST_MAX + 1 + 64];
	const char *type = record_type_name((enum dc_rec_type)rec->type);
	size_t keylen;
	rd_kafka_resp_err_t err;

	snprintf(window, sizeof(window), "%" PRIu64, rec->window);
	snprintf(schema, sizeof(schema), "%d", DC_RECORD_SCHEMA);
	rd_kafka_header_add(h, "host", -1, g->meta.host, -1);
	rd_kafka_header_add(h, "run", -1, g->meta.run, -1);
	rd_kafka_header_add(h, "window", -1, window, -1);
	rd_kafka_header_add(h, "schema", -1, schema, -1);
	rd_kafka_header_add(h, "type", -1, type, -1);
	rd_kafka_header_add(h, "content-encoding", -1, rec->type == DC_REC_TRACE ? "zstd" : "json",
			    -1);
	/* host keeps a node's windows ordered in one partition */
	keylen = (size_t)snprintf(key, sizeof(key), "%s", g->meta.host);
	if (k->key_cgroup && rec->type == DC_REC_FEATURES) {
		/* host/cgroup spreads a node over partitions, ordered per workload */
		const char *c = memmem(rec->data, rec->len, "\"cgroup\":\"", 10);

		if (c) {
			const char *s = c + 10,
				   *e = memchr(s, '"', rec->len - (size_t)(s - rec->data));

			if (e && keylen + 1 + (size_t)(e - s) < sizeof(key))
				keylen += (size_t)snprintf(key + keylen, sizeof(key) - keylen,
							   "/%.*s", (int)(e - s), s);
		}
	}
	err = rd_kafka_producev(
	    k->rk, RD_KAFKA_V_RKT(k->topic[rec->type]), RD_KAFKA_V_PARTITION(RD_KAFKA_PARTITION_UA),
	    RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_KEY(key, keylen),
	    RD_KAFKA_V_VALUE((void *)rec->data, rec->len), RD_KAFKA_V_HEADERS(h),
	    RD_KAFKA_V_OPAQUE(kr), RD_KAFKA_V_END);
	if (err)
		rd_kafka_headers_destroy(h);
	return err;
}

static int producer_new(struct sink_kafka *k, char *err, size_t errlen);
static void spool_check_removed(struct sink_kafka *k, const struct kseg *fresh);
static void producer_free(struct sink_kafka *k);

/*
 * An idempotent producer that raised a fatal error refuses every message
 * from then on: librdkafka wants the instance replaced. Whatever it still
 * held is purged, which fails those records' deliveries: their segments
 * are produced again from the spool, in order (duplicates possible, as
 * with any retry). A new producer with the same configuration takes over.
 */
static void producer_restart(struct sink_kafka *k)
{
	char why[512];

	k->restarts++;
	/* its purge reports what it held as failed, before it is destroyed */
	producer_free(k);
	settle(k);
	if (producer_new(k, why, sizeof(why)) < 0)
		log_error("Kafka: cannot recreate the producer: %s; retrying in %" PRIu64 " s", why,
			  (uint64_t)(k->backoff_usec / USEC_PER_SEC));
	else
		log_notice("Kafka: producer recreated after a fatal error; delivering the spool");
}

/* A record the producer refused for now: the pump pauses, backing off. */
static void pump_refused(struct sink_kafka *k, const struct dc_seg_rec *rec,
			 rd_kafka_resp_err_t err)
{
	char fatal[256];

	k->produce_errors++;
	k->base.stats.errors++;
	if (err == RD_KAFKA_RESP_ERR__FATAL && rd_kafka_fatal_error(k->rk, fatal, sizeof(fatal))) {
		log_error("Kafka: fatal producer error (%s): recreating the producer", fatal);
		producer_restart(k);
	} else {
		log_error("Kafka refused a record (%s) of window %" PRIu64 " for topic %s: %s; "
			  "keeping it and what follows in the spool, producing again in %" PRIu64
			  " s",
			  record_type_name((enum dc_rec_type)rec->type), rec->window,
			  k->topic_name[rec->type], rd_kafka_err2str(err),
			  (uint64_t)(k->backoff_usec / USEC_PER_SEC));
	}
	back_off(k);
}

static uint64_t records_in_flight(const struct sink_kafka *k)
{
	uint64_t n = 0;

	for (const struct kseg *g = k->head; g; g = g->next)
		n += g->outstanding;
	return n;
}

/* Produce spooled records in order until the producer queue is full or
 * MAX_INFLIGHT_SEGMENTS are in librdkafka's hands. */
static void pump(struct sink_kafka *k)
{
	unsigned inflight = 0;

	if (k->resume_usec && now_usec() < k->resume_usec)
		return;
	k->resume_usec = 0;
	if (!k->rk) {
		/* a restart that failed: try again, after the backoff */
		char why[512];

		if (producer_new(k, why, sizeof(why)) < 0) {
			log_error("Kafka: cannot recreate the producer: %s", why);
			back_off(k);
			return;
		}
		log_notice("Kafka: producer recreated; delivering the spool");
	}
	for (struct kseg *g = k->head, *next; g; g = next) {
		struct dc_seg_rec rec;
		size_t off;
		int r;

		next = g->next;
		if (g->loaded && g->next_off >= g->raw.len) {
			/* nothing after its last record while that is out */
			if (g->isolate && g->outstanding)
				return;
			inflight += g->outstanding > 0;
			continue;
		}
		if (inflight >= MAX_INFLIGHT_SEGMENTS)
			return;
		r = seg_load(k, g);
		if (r < 0) {
			if (r == -EBADMSG) {
				/* changed on disk since it was written or checked
				 * at the start: its records are in the .bad file,
				 * not delivered, and counted as such */
				seg_lost(k, g);
				continue;
			}
			if ((r == -ENOENT || r == -ESTALE) && spool_gone(k->spool)) {
				/* the whole directory: every unloaded segment
				 * went with it, counted at once, in one line */
				spool_check_removed(k, NULL);
				return;
			}
			if (r == -ENOENT || r == -ESTALE) {
				/* deleted by hand while the agent ran: waiting
				 * for it would stop the pump for good */
				char path[512];

				spool_path(k->spool, g->meta.seq, path, sizeof(path));
				log_error(
				    "Spool segment %s was deleted while the agent ran: its %" PRIu64
				    " records are lost; delivering the rest",
				    path, g->meta.n_records - acknowledged(g));
				seg_lost(k, g);
				continue;
			}
			/* something else in its place (spool_read: -EINVAL)
			 * stays so: no point waiting for it */
			if (r == -EINVAL)
				g->read_errors = SEG_READ_TRIES;
			if (++g->read_errors < SEG_READ_TRIES) {
				log_error_errno(r,
						"Cannot read spool segment %" PRIu64
						": %m; trying again in %" PRIu64 " s (%u of %d)",
						g->meta.seq,
						(uint64_t)(k->backoff_usec / USEC_PER_SEC),
						g->read_errors, SEG_READ_TRIES);
				back_off(k);
				return;
			}
			/* counted lost, so set aside (a file: something else
			 * in its place is not ours), or a later start would
			 * deliver it too */
			log_error("Cannot read spool segment %" PRIu64 ": %s: its %" PRIu64
				  " records are lost; delivering the rest",
				  g->meta.seq, r == -EINVAL ? "not a regular file" : strerror(-r),
				  g->meta.n_records - acknowledged(g));
			if (r != -EINVAL)
				spool_set_aside(k->spool, g->meta.seq);
			seg_lost(k, g);
			continue;
		}
		if (seg_recs(g) < 0) {
			/* out of memory: tried again at the next pump */
			k->resume_usec = now_usec() + k->backoff_usec;
			return;
		}
		inflight++;
		off = g->next_off;
		while ((r = seg_raw_next(g->raw.data, g->raw.len, &off, &rec)) > 0) {
			rd_kafka_resp_err_t err;
			struct krec *kr;

			if (g->next_idx >= g->n_recs) {
				/* more records than counted: not the same
				 * records (cannot happen: loads decode one file) */
				r = -EBADMSG;
				break;
			}
			kr = &g->recs[g->next_idx];
			if (kr->done) {
				seg_past(g, off);
				continue;
			}

			/* an unknown type, or one this run has no topic for (a
			 * previous run's traces or stacks): nowhere to send it */
			if (rec.type >= DC_REC_MAX || !k->topic_name[rec.type][0]) {
				if (!k->unrouted++)
					log_warning(
					    "Spooled %s record of window %" PRIu64
					    " has no Kafka topic in this configuration: "
					    "dropping it (counted in unrouted_records)",
					    rec.type < DC_REC_MAX
						? record_type_name((enum dc_rec_type)rec.type)
						: "unknown",
					    rec.window);
				k->base.stats.dropped_records++;
				kr->done = true;
				seg_past(g, off);
				continue;
			}
			if (g->isolate) {
				/* alone in its request: nothing else in flight */
				if (records_in_flight(k))
					return;
				kr->alone = true;
			}
			err = produce_one(k, kr, &rec);
			if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
				/* librdkafka holds its bound; the rest waits on disk */
				k->queue_full++;
				k->base.stats.queue_full++;
				return;
			}
			if (err == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE) {
				/* cannot ever be sent (larger than message.max.bytes) */
				kr->done = true;
				seg_past(g, off);
				k->too_large++;
				k->base.stats.dropped_records++;
				log_too_large(k, &rec, err);
				continue;
			}
			if (err) {
				/* not the record's fault: a topic that does not exist
				 * (yet), no authorization, a fatal producer error. It
				 * stays, and so does all that follows it, in order */
				pump_refused(k, &rec, err);
				return;
			}
			seg_past(g, off);
			g->outstanding++;
			k->produced++;
			if (g->isolate)
				return;
		}
		if (r < 0)
			g->next_off = g->raw.len;
		/* its lone record out, the rest done already: nothing after
		 * it may share that record's request */
		if (g->isolate && g->outstanding)
			return;
		if (!g->outstanding && !g->failed)
			seg_done(k, g);
	}
}

/*
 * Segments on disk that the pump will not reach soon give back their
 * records' memory (read again from the spool when their turn comes, as an
 * earlier run's are): sealed windows stayed loaded until delivered, and an
 * outage held the whole spool in memory, uncompressed (190 MB more RSS for
 * an 8 MiB spool, measured). The first MAX_INFLIGHT_SEGMENTS stay: those
 * the pump produces next, without a read.
 */
static void release_idle(struct sink_kafka *k)
{
	unsigned n = 0;

	for (struct kseg *g = k->head; g; g = g->next)
		if (++n > MAX_INFLIGHT_SEGMENTS && g->loaded && g->file_bytes && !g->next_off &&
		    !g->outstanding && !g->failed) {
			buf_free(&g->raw);
			g->loaded = false;
		}
}

static void service(struct sink_kafka *k)
{
	if (k->rk)
		rd_kafka_poll(k->rk, 0);
	settle(k);
	pump(k);
}

static int on_queue(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct sink_kafka *k = userdata;
	char buf[64];

	while (read(fd, buf, sizeof(buf)) > 0)
		;
	service(k);
	return 0;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct sink_kafka *k = userdata;

	service(k);
	sd_event_source_set_time(s, usec + PUMP_TIMER_USEC);
	sd_event_source_set_enabled(s, SD_EVENT_ON);
	return 0;
}

/* Bytes of the segments only memory holds (the spool could not take them):
 * they count against the same bound, or a full disk during an outage
 * would grow the agent without end. */
static uint64_t held_bytes(const struct sink_kafka *k)
{
	uint64_t n = 0;

	for (const struct kseg *g = k->head; g; g = g->next)
		if (!g->file_bytes && g->loaded)
			n += g->raw.len;
	return n;
}

/* Keep the spool within its bound: shed traces before feature vectors,
 * oldest first, never a segment the producer still holds. */
static void enforce_bound(struct sink_kafka *k)
{
	uint64_t held = held_bytes(k);

	for (int kind = DC_SEG_KIND_MAX - 1; kind >= 0 && k->spool_bytes + held > k->spool_max;
	     kind--) {
		for (struct kseg *g = k->head, *next; g && k->spool_bytes + held > k->spool_max;
		     g = next) {
			next = g->next;
			if ((int)g->meta.kind != kind || g->outstanding ||
			    (g->loaded && g->next_off > 0) || g == k->head)
				continue;
			if (!g->file_bytes)
				held -= g->raw.len;
			if (!k->shed_segments || k->shed_segments % 100 == 0)
				log_warning("Spool over %" PRIu64
					    " MiB: dropping the oldest %s segment "
					    "%" PRIu64 " (%" PRIu64 " records)",
					    k->spool_max >> 20, kind ? "trace" : "feature",
					    g->meta.seq, g->meta.n_records);
			/* a segment waiting to be produced again: those the
			 * broker took (or that were counted as dropped) are
			 * not lost again */
			k->shed_records[kind] += g->meta.n_records - acknowledged(g);
			k->base.stats.shed_records += g->meta.n_records - acknowledged(g);
			k->shed_segments++;
			seg_unlink(k, g, "shed");
			k->spool_bytes -= g->file_bytes;
			unlink_seg(k, g);
			kseg_free(g);
		}
	}
}

static int kafka_write(struct dc_sink *s, enum dc_rec_type type, const struct dc_window *w,
		       const char *data, size_t len)
{
	struct sink_kafka *k = (struct sink_kafka *)s;

	bool tr = type == DC_REC_TRACE;
	int r;

	/* no traces (stacks) topic configured: not this sink's */
	if (!k->topic_name[type][0])
		return 0;
	r = seg_raw_append(tr ? &k->building_tr : &k->building, type, w->seq, data, (uint32_t)len);
	if (r < 0) {
		/* counted where the agent record sees it, not only said by
		 * the caller (the file sink may have taken it) */
		k->base.stats.dropped_records++;
		k->base.stats.dropped_bytes += len;
		return r;
	}
	if (tr)
		k->building_tr_n++;
	else
		k->building_n++;
	return 0;
}

/* Records raw as meta says, the file of segment g (written, or replacing
 * the one it has). */
static int spool_put_as(struct sink_kafka *k, struct kseg *g, const struct dc_seg_meta *meta,
			const struct dc_buf *raw)
{
	int r =
	    seg_encode(meta, raw->data, raw->len, meta->kind == DC_SEG_TRACES ? 1 : 3, &k->scratch);

	if (!r)
		r = spool_write(k->spool, meta->seq, k->scratch.data, k->scratch.len);
	if (r < 0)
		return r;
	k->spool_bytes -= g->file_bytes < k->spool_bytes ? g->file_bytes : k->spool_bytes;
	g->file_bytes = k->scratch.len;
	k->spool_bytes += g->file_bytes;
	return 0;
}

/* A segment only memory holds, written to the spool. */
static int spool_put(struct sink_kafka *k, struct kseg *g)
{
	return spool_put_as(k, g, &g->meta, &g->raw);
}

/*
 * The spool's directory was removed while the agent ran: the files of the
 * segments went with it. Those loaded are held in memory now (written to
 * the spool again when it takes writes); those not loaded (beyond the next
 * ones to produce) are lost, said once and counted. `fresh` was written
 * into the directory made again, if it was.
 */
static void files_lost(struct sink_kafka *k, const struct kseg *fresh, bool remade)
{
	uint64_t lost = 0, lost_segs = 0;

	for (struct kseg *g = k->head, *next; g; g = next) {
		next = g->next;
		if (g == fresh || g->lost || !g->file_bytes)
			continue;
		k->spool_bytes -= g->file_bytes < k->spool_bytes ? g->file_bytes : k->spool_bytes;
		g->file_bytes = 0;
		if (!g->loaded) {
			lost += g->meta.n_records;
			lost_segs++;
			unlink_seg(k, g);
			kseg_free(g);
		}
	}
	/* what is left waits in memory until the spool takes it */
	k->spool_failing = true;
	k->spool_gone = !remade;
	k->base.stats.dropped_records += lost;
	log_error("The spool directory %s was removed while the agent ran%s; %" PRIu64
		  " segments (%" PRIu64 " records) that only its files held are lost",
		  spool_dir(k->spool), remade ? ": made again" : ", not made again yet", lost_segs,
		  lost);
}

/*
 * Whether the spool's directory was removed, or made again by a write,
 * since last looked: its files' losses counted once, wherever it is seen
 * first (a window's write, the pump's read, the stop). `fresh` was just
 * written into a directory made again.
 */
static void spool_check_removed(struct sink_kafka *k, const struct kseg *fresh)
{
	if (spool_recreated(k->spool) != k->spool_recreated) {
		k->spool_recreated = spool_recreated(k->spool);
		if (k->spool_gone)
			log_notice("The spool directory %s is made again", spool_dir(k->spool));
		else
			files_lost(k, fresh, true);
		k->spool_gone = false;
	} else if (!k->spool_gone && spool_gone(k->spool)) {
		files_lost(k, NULL, false);
	}
}

/* Segments the spool takes a window once it takes writes again: the rest
 * next window, so that a long outage's backlog (two fsyncs a segment) does
 * not hold the event loop at once */
#define RESPOOL_PER_WINDOW 16

/*
 * The spool took a segment again after refusing some (a full disk, a
 * read-only remount, its directory removed and made again): the segments
 * only memory held go to disk, oldest first, a few a window, so that a
 * crash from then on loses none. Still refused: they stay held, and the
 * next window tries again.
 */
static void spool_recover(struct sink_kafka *k, const struct kseg *fresh)
{
	uint64_t written = 0;
	int r = 0;

	if (!k->spool_failing)
		return;
	for (struct kseg *g = k->head; g; g = g->next) {
		if (g == fresh || g->lost || g->file_bytes || !g->loaded)
			continue;
		if (written == RESPOOL_PER_WINDOW)
			return; /* still failing: the next window goes on */
		r = spool_put(k, g);
		if (r < 0)
			return;
		written++;
	}
	k->spool_failing = false;
	if (k->spool_err_usec)
		log_notice("The spool %s takes segments again: the windows memory held are "
			   "written to it",
			   spool_dir(k->spool));
	k->spool_err_usec = 0;
	k->spool_err_quiet = 0;
}

static void delete_undeleted(struct sink_kafka *k)
{
	size_t w = 0;

	for (size_t i = 0; i < k->n_undeleted; i++) {
		int r = spool_remove(k->spool, k->undeleted[i]);

		if (r < 0 && r != -ENOENT)
			k->undeleted[w++] = k->undeleted[i];
	}
	if (w < k->n_undeleted && !w)
		log_notice("Deleted the %zu delivered or shed spool segments the spool had "
			   "refused to",
			   k->n_undeleted);
	k->n_undeleted = w;
}

/* Seal records into a spool segment of a kind and queue it. */
static int seal(struct sink_kafka *k, enum dc_seg_kind kind, struct dc_buf *building,
		uint64_t *building_n)
{
	struct kseg *g, **tail;
	int r;

	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->meta.kind = kind;
	g->meta.seq = spool_next_seq(k->spool);
	g->meta.n_records = *building_n;
	snprintf(g->meta.host, sizeof(g->meta.host), "%s", k->host);
	snprintf(g->meta.run, sizeof(g->meta.run), "%s", k->run);
	g->raw = *building; /* the segment takes the records */
	g->loaded = true;
	g->sealed_usec = now_usec();
	*building = (struct dc_buf){};
	*building_n = 0;

	/* trace batches are zstd frames already: the segment's level 1 costs
	 * little and keeps one segment format */
	r = seg_encode(&g->meta, g->raw.data, g->raw.len, kind == DC_SEG_TRACES ? 1 : 3,
		       &k->scratch);
	if (!r)
		r = spool_write(k->spool, g->meta.seq, k->scratch.data, k->scratch.len);
	if (r < 0) {
		uint64_t now = now_usec();

		/* still delivered from memory; only a crash before delivery
		 * loses it. Said at most once a minute, with how many since */
		if (!k->spool_err_usec || now - k->spool_err_usec >= 60 * USEC_PER_SEC) {
			char since[64] = "";

			if (k->spool_err_quiet)
				snprintf(since, sizeof(since),
					 " (and %" PRIu64 " times since said)", k->spool_err_quiet);
			log_error_errno(r,
					"Cannot write to the spool %s: %m%s%s; holding records in "
					"memory until delivered or the spool takes them",
					spool_dir(k->spool),
					r == -EBUSY ? " (another datacrumbs agent holds the "
						      "directory, made again since)"
						    : "",
					since);
			k->spool_err_usec = now;
			k->spool_err_quiet = 0;
		} else {
			k->spool_err_quiet++;
		}
		k->spool_failing = true;
		k->spool_errors++;
		k->base.stats.errors++;
	} else {
		g->file_bytes = k->scratch.len;
		k->spool_bytes += g->file_bytes;
	}
	for (tail = &k->head; *tail; tail = &(*tail)->next)
		;
	*tail = g;
	/* made again, even if the write in it then failed: the old
	 * directory's files are gone all the same */
	spool_check_removed(k, r >= 0 ? g : NULL);
	if (r >= 0) {
		spool_recover(k, g);
		delete_undeleted(k);
	}
	return r < 0 ? r : 0;
}

/* Seal the window's records into spool segments, then produce. */
static int kafka_flush(struct dc_sink *s)
{
	struct sink_kafka *k = (struct sink_kafka *)s;
	int r = 0, r2 = 0;

	if (!k->building_n && !k->building_tr_n)
		return 0;
	if (k->building_n)
		r = seal(k, DC_SEG_FEATURES, &k->building, &k->building_n);
	if (k->building_tr_n)
		r2 = seal(k, DC_SEG_TRACES, &k->building_tr, &k->building_tr_n);
	enforce_bound(k);
	service(k);
	/* here, not at every delivery: segments are only appended, so one
	 * loaded beyond the pump's reach is one just sealed */
	release_idle(k);
	return r < 0 ? r : r2;
}

static void percentiles(const struct sink_kafka *k, uint64_t *p50, uint64_t *p99, uint64_t *max)
{
	uint64_t v[LAT_RING];
	unsigned n = k->lat_n < LAT_RING ? k->lat_n : LAT_RING;

	memcpy(v, k->lat_ms, n * sizeof(v[0]));
	for (unsigned i = 1; i < n; i++)
		for (unsigned j = i; j > 0 && v[j - 1] > v[j]; j--) {
			uint64_t t = v[j];

			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	*p50 = n ? v[(n - 1) / 2] : 0;
	*p99 = n ? v[(n * 99 + 99) / 100 - 1] : 0;
	*max = n ? v[n - 1] : 0;
}

static void kafka_report(struct dc_sink *s, struct dc_json *j)
{
	struct sink_kafka *k = (struct sink_kafka *)s;
	uint64_t p50, p99, max;

	percentiles(k, &p50, &p99, &max);
	json_key(j, "kafka");
	json_obj_begin(j);
	json_key(j, "brokers_up");
	json_bool(j, !k->brokers_down);
	json_key(j, "produced");
	json_u64(j, k->produced);
	json_key(j, "delivered");
	json_u64(j, k->delivered);
	json_key(j, "delivery_errors");
	json_u64(j, k->dr_errors);
	json_key(j, "queue_full");
	json_u64(j, k->queue_full);
	json_key(j, "refused_records");
	json_u64(j, k->too_large);
	json_key(j, "produce_errors");
	json_u64(j, k->produce_errors);
	json_key(j, "unrouted_records");
	json_u64(j, k->unrouted);
	json_key(j, "producer_restarts");
	json_u64(j, k->restarts);
	json_key(j, "in_flight");
	json_u64(j, k->rk ? (uint64_t)rd_kafka_outq_len(k->rk) : 0);
	json_key(j, "delivery_ms_p50");
	json_u64(j, p50);
	json_key(j, "delivery_ms_p99");
	json_u64(j, p99);
	json_key(j, "delivery_ms_max");
	json_u64(j, max);
	json_key(j, "wire_bytes");
	json_u64(j, k->tx_bytes);
	json_key(j, "payload_bytes");
	json_u64(j, k->txmsg_bytes);
	json_key(j, "spool_bytes");
	json_u64(j, k->spool_bytes);
	json_key(j, "spool_segments");
	json_u64(j, seg_count(k));
	json_key(j, "spool_errors");
	json_u64(j, k->spool_errors);
	json_key(j, "spool_corrupt");
	json_u64(j, k->corrupt);
	json_key(j, "shed_records");
	json_obj_begin(j);
	json_key(j, "features");
	json_u64(j, k->shed_records[DC_SEG_FEATURES]);
	json_key(j, "traces");
	json_u64(j, k->shed_records[DC_SEG_TRACES]);
	json_obj_end(j);
	json_obj_end(j);
	/* the delivery latency covers the windows completed since the last report */
	k->lat_n = 0;
}

/*
 * At stop: segments that only memory holds (the spool could not take them)
 * get one more try at the disk, which may have room by now; what still
 * cannot be written is lost with the process, and is said and counted.
 */

/*
 * A segment the brokers took in part, at a stop: its file keeps only the
 * records not done, under the same number (spool_write replaces it whole
 * or not at all), so that the next start or the sink a reload starts does
 * not send the others again (duplicates) nor a record refused alone again
 * (dropped and counted twice). Where it cannot (memory, the spool), the
 * file is left whole: duplicates, never a loss. Whole or not at all holds
 * with spool.fsync (the default): without it a power cut after the rename
 * may leave neither version. Returns 1 if rewritten.
 */
static int seg_trim(struct sink_kafka *k, struct kseg *g)
{
	_cleanup_(buf_free) struct dc_buf raw = {};
	struct dc_seg_meta meta = g->meta;
	struct dc_seg_rec rec;
	uint64_t acked = acknowledged(g);
	size_t off = 0;
	int r;

	/* a segment taken in part stays loaded until done (release_idle);
	 * one that is not is left as the next start finds it */
	if (!acked || acked >= g->meta.n_records || !g->loaded)
		return 0;
	meta.n_records = 0;
	for (uint32_t i = 0; seg_raw_next(g->raw.data, g->raw.len, &off, &rec) > 0; i++)
		if (i >= g->n_recs || !g->recs[i].done) {
			seg_raw_add(&raw, rec.type, rec.window, rec.data, rec.len);
			meta.n_records++;
		}
	if (raw.err)
		return -ENOMEM;
	r = spool_put_as(k, g, &meta, &raw);
	return r < 0 ? r : 1;
}

/* next: the spool directory the sink that follows uses ("" none: Kafka
 * off), NULL when the agent stops */
static void spool_held(struct sink_kafka *k, const char *next)
{
	uint64_t lost = 0, kept = 0, trimmed = 0;

	/* a directory removed since the last window: its files are no longer
	 * "sent at the next start" */
	spool_check_removed(k, NULL);
	for (struct kseg *g = k->head; g; g = g->next) {
		bool in_memory = !g->file_bytes;
		uint64_t left;
		int r;

		if (g->lost)
			continue;
		r = seg_trim(k, g);
		if (r < 0 && !in_memory)
			log_warning_errno(r,
					  "Cannot rewrite spool segment %" PRIu64
					  " without the %" PRIu64
					  " records Kafka took: %m; they are sent again",
					  g->meta.seq, acknowledged(g));
		if (r > 0) {
			trimmed++;
			kept += in_memory;
			continue;
		}
		/* one only memory held that could not be trimmed goes whole */
		if (!in_memory || !g->loaded)
			continue;
		/* what the broker has not acknowledged: a segment partly
		 * delivered before the stop loses only its other records */
		left = g->meta.n_records - acknowledged(g);
		r = spool_put(k, g);
		if (r < 0) {
			/* marked, not freed: the producer may still hold its
			 * messages until it is destroyed; left out of the count
			 * of segments still to send */
			lost += left;
			g->lost = true;
			continue;
		}
		kept++;
	}
	if (trimmed)
		log_notice("Kept %" PRIu64 " spool segments taken in part by Kafka without the "
			   "records it took",
			   trimmed);
	if (kept) {
		log_notice("Wrote %" PRIu64 " segments held in memory to the spool at stop", kept);
		delete_undeleted(k);
	}
	if (lost) {
		k->base.stats.dropped_records += lost;
		log_error("Stopping with %" PRIu64 " records that neither Kafka nor the spool %s "
			  "took: they are lost",
			  lost, spool_dir(k->spool));
	}
	if (!seg_count(k))
		return;
	if (next) {
		char real[PATH_MAX];

		/* a reload that moves the spool leaves these where they are:
		 * no later sink reads them unless spool.dir names them again */
		if (!*next) {
			log_warning("Stopping with %zu spool segments (%" PRIu64 " bytes) not yet "
				    "delivered in %s: the new configuration publishes to no Kafka, "
				    "so they wait there until one with this spool.dir does",
				    seg_count(k), k->spool_bytes, spool_dir(k->spool));
			return;
		}
		if (!realpath(next, real) || strcmp(real, spool_dir(k->spool))) {
			log_warning(
			    "Stopping with %zu spool segments (%" PRIu64 " bytes) not yet "
			    "delivered in %s: spool.dir is now %s, so they wait there until "
			    "spool.dir names it again",
			    seg_count(k), k->spool_bytes, spool_dir(k->spool), next);
			return;
		}
	}
	log_notice("Stopping with %zu spool segments (%" PRIu64 " bytes) not yet "
		   "delivered: they are sent %s",
		   seg_count(k), k->spool_bytes,
		   next ? "by the sink that takes over" : "at the next start");
}

static const struct dc_sink_ops kafka_ops;

void sink_kafka_state(const struct dc_sink *s, struct sink_kafka_state *st)
{
	const struct sink_kafka *k = (const struct sink_kafka *)s;

	*st = (struct sink_kafka_state){};
	if (s->ops != &kafka_ops)
		return;
	st->brokers_down = k->brokers_down;
	st->spool_bytes = k->spool_bytes;
	st->held_bytes = held_bytes(k);
	st->segments = seg_count(k);
	st->spool_failing = k->spool_failing;
}

void sink_kafka_stop(struct dc_sink *s, uint64_t max_flush_ms, const char *next_spool)
{
	struct sink_kafka *k = (struct sink_kafka *)s;

	if (s->ops != &kafka_ops || k->stopped)
		return;
	k->stopped = true;
	/* the spool already holds everything: this only saves a replay, and
	 * with the brokers down it would only hold the event loop (a reload's
	 * too) for flush_timeout */
	if (k->rk && !k->brokers_down) {
		rd_kafka_flush(k->rk, (int)(k->flush_timeout_ms < max_flush_ms ? k->flush_timeout_ms
									       : max_flush_ms));
		rd_kafka_poll(k->rk, 0);
		settle(k);
	}
	if (k->refused_quiet)
		log_error("Kafka refused %" PRIu64 " more records alone since last said: dropped "
			  "(refused_records)",
			  k->refused_quiet);
	if (k->large_quiet)
		log_error("The producer refused %" PRIu64 " more records past message.max.bytes "
			  "since last said: dropped (refused_records)",
			  k->large_quiet);
	if (k->spool)
		spool_held(k, next_spool);
}

/* the stop's flush; the spool keeps what Kafka did not take */
static void kafka_close(struct dc_sink *s)
{
	sink_kafka_stop(s, UINT64_MAX, NULL);
}

static void kafka_free(struct dc_sink *s)
{
	struct sink_kafka *k = (struct sink_kafka *)s;
	struct kseg *g;

	sink_kafka_stop(s, UINT64_MAX, NULL);
	producer_free(k);
	if (k->conf)
		rd_kafka_conf_destroy(k->conf);
	if (k->props)
		explicit_bzero(k->props, strlen(k->props));
	free(k->props);
	while ((g = k->head)) {
		k->head = g->next;
		kseg_free(g);
	}
	sd_event_source_unref(k->io);
	sd_event_source_unref(k->timer);
	for (int i = 0; i < 2; i++)
		if (k->pipe[i] >= 0)
			close(k->pipe[i]);
	spool_free(k->spool);
	free(k->undeleted);
	buf_free(&k->building);
	buf_free(&k->building_tr);
	buf_free(&k->scratch);
	free(k);
}

static const struct dc_sink_ops kafka_ops = {
    .name = "kafka",
    .write = kafka_write,
    .flush = kafka_flush,
    .report = kafka_report,
    .close = kafka_close,
    .free = kafka_free,
};

static void error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
	struct sink_kafka *k = opaque;
	char buf[1024];

	/* an authentication failure may quote what it was given */
	secrets_scrub(buf, sizeof(buf), reason, k->props);
	reason = buf;
	if (err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN) {
		if (!k->brokers_down)
			log_warning("Kafka: all brokers are down (%s); records wait in the spool",
				    reason);
		k->brokers_down = true;
		return;
	}
	if (rd_kafka_fatal_error(rk, NULL, 0))
		log_error("Kafka: fatal producer error: %s", reason);
	else if (err == RD_KAFKA_RESP_ERR__TRANSPORT)
		/* expected while a broker is away; the state change is logged above */
		log_debug("Kafka: %s", reason);
	else
		log_warning("Kafka: %s: %s", rd_kafka_err2name(err), reason);
}

/* librdkafka's own log lines repeat what error_cb reports; keep them for debug */
static void log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
	struct sink_kafka *k = rd_kafka_opaque(rk);
	char line[2048];

	level = level > LOG_CRIT ? LOG_DEBUG : level;
	if (level > log_get_max_level())
		return;
	/* debug=conf dumps the configuration, and librdkafka 2.0 does not
	 * redact sasl.oauthbearer.client.secret there */
	secrets_scrub(line, sizeof(line), buf, k ? k->props : NULL);
	log_full_errno(level, 0, "librdkafka %s: %s", fac, line);
}

/* librdkafka's statistics (every statistics.interval.ms): keep the totals of
 * bytes sent to brokers (compressed, with protocol framing) and of message
 * payload bytes, so the agent record shows what compression saves. */
static uint64_t stat_field(const char *json, const char *name)
{
	const char *p = strstr(json, name);

	return p ? strtoull(p + strlen(name), NULL, 10) : 0;
}

static int stats_cb(rd_kafka_t *rk, char *json, size_t len, void *opaque)
{
	struct sink_kafka *k = opaque;

	/* top-level totals come before the per-broker objects */
	k->tx_bytes = stat_field(json, "\"tx_bytes\":");
	k->txmsg_bytes = stat_field(json, "\"txmsg_bytes\":");
	/* librdkafka says when all brokers are down (error_cb) but not when
	 * one is back: a delivery shows it, and with nothing to deliver a
	 * broker object's state does ("state" is the broker's alone in a
	 * producer's statistics). Believed down, a stop would skip its flush */
	if (k->brokers_down && strstr(json, "\"state\":\"UP\"")) {
		log_notice("Kafka: brokers reachable again, delivering the spool");
		k->brokers_down = false;
	}
	return 0; /* librdkafka frees json */
}

/* Delivery also proves the brokers are back. */
static void dr_msg_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	struct sink_kafka *k = opaque;

	if (!m->err && k->brokers_down) {
		log_notice("Kafka: brokers reachable again, delivering the spool");
		k->brokers_down = false;
	}
	dr_cb(rk, m, opaque);
}

/* librdkafka's reason for refusing a secret's line, into out, unless it
 * quotes any part of the value: it may trim the value or cut a long one,
 * so a match of the whole value is not enough. Any 8 bytes of it (all of
 * a shorter one) found in the reason hide the reason. */
static void hide_value(char *out, size_t size, const char *in, const char *value)
{
	size_t vl = strlen(value), w = vl < 8 ? vl : 8;

	for (size_t i = 0; w && i + w <= vl; i++)
		if (memmem(in, strlen(in), value + i, w)) {
			snprintf(out, size, "(librdkafka's reason not shown: it quotes the value)");
			return;
		}
	snprintf(out, size, "%s", in);
}

/* secrets_file: the line came from kafka.secrets_file, whose values never
 * appear in a message whatever the name (a misspelt "sasl.pasword" is no
 * known secret's, and librdkafka's reason may quote the value) */
static int conf_set(rd_kafka_conf_t *conf, const char *name, const char *value,
		    const char *secrets_file, char *err, size_t errlen)
{
	char e[512];

	if (rd_kafka_conf_set(conf, name, value, e, sizeof(e)) != RD_KAFKA_CONF_OK) {
		char line[1536], why[512];

		if (secrets_file) {
			hide_value(why, sizeof(why), e, value);
			snprintf(err, errlen,
				 "kafka.secrets_file %s: property %s (value not shown): %s",
				 secrets_file, name, why);
			return -EINVAL;
		}
		/* librdkafka's reason may quote the value ("Unsupported value ...") */
		snprintf(line, sizeof(line), "%s=%s", name, value);
		secrets_scrub(why, sizeof(why), e, line);
		if (secret_property(name, strlen(name)))
			snprintf(err, errlen, "Kafka property %s (value not shown): %s", name, why);
		else
			snprintf(err, errlen, "Kafka property %s=%s: %s", name, value, why);
		return -EINVAL;
	}
	return 0;
}

/* Check at start that the topics exist: an unknown topic is an error now,
 * not a silent run. A broker that does not answer is not: the spool waits. */
static int check_topics(struct sink_kafka *k, int timeout_ms, char *err, size_t errlen)
{
	for (int i = 0; i < DC_REC_MAX; i++) {
		const struct rd_kafka_metadata *md = NULL;
		rd_kafka_resp_err_t e;

		if (!k->topic[i])
			continue;
		e = rd_kafka_metadata(k->rk, 0, k->topic[i], &md, timeout_ms);
		if (e) {
			log_warning("Kafka: no answer from the brokers at start (%s); records are "
				    "spooled until they answer",
				    rd_kafka_err2str(e));
			return 0;
		}
		e = md->topic_cnt == 1 ? md->topics[0].err : RD_KAFKA_RESP_ERR_NO_ERROR;
		if (e == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART ||
		    e == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED) {
			/* a name the brokers do not know, or may not be written:
			 * the operator's to fix, said now rather than spooled */
			snprintf(err, errlen,
				 "Kafka topic '%s': %s (the agent does not create topics)",
				 k->topic_name[i], rd_kafka_err2str(e));
			rd_kafka_metadata_destroy(md);
			return -ENOENT;
		}
		if (e)
			/* a topic being created, a leader being elected (brokers
			 * restarting while a fleet upgrades): records spool until it
			 * settles; stopping would leave the node unmonitored */
			log_warning("Kafka topic '%s': %s at start; records are spooled until it "
				    "answers",
				    k->topic_name[i], rd_kafka_err2str(e));
		rd_kafka_metadata_destroy(md);
	}
	return 0;
}

/* Trace batches are zstd frames already: the producer's zstd found nothing
 * to take out of them (968,097 bytes to 968,130 on a real batch) and spent
 * its thread's CPU trying. The records' JSON keeps the global codec. The
 * rest is the producer's topic defaults, ours and the operator's
 * (message.timeout.ms = 0 above all: a new topic conf would let queued
 * traces expire after five minutes). A traces topic that is also another
 * record type's keeps that type's settings (librdkafka configures a topic
 * at its first handle), and a conf that cannot be made leaves the traces on
 * the global codec: both cost CPU, not data. */
static rd_kafka_topic_conf_t *traces_topic_conf(rd_kafka_t *rk)
{
	rd_kafka_topic_conf_t *tc = rd_kafka_default_topic_conf_dup(rk);
	char e[256];

	if (tc && rd_kafka_topic_conf_set(tc, "compression.codec", "none", e, sizeof(e)) !=
		      RD_KAFKA_CONF_OK) {
		log_warning("Kafka: trace batches compressed twice: %s", e);
		rd_kafka_topic_conf_destroy(tc);
		return NULL;
	}
	return tc;
}

/* The producer and its topics from k->conf; librdkafka's queue signals
 * k->pipe, which the event loop watches. */
static int producer_new(struct sink_kafka *k, char *err, size_t errlen)
{
	rd_kafka_conf_t *conf = rd_kafka_conf_dup(k->conf);
	rd_kafka_queue_t *q;
	char e[512];

	if (!conf)
		return -ENOMEM;
	k->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, e, sizeof(e));
	if (!k->rk) {
		char why[512];

		secrets_scrub(why, sizeof(why), e, k->props);
		snprintf(err, errlen, "Kafka producer: %s", why);
		rd_kafka_conf_destroy(conf);
		return -EINVAL;
	}
	for (int i = 0; i < DC_REC_MAX; i++) {
		if (!k->topic_name[i][0])
			continue; /* traces without a topic */
		k->topic[i] = rd_kafka_topic_new(
		    k->rk, k->topic_name[i], i == DC_REC_TRACE ? traces_topic_conf(k->rk) : NULL);
		if (!k->topic[i]) {
			snprintf(err, errlen, "Kafka topic '%s': %s", k->topic_name[i],
				 rd_kafka_err2str(rd_kafka_last_error()));
			producer_free(k);
			return -EINVAL;
		}
	}
	q = rd_kafka_queue_get_main(k->rk);
	rd_kafka_queue_io_event_enable(q, k->pipe[1], "1", 1);
	rd_kafka_queue_destroy(q);
	return 0;
}

/* Undelivered messages are purged: the spool holds them. */
static void producer_free(struct sink_kafka *k)
{
	if (!k->rk)
		return;
	for (int i = 0; i < DC_REC_MAX; i++)
		if (k->topic[i]) {
			rd_kafka_topic_destroy(k->topic[i]);
			k->topic[i] = NULL;
		}
	rd_kafka_purge(k->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
	rd_kafka_poll(k->rk, 0);
	rd_kafka_destroy(k->rk);
	k->rk = NULL;
}

/* The client's configuration: the brokers, the agent's defaults, then the
 * operator's properties verbatim, which may override them. */
static int kafka_conf_new(const char *brokers, const char *host, const char *properties,
			  size_t secrets_at, const char *secrets_file, rd_kafka_conf_t **ret,
			  char *err, size_t errlen)
{
	static const char *const defaults[][2] = {
	    /* durability is the spool's: never expire a queued message */
	    {"message.timeout.ms", "0"},
	    {"enable.idempotence", "true"},
	    {"acks", "all"},
	    {"compression.codec", "zstd"},
	    {"linger.ms", "50"},
	    {"batch.size", "1000000"},
	    /* librdkafka's default queue is about 1 GiB of RAM; the spool is the buffer */
	    {"queue.buffering.max.kbytes", "16384"},
	    {"queue.buffering.max.messages", "100000"},
	    {"allow.auto.create.topics", "false"},
	    {"reconnect.backoff.max.ms", "5000"},
	    /* wire and payload byte totals for the agent record */
	    {"statistics.interval.ms", "1000"},
	};
	rd_kafka_conf_t *conf;
	char client_id[300];
	const char *line;
	size_t n;
	int r;

	conf = rd_kafka_conf_new();
	snprintf(client_id, sizeof(client_id), "datacrumbs-%s", host);
	r = conf_set(conf, "bootstrap.servers", brokers, NULL, err, errlen);
	if (!r)
		r = conf_set(conf, "client.id", client_id, NULL, err, errlen);
	for (size_t i = 0; !r && i < ELEMENTSOF(defaults); i++)
		r = conf_set(conf, defaults[i][0], defaults[i][1], NULL, err, errlen);
	for (line = properties; !r && line && *line; line += n + (line[n] == '\n')) {
		char name[256], value[1024];
		const char *eq;

		n = strcspn(line, "\n");
		eq = memchr(line, '=', n);
		if (!eq || eq == line || (size_t)(eq - line) >= sizeof(name) ||
		    n - (size_t)(eq - line) > sizeof(value)) {
			/* up to a separator someone might have used instead of '=',
			 * so that a "sasl.password: ..." line shows its name only */
			size_t shown = eq ? (size_t)(eq - line) : strcspn(line, ": \t\n");

			snprintf(err, errlen, "kafka.properties: '%.*s%s' is not name=value",
				 (int)(shown < n ? shown : n), line, shown < n ? "..." : "");
			r = -EINVAL;
			break;
		}
		snprintf(name, sizeof(name), "%.*s", (int)(eq - line), line);
		snprintf(value, sizeof(value), "%.*s", (int)(n - (size_t)(eq - line) - 1), eq + 1);
		r = conf_set(conf, name, value,
			     secrets_file && secrets_file[0] &&
				     (size_t)(line - properties) >= secrets_at
				 ? secrets_file
				 : NULL,
			     err, errlen);
		explicit_bzero(value, sizeof(value));
	}
	if (r) {
		rd_kafka_conf_destroy(conf);
		return r;
	}
	*ret = conf;
	return 0;
}

int sink_kafka_check(const char *brokers, const char *properties, size_t secrets_at,
		     const char *secrets_file, char *err, size_t errlen)
{
	rd_kafka_conf_t *conf;
	int r;

	r = kafka_conf_new(brokers, "check", properties, secrets_at, secrets_file, &conf, err,
			   errlen);
	if (r >= 0)
		rd_kafka_conf_destroy(conf);
	return r;
}

int sink_kafka_new(const struct sink_kafka_params *p, sd_event *event, struct dc_sink **ret,
		   char *err, size_t errlen)
{
	struct sink_kafka *k;
	rd_kafka_conf_t *conf;
	int r;

	k = calloc(1, sizeof(*k));
	if (!k || !(k->props = strdup(p->properties ? p->properties : ""))) {
		free(k);
		return -ENOMEM;
	}
	k->base.ops = &kafka_ops;
	k->pipe[0] = k->pipe[1] = -1;
	k->key_cgroup = p->key_cgroup;
	k->spool_max = p->spool_max_bytes;
	k->flush_timeout_ms = p->flush_timeout_ms;
	k->backoff_usec = BACKOFF_MIN_USEC;
	k->brokers_down = p->brokers_down;
	snprintf(k->host, sizeof(k->host), "%s", p->host);
	snprintf(k->run, sizeof(k->run), "%s", p->run);
	snprintf(k->topic_name[DC_REC_FEATURES], sizeof(k->topic_name[0]), "%s", p->topic_features);
	snprintf(k->topic_name[DC_REC_AGENT], sizeof(k->topic_name[0]), "%s", p->topic_agent);
	/* device records are node-level feature vectors: same topic, told apart by "type" */
	snprintf(k->topic_name[DC_REC_DEVICE], sizeof(k->topic_name[0]), "%s", p->topic_features);
	snprintf(k->topic_name[DC_REC_FILE], sizeof(k->topic_name[0]), "%s", p->topic_features);
	/* names ride with the windows that use them, in order, in the same
	 * partition: a consumer meets a name before the records that need it */
	snprintf(k->topic_name[DC_REC_FILENAME], sizeof(k->topic_name[0]), "%s", p->topic_features);
	snprintf(k->topic_name[DC_REC_TRACE], sizeof(k->topic_name[0]), "%s",
		 p->topic_traces ? p->topic_traces : "");
	snprintf(k->topic_name[DC_REC_STACKS], sizeof(k->topic_name[0]), "%s",
		 p->topic_stacks ? p->topic_stacks : "");

	r = kafka_conf_new(p->brokers, p->host, p->properties, p->secrets_at, p->secrets_file,
			   &conf, err, errlen);
	if (r) {
		kafka_free(&k->base);
		return r;
	}
	rd_kafka_conf_set_opaque(conf, k);
	rd_kafka_conf_set_dr_msg_cb(conf, dr_msg_cb);
	rd_kafka_conf_set_error_cb(conf, error_cb);
	rd_kafka_conf_set_log_cb(conf, log_cb);
	rd_kafka_conf_set_stats_cb(conf, stats_cb);

	k->conf = conf;
	if (pipe2(k->pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		r = -errno;
		snprintf(err, errlen, "pipe: %s", strerror(-r));
		goto fail;
	}
	/* the spool's lock first: a second agent on it is refused before it
	 * connects to any broker, or waits kafka.start_timeout for them */
	r = spool_open(p->spool_dir, p->spool_fsync, &k->spool);
	if (r == -EBUSY) {
		snprintf(err, errlen,
			 "spool directory %s (spool.dir) is in use by another datacrumbs agent "
			 "(it holds the directory's lock): give each agent a spool.dir of its own",
			 p->spool_dir);
		goto fail;
	}
	if (r < 0) {
		snprintf(err, errlen, "spool directory %s (spool.dir): %s", p->spool_dir,
			 strerror(-r));
		goto fail;
	}
	r = producer_new(k, err, errlen);
	if (r < 0)
		goto fail;
	r = p->topics_checked ? 0 : check_topics(k, (int)p->start_timeout_ms, err, errlen);
	if (r < 0)
		goto fail;

	/* a previous run's undelivered windows go first, in order */
	{
		struct kseg **tail = &k->head;
		size_t n;
		const struct spool_entry *ex = spool_existing(k->spool, &n);

		for (size_t i = 0; i < n; i++) {
			struct kseg *g = calloc(1, sizeof(*g));

			if (!g) {
				r = -ENOMEM;
				goto fail;
			}
			g->meta.seq = ex[i].seq;
			g->file_bytes = ex[i].bytes;
			/* verify now: a damaged segment is reported at start, by name */
			r = seg_load(k, g);
			if (r < 0) {
				if (r != -EBADMSG) {
					char path[512];

					spool_path(k->spool, ex[i].seq, path, sizeof(path));
					log_error_errno(
					    r,
					    "Cannot read spool segment %s: %m; left where "
					    "it is, not delivered by this run",
					    path);
				}
				kseg_free(g);
				continue;
			}
			/* keep only what is needed to shed and to order; reload to send */
			buf_free(&g->raw);
			g->loaded = false;
			k->spool_bytes += g->file_bytes;
			*tail = g;
			tail = &g->next;
		}
		if (spool_unwritable(k->spool))
			log_warning(
			    "Spool %s (spool.dir) cannot be written: %s; windows wait in "
			    "memory and go to Kafka, but a stop during a broker outage loses "
			    "those not delivered",
			    p->spool_dir, strerror(spool_unwritable(k->spool)));
		if (spool_skipped(k->spool))
			log_warning("Spool %s: %zu entries named like segments are none (a "
				    "directory, a sign, a number past %" PRIu64 "): left alone",
				    p->spool_dir, spool_skipped(k->spool), (uint64_t)SPOOL_SEQ_MAX);
		if (n && seg_count(k) < n)
			log_info("Spool %s: %zu segments (%" PRIu64 " bytes) from earlier runs to "
				 "deliver first; %zu more found were set aside or left (above)",
				 p->spool_dir, seg_count(k), k->spool_bytes, n - seg_count(k));
		else if (n)
			log_info("Spool %s: %zu segments (%" PRIu64 " bytes) from earlier runs to "
				 "deliver first",
				 p->spool_dir, seg_count(k), k->spool_bytes);
	}

	k->event = event;
	r = sd_event_add_io(event, &k->io, k->pipe[0], EPOLLIN, on_queue, k);
	if (r >= 0)
		r = sd_event_add_time(event, &k->timer, CLOCK_MONOTONIC,
				      now_usec() + PUMP_TIMER_USEC, 10 * 1000, on_timer, k);
	if (r < 0) {
		snprintf(err, errlen, "event loop: %s", strerror(-r));
		goto fail;
	}
	sd_event_source_set_enabled(k->timer, SD_EVENT_ON);
	pump(k);
	*ret = &k->base;
	return 0;
fail:
	k->flush_timeout_ms = 0;
	kafka_free(&k->base);
	return r;
}
