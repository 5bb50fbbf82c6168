#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""How often a request finds both ways of its set taken (and goes to the
spare hash), under three ways of choosing the set (bpf/block.bpf.c,
ptr_set): a hash of the whole address (before), runs of sets aligned to
their length, and runs starting at any set (kept). A model, not a
measurement: queues of requests carved from 64 KiB chunks at random
addresses, as blk_mq_alloc_rqs carves them, and in flight either a run of
consecutive tags of each queue from a random tag (sbitmap hands a CPU's
tags out from a hint that starts at a random tag and moves on), the
lowest tags of each queue, or a random sample of all requests.

usage: blockset_sim.py [TRIALS]
"""
import random
import sys

GOLD, M64 = 0x9E3779B97F4A7C15, (1 << 64) - 1


def whole(p, mask, shift):
    return ((p * GOLD & M64) >> 32) & mask


def aligned(p, mask, shift):
    run = ((p >> 14) * GOLD & M64) >> 32
    return ((run << (14 - shift)) + ((p & 0x3fff) >> shift)) & mask


def anywhere(p, mask, shift):
    run = ((p >> 14) * GOLD & M64) >> 32
    return (run + ((p & 0x3fff) >> shift)) & mask


def spilled(queues, depth, size, inflight, how, sets, rng):
    rqs = []
    for q in range(queues):
        per, n = 65536 // size, 0
        while n < depth:
            base = 0xffff888000000000 | rng.randrange(1 << 20, 1 << 30) * 65536
            rqs += [(n + i, base + i * size, q) for i in range(min(per, depth - n))]
            n += per
    each = inflight // queues
    if how == "window":
        start = [rng.randrange(depth) for _ in range(queues)]
        pick = [r for r in rqs if (r[0] - start[r[2]]) % depth < each]
    elif how == "lowest":
        pick = [r for r in rqs if r[0] < each]
    else:
        pick = rng.sample(rqs, each * queues)
    out = []
    for f in (whole, aligned, anywhere):
        used, spill = {}, 0
        for _, p, _ in pick:
            s = f(p, sets - 1, 8)
            used[s] = used.get(s, 0) + 1
            spill += used[s] > 2
        out.append(spill / len(pick))
    return out


def main():
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    rng = random.Random(1)
    sets = 4096  # maps.block_request_slots' default, two ways a set
    print("%-44s %8s %8s %8s" % ("queues x depth, request size, in flight", "whole", "aligned",
                                 "anywhere"))
    for q, d, size, n in ((32, 1023, 448, 2048), (64, 1023, 448, 4096), (8, 128, 384, 1024),
                          (4, 1023, 448, 512)):
        for how in ("window", "lowest", "random"):
            r = [spilled(q, d, size, n, how, sets, rng) for _ in range(trials)]
            print("%-44s %7.2f%% %7.2f%% %7.2f%%" % (
                "%d x %d, %d B, %d (%s)" % (q, d, size, n // q * q, how),
                *(100 * sum(x[i] for x in r) / trials for i in range(3))))

if __name__ == "__main__":
    main()
