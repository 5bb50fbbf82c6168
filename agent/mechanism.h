/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_MECHANISM_H
#define DC_MECHANISM_H

#include <stddef.h>

struct bpf_link;
struct bpf_object;
struct bpf_object_skeleton;

/*
 * Attach a probe family with the first mechanism the kernel accepts, from
 * names[first] to names[last] (cheapest first). attempt() opens, loads and
 * attaches with one mechanism; undo() releases what a failed attempt left.
 * Each refusal is logged and appended to detail ("tp_btf refused: why; ")
 * at *off. Every mechanism is tried even after EPERM: some kernels refuse
 * one mechanism with EPERM to root (fentry here) and accept the next.
 * Returns the chosen index, or the last attempt's -errno.
 */
typedef int (*mech_attempt_fn)(void *ctx, int mech);
typedef void (*mech_undo_fn)(void *ctx);

int mech_choose(const char *family, const char *const *names, int first, int last,
		mech_attempt_fn attempt, mech_undo_fn undo, void *ctx, char *detail, size_t len,
		size_t *off);

/*
 * Drop a skeleton's embedded BPF object from the agent's resident memory
 * once libbpf has opened it (libbpf copies what it keeps: instructions,
 * BTF, map data). The object is read-only data of the agent's own binary,
 * so the kernel reads it back from the file if it is touched again (the
 * next open, at a reload): never wrong, only a page fault. The VFS object,
 * one program per file-system function, is 2.9 MB.
 */
void mech_release_image(const void *data, size_t size);

/* The index of name in names[0..n), or -1. */
int mech_find(const char *const *names, int n, const char *name);

/*
 * Destroy the links *links[0..n) side by side and clear each pointer (a
 * NULL one is skipped). Releasing a tracepoint's link waits on the kernel,
 * about 75 ms each on this machine's 6.18, and the families hold two dozen:
 * one after the other they made a stop take two seconds.
 */
void mech_detach(struct bpf_link **const *links, size_t n);

/* Every link of a skeleton, before its __destroy(), which then finds none. */
void mech_detach_skeleton(const struct bpf_object_skeleton *s);

/*
 * A development aid around a family's load: with DATACRUMBS_VERIFIER_LOG
 * naming one of obj's programs, the verifier's log of it at level 2 (every
 * instruction walked, each source line before its instructions) goes to
 * DATACRUMBS_VERIFIER_LOG_FILE, else /tmp/datacrumbs-verifier-NAME.log,
 * for bench/verifier_lines.py. Its buffer is 768 MiB, allocated only then.
 * The families load on threads of their own: the state is per thread.
 */
void mech_verifier_log_begin(struct bpf_object *obj);
void mech_verifier_log_end(void);

#endif
