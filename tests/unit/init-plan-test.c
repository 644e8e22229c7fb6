/* Unit tests: medium matching (medium.c) and command line + facts -> plan (plan.c). */
#include <stdlib.h>

#include "cmdline.h"
#include "medium.h"
#include "plan.h"
#include "init-test.h"

static void make_pvd(unsigned char *pvd, const char *label, const char *date)
{
	memset(pvd, 0, PVD_SIZE);
	pvd[0] = 1;
	memcpy(pvd + 1, "CD001", 5);
	pvd[6] = 1;
	memset(pvd + 40, ' ', 32);
	memcpy(pvd + 40, label, strlen(label));
	memcpy(pvd + 813, "2020010100000000", 16); /* creation date differs on purpose */
	memcpy(pvd + 830, date, 16);
}

static void test_iso_id(void)
{
	unsigned char pvd[PVD_SIZE];
	struct iso_id id;

	make_pvd(pvd, "LIVEUNION", "2026010112345600");
	CHECK(iso_id_parse(pvd, sizeof(pvd), &id) == 0, "valid pvd");
	CHECK_STR(id.label, "LIVEUNION");
	CHECK_STR(id.uuid, "2026010112345600");
	pvd[0] = 2;
	CHECK(iso_id_parse(pvd, sizeof(pvd), &id) != 0, "supplementary descriptor is not the PVD");
	make_pvd(pvd, "X", "2026010112345600");
	memcpy(pvd + 1, "CD002", 5);
	CHECK(iso_id_parse(pvd, sizeof(pvd), &id) != 0, "bad magic");
	make_pvd(pvd, "X", "2026010112345600");
	CHECK(iso_id_parse(pvd, 100, &id) != 0, "short buffer");
	make_pvd(pvd, "ABCDEFGHIJKLMNOPQRSTUVWXYZ012345", "2026010112345600");
	CHECK(iso_id_parse(pvd, sizeof(pvd), &id) == 0 && strcmp(id.label, "ABCDEFGHIJKLMNOPQRSTUVWXYZ012345") == 0,
	      "32-character label kept whole: %s", id.label);
}

static void test_match(void)
{
	unsigned char pvd[PVD_SIZE];
	struct iso_id id;
	struct medium_want w;
	char why[256];

	make_pvd(pvd, "LIVEUNION", "2026010112345600");
	CHECK(iso_id_parse(pvd, sizeof(pvd), &id) == 0, "pvd");

	CHECK(medium_want_parse("UUID=2026010112345600", &w) == 0 && w.by_uuid, "uuid spec");
	CHECK(medium_match(&w, &id, why, sizeof(why)) == 1, "uuid without hyphens matches: %s", why);
	CHECK(medium_want_parse("UUID=2026-01-01-12-34-56-00", &w) == 0, "uuid with hyphens");
	CHECK_STR(w.value, "2026010112345600");
	CHECK(medium_match(&w, &id, why, sizeof(why)) == 1, "uuid with hyphens matches: %s", why);

	CHECK(medium_want_parse("UUID=2026-01-01-12-34-56-01", &w) == 0, "other uuid");
	CHECK(medium_match(&w, &id, why, sizeof(why)) == 0, "wrong uuid rejected");
	CHECK(strstr(why, "label LIVEUNION") && strstr(why, "UUID 2026010112345600") &&
	      strstr(why, "!= wanted UUID 2026010112345601"), "reason names what was seen and wanted: %s", why);

	CHECK(medium_want_parse("LABEL=LIVEUNION", &w) == 0 && !w.by_uuid, "label spec");
	CHECK(medium_match(&w, &id, why, sizeof(why)) == 1, "label matches");
	CHECK(medium_want_parse("LABEL=OTHER", &w) == 0, "label spec 2");
	CHECK(medium_match(&w, &id, why, sizeof(why)) == 0 && strstr(why, "!= wanted LABEL OTHER"), "wrong label: %s",
	      why);
	CHECK(medium_want_parse("LABEL=liveunion", &w) == 0 && medium_match(&w, &id, why, sizeof(why)) == 0,
	      "labels compare exactly");

	/* A medium built a second later carries a different UUID: the creation date must not count. */
	CHECK(medium_want_parse("UUID=2020010100000000", &w) == 0 && medium_match(&w, &id, why, sizeof(why)) == 0,
	      "creation date is not the UUID");
	CHECK(medium_want_parse("UUID=123", &w) != 0, "short uuid");
	CHECK(medium_want_parse("UUID=20260101123456001", &w) != 0, "long uuid");
	CHECK(medium_want_parse("UUID=2026010112345x00", &w) != 0, "non-digit uuid");
	CHECK(medium_want_parse("PARTUUID=abc", &w) != 0, "unknown kind");
	CHECK(medium_want_parse("LABEL=", &w) != 0, "empty label");
}

