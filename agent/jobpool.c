// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>

#include "jobpool.h"

struct jobpool {
	pthread_mutex_t mu;
	pthread_cond_t go, done;
	pthread_t *threads;
	unsigned n_threads;
	/* the batch being run: jobs next..n-1 are not taken yet, pending not
	 * finished yet, running being run (at most max) */
	void (*fn)(void *);
	void *const *args;
	unsigned n, next, pending, running, max;
	bool stop;
};

static void *worker(void *arg)
{
	struct jobpool *p = arg;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		unsigned i;

		while (!p->stop && (p->next >= p->n || p->running >= p->max))
			pthread_cond_wait(&p->go, &p->mu);
		if (p->stop)
			break;
		i = p->next++;
		p->running++;
		pthread_mutex_unlock(&p->mu);
		p->fn(p->args[i]);
		pthread_mutex_lock(&p->mu);
		p->running--;
		/* a job left for want of a free place: a waiting thread takes it */
		if (p->next < p->n)
			pthread_cond_signal(&p->go);
		if (--p->pending == 0)
			pthread_cond_signal(&p->done);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

int jobpool_new(unsigned n, const char *name, struct jobpool **ret)
{
	struct jobpool *p = calloc(1, sizeof(*p));
	sigset_t all, old;

	if (!p || !(p->threads = calloc(n ? n : 1, sizeof(*p->threads)))) {
		free(p);
		return -ENOMEM;
	}
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->go, NULL);
	pthread_cond_init(&p->done, NULL);
	/* the threads take no signals: the process's go to the event loop's
	 * signalfd, whatever the caller blocked at this point */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	while (p->n_threads < n && !pthread_create(&p->threads[p->n_threads], NULL, worker, p)) {
		/* for top -H and perf: these are not the event loop */
		pthread_setname_np(p->threads[p->n_threads], name);
		p->n_threads++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	*ret = p;
	return 0;
}

unsigned jobpool_threads(const struct jobpool *p)
{
	return p ? p->n_threads : 0;
}

void jobpool_run(struct jobpool *p, void (*fn)(void *), void *const *args, unsigned n)
{
	jobpool_run_max(p, fn, args, n, UINT_MAX);
}

void jobpool_run_max(struct jobpool *p, void (*fn)(void *), void *const *args, unsigned n,
		     unsigned max)
{
	if (!p || !p->n_threads || !max) {
		for (unsigned i = 0; i < n; i++)
			fn(args[i]);
		return;
	}
	pthread_mutex_lock(&p->mu);
	p->fn = fn;
	p->args = args;
	p->next = 0;
	p->pending = n;
	p->running = 0;
	p->max = max;
	p->n = n;
	pthread_cond_broadcast(&p->go);
	while (p->pending)
		pthread_cond_wait(&p->done, &p->mu);
	p->n = p->next = 0;
	pthread_mutex_unlock(&p->mu);
}

struct jobpool *jobpool_free(struct jobpool *p)
{
	if (!p)
		return NULL;
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->mu);
	for (unsigned i = 0; i < p->n_threads; i++)
		pthread_join(p->threads[i], NULL);
	pthread_cond_destroy(&p->done);
	pthread_cond_destroy(&p->go);
	pthread_mutex_destroy(&p->mu);
	free(p->threads);
	free(p);
	return NULL;
}
