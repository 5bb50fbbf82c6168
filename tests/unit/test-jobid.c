// SPDX-License-Identifier: Apache-2.0
#include <stdlib.h>

#include "jobid.h"
#include "tap.h"

#define ID  "4f1b7e0c9a2d3e5f60718293a4b5c6d7e8f90123456789abcdef0123456789ab"
#define UID "0f6c2a4e-1b3d-4c5e-8f70-9a1b2c3d4e5f"
#define USC "0f6c2a4e_1b3d_4c5e_8f70_9a1b2c3d4e5f"

struct want {
	const char *path, *unit, *slice, *container, *pod, *slurm, *flux;
};

/* Layouts as the managers write them (docs/records.md cites the sources). */
static const struct want cases[] = {
    {"/", "", "", "", "", "", ""},
    {"/system.slice/ssh.service", "ssh.service", "system.slice", "", "", "", ""},
    {"/user.slice/user-1000.slice/user@1000.service/app.slice/app-gnome-firefox-4242.scope",
     "app-gnome-firefox-4242.scope", "app.slice", "", "", "", ""},
    {"/init.scope", "init.scope", "", "", "", "", ""},
    /* docker, both cgroup drivers */
    {"/system.slice/docker-" ID ".scope", "docker-" ID ".scope", "system.slice", ID, "", "", ""},
    {"/docker/" ID, "", "", ID, "", "", ""},
    /* podman, rootful and rootless (payload in a "container" child) */
    {"/machine.slice/libpod-" ID ".scope", "libpod-" ID ".scope", "machine.slice", ID, "", "", ""},
    {"/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID ".scope/container",
     "libpod-" ID ".scope", "user.slice", ID, "", "", ""},
    /* the runtime monitors are not the container */
    {"/machine.slice/libpod-conmon-" ID ".scope", "libpod-conmon-" ID ".scope", "machine.slice", "",
     "", "", ""},
    /* kubelet, systemd driver: containerd and CRI-O, every QoS class */
    {"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" USC
     ".slice/cri-containerd-" ID ".scope",
     "cri-containerd-" ID ".scope", "kubepods-burstable-pod" USC ".slice", ID, UID, "", ""},
    {"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" USC ".slice/crio-" ID
     ".scope",
     "crio-" ID ".scope", "kubepods-besteffort-pod" USC ".slice", ID, UID, "", ""},
    {"/kubepods.slice/kubepods-pod" USC ".slice/crio-conmon-" ID ".scope",
     "crio-conmon-" ID ".scope", "kubepods-pod" USC ".slice", "", UID, "", ""},
    /* kind: kubelet's cgroup root is itself a slice */
    {"/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/"
     "kubelet-kubepods-besteffort-pod" USC ".slice/cri-containerd-" ID ".scope",
     "cri-containerd-" ID ".scope", "kubelet-kubepods-besteffort-pod" USC ".slice", ID, UID, "",
     ""},
    /* a static pod's UID is a 32-digit hash */
    {"/kubepods.slice/kubepods-burstable.slice/"
     "kubepods-burstable-pod5c8c8f3a0d0b5b1f7e6b9cd8d1f2e1a3.slice",
     "", "kubepods-burstable-pod5c8c8f3a0d0b5b1f7e6b9cd8d1f2e1a3.slice", "",
     "5c8c8f3a0d0b5b1f7e6b9cd8d1f2e1a3", "", ""},
    /* kubelet, cgroupfs driver */
    {"/kubepods/burstable/pod" UID "/" ID, "", "", ID, UID, "", ""},
    {"/kubepods/pod" UID "/crio-" ID, "", "", ID, UID, "", ""},
    {"/kubepods/besteffort/pod" UID, "", "", "", UID, "", ""},
    /* Slurm cgroup/v2, with one slurmd or several per node */
    {"/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0", "slurmstepd.scope",
     "system.slice", "", "", "4242", ""},
    {"/system.slice/node7_slurmstepd.scope/job_17/step_batch/user/task_special",
     "node7_slurmstepd.scope", "system.slice", "", "", "17", ""},
    {"/system.slice/slurmstepd.scope/job_4294967295/step_extern", "slurmstepd.scope",
     "system.slice", "", "", "4294967295", ""},
    /* Slurm cgroup/v1 */
    {"/slurm/uid_1000/job_280678/step_interactive/task_0", "", "", "", "", "280678", ""},
    {"/slurm_node7/uid_0/job_5/step_0", "", "", "", "", "5", ""},
    /* Flux sdexec, single and multi-user */
    {"/system.slice/user@1001.service/app.slice/shell-0-fTE9HHdZvi3.service",
     "shell-0-fTE9HHdZvi3.service", "app.slice", "", "", "", "fTE9HHdZvi3"},
    {"/user.slice/user-1001.slice/user@1001.service/imp-shell-12-f2x5.service",
     "imp-shell-12-f2x5.service", "user-1001.slice", "", "", "", "f2x5"},
    /* a container in a container: the innermost */
    {"/docker/" ID "/docker/00000000000000000000000000000000000000000000000000000000000000ff", "",
     "", "00000000000000000000000000000000000000000000000000000000000000ff", "", "", ""},

    /* near misses: nothing invented */
    {"/system.slice/docker.service", "docker.service", "system.slice", "", "", "", ""},
    {"/system.slice/docker-" ID "0.scope", "docker-" ID "0.scope", "system.slice", "", "", "", ""},
    {"/system.slice/docker-4F1B7E0C9A2D3E5F60718293A4B5C6D7E8F90123456789ABCDEF0123456789AB.scope",
     "docker-4F1B7E0C9A2D3E5F60718293A4B5C6D7E8F90123456789ABCDEF0123456789AB.scope",
     "system.slice", "", "", "", ""},
    {"/mydocker/" ID, "", "", "", "", "", ""},
    {"/" ID, "", "", "", "", "", ""},
    {"/kubepods/pod" USC, "", "", "", "", "", ""},
    {"/kubepods/guaranteed/pod" UID, "", "", "", "", "", ""},
    {"/notkubepods/pod" UID "/" ID, "", "", "", "", "", ""},
    {"/kubepods/pod0f6c2a4e-1b3d-4c5e-8f70-9a1b2c3d4e5", "", "", "", "", "", ""},
    {"/kubepods.slice/kubepods-pod" UID ".slice", "", "kubepods-pod" UID ".slice", "", "", "", ""},
    {"/kubepods.slice/xkubepods-pod" USC ".slice", "", "xkubepods-pod" USC ".slice", "", "", "",
     ""},
    {"/kubepods.slice/kubepods-burstable-pod" USC "-pod.slice", "",
     "kubepods-burstable-pod" USC "-pod.slice", "", "", "", ""},
    {"/system.slice/slurmstepd.scope/job_0/step_0", "slurmstepd.scope", "system.slice", "", "", "",
     ""},
    {"/system.slice/slurmstepd.scope/job_4294967296", "slurmstepd.scope", "system.slice", "", "",
     "", ""},
    {"/system.slice/slurmstepd.scope/job_12a", "slurmstepd.scope", "system.slice", "", "", "", ""},
    {"/system.slice/slurmstepd.scope/step_0/job_12", "slurmstepd.scope", "system.slice", "", "", "",
     ""},
    {"/job_12/step_0", "", "", "", "", "", ""},
    {"/slurm/job_12", "", "", "", "", "", ""},
    {"/slurm/uid_/job_12", "", "", "", "", "", ""},
    {"/slurmx/uid_1/job_12", "", "", "", "", "", ""},
    {"/shell-0-f0O.service", "shell-0-f0O.service", "", "", "", "", ""},
    {"/shell--fabc.service", "shell--fabc.service", "", "", "", "", ""},
    {"/shell-0-fabcdefghijkm.service", "shell-0-fabcdefghijkm.service", "", "", "", "", ""},
    {"/shell-0-f.service", "shell-0-f.service", "", "", "", "", ""},
    {"/.service/.scope/.slice", "", "", "", "", "", ""},
    {"/a b.service/caf\xc3\xa9.scope/x\n.slice", "", "", "", "", "", ""},
    {"", "", "", "", "", "", ""},
    {"///", "", "", "", "", "", ""},
    {"relative.slice//x.service", "x.service", "relative.slice", "", "", "", ""},
};

