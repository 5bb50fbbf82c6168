// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "elfsyms.h"
#include "symbolize.h"

struct ksym {
	uint64_t addr;
	uint32_t name; /* offset in the arena */
};

struct usym {
	uint64_t addr, size;
	uint32_t name;
};

struct seg {
	uint64_t off, vaddr, filesz;
};

/* One mapped file's symbols, cached by (dev, ino). */
struct elfobj {
	uint64_t dev, ino;
	char *path;
	char build_id[41];
	struct seg *segs;
	size_t nsegs;
	struct usym *syms;
	size_t nsyms;
	char *names;
	uint64_t bytes, tick;
	bool failed; /* no symbols could be read: frames keep object + offset */
	/* the process whose copy could not be opened (it exited, or its
	 * map_files was refused): another process mapping the file retries,
	 * once a batch (a file no process can open costs one try a drain) */
	uint32_t open_failed_pid;
	uint64_t open_failed_batch;
	struct elfobj *next;
};

struct mapping {
	uint64_t start, end, pgoff, dev, ino;
	char *path;
};

struct procmaps {
	uint32_t pid;
	bool read_ok;
	uint64_t ident; /* the address space last announced; 0: none */
	uint64_t tick;
	uint64_t batch; /* the batch it was last read in: one re-read per batch */
	struct mapping *m;
	size_t n;
};

struct symbolizer {
	struct ksym *ksyms;
	size_t nksyms;
	char *karena;
	size_t karena_len;
	struct elfobj *objs;
	uint64_t max_bytes, bytes, tick;
	struct procmaps *pids;
	unsigned max_pids, npids;
	struct procmaps *last; /* frames come in runs of one process */
	uint64_t batch;
	struct sym_stats st;
};

int symbolizer_new(uint64_t max_bytes, unsigned max_pids, struct symbolizer **ret)
{
	struct symbolizer *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->max_bytes = max_bytes;
	s->max_pids = max_pids ? max_pids : 1;
	s->pids = calloc(s->max_pids, sizeof(*s->pids));
	if (!s->pids) {
		free(s);
		return -ENOMEM;
	}
	elf_version(EV_CURRENT);
	*ret = s;
	return 0;
}

static void obj_free(struct elfobj *o)
{
	free(o->path);
	free(o->segs);
	free(o->syms);
	free(o->names);
	free(o);
}

static void pid_clear(struct procmaps *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->m[i].path);
	free(p->m);
	*p = (struct procmaps){};
}

struct symbolizer *symbolizer_free(struct symbolizer *s)
{
	if (!s)
		return NULL;
	free(s->ksyms);
	free(s->karena);
	for (struct elfobj *o = s->objs, *n; o; o = n) {
		n = o->next;
		obj_free(o);
	}
	for (unsigned i = 0; i < s->max_pids; i++)
		pid_clear(&s->pids[i]);
	free(s->pids);
	free(s);
	return NULL;
}

/* Hand-rolled field parsing: /proc/<pid>/maps of a large process is
 * thousands of lines read every time a process is first seen, and sscanf
 * costs several times this (more where libc is uprobed). */
static const char *hex_field(const char *p, uint64_t *v)
{
	uint64_t x = 0;
	const char *s = p;

	for (;; p++) {
		unsigned d;

		if (*p >= '0' && *p <= '9')
			d = (unsigned)(*p - '0');
		else if (*p >= 'a' && *p <= 'f')
			d = (unsigned)(*p - 'a' + 10);
		else if (*p >= 'A' && *p <= 'F')
			d = (unsigned)(*p - 'A' + 10);
		else
			break;
		x = x << 4 | d;
	}
	*v = x;
	return p == s ? NULL : p;
}

static const char *dec_field(const char *p, uint64_t *v)
{
	uint64_t x = 0;
	const char *s = p;

	for (; *p >= '0' && *p <= '9'; p++)
		x = x * 10 + (uint64_t)(*p - '0');
	*v = x;
	return p == s ? NULL : p;
}

