#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The benchmark suite's BCC tracer (python3-bpfcc, the technology of the
original DataCrumbs): the same aggregation as the suite's bpftrace script,
count and time per (pid, system call) and per block device (requests, bytes,
issue-to-completion time). Only tracepoint arguments, whose layout BCC reads
from the running kernel's tracefs format files, and no kernel structure:
BCC still compiles with kernel headers (BCC_KERNEL_SOURCE), which need not
match the running kernel for this program. Prints "ready" once attached,
exits on SIGINT or SIGTERM. Runs under Debian's /usr/bin/python3."""
import signal

from bcc import BPF

PROG = r"""
struct skey { u32 pid; u32 nr; };
struct sval { u64 count; u64 time_ns; };
struct rkey { u32 dev; u64 sector; };
struct bval { u64 count; u64 bytes; u64 time_ns; };
BPF_HASH(start, u32, u64, 65536);
BPF_HASH(sagg, struct skey, struct sval, 16384);
BPF_HASH(rq, struct rkey, u64, 16384);
BPF_HASH(bagg, u32, struct bval, 256);

TRACEPOINT_PROBE(raw_syscalls, sys_enter) {
    u32 tid = bpf_get_current_pid_tgid();
    u64 ts = bpf_ktime_get_ns();
    start.update(&tid, &ts);
    return 0;
}

TRACEPOINT_PROBE(raw_syscalls, sys_exit) {
    u64 id = bpf_get_current_pid_tgid();
    u32 tid = id;
    u64 *ts = start.lookup(&tid);
    if (!ts)
        return 0;
    struct skey k = {.pid = id >> 32, .nr = args->id};
    struct sval zero = {}, *v = sagg.lookup_or_try_init(&k, &zero);
    if (v) {
        v->count++;
        v->time_ns += bpf_ktime_get_ns() - *ts;
    }
    start.delete(&tid);
    return 0;
}

TRACEPOINT_PROBE(block, block_rq_issue) {
    struct rkey k = {.dev = args->dev, .sector = args->sector};
    u64 ts = bpf_ktime_get_ns();
    rq.update(&k, &ts);
    return 0;
}

TRACEPOINT_PROBE(block, block_rq_complete) {
    struct rkey k = {.dev = args->dev, .sector = args->sector};
    u64 *ts = rq.lookup(&k);
    if (!ts)
        return 0;
    u32 dev = args->dev;
    struct bval zero = {}, *v = bagg.lookup_or_try_init(&dev, &zero);
    if (v) {
        v->count++;
        v->bytes += (u64)args->nr_sector * 512;
        v->time_ns += bpf_ktime_get_ns() - *ts;
    }
    rq.delete(&k);
    return 0;
}
"""


def main():
    signal.signal(signal.SIGTERM, lambda *_: signal.raise_signal(signal.SIGINT))
    b = BPF(text=PROG)
    print("ready", flush=True)
    try:
        signal.pause()
    except KeyboardInterrupt:
        pass
    b.cleanup()


if __name__ == "__main__":
    main()
