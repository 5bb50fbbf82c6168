// SPDX-License-Identifier: GPL-2.0
/*
 * Library layer: uprobes on the functions the configuration names (libc's
 * file API, MPI-IO, HDF5, ...). One entry and one return program serve every
 * function; the attachment's cookie says which function it is, and whether
 * its return value is a byte count. Uprobes cost microseconds per call:
 * this layer is off unless libraries are configured.
 */
#include "dc_vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#define DC_FN_LAYER DC_LAYER_LIB
#include "func.bpf.h"

/* libbpf 1.1 has no BPF_UPROBE; uprobes pass the same pt_regs as kprobes */
SEC("uprobe")
int BPF_KPROBE(dc_up_entry)
{
	fn_entry((__u32)bpf_get_attach_cookie(ctx), false);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(dc_up_return, long ret)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);

	fn_return(ret, (__u32)cookie, cookie & DC_FN_COOKIE_BYTES, false);
	return 0;
}

DC_SEC_LICENSE;
