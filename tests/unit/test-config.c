// SPDX-License-Identifier: Apache-2.0
#include "config.h"
#include "datacrumbs/vfs.h"
#include "tap.h"

int main(void)
{
	struct dc_config c;
	char err[512];
	int r;

	config_defaults(&c);
	CHECK(c.interval == 1.0, "default interval");
	CHECK_U64(c.max_keys, 8192, "default max_keys");
	CHECK_STR(c.map_layout, "auto", "default layout");
	CHECK(c.exclude_self, "exclude_self on by default");

	r = config_load_string(&c,
			       "interval = 0.5;\nmaps = { max_keys = 64; layout = \"shared\"; };\n"
			       "output = { path = \"-\"; };\nfilter = { exclude_self = false; };\n",
			       err, sizeof(err));
	CHECK(r == 0, "valid file loads (%s)", r ? err : "");
	CHECK(c.interval == 0.5 && c.max_keys == 64 && !strcmp(c.map_layout, "shared") &&
		  !strcmp(c.output, "-") && !c.exclude_self,
	      "values applied");

	r = config_load_string(&c, "interval = 2;\n", err, sizeof(err));
	CHECK(r == 0 && c.interval == 2.0, "an integer is accepted for a number");
	CHECK_U64(c.max_keys, 8192, "a reload starts from defaults, not the previous file");

	r = config_load_string(&c, "interval = 1.0;\n\nmaps = { max_kees = 5; };\n", err,
			       sizeof(err));
	CHECK(r < 0 && strstr(err, ":3:") && strstr(err, "maps.max_kees"),
	      "unknown key names its path and line: %s", err);
	CHECK(c.interval == 2.0, "a failed load leaves the config untouched");
	r = config_load_string(&c, "colour = \"red\";\n", err, sizeof(err));
	CHECK(r < 0 && strstr(err, "colour"), "unknown top-level key: %s", err);
	r = config_load_string(&c, "bogus = { a = 1; };\n", err, sizeof(err));
	CHECK(r < 0 && strstr(err, "bogus"), "unknown group: %s", err);
	r = config_load_string(&c, "interval = \"fast\";\n", err, sizeof(err));
	CHECK(r < 0 && strstr(err, "interval") && strstr(err, "number"), "wrong type: %s", err);
	r = config_load_string(&c, "maps = { max_keys = 1.5; };\n", err, sizeof(err));
	CHECK(r < 0 && strstr(err, "integer"), "float for an integer: %s", err);
	r = config_load_string(&c, "interval = 0.001;\n", err, sizeof(err));
	CHECK(r < 0 && strstr(err, "out of range"), "below range: %s", err);
	r = config_load_string(&c, "interval = 301;\n", err, sizeof(err));
	CHECK(r < 0 && strstr(err, "out of range"), "above range: %s", err);
	r = config_load_string(&c, "maps = { layout = \"wide\"; };\n", err, sizeof(err));
	CHECK(r < 0 && strstr(err, "auto|percpu|shared"), "bad choice lists the choices: %s", err);
	r = config_load_string(&c, "filter = { exclude_self = 1; };\n", err, sizeof(err));
	CHECK(r < 0 && strstr(err, "true or false"), "int for a bool: %s", err);
	r = config_load_string(&c, "interval = 1.0\nmaps = {", err, sizeof(err));
	CHECK(r < 0 && strstr(err, ":2:"), "syntax error carries libconfig's line: %s", err);

	r = config_load_string(&c, "kafka = { secrets_file = \"/etc/datacrumbs/k.secrets\"; };\n",
			       err, sizeof(err));
	CHECK(r == 0 && !strcmp(c.kafka_secrets, "/etc/datacrumbs/k.secrets"),
	      "kafka.secrets_file is a path (%s)", r ? err : "");
	r = config_load_string(&c, "kafka = { secrets_file = [\"a=b\"]; };\n", err, sizeof(err));
	CHECK(r < 0 && strstr(err, "kafka.secrets_file") && strstr(err, "string"),
	      "kafka.secrets_file holds a file name, not the lines: %s", err);

	CHECK(config_set(&c, "interval", "0.25", err, sizeof(err)) == 0 && c.interval == 0.25,
	      "override");
	CHECK(config_set(&c, "interval", "0", err, sizeof(err)) < 0,
	      "override checked by the table");
	CHECK(config_set(&c, "interval", "1x", err, sizeof(err)) < 0, "override must be a number");
	/* every category of the function catalogue is accepted, and only those */
	{
		struct dc_config vc;
		char verr[256];

		config_defaults(&vc);
#define CAT_OK(name, cat, bytes)                                                       \
	CHECK(config_set(&vc, "probes.vfs.categories", #cat, verr, sizeof(verr)) == 0, \
	      "category %s of %s accepted", #cat, #name);
		DC_VFS_FUNCS(CAT_OK)
#undef CAT_OK
		CHECK(config_set(&vc, "probes.vfs.categories", "ext4, bio", verr, sizeof(verr)) ==
			  0,
		      "a comma-separated subset");
		CHECK(config_set(&vc, "probes.vfs.categories", "ext4,zfs", verr, sizeof(verr)) <
			      0 &&
			  strstr(verr, "\"zfs\""),
		      "an unknown category is named: %s", verr);
	}
	return tap_done();
}
