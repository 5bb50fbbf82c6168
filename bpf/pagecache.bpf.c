// SPDX-License-Identifier: GPL-2.0
/*
 * Page cache: pages added (a read that missed, or readahead), pages first
 * dirtied (buffered writes) and pages removed, per process and cgroup per
 * window, so that a process's read bandwidth can be split into what came
 * from memory and what had to come from the device.
 *
 * A hit leaves no tracepoint (folio_mark_accessed is a plain function, for
 * fentry/kprobe kernels later); the agent estimates hits per process as
 * bytes read minus bytes added (docs/records.md).
 *
 * I/O through a mapping makes no system call: the runs of the generic
 * file fault handler and of the fault-around are counted where the kernel
 * has their tracepoints (the agent loads those programs only then).
 * Counted, not sized: a fault-around's event names the range it looked
 * at, not what it mapped (docs/records.md says what each counts).
 *
 * Mechanisms: tp_btf (folio pointers: large folios counted by their pages),
 * else the classic tracepoints (their "order" field where the kernel has it,
 * else one page per event).
 */
#include "dc_vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "datacrumbs/pagecache.h"
#include "common.bpf.h"
#include "filter.bpf.h"

const volatile bool plain_updates = false;
const volatile __u32 agent_tgid = 0;

enum { ADDED, DIRTIED, REMOVED, FAULT, AROUND };

DC_WINDOW_MAP(agg_gen, struct dc_pc_key, struct dc_pc_val);

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dc_pc_val);
} pc_overflow SEC(".maps");

DC_COUNTERS(pc_counters, DC_PC_CNT_MAX);

static const struct dc_pc_val zero_val;

static __always_inline void account(int what, __u64 pages)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct dc_pc_key k = {};
	struct dc_pc_val *v;
	__u32 zero = 0;
	bool inserted;

	/* the task is a typed pointer in every program type: plain loads */
	k.tgid = task->mm ? task->tgid : 0;
	if (k.tgid && k.tgid == agent_tgid)
		return;
	/* kernel threads' activity (eviction, writeback) is attributed to no
	 * process or cgroup, so no filter can name it */
	if (k.tgid && dc_filtered(task)) {
		dc_count(&pc_counters, DC_PC_CNT_FILTERED);
		return;
	}
	k.cgroup_id = k.tgid ? dc_task_cgroup_id(task) : 0;
	v = agg_gen_value(&k, &zero_val, &inserted);
	if (!v) {
		dc_count(&pc_counters, DC_PC_CNT_AGG_FULL);
		v = bpf_map_lookup_elem(&pc_overflow, &zero);
		if (!v)
			return;
	}
	dc_add(&v->events, 1);
	if (what == ADDED)
		dc_add(&v->added_pages, pages);
	else if (what == DIRTIED)
		dc_add(&v->dirtied_pages, pages);
	else if (what == REMOVED)
		dc_add(&v->removed_pages, pages);
	else if (what == FAULT)
		dc_add(&v->file_faults, 1);
	else
		dc_add(&v->fault_arounds, 1);
}

/* Pages in a folio: 1 unless it is a large folio (PG_head), whose size is
 * _nr_pages (recent kernels), else _folio_nr_pages (6.1, where _flags_1
 * holds more page flags, not the order), else 1 << an order. Enum value and
 * fields are relocated against the running kernel. */
/* 6.17 wrapped the page flags in a struct (memdesc_flags_t); both layouts
 * are relocated, the one this kernel lacks is dead code the verifier skips */
struct folio___memdesc {
	struct {
		unsigned long f;
	} flags;
} __attribute__((preserve_access_index));

/* the first tail page's fields as 6.1 to 6.5 named them */
struct folio___v61 {
	unsigned char _folio_order;
	unsigned int _folio_nr_pages;
} __attribute__((preserve_access_index));

static __always_inline unsigned long folio_flags(struct folio *folio)
{
	struct folio___memdesc *md = (void *)folio;

	if (bpf_core_field_exists(md->flags.f))
		return md->flags.f;
	return folio->flags;
}

/* the tracepoint's folio argument is a typed pointer (tp_btf only): plain
 * loads, no probe-read call each */
static __always_inline __u64 folio_pages(struct folio *folio)
{
	struct folio___v61 *v61 = (void *)folio;
	unsigned long flags = folio_flags(folio);
	int head;

	if (!bpf_core_enum_value_exists(enum pageflags, PG_head))
		return 1;
	head = bpf_core_enum_value(enum pageflags, PG_head);
	if (!(flags & (1UL << (head & 63))))
		return 1;
	if (bpf_core_field_exists(folio->_nr_pages))
		return folio->_nr_pages;
	if (bpf_core_field_exists(v61->_folio_nr_pages))
		return v61->_folio_nr_pages;
	if (bpf_core_field_exists(v61->_folio_order))
		return 1UL << (v61->_folio_order & 0x3f);
	if (bpf_core_field_exists(folio->_flags_1))
		return 1UL << (folio->_flags_1 & 0x3f);
	return 1;
}

SEC("tp_btf/mm_filemap_add_to_page_cache")
int BPF_PROG(dc_pc_add_btf, struct folio *folio)
{
	dc_run();
	account(ADDED, folio_pages(folio));
	return 0;
}

SEC("tp_btf/mm_filemap_delete_from_page_cache")
int BPF_PROG(dc_pc_del_btf, struct folio *folio)
{
	dc_run();
	account(REMOVED, folio_pages(folio));
	return 0;
}

SEC("tp_btf/writeback_dirty_folio")
int BPF_PROG(dc_pc_dirty_btf, struct folio *folio)
{
	dc_run();
	account(DIRTIED, folio_pages(folio));
	return 0;
}

SEC("tp_btf/mm_filemap_fault")
int BPF_PROG(dc_pc_fault_btf)
{
	dc_run();
	account(FAULT, 0);
	return 0;
}

SEC("tp_btf/mm_filemap_map_pages")
int BPF_PROG(dc_pc_around_btf)
{
	dc_run();
	account(AROUND, 0);
	return 0;
}

static __always_inline __u64 tp_order_pages(struct trace_event_raw_mm_filemap_op_page_cache *ctx)
{
	if (bpf_core_field_exists(ctx->order))
		return 1UL << (BPF_CORE_READ(ctx, order) & 0x3f);
	return 1;
}

SEC("tracepoint/filemap/mm_filemap_add_to_page_cache")
int dc_pc_add_tp(struct trace_event_raw_mm_filemap_op_page_cache *ctx)
{
	dc_run();
	account(ADDED, tp_order_pages(ctx));
	return 0;
}

SEC("tracepoint/filemap/mm_filemap_delete_from_page_cache")
int dc_pc_del_tp(struct trace_event_raw_mm_filemap_op_page_cache *ctx)
{
	dc_run();
	account(REMOVED, tp_order_pages(ctx));
	return 0;
}

/* no size in this tracepoint's record: one page per event (exact where
 * writes dirty order-0 folios) */
SEC("tracepoint/writeback/writeback_dirty_folio")
int dc_pc_dirty_tp(void *ctx)
{
	dc_run();
	account(DIRTIED, 1);
	return 0;
}

SEC("tracepoint/filemap/mm_filemap_fault")
int dc_pc_fault_tp(void *ctx)
{
	dc_run();
	account(FAULT, 0);
	return 0;
}

SEC("tracepoint/filemap/mm_filemap_map_pages")
int dc_pc_around_tp(void *ctx)
{
	dc_run();
	account(AROUND, 0);
	return 0;
}

DC_SEC_LICENSE;