static const char *skip(const char *p, char c)
{
	return p && *p == c ? p + 1 : NULL;
}

static int by_kaddr(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

int symbolizer_load_kallsyms(struct symbolizer *s, const char *path)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	/* built apart and swapped in whole: a read again (modules loaded) that
	 * fails keeps the table it would have replaced */
	_cleanup_free_ struct ksym *ks = NULL;
	_cleanup_free_ char *arena = NULL;
	size_t n = 0, len_all = 0, cap = 0, acap = 0;
	char line[512];

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		const char *p = line, *name;
		char type;
		uint64_t addr;
		size_t len;

		p = skip(hex_field(p, &addr), ' ');
		if (!p || !p[0] || p[1] != ' ')
			continue;
		type = p[0];
		name = p + 2;
		/* text only: data symbols would name return addresses wrongly */
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		if (!addr)
			continue; /* kptr_restrict hides addresses */
		len = strcspn(name, " \t\n");
		if (!len || len > 255)
			continue;
		if (len_all + len + 1 > acap) {
			char *x = realloc(arena, acap = (acap + len) * 2);

			if (!x)
				return -ENOMEM;
			arena = x;
		}
		if (n == cap) {
			struct ksym *k = realloc(ks, (cap = cap ? cap * 2 : 4096) * sizeof(*k));

			if (!k)
				return -ENOMEM;
			ks = k;
		}
		memcpy(arena + len_all, name, len);
		arena[len_all + len] = 0;
		ks[n++] = (struct ksym){addr, (uint32_t)len_all};
		len_all += len + 1;
	}
	qsort_safe(ks, n, sizeof(*ks), by_kaddr);
	free(s->ksyms);
	free(s->karena);
	s->ksyms = TAKE_PTR(ks);
	s->karena = TAKE_PTR(arena);
	s->nksyms = n;
	s->karena_len = len_all;
	return 0;
}

size_t sym_kernel_count(const struct symbolizer *s)
{
	return s->nksyms;
}