static void make(const char *line, struct plan *p)
{
	struct cmdline c;
	struct facts f = {1000ULL << 20, 800ULL << 20};

	cmdline_parse(line, &c, NULL, NULL);
	plan_make(&c, &f, "/run/live", "/newroot", p);
}

static void test_plan(void)
{
	static struct plan p;
	char buf[8192];

	make("", &p);
	CHECK(p.upper_bytes == 500ULL << 20, "50%% of 1000 MiB: %llu", p.upper_bytes);
	CHECK(p.timeout == 30 && p.break_step == S_NONE && !p.toram, "defaults");
	CHECK(!p.want.by_uuid && strcmp(p.want.value, "LIVEUNION") == 0, "default medium label");
	make("live.size=256M live.break=overlay live.medium=UUID=2026-01-01-12-34-56-00 live.panic", &p);
	CHECK(p.upper_bytes == 256ULL << 20, "explicit size");
	CHECK(p.break_step == S_OVERLAY, "break step");
	CHECK(p.want.by_uuid && strcmp(p.want.value, "2026010112345600") == 0, "uuid in plan");
	CHECK(p.panic, "panic");
	plan_print(&p, buf, sizeof(buf));
	CHECK(strstr(buf, "\nbreak=overlay\n") != NULL, "break printed");
	CHECK(strstr(buf, "\nupper.bytes=268435456\n") != NULL, "upper bytes printed");
	CHECK(strstr(buf, "medium=UUID=2026-01-01-12-34-56-00\n") == buf, "medium first line");
	CHECK(strstr(buf, "\nsteps=medium,layers,toram,upper,overlay,switch\n") != NULL, "steps printed");
	CHECK(strstr(buf, "\ndone=\n") != NULL, "nothing done yet");
	p.done = 2;
	plan_print(&p, buf, sizeof(buf));
	CHECK(strstr(buf, "\ndone=medium,layers\n") != NULL, "done printed: %s", buf);
	CHECK(plan_print(&p, buf, 10) == 9 && strlen(buf) == 9, "truncates safely");
}

static void test_layers(void)
{
	static struct plan p;
	const char *files[] = {"20-desktop.squashfs", "README", "10-base.squashfs", "10-base.squashfs.verity",
			       "x-bad.squashfs", "30-a:b.squashfs", "15-tools.squashfs"};
	char err[256], buf[8192];

	make("", &p);
	CHECK(plan_set_layers(&p, files, 7, err, sizeof(err)) == 3, "three layers: %s", err);
	CHECK_STR(p.layer[0].name, "10-base");
	CHECK_STR(p.layer[1].name, "15-tools");
	CHECK_STR(p.layer[2].name, "20-desktop");
	CHECK_STR(p.layer[0].file, "/run/live/medium/live/10-base.squashfs");
	CHECK_STR(p.layer[2].dir, "/run/live/layers/20-desktop");
	CHECK(p.layer[0].loop == -1, "no loop yet");
	plan_print(&p, buf, sizeof(buf));
	CHECK(strstr(buf, "\nlayers=10-base,15-tools,20-desktop\n") != NULL, "layers bottom first");

	make("live.layers=20-desktop,10-base", &p);
	CHECK(plan_set_layers(&p, files, 7, err, sizeof(err)) == 2, "filtered: %s", err);
	CHECK_STR(p.layer[0].name, "10-base");
	CHECK_STR(p.layer[1].name, "20-desktop");

	make("live.layers=10-base,99-missing", &p);
	CHECK(plan_set_layers(&p, files, 7, err, sizeof(err)) == -1, "missing named layer is an error");
	CHECK(strstr(err, "99-missing") != NULL, "error names it: %s", err);

	make("", &p);
	CHECK(plan_set_layers(&p, files + 1, 1, err, sizeof(err)) == -1 && strstr(err, "no live/NN-name.squashfs"),
	      "no layers: %s", err);
}

