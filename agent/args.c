// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"

enum {
	OPT_HELP_CONFIG = 0x100,
	OPT_CHECK_CONFIG,
};

static const struct option options[] = {{"config", required_argument, NULL, 'c'},
					{"interval", required_argument, NULL, 'i'},
					{"duration", required_argument, NULL, 'd'},
					{"output", required_argument, NULL, 'o'},
					{"version", no_argument, NULL, 'V'},
					{"help", no_argument, NULL, 'h'},
					{"help-config", no_argument, NULL, OPT_HELP_CONFIG},
					{"check-config", optional_argument, NULL, OPT_CHECK_CONFIG},
					{}};

void args_usage(const char *prog, char *out, size_t len)
{
	snprintf(
	    out, len,
	    "Usage: %s [OPTIONS]\n"
	    "Watch every file I/O call of every process on this node with eBPF and publish\n"
	    "one feature vector per process per time window.\n\n"
	    "  -c, --config FILE       configuration (default /etc/datacrumbs.conf if present)\n"
	    "  -i, --interval SECONDS  window length, fractions allowed (default 1)\n"
	    "  -d, --duration SECONDS  run this long, then flush and exit (default: forever)\n"
	    "  -o, --output FILE       JSON-lines output; - for standard output\n"
	    "      --check-config[=FILE]  validate the configuration and exit\n"
	    "      --help-config       list every setting with its default\n"
	    "  -V, --version           print the version\n"
	    "  -h, --help              this text\n",
	    prog);
}

static int fail(char *err, size_t errlen, const char *msg, const char *arg)
{
	snprintf(err, errlen, msg, arg);
	return -EINVAL;
}

/* -c A with --check-config=B: which one was meant is not ours to guess */
static int two_files(char *err, size_t errlen, const char *a, const char *b)
{
	snprintf(err, errlen, "two configuration files given: '%s' and '%s'", a, b);
	return -EINVAL;
}

int args_parse(int argc, char **argv, struct dc_args *a, char *err, size_t errlen)
{
	int c;

	*a = (struct dc_args){.action = DC_ACTION_RUN};
	optind = 0; /* reset getopt: parsing may run more than once (tests) */
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":c:i:d:o:Vh", options, NULL)) != -1) {
		char *end;

		switch (c) {
		case 'c':
			if (!*optarg)
				return fail(err, errlen, "--config: empty file name%s", "");
			/* "-c --check-config" took the option for the file */
			if (!strncmp(optarg, "--", 2))
				return fail(err, errlen,
					    "--config: '%s' is an option, not a file name (a file "
					    "so called: ./ before it)",
					    optarg);
			if (a->config && strcmp(a->config, optarg))
				return two_files(err, errlen, a->config, optarg);
			a->config = optarg;
			break;
		case 'i':
			a->interval = optarg;
			break;
		case 'd':
			errno = 0;
			a->duration = strtod(optarg, &end);
			/* bounded: the timer's microseconds must not wrap (2e13 s
			 * did, to an immediate exit) */
			if (errno || end == optarg || *end || strpbrk(optarg, "xX") ||
			    !isfinite(a->duration) || a->duration <= 0 ||
			    a->duration > DC_DURATION_MAX_SEC)
				return fail(
				    err, errlen,
				    "--duration: '%s' is not a number of seconds in (0, 1e9]",
				    optarg);
			break;
		case 'o':
			if (!*optarg)
				return fail(err, errlen, "--output: empty file name%s", "");
			if (!strncmp(optarg, "--", 2))
				return fail(err, errlen,
					    "--output: '%s' is an option, not a file name (a file "
					    "so called: ./ before it)",
					    optarg);
			a->output = optarg;
			break;
		case 'V':
			a->action = DC_ACTION_VERSION;
			break;
		case 'h':
			a->action = DC_ACTION_HELP;
			break;
		case OPT_HELP_CONFIG:
			a->action = DC_ACTION_HELP_CONFIG;
			break;
		case OPT_CHECK_CONFIG:
			a->action = DC_ACTION_CHECK_CONFIG;
			if (optarg && !*optarg)
				return fail(err, errlen, "--check-config=: empty file name%s", "");
			if (optarg && a->config && strcmp(a->config, optarg))
				return two_files(err, errlen, a->config, optarg);
			if (optarg)
				a->config = optarg;
			break;
		case ':':
			return fail(err, errlen, "option '%s' needs a value", argv[optind - 1]);
		default:
			return fail(err, errlen, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return fail(err, errlen, "unexpected argument '%s'", argv[optind]);
	return 0;
}
