#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The oldest kernel the BPF objects can load on, by what their code calls.

Reads each object's executable sections (ELF, little endian, no tools) and
lists the helpers its instructions call. A helper newer than 5.15's last,
bpf_task_pt_regs (id 175), fails the test: the system-call family loaded
only on 5.17 and later while its path walk used bpf_loop (181), which kept
it off 5.15 LTS (Ubuntu 22.04) and kernels like it, and such a call is
easy to add back without noticing: the host and the VM test's kernels
(6.18, 6.1) have them all.

Calls to kernel functions (kfuncs) are not examined: an object file tells
them from calls of its own functions only by their relocations, and the
programs that make them (bpf_rdonly_cast, 6.2) are loaded first and have a
fallback (docs/design.md). Helpers of fentry and fexit programs are listed,
not failed (the file-system layer's fexit
programs read the return value with bpf_get_func_ret, 5.17): a kernel that
refuses them gets the layer on kprobes, said in its detail.

usage: bpf_floor.py OBJECT.bpf.o ...
"""
import os
import re
import struct
import sys

NEWEST_OK = 175  # bpf_task_pt_regs, the last helper 5.15 added
CALL = 0x85      # BPF_JMP | BPF_CALL
FALLBACK = ("fentry/", "fexit/")  # sections whose programs have a fallback


def helper_names():
    """{id: name} from the uapi header, where it is installed."""
    try:
        with open("/usr/include/linux/bpf.h") as f:
            s = f.read()
    except OSError:
        return {}
    m = re.search(r"#define ___BPF_FUNC_MAPPER\(FN, ctx\.\.\.\)(.*?)\n\n", s, re.S) or \
        re.search(r"#define __BPF_FUNC_MAPPER\(FN\)(.*?)\n\n", s, re.S)
    if not m:
        return {}
    out = {}
    for i, (name, num) in enumerate(re.findall(r"FN\((\w+)(?:,\s*(\d+))?", m.group(1))):
        out[int(num) if num else i] = name
    return out


def sections(path):
    """[(name, bytes)] of the executable sections of a 64-bit ELF."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError("%s: not a 64-bit little-endian ELF" % path)
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    hdrs = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    strtab = hdrs[shstrndx]
    strs = data[strtab[4]:strtab[4] + strtab[5]]
    out = []
    for name_off, typ, flags, _, off, size, *_ in hdrs:
        if typ == 1 and flags & 0x4:  # SHT_PROGBITS, SHF_EXECINSTR
            name = strs[name_off:strs.index(b"\0", name_off)].decode()
            out.append((name, data[off:off + size]))
    return out


def calls(code):
    """The helper ids one section's instructions call."""
    helpers = set()
    i = 0
    while i + 8 <= len(code):
        op, regs = code[i], code[i + 1]
        imm, = struct.unpack_from("<i", code, i + 4)
        if op == 0x18:  # ld_imm64 takes two slots
            i += 16
            continue
        if op == CALL and regs >> 4 == 0 and imm >= 0:  # src_reg 0: a helper
            helpers.add(imm)
        i += 8
    return helpers


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    names = helper_names()
    failed = 0
    for obj in sys.argv[1:]:
        used = {}
        for sec, code in sections(obj):
            for x in calls(code):
                used.setdefault(x, []).append(sec)
        newest = max(used) if used else None
        print("%s: %d helpers, the newest %s (%s)" % (
            os.path.basename(obj), len(used), newest, names.get(newest, "?")))
        for x in sorted(used):
            if x <= NEWEST_OK:
                continue
            bare = sorted({s for s in used[x] if not s.startswith(FALLBACK)})
            if bare:
                failed += 1
                print("not ok - %s calls helper %d (%s), newer than 5.15 LTS, in %s"
                      % (os.path.basename(obj), x, names.get(x, "?"), ", ".join(bare)))
            else:
                print("  helper %d (%s), newer than 5.15, only in %d fentry/fexit programs "
                      "(kprobes where refused)" % (x, names.get(x, "?"), len(set(used[x]))))
    print("%d objects, %d helpers newer than 5.15" % (len(sys.argv) - 1, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
