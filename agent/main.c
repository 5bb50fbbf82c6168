// SPDX-License-Identifier: Apache-2.0
#include <bpf/libbpf.h>
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"
#include "config.h"
#include "filter.h"
#include "fs-util.h"
#include "log.h"
#include "manager.h"
#include "probe-uprobe.h"
#include "secrets.h"
#include "sink.h"
#include "traces.h"

/* Exit codes: 0 done, 1 could not run (BPF refused, output unusable, ...),
 * 2 bad command line or configuration. */
#define EXIT_RUNTIME 1
#define EXIT_USAGE   2

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char *buf = NULL;
	size_t n;

	/* libbpf's warnings include expected refusals while probing mechanisms;
	 * the agent logs the outcome itself, so libbpf's text is debug detail
	 * (verifier logs included: they can be long, hence no fixed buffer) */
	if (log_get_max_level() < LOG_DEBUG || vasprintf(&buf, fmt, ap) < 0)
		return 0;
	n = strlen(buf);
	if (n && buf[n - 1] == '\n')
		buf[n - 1] = 0;
	/* most of libbpf's lines name it already */
	log_debug("%s%s", strncmp(buf, "libbpf: ", 8) ? "libbpf: " : "", buf);
	free(buf);
	return 0;
}

/*
 * Credentials in kafka.properties are warned about, not refused: the key
 * predates kafka.secrets_file, and an agent that stops at an upgrade stops
 * watching the fleet. Only a file that others than root can read earns the
 * warning: a root-owned 0600 main file is as safe as a secrets file. It
 * speaks at the level the file itself asks for.
 */
