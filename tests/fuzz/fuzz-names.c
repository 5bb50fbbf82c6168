// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target of the names any user on the node chooses and the agent
 * (running as root) reads: a file's path components as the kernel sends
 * them, leaf first (agent/filepath.c: every byte but '/' and NUL is a
 * valid name), and a cgroup path (agent/jobid.c: a delegated subtree's or
 * a container manager's names). Then puts and gets on the table of names
 * (agent/filepath.c), checked against a plain list.
 *
 * Besides the sanitizers, it checks what they promise: a joined path is
 * terminated, as long as returned, starts with "/" or "...", and is the
 * same whatever room beyond it the caller gives (its components' order is
 * not checked); a job field is terminated, within its size and alphabet,
 * and a unit or slice a whole component of the path; the table returns
 * what was last put for an identity, never another's name, and forgets
 * only a name idle for more than a window.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "filepath.h"
#include "jobid.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void join(const uint8_t *data, size_t size)
{
	static char big[8192], small[64];
	bool truncated = size && (data[0] & 1);
	int n = filepath_join((const char *)data, size, truncated, big, sizeof(big));
	int m;

	if (n == -ENAMETOOLONG)
		return;
	if (n < 0 || (size_t)n >= sizeof(big) || strlen(big) != (size_t)n)
		abort();
	if (n && big[0] != '/' && strncmp(big, "...", 3))
		abort();
	(void)filepath_hash(big);
	m = filepath_join((const char *)data, size, truncated, small, sizeof(small));
	if (m >= 0 && (m != n || strcmp(small, big)))
		abort(); /* the room given changed the path */
	if (m < 0 && (m != -ENAMETOOLONG || (size_t)n < sizeof(small)))
		abort();
}

static void field(const char *s, size_t max, const char *alphabet)
{
	size_t n = strnlen(s, max + 1);

	if (n > max || (alphabet && strspn(s, alphabet) != n))
		abort();
}

/* s is "" or one of path's '/'-separated components */
static bool component(const char *path, const char *s)
{
	size_t n = strlen(s);

	if (!n)
		return true;
	for (const char *p = path; (p = strstr(p, s)); p++)
		if ((p == path || p[-1] == '/') && (p[n] == '/' || !p[n]))
			return true;
	return false;
}

static void job(const uint8_t *data, size_t size)
{
	char *path = strndup((const char *)data, size);
	struct dc_jobid j;

	if (!path)
		return;
	jobid_parse(path, &j);
	field(j.unit, DC_JOBID_UNIT_MAX, NULL);
	field(j.slice, DC_JOBID_UNIT_MAX, NULL);
	field(j.container, DC_JOBID_CONTAINER_MAX, "0123456789abcdef");
	field(j.pod, DC_JOBID_POD_MAX, "0123456789abcdef-");
	field(j.slurm_job, DC_JOBID_SLURM_MAX, "0123456789");
	field(j.flux_job, DC_JOBID_FLUX_MAX,
	      "f123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz");
	/* a unit or slice is a whole path component, as it is */
	if (!component(path, j.unit) || !component(path, j.slice))
		abort();
	free(path);
}

struct ident {
	uint32_t dev, igen;
	uint64_t ino;
};

/* puts and gets of 8 identities read from the input (16 bytes each, so
 * that any two may meet in the table's slots, or be one), then one byte an
 * operation */
static void table(const uint8_t *data, size_t size)
{
	static const char *const names[] = {"/a", "/b/c", "/d/e/f", "/g"};
	const char *model[8] = {0};
	uint64_t used[8] = {0}; /* the window each was last put or found in */
	struct ident id[8];
	unsigned canon[8];
	struct fname_table t;
	uint64_t window = 1;

	if (size < 8 * 16 + 1)
		return;
	for (unsigned i = 0; i < 8; i++) {
		memcpy(&id[i].dev, data + 16 * i, 4);
		memcpy(&id[i].igen, data + 16 * i + 4, 4);
		memcpy(&id[i].ino, data + 16 * i + 8, 8);
		canon[i] = i;
		for (unsigned j = 0; j < i; j++)
			if (id[j].dev == id[i].dev && id[j].igen == id[i].igen &&
			    id[j].ino == id[i].ino) {
				canon[i] = canon[j];
				break;
			}
	}
	fname_table_init(&t, 4 + data[128] % 8);
	for (size_t i = 129; i < size; i++) {
		unsigned k = data[i] & 7, op = data[i] >> 3 & 3, name = data[i] >> 5 & 3;
		const struct ident *x = &id[k];

		if (data[i] >> 7)
			window++;
		if (op == 0) {
			int r = fname_put(&t, x->dev, x->ino, x->igen, names[name], false, window);

			if (!r) {
				model[canon[k]] = names[name];
				used[canon[k]] = window;
			} else if (r != -ENOSPC && r != -ENOMEM)
				abort();
		} else {
			const struct fname *f = fname_get(&t, x->dev, x->ino, x->igen, window);

			/* forgotten is allowed (idle names go before a growth),
			 * another name is not */
			if (f && (!model[canon[k]] || strcmp(f->path, model[canon[k]]) ||
				  f->dev != x->dev || f->ino != x->ino || f->igen != x->igen))
				abort();
			/* only names idle for more than a window are forgotten */
			if (!f && model[canon[k]] && used[canon[k]] + 1 >= window)
				abort();
			if (f)
				used[canon[k]] = window;
		}
	}
	fname_table_free(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	join(data, size);
	job(data, size);
	table(data, size);
	return 0;
}
