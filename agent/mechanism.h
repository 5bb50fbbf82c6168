/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_MECHANISM_H
#define DC_MECHANISM_H

#include <stddef.h>

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

/* The index of name in names[0..n), or -1. */
int mech_find(const char *const *names, int n, const char *name);

#endif
