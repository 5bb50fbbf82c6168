// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

#include "jobpool.h"
#include "tap.h"

/* Jobs that each wait (up to 2 s) until all of the batch have started: they
 * all see the others only if they ran side by side, as the window's drains
 * must (each waits in the kernel for tens of ms). */
struct meet {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned want, arrived, met;
};

static void meet_job(void *arg)
{
	struct meet *m = arg;
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 2;
	pthread_mutex_lock(&m->mu);
	m->arrived++;
	pthread_cond_broadcast(&m->cv);
	while (m->arrived < m->want)
		if (pthread_cond_timedwait(&m->cv, &m->mu, &until) == ETIMEDOUT)
			break;
	if (m->arrived >= m->want)
		m->met++;
	pthread_mutex_unlock(&m->mu);
}

static unsigned meet_batch(struct jobpool *p, unsigned n)
{
	struct meet m = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, n, 0, 0};
	void *args[16];

	for (unsigned i = 0; i < n; i++)
		args[i] = &m;
	jobpool_run(p, meet_job, args, n);
	return m.met;
}

static void count_job(void *arg)
{
	atomic_fetch_add((atomic_uint *)arg, 1);
}

/* Jobs that note how many ran at once, and in which order they started. */
struct crowd {
	pthread_mutex_t mu;
	unsigned now, most, started, order[8];
};

struct crowd_arg {
	struct crowd *c;
	unsigned id;
};

static void crowd_job(void *arg)
{
	struct crowd_arg *a = arg;
	struct crowd *c = a->c;
	struct timespec nap = {0, 20 * 1000 * 1000};

	pthread_mutex_lock(&c->mu);
	c->order[c->started++] = a->id;
	if (++c->now > c->most)
		c->most = c->now;
	pthread_mutex_unlock(&c->mu);
	nanosleep(&nap, NULL);
	pthread_mutex_lock(&c->mu);
	c->now--;
	pthread_mutex_unlock(&c->mu);
}

struct mask_seen {
	int term_blocked;
	char name[16];
};

static void mask_job(void *arg)
{
	struct mask_seen *s = arg;
	sigset_t cur;

	pthread_sigmask(SIG_SETMASK, NULL, &cur);
	s->term_blocked = sigismember(&cur, SIGTERM);
	pthread_getname_np(pthread_self(), s->name, sizeof(s->name));
}

int main(void)
{
	struct jobpool *p = NULL;
	atomic_uint counts[8];
	void *args[8];
	unsigned bad = 0;
	struct mask_seen seen = {-1, ""};

	CHECK(jobpool_new(8, "test-pool", &p) == 0 && jobpool_threads(p) == 8,
	      "a pool of 8 threads");
	CHECK(meet_batch(p, 8) == 8, "8 jobs ran side by side");
	CHECK(meet_batch(p, 3) == 3, "then 3, on the same threads");

	/* every job once per batch, batch after batch */
	for (int i = 0; i < 8; i++)
		args[i] = &counts[i];
	for (int i = 0; i < 8; i++)
		atomic_init(&counts[i], 0);
	for (int round = 0; round < 2000; round++)
		jobpool_run(p, count_job, args, (unsigned)(round % 8) + 1);
	for (int i = 0; i < 8; i++) {
		unsigned want = 0;

		for (int round = 0; round < 2000; round++)
			want += i < round % 8 + 1;
		bad += atomic_load(&counts[i]) != want;
	}
	CHECK(bad == 0, "2,000 batches of 1 to 8 jobs: each job ran once per batch (%u wrong)",
	      bad);
	jobpool_run(p, count_job, args, 0);
	CHECK(meet_batch(p, 2) == 2, "an empty batch returns, and the pool runs on");

	/* at most 3 at once, 8 threads idle: the start's loads, whose
	 * parsing of the kernel's BTF each holds its own copy */
	{
		struct crowd c = {.mu = PTHREAD_MUTEX_INITIALIZER};
		struct crowd_arg ca[8];
		bool ordered = true;

		for (unsigned i = 0; i < 8; i++) {
			ca[i] = (struct crowd_arg){&c, i};
			args[i] = &ca[i];
		}
		jobpool_run_max(p, crowd_job, args, 8, 3);
		for (unsigned i = 0; i < 3; i++)
			ordered = ordered && c.order[i] < 3;
		CHECK(c.started == 8 && c.most == 3,
		      "8 jobs, at most 3 at once: all ran (%u), 3 at once at most (%u)", c.started,
		      c.most);
		CHECK(ordered, "the first 3 started first");
		c.started = c.most = 0;
		jobpool_run_max(p, crowd_job, args, 8, 0);
		CHECK(c.started == 8 && c.most == 1, "max 0: one after the other (%u at once)",
		      c.most);
	}

	/* started from a thread that takes SIGTERM, the pool's threads do not:
	 * the agent's signals belong to its event loop */
	p = jobpool_free(p);
	CHECK(jobpool_new(1, "test-pool", &p) == 0, "a pool of 1");
	args[0] = &seen;
	jobpool_run(p, mask_job, args, 1);
	CHECK(seen.term_blocked == 1, "its thread blocks SIGTERM");
	CHECK_STR(seen.name, "test-pool", "and has the pool's name");
	p = jobpool_free(p);

	/* no pool: the jobs run in the caller, one after the other */
	atomic_init(&counts[0], 0);
	args[0] = &counts[0];
	jobpool_run(NULL, count_job, args, 1);
	CHECK(atomic_load(&counts[0]) == 1, "a NULL pool runs the job in the caller");
	CHECK(jobpool_new(0, "test-pool", &p) == 0 && jobpool_threads(p) == 0,
	      "a pool of no threads");
	CHECK(meet_batch(p, 1) == 1, "runs its job in the caller");
	p = jobpool_free(p);
	return tap_done();
}
