/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_SYMBOLIZE_H
#define DC_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Addresses to names. Kernel addresses through a sorted copy of kallsyms
 * (text symbols, modules included), loaded once. User addresses through the
 * process's executable mappings (/proc/<pid>/maps, cached per process at
 * first sight, re-read when an address falls outside them) and the mapped
 * files' ELF symbol tables (.symtab, else .dynsym), cached per file (device,
 * inode) in an LRU bounded in bytes. A frame that cannot be named keeps its
 * object, file offset and GNU build id so a consumer can name it offline.
 */
struct symbolizer;

struct sym_stats {
	uint64_t elf_loads, elf_evictions, elf_failures;
	uint64_t maps_reads, maps_failures;
	uint64_t cache_bytes; /* ELF tables held now */
	uint64_t pids;	      /* processes whose mappings are held now */
};

int symbolizer_new(uint64_t max_bytes, unsigned max_pids, struct symbolizer **ret);
struct symbolizer *symbolizer_free(struct symbolizer *s);

/* Kernel symbols from a kallsyms-format file; -errno, or 0 (also when the
 * file shows only zero addresses: then every kernel frame is unknown). */
int symbolizer_load_kallsyms(struct symbolizer *s, const char *path);
size_t sym_kernel_count(const struct symbolizer *s);
/* NULL when unknown. */
const char *sym_kernel(const struct symbolizer *s, uint64_t addr);

struct sym_frame {
	const char *name;     /* function; NULL when not found */
	const char *object;   /* path of the mapped file; NULL when no mapping holds addr */
	const char *build_id; /* hex, "" when the file has none or could not be read */
	uint64_t offset;      /* file offset of addr in object */
};

/* Valid until the next call that may load or evict (any sym_user). */
int sym_user(struct symbolizer *s, uint32_t pid, uint64_t addr, struct sym_frame *f);
/*
 * A process announced while it runs (bpf/stacks.bpf.h stk_newpid): read its
 * mappings now and load the objects they map (through its map_files, which
 * vanish with it), so that its frames are named at the drain even if it has
 * exited by then. ident names the address space (0: unknown): another one
 * (a reused pid, an exec, new mappings) is read afresh, the same one is not.
 * Bounded by the same LRUs as the drain's lookups.
 */
void sym_note_pid(struct symbolizer *s, uint32_t pid, uint64_t ident);
/* A new batch of lookups (a window's drain): a process's mappings are
 * re-read at most once per batch when an address falls outside them. */
void sym_new_batch(struct symbolizer *s);
void sym_get_stats(const struct symbolizer *s, struct sym_stats *st);

/* Pure helpers, unit-tested. */
/* A frame name made safe for the collapsed format (no ';', no control
 * characters), at most len - 1 bytes. */
void sym_clean_frame(const char *in, char *out, size_t len);

#endif
