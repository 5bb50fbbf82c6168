// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target of the configuration loader: arbitrary bytes as a
 * libconfig file, then as the value of one key of each type (the
 * --interval/--output overrides go through config_set()), then as a key,
 * then as a kafka.secrets_file.
 *
 * Besides the sanitizers, it checks what the loader promises: a failed load
 * leaves the caller's config untouched and explains itself as "file:line:
 * ..."; a successful one leaves every number inside its row's range and
 * every string terminated inside its buffer.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "secrets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
const char *__lsan_default_suppressions(void);

/*
 * libconfig 1.5's grammar has no %destructor: a string or name token the
 * parser discards at a syntax error leaks the scanner's buffer. The agent
 * parses once and exits on that error, so the leak costs nothing there;
 * here it would stop every run at the first syntax error inside a string.
 */
const char *__lsan_default_suppressions(void)
{
	return "leak:strbuf_append\nleak:libconfig_yylex\n";
}

/* one key of each kind of row, and one that is no key */
static const char *const set_paths[] = {
    "interval",		     /* float */
    "maps.max_keys",	     /* int */
    "host",		     /* free string */
    "log_level",	     /* choice */
    "probes.vfs.categories", /* comma subset */
    "filter.exclude_self",   /* bool */
    "kafka.properties",	     /* string list */
    "filter.include_uids",   /* integer list */
    "maps",		     /* a group, not a key */
};

static void check_config(const struct dc_config *c)
{
	size_t n;
	const struct dc_cfg_item *items = config_table(&n);

	for (size_t i = 0; i < n; i++) {
		const struct dc_cfg_item *it = &items[i];
		const char *p = (const char *)c + it->offset;
		double v;

		switch (it->type) {
		case CFG_FLOAT:
			v = *(const double *)p;
			break;
		case CFG_INT:
			v = (double)*(const int64_t *)p;
			break;
		case CFG_STRING:
		case CFG_STRLIST:
			if (!memchr(p, 0, it->size))
				abort();
			continue;
		case CFG_INTLIST:
			if (((const struct dc_intlist *)p)->n > DC_INTLIST_MAX)
				abort();
			continue;
		default:
			continue;
		}
		if (!isfinite(v) || v < it->min || v > it->max)
			abort();
	}
	if (c->n_libs < 0 || c->n_libs > DC_MAX_LIBS)
		abort();
	for (int i = 0; i < c->n_libs; i++)
		if (!c->libs[i].path[0] || !c->libs[i].category[0] || !c->libs[i].functions[0])
			abort();
}

/* A refused override must leave its row as it was (it can touch no other). */
static void set_checked(struct dc_config *c, const char *path, const char *value)
{
	static char saved[8192];
	const struct dc_cfg_item *items, *it = NULL;
	char err[1024];
	size_t n;

	items = config_table(&n);
	for (size_t i = 0; i < n && !it; i++)
		if (!strcmp(items[i].path, path))
			it = &items[i];
	if (it && it->size <= sizeof(saved))
		memcpy(saved, (char *)c + it->offset, it->size);
	if (config_set(c, path, value, err, sizeof(err)) < 0 && it && it->size <= sizeof(saved) &&
	    memcmp(saved, (char *)c + it->offset, it->size))
		abort();
	check_config(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* static: struct dc_config is too large for a fuzzer's stack, twice */
	static struct dc_config defaults, c;
	static int init;
	char err[1024], *text;
	int r;

	if (!init) {
		config_defaults(&defaults);
		init = 1;
	}
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;

	c = defaults;
	err[0] = 0;
	r = config_load_string(&c, text, err, sizeof(err));
	if (r < 0) {
		if (memcmp(&c, &defaults, sizeof(c)))
			abort(); /* a failed load changed the config */
		/* errors name the file and the line; an @include names its own file */
		if (!memchr(err, 0, sizeof(err)) ||
		    (strncmp(err, "<string>:", 9) && !strstr(text, "@include")))
			abort();
	} else {
		check_config(&c);
	}

	for (size_t i = 0; i < sizeof(set_paths) / sizeof(set_paths[0]); i++)
		set_checked(&c, set_paths[i], text);
	set_checked(&c, text, "1");

	/* a kafka.secrets_file's lines join kafka.properties, then hide in logs */
	{
		static char props[8192], out[512];

		snprintf(props, sizeof(props), "sasl.password=%.*s\n", (int)(size < 64 ? size : 64),
			 text);
		if (secrets_parse((const char *)data, size, "f", props, sizeof(props), err,
				  sizeof(err)) < 0 &&
		    !memchr(err, 0, sizeof(err)))
			abort();
		if (!memchr(props, 0, sizeof(props)))
			abort();
		secrets_scrub(out, sizeof(out), text, props);
		if (!memchr(out, 0, sizeof(out)))
			abort();
	}

	free(text);
	return 0;
}
