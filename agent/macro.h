/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_MACRO_H
#define DC_MACRO_H

#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))

/* The least power of two >= n (1 for 0). */
static inline uint64_t pow2_at_least(uint64_t n)
{
	uint64_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

/* Hand ownership out of a _cleanup_ variable. */
#define TAKE_PTR(p)                 \
	({                          \
		typeof(p) _p = (p); \
		(p) = NULL;         \
		_p;                 \
	})
#define TAKE_FD(fd)             \
	({                      \
		int _fd = (fd); \
		(fd) = -1;      \
		_fd;            \
	})

#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func) \
	static inline void func##p(type *p)     \
	{                                       \
		if (*p)                         \
			func(*p);               \
	}

static inline void freep(void *p)
{
	free(*(void **)p);
}
#define _cleanup_free_ _cleanup_(freep)

static inline void closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}
#define _cleanup_close_ _cleanup_(closep)

static inline void fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}
#define _cleanup_fclose_ _cleanup_(fclosep)

/* qsort() that takes an empty array: one with no elements may have no
 * memory (base NULL), which qsort()'s nonnull declaration makes undefined
 * behaviour (UBSan reports it, the tests' suite san). */
static inline void qsort_safe(void *base, size_t n, size_t size,
			      int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, size, cmp);
}

#define USEC_PER_SEC  1000000ULL
#define NSEC_PER_USEC 1000ULL
#define NSEC_PER_SEC  1000000000ULL

/*
 * Append an element to a growable array (doubling, from 64) and evaluate
 * to it, or to NULL when memory runs out: VEC_PUSH zeroed, VEC_PUSH_RAW as
 * the memory holds it, for a caller that writes every byte itself. Macros
 * so the array is reallocated through its own pointer type (no void **
 * aliasing).
 */
#define VEC_PUSH_RAW(arr, n, cap)                                              \
	({                                                                     \
		typeof(arr) _e = NULL;                                         \
		if ((n) == (cap)) {                                            \
			size_t _c = (cap) ? (cap)*2 : 64;                      \
			typeof(arr) _np = realloc((arr), _c * sizeof(*(arr))); \
			if (_np) {                                             \
				(arr) = _np;                                   \
				(cap) = _c;                                    \
			}                                                      \
		}                                                              \
		if ((n) < (cap))                                               \
			_e = &(arr)[(n)++];                                    \
		_e;                                                            \
	})
#define VEC_PUSH(arr, n, cap)                               \
	({                                                  \
		typeof(arr) _p = VEC_PUSH_RAW(arr, n, cap); \
		if (_p)                                     \
			memset(_p, 0, sizeof(*_p));         \
		_p;                                         \
	})

#endif
