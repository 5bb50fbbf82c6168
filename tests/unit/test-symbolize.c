// SPDX-License-Identifier: Apache-2.0
/* Symbolization: kallsyms parsing and lookup, this process's own ELF
 * symbols through /proc/self/maps, the bounded cache; and the call-site
 * check the BPF programs apply (include/datacrumbs/stacks.h). */
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "datacrumbs/stacks.h"
#include "symbolize.h"
#include "tap.h"

static void test_kallsyms(void)
{
	char path[] = "/tmp/dc-kallsyms-XXXXXX";
	int fd = mkstemp(path);
	struct symbolizer *s;
	const char *text = "ffffffff81000000 T _stext\n"
			   "ffffffff81000100 t do_one\n"
			   "ffffffff81000200 D some_data\n" /* data: never a frame */
			   "ffffffff81000300 T vfs_write\n"
			   "ffffffffc0001000 t ext4_sync_file\t[ext4]\n"
			   "garbage line\n"
			   "0000000000000000 T hidden\n";

	CHECK(fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text), "temp file");
	close(fd);
	CHECK(symbolizer_new(1 << 20, 8, &s) == 0, "new");
	CHECK(symbolizer_load_kallsyms(s, path) == 0, "load");
	CHECK_STR(sym_kernel(s, 0xffffffff81000150) ?: "", "do_one", "inside a function");
	CHECK_STR(sym_kernel(s, 0xffffffff81000250) ?: "", "do_one", "data symbols are skipped");
	CHECK_STR(sym_kernel(s, 0xffffffff81000300) ?: "", "vfs_write", "at the start");
	CHECK_STR(sym_kernel(s, 0xffffffffc0001010) ?: "", "ext4_sync_file", "module symbol");
	CHECK(sym_kernel(s, 0xffffffff80000000) == NULL, "below every symbol: unknown");
	CHECK(symbolizer_load_kallsyms(s, "/nonexistent/kallsyms") == -ENOENT,
	      "missing file: -ENOENT");
	CHECK_STR(sym_kernel(s, 0xffffffff81000150) ?: "", "do_one",
		  "a read that failed keeps the table");
	/* read again after a module was loaded: its symbols, the others kept */
	{
		const char *more = "ffffffffc0002000 t nfs_file_write\t[nfs]\n";

		fd = open(path, O_WRONLY | O_APPEND);
		CHECK(fd >= 0 && write(fd, more, strlen(more)) == (ssize_t)strlen(more),
		      "module appended");
		close(fd);
	}
	CHECK(symbolizer_load_kallsyms(s, path) == 0 && sym_kernel_count(s) == 5, "read again: %zu",
	      sym_kernel_count(s));
	CHECK_STR(sym_kernel(s, 0xffffffffc0002010) ?: "", "nfs_file_write",
		  "the module loaded since is named");
	CHECK_STR(sym_kernel(s, 0xffffffff81000300) ?: "", "vfs_write", "the others still are");
	symbolizer_free(s);
	unlink(path);
}

static void test_call_site(void)
{
	const uint8_t rel32[] = {0x90, 0x90, 0x90, 0xe8, 1, 2, 3, 4};
	const uint8_t reg[] = {0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0xff, 0xd0};	 /* call *%rax */
	const uint8_t mem8[] = {0x90, 0x90, 0x90, 0x90, 0x90, 0xff, 0x50, 0x08}; /* call *8(%rax) */
	const uint8_t rip[] = {0x90, 0x90, 0xff, 0x15, 1, 2, 3, 4};		 /* call *x(%rip) */
	const uint8_t none[] = {0x48, 0x89, 0xc7, 0x31, 0xc0, 0x5d, 0xc3, 0x90};

	const uint8_t sib32[] = {0x90, 0xff, 0x94, 0xc8, 1, 2, 3, 4}; /* call *x(%rax,%rcx,8) */
	const uint8_t jmp[] = {0x90, 0x90, 0x90, 0xe9, 1, 2, 3, 4};   /* jmp rel32 */
	const uint8_t jmpreg[] = {0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0xff, 0xe0}; /* jmp *%rax */

	CHECK(sizeof(rel32) == DC_CALL_SITE_BYTES, "the BPF programs read as many bytes");
	CHECK(dc_follows_call_x86(rel32), "call rel32");
	CHECK(dc_follows_call_x86(reg), "call through a register");
	CHECK(dc_follows_call_x86(mem8), "call through memory + disp8");
	CHECK(dc_follows_call_x86(rip), "call through rip-relative memory");
	CHECK(dc_follows_call_x86(sib32), "call through memory + SIB + disp32");
	CHECK(!dc_follows_call_x86(none), "mov/xor/pop/ret/nop: not after a call");
	CHECK(!dc_follows_call_x86(jmp), "jmp rel32: not a call");
	CHECK(!dc_follows_call_x86(jmpreg), "jmp through a register: not a call");
}

static void test_clean(void)
{
	char out[16];

	sym_clean_frame("a;b\nc\x7f", out, sizeof(out));
	CHECK_STR(out, "a:b?c?", "';' and control characters replaced");
	sym_clean_frame("0123456789abcdefghij", out, sizeof(out));
	CHECK_STR(out, "0123456789abcde", "cut to the buffer");
}

static uintptr_t ret_addr;

