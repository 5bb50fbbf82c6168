// SPDX-License-Identifier: Apache-2.0
#include <bpf/libbpf.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "log.h"
#include "mechanism.h"

int mech_find(const char *const *names, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(names[i], name))
			return i;
	return -1;
}

int mech_choose(const char *family, const char *const *names, int first, int last,
		mech_attempt_fn attempt, mech_undo_fn undo, void *ctx, char *detail, size_t len,
		size_t *off)
{
	int r = -ENOENT;

	for (int m = first; m <= last; m++) {
		r = attempt(ctx, m);
		if (!r) {
			log_info("%s probes attached with %s", family, names[m]);
			return m;
		}
		undo(ctx);
		log_notice(
		    "%s probes: %s refused by this kernel (%s)%s", family, names[m], strerror(-r),
		    m < last && r != -EPERM && r != -EACCES ? ", trying the next mechanism" : "");
		*off += (size_t)snprintf(detail + *off, len - *off, "%s%s refused: %s",
					 *off ? "; " : "", names[m], strerror(-r));
		if (*off >= len)
			*off = len - 1;
	}
	return r;
}

void mech_release_image(const void *data, size_t size)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t start = ((uintptr_t)data + page - 1) & ~(page - 1);
	uintptr_t end = ((uintptr_t)data + size) & ~(page - 1);

	/* whole pages only: the ends share pages with other read-only data */
	if (end > start && madvise((void *)start, end - start, MADV_DONTNEED) < 0)
		log_debug("Cannot release the BPF object's pages: %m");
}

struct detach_pool {
	struct bpf_link **const *links;
	size_t n;
	atomic_size_t next;
};

static void *detach_worker(void *p)
{
	struct detach_pool *pool = p;

	for (size_t i; (i = atomic_fetch_add(&pool->next, 1)) < pool->n;) {
		bpf_link__destroy(*pool->links[i]);
		*pool->links[i] = NULL;
	}
	return NULL;
}

void mech_detach(struct bpf_link **const *links, size_t n)
{
	/* the waits are the kernel's, not CPU: threads beyond the CPUs help,
	 * but a thousand uprobes need not make a thousand threads */
	enum { MAX_THREADS = 32 };
	struct detach_pool pool = {.links = links, .n = n};
	pthread_t t[MAX_THREADS];
	size_t started = 0;

	atomic_init(&pool.next, 0);
	while (started < MAX_THREADS && started + 1 < n &&
	       !pthread_create(&t[started], NULL, detach_worker, &pool))
		started++;
	/* this thread works too: with no thread at all, it detaches them all */
	detach_worker(&pool);
	for (size_t i = 0; i < started; i++)
		pthread_join(t[i], NULL);
}

void mech_detach_skeleton(const struct bpf_object_skeleton *s)
{
	struct bpf_link ***links;
	size_t n = 0;

	if (!s)
		return;
	links = calloc((size_t)s->prog_cnt, sizeof(*links));
	if (!links)
		return; /* __destroy() detaches them, one after the other */
	for (int i = 0; i < s->prog_cnt; i++) {
		const struct bpf_prog_skeleton *ps =
		    (const void *)((const char *)s->progs + (size_t)i * (size_t)s->prog_skel_sz);

		if (ps->link && *ps->link)
			links[n++] = ps->link;
	}
	mech_detach((struct bpf_link * *const *)links, n);
	free(links);
}

#define VLOG_SIZE (768u << 20)

static __thread char *vlog;
static __thread char vlog_name[64];

void mech_verifier_log_begin(struct bpf_object *obj)
{
	const char *name = getenv("DATACRUMBS_VERIFIER_LOG");
	struct bpf_program *p = name && *name ? bpf_object__find_program_by_name(obj, name) : NULL;

	if (!p)
		return;
	vlog = calloc(1, VLOG_SIZE);
	if (!vlog) {
		log_warning("Verifier log of %s: no memory for its buffer", name);
		return;
	}
	snprintf(vlog_name, sizeof(vlog_name), "%s", name);
	bpf_program__set_log_level(p, 2);
	bpf_program__set_log_buf(p, vlog, VLOG_SIZE);
}

void mech_verifier_log_end(void)
{
	const char *path = getenv("DATACRUMBS_VERIFIER_LOG_FILE");
	char def[128];
	FILE *f;

	if (!vlog)
		return;
	if (!path || !*path) {
		snprintf(def, sizeof(def), "/tmp/datacrumbs-verifier-%s.log", vlog_name);
		path = def;
	}
	f = fopen(path, "we");
	if (!f || fputs(vlog, f) < 0 || fclose(f))
		log_warning("Verifier log of %s: cannot write %s: %m", vlog_name, path);
	else
		log_info("Verifier log of %s written to %s", vlog_name, path);
	free(vlog);
	vlog = NULL;
}
