/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Stack-attributed I/O profiles, shared by bpf/stacks.bpf.h (compiled into
 * the system-call programs) and agent/stacks.c.
 *
 * A chosen call (policy below) is aggregated per window by (cgroup, process,
 * user stack, kernel stack, operation). Stack ids index one of
 * DC_STACK_GENS stack-trace maps, chosen by a generation number the agent
 * advances at every window close; the key says which map each id is from,
 * so an id is read from the map that issued it, before that map is cleared
 * (agent/stacks.c explains the schedule).
 *
 * Every struct crosses the kernel/user boundary: fixed-width, padded.
 */
#ifndef DATACRUMBS_STACKS_H
#define DATACRUMBS_STACKS_H

#ifndef __bpf__
#include <linux/types.h>
#endif

/*
 * Frames kept per stack. 64 holds the deepest kernel I/O paths seen here
 * (a write through ext4, jbd2 and blk-mq is ~40 frames from the syscall
 * entry) and typical user stacks; a deeper stack keeps its innermost 64.
 * Each stack-map element is this many 8-byte addresses.
 */
#define DC_STACK_DEPTH 64

/*
 * Stack maps in rotation. A key drained at the close of window s may name
 * a user stack from generation s-1 or s and a kernel stack one generation
 * older than its user stack (a call that blocked in one window and returned
 * in the next), so generations s-2 .. s must be intact when window s is
 * drained, and s+1 already empty: four maps.
 */
#define DC_STACK_GENS 4

/* Stack "ids" that are not ids: what happened instead. */
enum dc_stack_mark {
	DC_STACK_ONCPU = -1, /* kernel: the call never blocked (its time was on the CPU) */
	DC_STACK_LOST = -2,  /* no id: the stack map's bucket held another stack, or no memory */
	DC_STACK_STALE = -3, /* kernel: it blocked more than one window before it returned */
};

struct dc_stk_key {
	__u64 cgroup_id;
	__u32 tgid;
	__s32 ustack; /* id in map ugen, or enum dc_stack_mark */
	__s32 kstack; /* id in map kgen, or enum dc_stack_mark */
	__u16 op;     /* enum dc_op */
	__u8 ugen;    /* generation & (DC_STACK_GENS - 1) of ustack's map */
	__u8 kgen;
	/* The return address a frameless leaf (libc's syscall wrappers) left
	 * at the user stack pointer: a frame-pointer walk skips that caller.
	 * Set only where the bytes before it are a call instruction, checked
	 * in the kernel at capture (dc_follows_call_x86), so the fix-up needs
	 * nothing from the process at drain. 0: none (other ISAs, no check
	 * written for them). */
	__u64 caller;
};

struct dc_stk_val {
	__u64 count;
	__u64 time_ns; /* entry to exit, summed */
	__u64 bytes;
};

/*
 * The policy, one element of an array map (a reload rewrites it without
 * reloading programs). A call is kept when its cgroup (or an ancestor) is
 * traced in full, or it is the Nth candidate of its thread (1-in-N), or it
 * took at least slow_ns. With slow_ns set every blocking call has its
 * kernel stack captured at the first switch-out, since slowness is only
 * known at exit.
 */
struct dc_stk_cfg {
	__u32 mode;	    /* 0 off, 1 on */
	__u32 one_in_n;	    /* 0 = no 1-in-N rule */
	__u64 slow_ns;	    /* 0 = no slow-call rule */
	__u32 full_cgroups; /* entries in stk_full: 0 skips the lookup */
	__u32 draw_max;	    /* dc_draw_max(one_in_n) (datacrumbs/trace.h) */
};

/* Bytes read before a return address to tell whether it follows a call. */
#define DC_CALL_SITE_BYTES 8

/*
 * Is b, the DC_CALL_SITE_BYTES just before a return address (the last one
 * next to it), the end of an x86_64 call instruction? call rel32 (e8 +
 * 4 bytes), or call r/m64 (ff /2) with 0, 1, 4 or 5 bytes after the ModRM
 * (+ SIB). One definition for the BPF programs that apply it and the unit
 * test that pins it down. A false positive costs one wrong frame; a word
 * on the stack that is not a return address rarely passes.
 */
static inline int dc_follows_call_x86(const __u8 *b)
{
	if (b[DC_CALL_SITE_BYTES - 5] == 0xe8)
		return 1;
	for (int len = 2; len <= 7; len++) {
		const __u8 *op = b + DC_CALL_SITE_BYTES - len;

		if (op[0] == 0xff && (op[1] & 0x38) == 0x10)
			return 1;
	}
	return 0;
}

/* dc_stash.stk_flags */
enum { DC_STK_MARK = 1, DC_STK_WATCH = 2 };

/* Monotonic per-CPU counters, published as deltas in the agent record. */
enum dc_stk_counter {
	DC_STK_CNT_KEY_FULL = 0, /* kept call whose key found no room: counted in stk_overflow */
	DC_STK_CNT_USTACK_LOST = 1,
	DC_STK_CNT_KSTACK_LOST = 2,
	DC_STK_CNT_KSTACK_STALE = 3,
	DC_STK_CNT_CAPTURES = 4,      /* kernel stacks captured at a switch-out */
	DC_STK_CNT_ANNOUNCED = 5,     /* processes announced to the agent (stk_newpid) */
	DC_STK_CNT_ANNOUNCE_LOST = 6, /* announcements the ring had no room for */
	DC_STK_CNT_MAX = 7,
};

/* A process whose user stacks were captured for the first time, or whose
 * address space changed since it was last announced (a reused pid, an
 * exec, new mappings: the loader maps libc after the first calls): the
 * agent reads its mappings and opens its objects while it still runs,
 * instead of at the window's drain. */
struct dc_stk_newpid {
	__u32 tgid;
	__u32 pad;
	__u64 ident; /* start time, mm and mapping count, mixed: equal means unchanged */
};

#endif
