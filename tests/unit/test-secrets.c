// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "secrets.h"
#include "tap.h"

static int write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) && chmod(path, mode) == 0 ? 0 : -1;
}

int main(void)
{
	char props[256], err[512], out[256], name[64];
	struct stat st = {.st_mode = S_IFREG | 0600, .st_uid = 0};
	int r;

	CHECK(secret_property("sasl.password", 13), "sasl.password is secret");
	CHECK(secret_property("ssl.key.password", 16), "ssl.key.password is secret");
	CHECK(secret_property("sasl.oauthbearer.client.secret", 30),
	      "sasl.oauthbearer.client.secret is secret");
	CHECK(secret_property("ssl.key.pem", 11), "ssl.key.pem (the key itself) is secret");
	CHECK(!secret_property("sasl.username", 13), "sasl.username is not");
	CHECK(!secret_property("ssl.key.location", 16), "ssl.key.location (a path) is not");
	CHECK(!secret_property("sasl.password", 4), "only len bytes of the name count");

	CHECK(secrets_check_stat(&st, "f", err, sizeof(err)) == 0, "0600 root: accepted");
	st.st_mode = S_IFREG | 0640;
	r = secrets_check_stat(&st, "/etc/k.secrets", err, sizeof(err));
	CHECK(r == -EPERM && strstr(err, "/etc/k.secrets") && strstr(err, "0640"),
	      "0640 refused, file and mode named: %s", err);
	st.st_mode = S_IFREG | 0602;
	CHECK(secrets_check_stat(&st, "f", err, sizeof(err)) == -EPERM,
	      "other-writable refused too (mode & 077)");
	st.st_mode = S_IFREG | 0400;
	st.st_uid = 1000;
	r = secrets_check_stat(&st, "f", err, sizeof(err));
	CHECK(r == -EPERM && strstr(err, "uid 1000"), "a user's file refused: %s", err);
	st.st_mode = S_IFDIR | 0700;
	st.st_uid = 0;
	CHECK(secrets_check_stat(&st, "f", err, sizeof(err)) == -EPERM, "a directory refused");

	strcpy(props, "acks=1\n");
	{
		const char *t = "# creds\n\nsasl.username=u\r\nsasl.password=p=w\n";

		r = secrets_parse(t, strlen(t), "f", props, sizeof(props), err, sizeof(err));
	}
	CHECK(r == 0, "comments and blank lines skipped (%s)", r ? err : "");
	/* (multi-line strings compared without printing them: TAP is line based) */
	CHECK(!strcmp(props, "acks=1\nsasl.username=u\nsasl.password=p=w\n"),
	      "appended after kafka.properties, \\r dropped, '=' kept in the value");
	r = secrets_parse("a=1\nsasl.password hunter2\n", 26, "k.secrets", props, sizeof(props),
			  err, sizeof(err));
	CHECK(r == -EINVAL && strstr(err, "k.secrets:2:") && !strstr(err, "hunter2"),
	      "bad line: file:line, never its text: %s", err);
	CHECK(!strcmp(props, "acks=1\nsasl.username=u\nsasl.password=p=w\n"),
	      "a refused file adds nothing, not even its good lines");
	r = secrets_parse("=x\n", 3, "f", props, sizeof(props), err, sizeof(err));
	CHECK(r == -EINVAL, "an empty name refused");
	r = secrets_parse("a\0b=1\n", 6, "f", props, sizeof(props), err, sizeof(err));
	CHECK(r == -EINVAL && strstr(err, "NUL"), "a NUL byte refused: %s", err);
	{
		char big[300];

		memset(big, 'x', sizeof(big));
		memcpy(big, "sasl.password=", 14);
		big[sizeof(big) - 1] = 0;
		r = secrets_parse(big, strlen(big), "f", props, sizeof(props), err, sizeof(err));
		CHECK(r == -E2BIG && strstr(err, "exceed 255"), "too long in all: %s", err);
	}

	CHECK(secrets_find("acks=1\nsasl.password=x\n", name, sizeof(name)) &&
		  !strcmp(name, "sasl.password"),
	      "secrets_find names the property");
	CHECK(!secrets_find("acks=1\nsasl.username=x\n", name, sizeof(name)), "none found");

	secrets_scrub(out, sizeof(out), "auth as u with pw hunter2 failed (hunter2)",
		      "sasl.username=u\nsasl.password=hunter2\n");
	CHECK_STR(out, "auth as u with pw [redacted] failed ([redacted])",
		  "every occurrence of a secret value, and only secret values");
	secrets_scrub(out, 20, "0123456789 hunter2 tail", "sasl.password=hunter2\n");
	CHECK(!strstr(out, "hun") && strlen(out) == 19,
	      "cut to size after matching: no first bytes of the value (%s)", out);
	secrets_scrub(out, sizeof(out), "x=", "sasl.password=\n");
	CHECK_STR(out, "x=", "an empty value matches nothing");
	secrets_scrub(out, sizeof(out), "text", NULL);
	CHECK_STR(out, "text", "no properties: a copy");

	{
		char dir[] = "/tmp/dc-secrets-XXXXXX", path[64];

		CHECK(mkdtemp(dir) != NULL, "temporary directory");
		snprintf(path, sizeof(path), "%s/k.secrets", dir);
		CHECK(write_file(path, "sasl.password=s3\n", 0600) == 0, "0600 file written");
		props[0] = 0;
		r = secrets_load(path, props, sizeof(props), err, sizeof(err));
		if (geteuid() == 0)
			CHECK(r == 0 && !strcmp(props, "sasl.password=s3\n"),
			      "a root-owned 0600 file loads (%s)", r ? err : "");
		else
			CHECK(r == -EPERM && strstr(err, "not root"),
			      "not root: a file of ours is refused (%s)", err);
		chmod(path, 0644);
		props[0] = 0;
		r = secrets_load(path, props, sizeof(props), err, sizeof(err));
		CHECK(r == -EPERM && !props[0] && !strstr(err, "s3"),
		      "a 0644 file refused, nothing applied (%s)", err);
		unlink(path);
		r = secrets_load(path, props, sizeof(props), err, sizeof(err));
		CHECK(r == -ENOENT && strstr(err, path), "a missing file named: %s", err);
		rmdir(dir);
	}
	return tap_done();
}
