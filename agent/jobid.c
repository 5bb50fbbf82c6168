// SPDX-License-Identifier: Apache-2.0
#include <string.h>

#include "jobid.h"

#define HEX    "0123456789abcdef"
#define DIGITS "0123456789"
#define BASE58 "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
/* systemd's VALID_CHARS plus '@' of template instances */
#define UNIT_CHARS "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz:-_.\\@"
#define ID_LEN	   64 /* container ids */

/* One path component: not NUL-terminated, never empty. */
struct comp {
	const char *s;
	size_t n;
};

static bool all_of(const char *s, size_t n, const char *set)
{
	if (!n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!s[i] || !strchr(set, s[i]))
			return false;
	return true;
}

static bool eq(struct comp c, const char *lit)
{
	return c.n == strlen(lit) && !memcmp(c.s, lit, c.n);
}

static bool starts(struct comp c, const char *lit)
{
	size_t k = strlen(lit);

	return c.n >= k && !memcmp(c.s, lit, k);
}

static bool ends(struct comp c, const char *lit)
{
	size_t k = strlen(lit);

	return c.n >= k && !memcmp(c.s + c.n - k, lit, k);
}

static struct comp skip(struct comp c, size_t k)
{
	return (struct comp){c.s + k, c.n - k};
}

static void set(char *dst, size_t cap, struct comp v)
{
	/* callers check sizes; a value that does not fit is not set at all */
	if (v.n >= cap)
		return;
	memcpy(dst, v.s, v.n);
	dst[v.n] = 0;
}

static bool unit_named(struct comp c, const char *suffix)
{
	return c.n > strlen(suffix) && c.n <= DC_JOBID_UNIT_MAX && ends(c, suffix) &&
	       all_of(c.s, c.n, UNIT_CHARS);
}

static bool container_id(struct comp c)
{
	return c.n == ID_LEN && all_of(c.s, c.n, HEX);
}

/* The systemd cgroup driver of docker, containerd (CRI), CRI-O and podman:
 * <runtime>-<id>.scope. The runtimes' helper scopes (crio-conmon-<id>,
 * libpod-conmon-<id>) hold the monitor, not the container, and fail the
 * hex test. */
static bool container_scope(struct comp c, struct comp *id)
{
	static const char *const prefixes[] = {"docker-", "cri-containerd-", "crio-", "libpod-"};

	if (!ends(c, ".scope"))
		return false;
	c.n -= strlen(".scope");
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (starts(c, prefixes[i]) && container_id(skip(c, strlen(prefixes[i])))) {
			*id = skip(c, strlen(prefixes[i]));
			return true;
		}
	return false;
}

/*
 * A pod UID as kubelet names the pod's cgroup: a UUID whose dashes the
 * systemd driver turns into '_' (sep), or 32 hex digits for a static pod
 * (a hash of its manifest). Written to out with dashes.
 */
static bool pod_uid(struct comp c, char sep, char *out)
{
	static const unsigned char groups[] = {8, 4, 4, 4, 12};
	size_t at = 0;

	if (c.n == 32 && all_of(c.s, c.n, HEX)) {
		set(out, DC_JOBID_POD_MAX + 1, c);
		return true;
	}
	if (c.n != 36)
		return false;
	for (size_t i = 0; i < sizeof(groups); i++) {
		if (i && c.s[at++] != sep)
			return false;
		if (!all_of(c.s + at, groups[i], HEX))
			return false;
		at += groups[i];
	}
	set(out, DC_JOBID_POD_MAX + 1, c);
	for (char *p = out; *p; p++)
		if (*p == sep)
			*p = '-';
	return true;
}

/* kubelet's systemd driver: [<root>-]kubepods[-besteffort|-burstable]-pod<uid>.slice,
 * <root> being a --cgroup-root slice such as kind's "kubelet". */
static bool pod_slice(struct comp c, char *out)
{
	static const char *const qos[] = {"kubepods", "kubepods-besteffort", "kubepods-burstable"};
	struct comp stem;
	size_t pos;

	if (!ends(c, ".slice"))
		return false;
	c.n -= strlen(".slice");
	/* the escaped UID has no '-': the pod marker is the last "-pod" */
	for (pos = c.n; pos >= 4 && memcmp(c.s + pos - 4, "-pod", 4); pos--)
		;
	if (pos < 4)
		return false;
	stem = (struct comp){c.s, pos - 4};
	for (size_t i = 0; i < sizeof(qos) / sizeof(qos[0]); i++) {
		size_t k = strlen(qos[i]);

		if (ends(stem, qos[i]) && (stem.n == k || stem.s[stem.n - k - 1] == '-'))
			return pod_uid(skip(c, pos), '_', out);
	}
	return false;
}

