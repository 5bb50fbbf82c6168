// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elfsyms.h"
#include "macro.h"

struct cand {
	char name[128];
	uint64_t vaddr;
};

static bool matches(const char *patterns, const char *name)
{
	for (const char *p = patterns; *p;) {
		size_t n = strcspn(p, "\n");
		char pat[256];

		if (n && n < sizeof(pat)) {
			memcpy(pat, p, n);
			pat[n] = 0;
			if (!fnmatch(pat, name, 0))
				return true;
		}
		p += n + (p[n] == '\n');
	}
	return false;
}

bool elf_better_name(const char *a, const char *b)
{
	bool ua = a[0] == '_', ub = b[0] == '_';
	size_t la = strlen(a), lb = strlen(b);

	if (ua != ub)
		return !ua;
	if (la != lb)
		return la < lb;
	return strcmp(a, b) < 0;
}

static int by_vaddr(const void *x, const void *y)
{
	const struct cand *a = x, *b = y;

	return a->vaddr < b->vaddr ? -1 : a->vaddr > b->vaddr;
}

int elf_find_funcs(const char *path, const char *patterns, struct elf_func **ret, char *err,
		   size_t errlen)
{
	_cleanup_close_ int fd = -1;
	struct cand *c = NULL;
	size_t n = 0, cap = 0, out = 0, nph;
	struct elf_func *f = NULL;
	Elf_Scn *scn = NULL;
	Elf *e;
	int r = 0;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return snprintf(err, errlen, "libelf: %s", elf_errmsg(-1)), -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-r));
		return r;
	}
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF || elf_getphdrnum(e, &nph)) {
		snprintf(err, errlen, "%s: not an ELF file", path);
		if (e)
			elf_end(e);
		return -ENOEXEC;
	}
	/* both tables: .dynsym has what other objects link to, .symtab (when not
	 * stripped) internal functions too */
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *name;

			if (!gelf_getsym(d, (int)i, &s) || GELF_ST_TYPE(s.st_info) != STT_FUNC ||
			    s.st_shndx == SHN_UNDEF || !s.st_value)
				continue;
			name = elf_strptr(e, sh.sh_link, s.st_name);
			if (!name || strlen(name) >= sizeof(c->name) || !matches(patterns, name))
				continue;
			if (n == cap) {
				void *p = realloc(c, (cap = cap ? cap * 2 : 64) * sizeof(*c));

				if (!p) {
					r = -ENOMEM;
					goto done;
				}
				c = p;
			}
			strcpy(c[n].name, name);
			c[n++].vaddr = s.st_value;
		}
	}
	qsort_safe(c, n, sizeof(*c), by_vaddr);
	f = calloc(n ? n : 1, sizeof(*f));
	if (!f) {
		r = -ENOMEM;
		goto done;
	}
	for (size_t i = 0; i < n;) {
		size_t best = i, k = i;

		for (; k < n && c[k].vaddr == c[i].vaddr; k++)
			if (elf_better_name(c[k].name, c[best].name))
				best = k;
		/* virtual address -> file offset through the PT_LOAD holding it */
		for (size_t p = 0; p < nph; p++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(e, (int)p, &ph) || ph.p_type != PT_LOAD ||
			    !(ph.p_flags & PF_X))
				continue;
			if (c[best].vaddr >= ph.p_vaddr &&
			    c[best].vaddr < ph.p_vaddr + ph.p_memsz) {
				strcpy(f[out].name, c[best].name);
				f[out++].offset = c[best].vaddr - ph.p_vaddr + ph.p_offset;
				break;
			}
		}
		i = k;
	}
	*ret = f;
	f = NULL;
	r = (int)out;
done:
	free(f);
	free(c);
	elf_end(e);
	return r;
}