const char *sym_kernel(const struct symbolizer *s, uint64_t addr)
{
	size_t lo = 0, hi = s->nksyms;

	/* the last symbol at or below addr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->ksyms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? s->karena + s->ksyms[lo - 1].name : NULL;
}

static int by_uaddr(const void *a, const void *b)
{
	const struct usym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static void read_build_id(Elf *e, char out[41])
{
	Elf_Scn *scn = NULL;

	out[0] = 0;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		GElf_Nhdr nh;
		size_t off = 0, noff, doff;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		d = elf_getdata(scn, NULL);
		while (d && (off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((char *)d->d_buf + noff, "GNU", 4)) {
				size_t n = nh.n_descsz > 20 ? 20 : nh.n_descsz;

				for (size_t i = 0; i < n; i++)
					snprintf(out + 2 * i, 3, "%02x",
						 ((unsigned char *)d->d_buf)[doff + i]);
				return;
			}
		}
	}
}

/* Symbols, load segments and build id of an open ELF file, the symbols'
 * arrays held under max_bytes (-EFBIG past it: a binary with more symbols
 * than the whole cache may hold is parsed once, not for every frame). */
static int obj_read(struct elfobj *o, int fd, uint64_t max_bytes)
{
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	Elf_Scn *scn = NULL, *symtab = NULL, *dynsym = NULL;
	size_t nph = 0, names_len = 0, names_cap = 0, cap = 0;
	int r = -EINVAL;

	if (!e || elf_kind(e) != ELF_K_ELF)
		goto out;
	read_build_id(e, o->build_id);
	if (elf_getphdrnum(e, &nph))
		goto out;
	o->segs = calloc(nph ? nph : 1, sizeof(*o->segs));
	if (!o->segs) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD)
			o->segs[o->nsegs++] = (struct seg){ph.p_offset, ph.p_vaddr, ph.p_filesz};
	}
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB)
			symtab = scn;
		else if (sh.sh_type == SHT_DYNSYM)
			dynsym = scn;
	}
	/* a stripped binary keeps only its exported functions in .dynsym */
	scn = symtab ? symtab : dynsym;
	if (scn) {
		GElf_Shdr sh;
		Elf_Data *d = elf_getdata(scn, NULL);
		size_t n;

		gelf_getshdr(scn, &sh);
		n = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
		for (size_t i = 0; d && i < n; i++) {
			GElf_Sym sym;
			const char *name;
			size_t len;

			if (!gelf_getsym(d, (int)i, &sym))
				continue;
			if (GELF_ST_TYPE(sym.st_info) != STT_FUNC &&
			    GELF_ST_TYPE(sym.st_info) != STT_GNU_IFUNC)
				continue;
			if (sym.st_shndx == SHN_UNDEF || !sym.st_value)
				continue;
			name = elf_strptr(e, sh.sh_link, sym.st_name);
			if (!name || !name[0])
				continue;
			len = strlen(name) + 1;
			/* what the object will be charged (o->bytes, below), with the
			 * names buffer as it is about to grow */
			if (sizeof(*o) + nph * sizeof(*o->segs) +
				    (o->nsyms + 1) * sizeof(*o->syms) +
				    (names_len + len > names_cap ? (names_cap + len) * 2
								 : names_cap) >
				max_bytes ||
			    names_len + len > UINT32_MAX) {
				r = -EFBIG;
				goto out;
			}
			if (names_len + len > names_cap) {
				char *a = realloc(o->names, names_cap = (names_cap + len) * 2);

				if (!a) {
					r = -ENOMEM;
					goto out;
				}
				o->names = a;
			}
			if (o->nsyms == cap) {
				struct usym *u =
				    realloc(o->syms, (cap = cap ? cap * 2 : 256) * sizeof(*u));

				if (!u) {
					r = -ENOMEM;
					goto out;
				}
				o->syms = u;
			}
			memcpy(o->names + names_len, name, len);
			o->syms[o->nsyms++] =
			    (struct usym){sym.st_value, sym.st_size, (uint32_t)names_len};
			names_len += len;
		}
	}
	qsort_safe(o->syms, o->nsyms, sizeof(*o->syms), by_uaddr);
	/* one entry per address, the best alias's name */
	{
		size_t w = 0;

		for (size_t i = 0; i < o->nsyms; i++) {
			if (w && o->syms[w - 1].addr == o->syms[i].addr) {
				if (elf_better_name(o->names + o->syms[i].name,
						    o->names + o->syms[w - 1].name))
					o->syms[w - 1].name = o->syms[i].name;
				if (o->syms[i].size > o->syms[w - 1].size)
					o->syms[w - 1].size = o->syms[i].size;
				continue;
			}
			o->syms[w++] = o->syms[i];
		}
		o->nsyms = w;
	}
	o->bytes = sizeof(*o) + o->nsyms * sizeof(*o->syms) + names_cap + nph * sizeof(*o->segs);
	r = 0;
out:
	if (e)
		elf_end(e);
	return r;
}

static void evict(struct symbolizer *s)
{
	while (s->bytes > s->max_bytes && s->objs) {
		struct elfobj **victim = NULL;

		for (struct elfobj **p = &s->objs; *p; p = &(*p)->next)
			if (!victim || (*p)->tick < (*victim)->tick)
				victim = p;
		{
			struct elfobj *o = *victim;

			*victim = o->next;
			s->bytes -= o->bytes;
			obj_free(o);
			s->st.elf_evictions++;
		}
	}
}

static struct elfobj *obj_get(struct symbolizer *s, uint32_t pid, const struct mapping *m)
{
	char p[4200];
	struct elfobj *o;
	_cleanup_close_ int fd = -1; /* everything needed is copied out: no fd held */