static void check_case(const struct want *w)
{
	struct dc_jobid j;
	int n = tap_failed;
	char name[512];

	/* TAP is line-based: the hostile paths' control bytes stay out of it */
	snprintf(name, sizeof(name), "%s", w->path);
	for (char *p = name; *p; p++)
		if ((unsigned char)*p < 0x20)
			*p = '?';
	jobid_parse(w->path, &j);
	if (strcmp(j.unit, w->unit) || strcmp(j.slice, w->slice) ||
	    strcmp(j.container, w->container) || strcmp(j.pod, w->pod) ||
	    strcmp(j.slurm_job, w->slurm) || strcmp(j.flux_job, w->flux)) {
		CHECK(0, "%s", name);
		printf("# got unit [%s] slice [%s] container [%s] pod [%s] slurm [%s] flux [%s]\n",
		       j.unit, j.slice, j.container, j.pod, j.slurm_job, j.flux_job);
	} else {
		CHECK(1, "%s", name);
	}
	CHECK(jobid_empty(&j) ==
		  !(*w->unit || *w->slice || *w->container || *w->pod || *w->slurm || *w->flux),
	      "jobid_empty agrees (%s)", n == tap_failed ? "fields right" : "fields wrong");
}

int main(void)
{
	struct dc_jobid j;
	char *big;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check_case(&cases[i]);

	/* stale contents never survive a parse */
	memset(&j, 'x', sizeof(j));
	jobid_parse(NULL, &j);
	CHECK(jobid_empty(&j), "NULL path: every field empty");

	/* a unit name longer than systemd allows is not a unit; a 255-byte one is */
	big = malloc(4096);
	memset(big, 'a', 4096);
	big[0] = '/';
	memcpy(big + 256 - strlen(".service"), ".service", strlen(".service") + 1);
	jobid_parse(big, &j);
	CHECK(strlen(j.unit) == 255 && !strcmp(j.unit, big + 1), "255-byte unit kept");
	memset(big, 'a', 4096);
	big[0] = '/';
	memcpy(big + 257 - strlen(".service"), ".service", strlen(".service") + 1);
	jobid_parse(big, &j);
	CHECK(jobid_empty(&j), "256-byte unit ignored, not truncated");

	/* a long hostile path of near-matches: no crash, nothing found */
	big[0] = 0;
	for (int i = 0; i < 40; i++)
		strcat(big, "/kubepods/pod/slurm/uid_1/job_");
	jobid_parse(big, &j);
	CHECK(jobid_empty(&j), "repeated partial layouts give nothing");
	free(big);
	return tap_done();
}