__attribute__((noinline)) static void callee(void)
{
	ret_addr = (uintptr_t)__builtin_return_address(0);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static int dc_test_marker_fn(int x)
{
	callee();
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

static void test_self(void)
{
	struct symbolizer *s;
	struct sym_frame f;
	struct sym_stats st;

	dc_test_marker_fn(1);
	CHECK(symbolizer_new(64 << 20, 8, &s) == 0, "new");
	CHECK(sym_user(s, (uint32_t)getpid(), (uint64_t)(uintptr_t)dc_test_marker_fn + 1, &f) == 0,
	      "own address found in /proc/self/maps");
	CHECK_STR(f.name ?: "", "dc_test_marker_fn", "own function named from .symtab");
	CHECK(f.object && strstr(f.object, "test-symbolize"), "object is this binary (%s)",
	      f.object ?: "");
	CHECK(strlen(f.build_id) == 40, "GNU build id read (%s)", f.build_id);
	CHECK(sym_user(s, (uint32_t)getpid(), ret_addr, &f) == 0 &&
		  !strcmp(f.name ?: "", "dc_test_marker_fn"),
	      "a return address names its caller");
#if defined(__x86_64__)
	{
		/* the bytes the BPF program reads at capture, here from our own
		 * text (the asm hides from gcc that fn is a function's address) */
		uintptr_t fn = (uintptr_t)dc_test_marker_fn;

		__asm__("" : "+r"(fn));
		CHECK(dc_follows_call_x86((const uint8_t *)ret_addr - DC_CALL_SITE_BYTES),
		      "a real return address follows a call instruction");
		CHECK(!dc_follows_call_x86((const uint8_t *)fn - DC_CALL_SITE_BYTES),
		      "a function's first byte does not follow a call");
	}
#endif
	CHECK(sym_user(s, (uint32_t)getpid(), 8, &f) == -ENOENT, "unmapped address: -ENOENT");
	sym_get_stats(s, &st);
	CHECK_U64(st.elf_loads, 1, "one ELF file loaded");
	CHECK_U64(st.pids, 1, "one process's mappings held");
	symbolizer_free(s);

	/* a budget smaller than one file: nothing is held, the frame keeps
	 * its object and offset */
	CHECK(symbolizer_new(1, 8, &s) == 0, "new, 1-byte budget");
	CHECK(sym_user(s, (uint32_t)getpid(), (uint64_t)(uintptr_t)dc_test_marker_fn, &f) == 0 &&
		  f.name == NULL && f.object && f.offset > 0,
	      "over budget: object + offset, no name");
	sym_get_stats(s, &st);
	CHECK(st.elf_evictions == 1 && st.cache_bytes == 0, "evicted at once, cache empty");
	symbolizer_free(s);

	/* a budget above a failed entry's size but below this binary's
	 * symbols: the parse stops at the budget and the file is remembered
	 * as failed, not parsed again for every frame */
	CHECK(symbolizer_new(512, 8, &s) == 0, "new, 512-byte budget");
	for (int i = 0; i < 3; i++)
		CHECK(sym_user(s, (uint32_t)getpid(), (uint64_t)(uintptr_t)dc_test_marker_fn, &f) ==
			      0 &&
			  f.name == NULL && f.object && f.offset > 0,
		      "symbols past the budget: object + offset, no name (frame %d)", i);
	sym_get_stats(s, &st);
	CHECK(st.elf_loads == 0 && st.elf_failures == 1 && st.elf_evictions == 0,
	      "parsed once, kept as failed (loads %llu, failures %llu, evictions %llu)",
	      (unsigned long long)st.elf_loads, (unsigned long long)st.elf_failures,
	      (unsigned long long)st.elf_evictions);
	CHECK(st.cache_bytes > 0 && st.cache_bytes <= 4096,
	      "the failed entry fits the budget (%llu)", (unsigned long long)st.cache_bytes);
	symbolizer_free(s);

	/* the process table is bounded too */
	CHECK(symbolizer_new(64 << 20, 2, &s) == 0, "new, 2 processes");
	sym_note_pid(s, (uint32_t)getpid(), 0);
	sym_note_pid(s, 1, 0);
	sym_note_pid(s, (uint32_t)getppid(), 0);
	sym_get_stats(s, &st);
	CHECK_U64(st.pids, 2, "least recently used process dropped");
	symbolizer_free(s);
}

/* A process announced while it ran is named after it exited; one that was
 * not is not (its /proc entries are gone). */
static void test_exited(void)
{
	struct symbolizer *s, *late;
	struct sym_frame f;
	int go[2];
	pid_t child;
	char c = 0;

	if (pipe(go) < 0) {
		CHECK(false, "pipe");
		return;
	}
	child = fork();
	if (child == 0) {
		/* lives until the parent has looked, then exits */
		close(go[1]);
		(void)!read(go[0], &c, 1);
		_exit(0);
	}
	close(go[0]);
	CHECK(symbolizer_new(64 << 20, 8, &s) == 0 && symbolizer_new(64 << 20, 8, &late) == 0,
	      "new (two)");
	sym_note_pid(s, (uint32_t)child, 12345);
	close(go[1]);
	waitpid(child, NULL, 0);
	CHECK(sym_user(s, (uint32_t)child, (uint64_t)(uintptr_t)dc_test_marker_fn + 1, &f) == 0 &&
		  !strcmp(f.name ?: "", "dc_test_marker_fn"),
	      "announced, then exited: frame still named (%s)", f.name ?: "(none)");
	CHECK(sym_user(late, (uint32_t)child, (uint64_t)(uintptr_t)dc_test_marker_fn + 1, &f) ==
		  -ENOENT,
	      "not announced, exited: no mapping to name it by");
	symbolizer_free(s);
	symbolizer_free(late);
}

int main(void)
{
	test_exited();
	test_kallsyms();
	test_call_site();
	test_clean();
	test_self();
	return tap_done();
}