	for (struct elfobj **q = &s->objs; (o = *q); q = &o->next)
		if (o->dev == m->dev && o->ino == m->ino) {
			if (o->open_failed_pid && o->open_failed_pid != pid &&
			    o->open_failed_batch != s->batch) {
				/* this process may still be there to open it */
				*q = o->next;
				s->bytes -= o->bytes;
				obj_free(o);
				break;
			}
			o->tick = ++s->tick;
			return o;
		}
	o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	o->dev = m->dev;
	o->ino = m->ino;
	o->path = strdup(m->path);
	/* map_files opens the very file mapped, in whatever mount namespace */
	snprintf(p, sizeof(p), "/proc/%u/map_files/%" PRIx64 "-%" PRIx64, pid, m->start, m->end);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(p, sizeof(p), "/proc/%u/root%s", pid, m->path);
		fd = open(p, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0) {
		o->open_failed_pid = pid ? pid : UINT32_MAX;
		o->open_failed_batch = s->batch;
	}
	if (!o->path || fd < 0 || obj_read(o, fd, s->max_bytes) < 0) {
		/* kept small: what a partial read allocated goes */
		o->failed = true;
		s->st.elf_failures++;
		free(o->segs);
		free(o->syms);
		free(o->names);
		o->segs = NULL;
		o->syms = NULL;
		o->names = NULL;
		o->nsegs = o->nsyms = 0;
		o->bytes = sizeof(*o);
	} else
		s->st.elf_loads++;
	o->tick = ++s->tick;
	o->next = s->objs;
	s->objs = o;
	s->bytes += o->bytes;
	evict(s);
	/* an object bigger than the whole budget is evicted at once: re-find */
	for (struct elfobj *q = s->objs; q; q = q->next)
		if (q == o)
			return o;
	return NULL;
}

static struct procmaps *pid_slot(struct symbolizer *s, uint32_t pid, bool *fresh)
{
	struct procmaps *free_slot = NULL, *oldest = NULL;

	*fresh = false;
	if (s->last && s->last->pid == pid && s->last->tick) {
		s->last->tick = ++s->tick;
		return s->last;
	}
	for (unsigned i = 0; i < s->max_pids; i++) {
		struct procmaps *p = &s->pids[i];

		if (p->pid == pid && p->tick) {
			p->tick = ++s->tick;
			return s->last = p;
		}
		if (!p->tick && !free_slot)
			free_slot = p;
		if (p->tick && (!oldest || p->tick < oldest->tick))
			oldest = p;
	}
	if (!free_slot) {
		pid_clear(oldest);
		free_slot = oldest;
		s->npids--;
	}
	free_slot->pid = pid;
	free_slot->tick = ++s->tick;
	s->npids++;
	*fresh = true;
	return s->last = free_slot;
}

static int maps_read(struct symbolizer *s, struct procmaps *p)
{
	char path[64], line[4400];
	_cleanup_fclose_ FILE *f = NULL;
	size_t cap = 0;

	s->st.maps_reads++;
	snprintf(path, sizeof(path), "/proc/%u/maps", p->pid);
	f = fopen(path, "re");
	if (!f) {
		/* gone: the mappings read while it ran (announced) stay the best
		 * there is */
		s->st.maps_failures++;
		p->read_ok = false;
		return -errno;
	}
	for (size_t i = 0; i < p->n; i++)
		free(p->m[i].path);
	p->n = 0;
	while (fgets(line, sizeof(line), f)) {
		/* start-end perms offset major:minor inode path */
		uint64_t start, end, off, maj, min, ino;
		const char *q = line, *perms;
		char *name;

		q = skip(hex_field(q, &start), '-');
		q = skip(hex_field(q, &end), ' ');
		if (!q || strlen(q) < 5 || q[4] != ' ')
			continue;
		perms = q;
		q = skip(hex_field(q + 5, &off), ' ');
		q = skip(hex_field(q, &maj), ':');
		q = skip(hex_field(q, &min), ' ');
		q = dec_field(q, &ino);
		if (!q)
			continue;
		if (perms[2] != 'x')
			continue;
		while (*q == ' ')
			q++;
		name = (char *)q;
		name[strcspn(name, "\n")] = 0;
		if (p->n == cap) {
			struct mapping *m = realloc(p->m, (cap = cap ? cap * 2 : 16) * sizeof(*m));

			if (!m)
				return -ENOMEM;
			p->m = m;
		}
		p->m[p->n++] =
		    (struct mapping){start, end, off, (uint64_t)maj << 32 | min, ino, strdup(name)};
	}
	p->read_ok = true;
	p->batch = s->batch;
	return 0;
}