static void warn_secrets(const char *path, const struct dc_config *cfg)
{
	char name[256];
	struct stat st;

	if (log_parse_level(cfg->log_level) < LOG_WARNING ||
	    !secrets_find(cfg->kafka_properties, name, sizeof(name)) || stat(path, &st) < 0 ||
	    (!(st.st_mode & 044) && st.st_uid == 0))
		return;
	log_warning("%s can be read by others than root (mode %04o, owner uid %u), yet its "
		    "kafka.properties sets %s: move credentials to a root-only file named by "
		    "kafka.secrets_file",
		    path, (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid, name);
}

static void block_signals(void)
{
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
}

static int paths_check(const char *key, const char *path)
{
	char at[PATH_MAX];

	if (path_blocked(path, at, sizeof(at)) < 0)
		return log_error("Invalid configuration: %s %s cannot be made: %s is not a "
				 "directory",
				 key, path, at),
		       -EINVAL;
	return 0;
}

static int load_config(const struct dc_args *a, struct dc_config *cfg)
{
	const char *path = a->config;
	char err[1024];
	struct stat st;
	double dflt_interval;
	int r;

	config_defaults(cfg);
	dflt_interval = cfg->interval;
	if (!path && access(DC_CONFIG_DEFAULT_PATH, F_OK) == 0)
		path = DC_CONFIG_DEFAULT_PATH;
	if (path) {
		r = config_load(cfg, path, err, sizeof(err));
		if (r < 0)
			return log_error("Invalid configuration: %s", err), r;
		warn_secrets(path, cfg);
	}
	if (a->interval) {
		double file_interval = cfg->interval;

		if ((r = config_set(cfg, "interval", a->interval, err, sizeof(err))) < 0)
			return log_error("%s (given by --interval)", err), r;
		/* a reload would otherwise say "unchanged" of a file whose
		 * interval changed */
		if (file_interval != dflt_interval && file_interval != cfg->interval)
			log_notice("interval = %g in %s is overridden by --interval %s",
				   file_interval, path, a->interval);
	}
	if (a->output && (r = config_set(cfg, "output.path", a->output, err, sizeof(err))) < 0)
		return log_error("%s (given by --output)", err), r;
	/* last: its lines apply after kafka.properties, and a reload reads it again */
	cfg->kafka_secrets_at = strnlen(cfg->kafka_properties, sizeof(cfg->kafka_properties));
	if (cfg->kafka_secrets[0] &&
	    (r = secrets_load(cfg->kafka_secrets, cfg->kafka_properties,
			      sizeof(cfg->kafka_properties), err, sizeof(err))) < 0)
		return log_error("Invalid configuration: %s", err), r;
	/* what the sinks would refuse at start, refused here: --check-config
	 * (and a unit's ExecReload= check) then says what starting would */
	if (!cfg->output[0] && !cfg->kafka_brokers[0])
		return log_error("Invalid configuration: output.path is empty and kafka.brokers "
				 "is not set: the records would go nowhere"),
		       -EINVAL;
	if (cfg->output[0] && strcmp(cfg->output, "-") && stat(cfg->output, &st) == 0 &&
	    S_ISDIR(st.st_mode))
		return log_error("Invalid configuration: output.path %s is a directory: it names "
				 "the records file",
				 cfg->output),
		       -EINVAL;
	if (cfg->output[0] && strcmp(cfg->output, "-") &&
	    (r = paths_check("output.path", cfg->output)) < 0)
		return r;
	if (cfg->traces_enable && cfg->traces_dir[0]) {
		if ((r = paths_check("traces.output.dir", cfg->traces_dir)) < 0)
			return r;
		if (stat(cfg->traces_dir, &st) == 0 && !S_ISDIR(st.st_mode))
			return log_error("Invalid configuration: traces.output.dir %s is not a "
					 "directory",
					 cfg->traces_dir),
			       -EINVAL;
	}
	if (cfg->kafka_brokers[0] && (r = paths_check("spool.dir", cfg->spool_dir)) < 0)
		return r;
	if (cfg->kafka_brokers[0] && stat(cfg->spool_dir, &st) == 0 && !S_ISDIR(st.st_mode))
		return log_error("Invalid configuration: spool.dir %s is not a directory",
				 cfg->spool_dir),
		       -EINVAL;
	if (cfg->kafka_brokers[0] &&
	    (r = sink_kafka_check(cfg->kafka_brokers, cfg->kafka_properties, cfg->kafka_secrets_at,
				  cfg->kafka_secrets, err, sizeof(err))) < 0)
		return log_error("Invalid configuration: %s", err), r;
	return 0;
}

/*
 * What the start resolves on this host, resolved for --check-config as
 * well: a check that passed what the start refuses made
 * "systemctl reload" succeed on a file the agent then refused, and the
 * next boot fail for good. -ENOENT: a cgroup not made yet, warned of (the
 * start exits 1 on it, to be started again); else the file's fault.
 */
/* One check's result: -ENOENT (not made yet) warned of and noted in
 * *later, any other error the file's (-EINVAL), said. */
static int host_result(int r, const char *err, bool *later)
{
	if (r == -ENOENT) {
		log_warning("Not on this node yet: %s (the start would exit 1, to be started "
			    "again)",
			    err);
		*later = true;
		return 0;
	}
	if (r < 0)
		return log_error("Invalid configuration: %s", err), -EINVAL;
	return 0;
}

static int check_on_host(const struct dc_config *cfg)
{
	struct dc_filter *f = NULL;
	bool later = false;
	char err[1024];
	int r;

	/* -ENOENT only once every other line was found good */
	r = filter_new(cfg, NULL, &f, err, sizeof(err));
	f = filter_free(f);
	if ((r = host_result(r, err, &later)) < 0)
		return r;
	r = cfg->traces_enable ? traces_check_policy(cfg, err, sizeof(err)) : 0;
	if ((r = host_result(r, err, &later)) < 0)
		return r;
	if (cfg->n_libs && (r = probe_uprobe_check(cfg, err, sizeof(err))) < 0)
		return log_error("Invalid configuration: %s", err), -EINVAL;
	return later ? -ENOENT : 0;
}

static int reload_config(void *ctx, struct dc_config *out)
{
	const struct dc_args *a = ctx;
	struct stat st;

	/* a pipe (-c /dev/stdin) was read to its end at the start: read
	 * again it is empty, which is a valid file of defaults */
	if (a->config && stat(a->config, &st) == 0 && !S_ISREG(st.st_mode)) {
		log_error("Invalid configuration: %s is not a regular file but %s, read once "
			  "at the start: restart the agent to change its configuration",
			  a->config, S_ISFIFO(st.st_mode) ? "a pipe" : "a device or socket");
		return -EINVAL;
	}
	/* what check_on_host() tells, the manager's reload checks itself,
	 * with the reason in STATUS= */
	return load_config(a, out);
}

int main(int argc, char **argv)
{
	struct manager *m = NULL;
	struct dc_config cfg;
	struct dc_args a;
	char err[4096];
	bool config_error;
	int r, level;

	/* One malloc arena for every thread. The families load on threads
	 * (libbpf's objects live as long as the agent) and each window's drain
	 * runs on threads too: with an arena per thread, a drain's buffers were
	 * freed into arenas pinned by those objects, where nothing returned
	 * them, and the suite's RSS went past its 32 MiB goal in some runs
	 * (docs/benchmarks.md). The threads mostly wait in the kernel, so they
	 * hardly contend for one arena. */
	mallopt(M_ARENA_MAX, 1);
	/* a reader of the output (a pipe, a FIFO) going away is a write
	 * error the sink reports and retries, not the end of the agent
	 * (systemd ignores SIGPIPE for its services; a shell does not) */
	signal(SIGPIPE, SIG_IGN);
	log_init();
	if (args_parse(argc, argv, &a, err, sizeof(err)) < 0) {
		fprintf(stderr, "datacrumbs: %s\nTry 'datacrumbs --help'.\n", err);
		return EXIT_USAGE;
	}
	switch (a.action) {
	case DC_ACTION_HELP:
		args_usage(argv[0], err, sizeof(err));
		fputs(err, stdout);
		return 0;
	case DC_ACTION_VERSION:
		printf("datacrumbs %s\n", DC_VERSION);
		return 0;
	case DC_ACTION_HELP_CONFIG:
		config_print_help(stdout);
		return 0;
	default:
		break;
	}

	/* the file read at start is the one a reload reads: moved away, the
	 * reload says so instead of falling back to the defaults */
	if (!a.config && access(DC_CONFIG_DEFAULT_PATH, F_OK) == 0)
		a.config = DC_CONFIG_DEFAULT_PATH;
	if (load_config(&a, &cfg) < 0)
		return EXIT_USAGE;
	if (a.action == DC_ACTION_CHECK_CONFIG) {
		r = check_on_host(&cfg);
		if (r == -ENOENT) {
			/* the node's state, not the file's: the start would exit
			 * 1 and be started again (Ansible validates a file on a
			 * node that may not have slurmd's scope yet) */
			printf(
			    "configuration %s is valid, but this node cannot run it yet (above)\n",
			    a.config ? a.config : "(defaults)");
			return 0;
		}
		if (r < 0)
			return EXIT_USAGE;
		printf("configuration %s is valid\n", a.config ? a.config : "(defaults)");
		return 0;
	}
	/* blocked before any thread of the start exists (libbpf's loads, the
	 * drains, librdkafka's), for the event loop's signalfd to take: a
	 * SIGHUP or SIGTERM during the start (seconds: the verifier, a
	 * thousand library functions, kafka.start_timeout) then waits for the
	 * loop instead of killing the agent with window 0's counts in its
	 * maps. After the check: a check reading a FIFO stays interruptible. */
	block_signals();
	level = log_parse_level(cfg.log_level);
	log_set_max_level(level < 0 ? LOG_INFO : level);
	libbpf_set_print(libbpf_print);

	r = manager_new(&cfg, a.duration, &m, &config_error);
	if (r < 0)
		return config_error ? EXIT_USAGE : EXIT_RUNTIME;
	manager_set_reload(m, reload_config, &a);
	r = manager_run(m);
	manager_free(m);
	return r < 0 ? EXIT_RUNTIME : r; /* DC_STOP_LOST: records lost at the stop */
}