/* kubelet's cgroupfs driver puts pods in kubepods, or in its besteffort or
 * burstable child (guaranteed pods have no class directory) */
static bool qos_dir(struct comp prev, struct comp prev2)
{
	return eq(prev, "kubepods") ||
	       ((eq(prev, "besteffort") || eq(prev, "burstable")) && eq(prev2, "kubepods"));
}

/* job_<id>: Slurm job ids are 32-bit and start at 1 */
static bool slurm_job(struct comp c, struct comp *id)
{
	if (!starts(c, "job_"))
		return false;
	c = skip(c, 4);
	if (!all_of(c.s, c.n, DIGITS) || c.n > DC_JOBID_SLURM_MAX || c.s[0] == '0')
		return false;
	if (c.n == DC_JOBID_SLURM_MAX && memcmp(c.s, "4294967295", c.n) > 0)
		return false;
	*id = c;
	return true;
}

/* cgroup/v2: [<node>_]slurmstepd.scope/job_<id> (<node> when several slurmd
 * share a host); cgroup/v1: slurm[_<node>]/uid_<uid>/job_<id> */
static bool slurm_parent(struct comp prev, struct comp prev2)
{
	if (eq(prev, "slurmstepd.scope") || ends(prev, "_slurmstepd.scope"))
		return true;
	return starts(prev, "uid_") && all_of(prev.s + 4, prev.n - 4, DIGITS) &&
	       (eq(prev2, "slurm") || starts(prev2, "slurm_"));
}

/* Flux's sdexec runs each job shell as [imp-]shell-<rank>-<f58plain id>.service */
static bool flux_unit(struct comp c, struct comp *id)
{
	size_t digits;

	if (!ends(c, ".service"))
		return false;
	c.n -= strlen(".service");
	if (starts(c, "imp-"))
		c = skip(c, 4);
	if (!starts(c, "shell-"))
		return false;
	c = skip(c, 6);
	for (digits = 0; digits < c.n && c.s[digits] >= '0' && c.s[digits] <= '9'; digits++)
		;
	if (!digits || digits == c.n || c.s[digits] != '-')
		return false;
	c = skip(c, digits + 1);
	if (c.n < 2 || c.n > DC_JOBID_FLUX_MAX || c.s[0] != 'f' ||
	    !all_of(c.s + 1, c.n - 1, BASE58))
		return false;
	*id = c;
	return true;
}

void jobid_parse(const char *path, struct dc_jobid *out)
{
	struct comp prev = {"", 0}, prev2 = {"", 0}, c, id;
	bool after_pod = false;

	memset(out, 0, sizeof(*out));
	if (!path)
		return;
	for (const char *p = path; *p;) {
		bool pod = false;

		c = (struct comp){p, strcspn(p, "/")};
		p += c.n;
		if (*p)
			p++;
		if (!c.n)
			continue;

		if (unit_named(c, ".service") || unit_named(c, ".scope"))
			set(out->unit, sizeof(out->unit), c);
		else if (unit_named(c, ".slice"))
			set(out->slice, sizeof(out->slice), c);

		if (container_scope(c, &id))
			set(out->container, sizeof(out->container), id);
		/* cgroupfs drivers: /docker/<id>, and the container below a pod */
		else if ((eq(prev, "docker") || after_pod) && container_id(c))
			set(out->container, sizeof(out->container), c);
		else if (after_pod && starts(c, "crio-") && container_id(skip(c, 5)))
			set(out->container, sizeof(out->container), skip(c, 5));

		if (pod_slice(c, out->pod))
			pod = true;
		/* kubelet's cgroupfs driver: /kubepods[/besteffort|/burstable]/pod<uid> */
		else if (starts(c, "pod") && qos_dir(prev, prev2))
			pod = pod_uid(skip(c, 3), '-', out->pod);

		if (slurm_job(c, &id) && slurm_parent(prev, prev2))
			set(out->slurm_job, sizeof(out->slurm_job), id);

		if (flux_unit(c, &id))
			set(out->flux_job, sizeof(out->flux_job), id);

		prev2 = prev;
		prev = c;
		after_pod = pod;
	}
}

bool jobid_empty(const struct dc_jobid *j)
{
	return !j->unit[0] && !j->slice[0] && !j->container[0] && !j->pod[0] && !j->slurm_job[0] &&
	       !j->flux_job[0];
}