void sym_new_batch(struct symbolizer *s)
{
	s->batch++;
}

void sym_note_pid(struct symbolizer *s, uint32_t pid, uint64_t ident)
{
	bool fresh;
	struct procmaps *p = pid_slot(s, pid, &fresh);

	if (!fresh && (!ident || p->ident == ident))
		return;
	p->ident = ident;
	if (maps_read(s, p) < 0)
		return;
	/* objects are cached by file, shared by every process mapping them:
	 * only a binary not seen before costs a read here */
	for (size_t i = 0; i < p->n; i++) {
		const struct mapping *m = &p->m[i];

		if (m->path[0] && m->path[0] != '[' && m->ino)
			obj_get(s, pid, m);
	}
}

static const struct mapping *find_mapping(const struct procmaps *p, uint64_t addr)
{
	for (size_t i = 0; i < p->n; i++)
		if (addr >= p->m[i].start && addr < p->m[i].end)
			return &p->m[i];
	return NULL;
}

int sym_user(struct symbolizer *s, uint32_t pid, uint64_t addr, struct sym_frame *f)
{
	bool fresh;
	struct procmaps *p = pid_slot(s, pid, &fresh);
	const struct mapping *m;
	struct elfobj *o;
	uint64_t off, vaddr = 0;
	bool in_seg = false;

	*f = (struct sym_frame){.build_id = ""};
	if (fresh)
		maps_read(s, p);
	m = find_mapping(p, addr);
	if (!m && !fresh && p->read_ok && p->batch != s->batch) {
		/* mapped since we looked (dlopen): look again, once a batch (a
		 * frame-pointer-less walk yields addresses no mapping holds) */
		maps_read(s, p);
		m = find_mapping(p, addr);
	}
	if (!m)
		return -ENOENT;
	off = addr - m->start + m->pgoff;
	f->object = m->path;
	f->offset = off;
	if (!m->path[0] || m->path[0] == '[' || !m->ino)
		return 0; /* [vdso], anonymous JIT code: no file to read */
	o = obj_get(s, pid, m);
	if (!o)
		return 0;
	f->build_id = o->build_id;
	if (o->failed)
		return 0;
	for (size_t i = 0; i < o->nsegs; i++)
		if (off >= o->segs[i].off && off < o->segs[i].off + o->segs[i].filesz) {
			vaddr = off - o->segs[i].off + o->segs[i].vaddr;
			in_seg = true;
			break;
		}
	if (!in_seg)
		return 0;
	{
		size_t lo = 0, hi = o->nsyms;

		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (o->syms[mid].addr <= vaddr)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo) {
			const struct usym *u = &o->syms[lo - 1];

			/* past a sized symbol's end is not in it (padding, local
			 * functions .dynsym does not list) */
			if (!u->size || vaddr < u->addr + u->size)
				f->name = o->names + u->name;
		}
	}
	return 0;
}

void sym_get_stats(const struct symbolizer *s, struct sym_stats *st)
{
	*st = s->st;
	st->cache_bytes = s->bytes;
	st->pids = s->npids;
}

void sym_clean_frame(const char *in, char *out, size_t len)
{
	size_t o = 0;

	if (!len)
		return;
	for (; *in && o + 1 < len; in++) {
		unsigned char c = (unsigned char)*in;

		out[o++] = c == ';' ? ':' : c < 0x20 || c == 0x7f ? '?' : (char)c;
	}
	out[o] = 0;
}
