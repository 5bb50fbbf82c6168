// SPDX-License-Identifier: GPL-2.0
/*
 * VFS layer: the kernel's VFS entry points (include/datacrumbs/vfs.h),
 * timed per call and aggregated per window by (process, cgroup, function).
 *
 * Mechanisms, chosen by the agent at start-up by trying: fentry/fexit (one
 * program pair per function, the cheapest: a direct trampoline call), else
 * one kprobe/kretprobe pair attached to every function with a cookie naming
 * it, else the tracepoints that cover catalogued functions (an entry/exit
 * pair times one; a single event counts one), else off. Functions this
 * kernel lacks are skipped, and reported.
 */
#include "dc_vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "datacrumbs/vfs.h"
#define DC_FN_LAYER DC_LAYER_VFS
#include "func.bpf.h"

/* fexit reads the return value with bpf_get_func_ret(), so one macro serves
 * functions of any arity */
#define DC_VFS_FENTRY(name, cat, bytes)                                                    \
	SEC("fentry/" #name)                                                               \
	int dc_fentry_##name(void *ctx)                                                    \
	{                                                                                  \
		fn_entry(DC_VFS_##name, DC_VFS_MAY_IRQ(DC_VFS_##name));                    \
		return 0;                                                                  \
	}                                                                                  \
	SEC("fexit/" #name)                                                                \
	int dc_fexit_##name(void *ctx)                                                     \
	{                                                                                  \
		__u64 ret = 0;                                                             \
                                                                                           \
		bpf_get_func_ret(ctx, &ret);                                               \
		fn_return((long)ret, DC_VFS_##name, bytes, DC_VFS_MAY_IRQ(DC_VFS_##name)); \
		return 0;                                                                  \
	}
DC_VFS_FUNCS(DC_VFS_FENTRY)

/* One pair for every function that runs in task context only, one for
 * those that may run in interrupts (func.bpf.h): the agent attaches each
 * function to its pair. */
#define DC_VFS_KPROBES(suffix, may_irq)                                             \
	SEC("kprobe")                                                               \
	int BPF_KPROBE(dc_vfs_kprobe##suffix)                                       \
	{                                                                           \
		fn_entry((__u32)bpf_get_attach_cookie(ctx), may_irq);               \
		return 0;                                                           \
	}                                                                           \
	SEC("kretprobe")                                                            \
	int BPF_KRETPROBE(dc_vfs_kretprobe##suffix, long ret)                       \
	{                                                                           \
		__u64 cookie = bpf_get_attach_cookie(ctx);                          \
                                                                                    \
		fn_return(ret, (__u32)cookie, cookie &DC_FN_COOKIE_BYTES, may_irq); \
		return 0;                                                           \
	}
DC_VFS_KPROBES(, false)
DC_VFS_KPROBES(_irq, true)

/*
 * The file systems' tracepoints: one program per role attached to many
 * events, the cookie naming the catalogued function. Exit events carry a
 * return value at no common offset: time only. Two attach kinds share the
 * bodies: classic tracepoints through perf events (cookies: 5.15+), and
 * raw tracepoints (cookies: 6.10+), which build no perf record before the
 * program runs and whose links are released without waiting out grace
 * periods under the kernel's event_mutex (25 perf-event links took 1.9 s).
 */
#define DC_VFS_TP_PROGS(sec, prefix)                                           \
	SEC(sec)                                                               \
	int prefix##_enter(void *ctx)                                          \
	{                                                                      \
		fn_entry((__u32)bpf_get_attach_cookie(ctx), false);            \
		return 0;                                                      \
	}                                                                      \
	SEC(sec)                                                               \
	int prefix##_exit(void *ctx)                                           \
	{                                                                      \
		fn_return(0, (__u32)bpf_get_attach_cookie(ctx), false, false); \
		return 0;                                                      \
	}                                                                      \
	SEC(sec)                                                               \
	int prefix##_event(void *ctx)                                          \
	{                                                                      \
		fn_event((__u32)bpf_get_attach_cookie(ctx));                   \
		return 0;                                                      \
	}

DC_VFS_TP_PROGS("tracepoint", dc_vfs_tp)
DC_VFS_TP_PROGS("raw_tp", dc_vfs_raw)

DC_SEC_LICENSE;
