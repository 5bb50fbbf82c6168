/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_JOBPOOL_H
#define DC_JOBPOOL_H

/*
 * Threads kept for the window's drains. Each family's flip waits in the
 * kernel for the programs to leave the old map (tens of ms), so the drains
 * run side by side; a thread created and joined for each one every window
 * cost its clone, stack set-up and page faults every window.
 */
struct jobpool;

/* A pool of up to n threads named name (15 bytes at most): fewer if the
 * system gives fewer (0 is a pool too: its jobs run in the caller).
 * -ENOMEM only. */
int jobpool_new(unsigned n, const char *name, struct jobpool **ret);

/* The threads the pool got. */
unsigned jobpool_threads(const struct jobpool *p);

/* fn(args[i]) for each i < n, each on a thread of its own while there are
 * threads (the rest wait for one), and returns when all have returned. A
 * NULL pool runs them here, one after the other. One caller at a time. */
void jobpool_run(struct jobpool *p, void (*fn)(void *), void *const *args, unsigned n);
/* The same with at most max jobs running at once, taken in order: the
 * next one starts as one ends (max 0: in the caller, one after the other). */
void jobpool_run_max(struct jobpool *p, void (*fn)(void *), void *const *args, unsigned n,
		     unsigned max);

/* Stops and joins the threads (none may be running a job). */
struct jobpool *jobpool_free(struct jobpool *p);

#endif