static void test_toram(void)
{
	static struct plan p;
	const char *files[] = {"10-base.squashfs"};
	char note[200], err[100];

	make("live.toram", &p);
	CHECK(plan_set_layers(&p, files, 1, err, sizeof(err)) == 1, "layer");
	p.layer[0].bytes = 100ULL << 20;
	CHECK(plan_toram_fits(&p, note, sizeof(note)), "100 MiB fits into 800 MiB: %s", note);
	p.layer[0].bytes = 750ULL << 20;
	CHECK(!plan_toram_fits(&p, note, sizeof(note)), "750 MiB + reserve does not fit");
	CHECK(strstr(note, "not enough RAM") && strstr(note, "MemAvailable 800 MiB"), "note: %s", note);
}

static void test_persist(void)
{
	static struct plan p;
	char paths[MAX_PATHS][PATH_LEN], err[300], key[64], buf[8192];
	int n;

	CHECK(persist_kind("") == PK_AUTO && persist_kind("auto") == PK_AUTO, "auto");
	CHECK(persist_kind("off") == PK_OFF, "off");
	CHECK(persist_kind("LABEL=x") == PK_LABEL && persist_kind("UUID=1-2") == PK_UUID, "label, uuid");
	CHECK(persist_kind("PARTUUID=0a0b0c0d-03") == PK_PARTUUID, "partuuid");
	CHECK(persist_kind("file:/x.img") == PK_FILE, "file");
	CHECK(persist_kind("LABEL=") == PK_BAD && persist_kind("file:") == PK_BAD, "empty value is bad");
	CHECK(persist_kind("sdb3") == PK_BAD && persist_kind("on") == PK_BAD, "unknown form is bad");

	n = persist_paths_parse("/home,/etc/ssh//,/home/", paths, MAX_PATHS, err, sizeof(err));
	CHECK(n == 2, "two paths, duplicate dropped: %d", n);
	CHECK_STR(paths[0], "/home");
	CHECK_STR(paths[1], "/etc/ssh");
	CHECK_STR(err, "");
	n = persist_paths_parse("/home\n/var/lib/x\n", paths, MAX_PATHS, err, sizeof(err));
	CHECK(n == 2 && strcmp(paths[1], "/var/lib/x") == 0, "newline separated (the store's file)");
	n = persist_paths_parse("home,/,/run/x,/proc,/a/../etc,/ok,/devices", paths, MAX_PATHS, err, sizeof(err));
	CHECK(n == 2 && strcmp(paths[0], "/ok") == 0 && strcmp(paths[1], "/devices") == 0, "only good ones: %d", n);
	CHECK(strstr(err, "'home'") && strstr(err, "'/'") && strstr(err, "'/run/x'") && strstr(err, "'/proc'") &&
	      strstr(err, "'/a/../etc'"), "bad ones named: %s", err);

	CHECK(persist_path_key("/etc/ssh", key, sizeof(key)) == 0, "key");
	CHECK_STR(key, "etc%2Fssh");
	CHECK(persist_path_key("/a%b", key, sizeof(key)) == 0 && strcmp(key, "a%25b") == 0, "%% escaped: %s", key);
	CHECK(persist_path_key("/abcdef", key, 4) == -1, "too long refused");

	make("live.persist=LABEL=mine live.persist.paths=/home live.persist.ro", &p);
	plan_print(&p, buf, sizeof(buf));
	CHECK(strstr(buf, "\npersist=LABEL=mine\n") && strstr(buf, "\npersist.paths=/home\n") &&
	      strstr(buf, "\npersist.flags=ro\n"), "plan records persistence: %s", buf);
}

int main(void)
{
	test_persist();
	test_iso_id();
	test_match();
	test_plan();
	test_layers();
	test_toram();
	return t_summary();
}
