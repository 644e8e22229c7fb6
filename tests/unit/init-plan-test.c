/* Unit tests: medium matching (iso9660.c), command line + facts -> plan (plan.c), choosing layers (layers.c), persistent paths (paths.c). */
#include <stdlib.h>

#include "cmdline.h"
#include "init-test.h"
#include "iso9660.h"
#include "layers.h"
#include "paths.h"
#include "plan.h"

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
	CHECK(medium_iso_id_parse(pvd, sizeof(pvd), &id) == 0, "valid pvd");
	CHECK_STR(id.label, "LIVEUNION");
	CHECK_STR(id.uuid, "2026010112345600");
	pvd[0] = 2;
	CHECK(medium_iso_id_parse(pvd, sizeof(pvd), &id) != 0, "supplementary descriptor is not the PVD");
	make_pvd(pvd, "X", "2026010112345600");
	memcpy(pvd + 1, "CD002", 5);
	CHECK(medium_iso_id_parse(pvd, sizeof(pvd), &id) != 0, "bad magic");
	make_pvd(pvd, "X", "2026010112345600");
	CHECK(medium_iso_id_parse(pvd, 100, &id) != 0, "short buffer");
	make_pvd(pvd, "ABCDEFGHIJKLMNOPQRSTUVWXYZ012345", "2026010112345600");
	CHECK(medium_iso_id_parse(pvd, sizeof(pvd), &id) == 0 &&
		      strcmp(id.label, "ABCDEFGHIJKLMNOPQRSTUVWXYZ012345") == 0,
	      "32-character label kept whole: %s", id.label);
}

static void test_match(void)
{
	unsigned char pvd[PVD_SIZE];
	struct iso_id id;
	struct medium_want w;
	char why[256];

	make_pvd(pvd, "LIVEUNION", "2026010112345600");
	CHECK(medium_iso_id_parse(pvd, sizeof(pvd), &id) == 0, "pvd");

	CHECK(medium_want_parse("UUID=2026010112345600", &w) == 0 && w.by_uuid, "uuid spec");
	CHECK(medium_match(&w, &id, why, sizeof(why)) == 1, "uuid without hyphens matches: %s", why);
	CHECK(medium_want_parse("UUID=2026-01-01-12-34-56-00", &w) == 0, "uuid with hyphens");
	CHECK_STR(w.value, "2026010112345600");
	CHECK(medium_match(&w, &id, why, sizeof(why)) == 1, "uuid with hyphens matches: %s", why);

	CHECK(medium_want_parse("UUID=2026-01-01-12-34-56-01", &w) == 0, "other uuid");
	CHECK(medium_match(&w, &id, why, sizeof(why)) == 0, "wrong uuid rejected");
	CHECK(strstr(why, "label LIVEUNION") && strstr(why, "UUID 2026010112345600") &&
		      strstr(why, "!= wanted UUID 2026010112345601"),
	      "reason names what was seen and wanted: %s", why);

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

/* The boot state of the plan make() made last: nothing found yet. */
static struct boot b;

static void make(const char *line, struct plan *p)
{
	struct cmdline c;
	struct facts f = {1000ULL << 20, 800ULL << 20};

	cmdline_parse(line, &c, NULL, NULL);
	plan_make(&c, &f, "/run/live", "/newroot", p);
	plan_boot_init(p, &b);
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
	CHECK(p.adjusted[0] == '\0', "nothing clamped: %s", p.adjusted);
	/* valid but absurd values are clamped, each said */
	make("live.size=64G", &p);
	CHECK(p.upper_bytes == 1000ULL << 20 && strstr(p.adjusted, "more than the RAM (1000 MiB)"), "64G: %llu %s",
	      p.upper_bytes, p.adjusted);
	make("live.size=100%", &p);
	CHECK(p.upper_bytes == 1000ULL << 20 && p.adjusted[0] == '\0', "100%% is the RAM, not clamped: %s", p.adjusted);
	make("live.size=1", &p);
	CHECK(p.upper_bytes == UPPER_MIN && strstr(p.adjusted, "asks for 1 bytes, less than") &&
		      strstr(p.adjusted, "4 MiB used"),
	      "size 1: %llu %s", p.upper_bytes, p.adjusted);
	make("live.size=4M", &p);
	CHECK(p.upper_bytes == UPPER_MIN && p.adjusted[0] == '\0', "4M is allowed: %s", p.adjusted);
	make("live.timeout=0 live.size=1k", &p);
	CHECK(p.timeout == TIMEOUT_MIN && strstr(p.adjusted, "live.timeout=0 leaves no time") &&
		      strstr(p.adjusted, "MiB used; live.timeout"),
	      "timeout 0 and size 1k: %u %s", p.timeout, p.adjusted);
	make("live.timeout=1", &p);
	CHECK(p.timeout == 1 && p.adjusted[0] == '\0', "timeout 1 kept");
	{
		struct cmdline c;
		struct facts none = {0, 0};

		cmdline_parse("", &c, NULL, NULL);
		plan_make(&c, &none, "/run/live", "/newroot", &p);
		CHECK(p.upper_bytes == 0 && p.adjusted[0] == '\0', "no RAM figure: no limit, nothing clamped: %llu",
		      p.upper_bytes);
	}
	make("live.size=256M live.break=overlay live.medium=UUID=2026-01-01-12-34-56-00 live.panic", &p);
	CHECK(p.break_step == S_OVERLAY, "break step");
	CHECK(p.want.by_uuid && strcmp(p.want.value, "2026010112345600") == 0, "uuid in plan");
	CHECK(p.panic, "panic");
	plan_print(&p, &b, buf, sizeof(buf));
	CHECK(strstr(buf, "\nbreak=overlay\n") != NULL, "break printed");
	CHECK(strstr(buf, "\nupper.bytes=268435456\n") != NULL, "upper bytes printed");
	CHECK(strstr(buf, "medium=UUID=2026-01-01-12-34-56-00\n") == buf, "medium first line");
	CHECK(strstr(buf, "\nsteps=medium,layers,toram,store,upper,overlay,switch\n") != NULL, "steps printed");
	CHECK(strstr(buf, "\ndone=\n") != NULL, "nothing done yet");
	b.done = 2;
	plan_print(&p, &b, buf, sizeof(buf));
	CHECK(strstr(buf, "\ndone=medium,layers\n") != NULL, "done printed: %s", buf);
	CHECK(plan_print(&p, &b, buf, 10) == 9 && strlen(buf) == 9, "truncates safely");
	CHECK(strstr(buf, "medium.iso") == NULL, "no ISO file lines without live.iso=");

	/* live.iso=: GRUB's iso_path, quoted when it has spaces; a relative path is read from the partition's top */
	make("\"live.iso=/my isos/liveunion.iso\"", &p);
	CHECK_STR(p.iso_path, "/my isos/liveunion.iso");
	plan_print(&p, &b, buf, sizeof(buf));
	CHECK(strstr(buf, "\nmedium.iso=/my isos/liveunion.iso\nmedium.iso.host=\nmedium.iso.fstype=\n") != NULL,
	      "ISO file printed: %s", buf);
	make("live.iso=isos/x.iso", &p);
	CHECK_STR(p.iso_path, "/isos/x.iso");
	{
		char line[600];

		snprintf(line, sizeof(line), "live.iso=/%0300d", 0);
		make(line, &p);
		CHECK(p.iso_path[0] == '\0' &&
			      strstr(p.adjusted, "live.iso= is 301 bytes, longer than a path here may be"),
		      "a path too long is said and ignored (so the medium is looked for as a device): %s", p.adjusted);
		snprintf(line, sizeof(line), "live.timeout=0 live.iso=/%0300d", 0);
		make(line, &p);
		CHECK(strstr(p.adjusted, "s used; live.iso= is 301 bytes") != NULL, "both said: %s", p.adjusted);
	}
}

static void test_layers(void)
{
	static struct plan p;
	const char *files[] = {"20-desktop.squashfs", "README",          "10-base.squashfs", "10-base.squashfs.verity",
			       "x-bad.squashfs",      "30-a:b.squashfs", "15-tools.squashfs"};
	char err[256], buf[8192];

	make("", &p);
	CHECK(layers_choose(&p, &b, files, 7, err, sizeof(err)) == 3, "three layers: %s", err);
	CHECK_STR(b.layer[0].name, "10-base");
	CHECK_STR(b.layer[1].name, "15-tools");
	CHECK_STR(b.layer[2].name, "20-desktop");
	CHECK_STR(b.layer[0].file, "/run/live/medium/live/10-base.squashfs");
	CHECK_STR(b.layer[2].dir, "/run/live/layers/20-desktop");
	CHECK(b.layer[0].loop == -1, "no loop yet");
	CHECK_STR(b.layer[0].hash_file, "/run/live/medium/live/10-base.verity");
	CHECK(b.layer[0].hash_loop == -1 && b.layer[0].dm_minor == -1, "not verified yet");
	plan_print(&p, &b, buf, sizeof(buf));
	CHECK(strstr(buf, "\nlayers=10-base,15-tools,20-desktop\n") != NULL, "layers bottom first");

	make("live.layers=20-desktop,10-base", &p);
	CHECK(layers_choose(&p, &b, files, 7, err, sizeof(err)) == 2, "filtered: %s", err);
	CHECK_STR(b.layer[0].name, "10-base");
	CHECK_STR(b.layer[1].name, "20-desktop");

	make("live.layers=10-base,99-missing", &p);
	CHECK(layers_choose(&p, &b, files, 7, err, sizeof(err)) == 1, "a name the medium lacks may be a saved layer");
	CHECK(layers_check_filter(&p, &b, err, sizeof(err)) == -1, "missing named layer is an error");
	CHECK(strstr(err, "99-missing") != NULL, "error names it: %s", err);

	make("", &p);
	CHECK(layers_choose(&p, &b, files + 1, 1, err, sizeof(err)) == -1 && strstr(err, "no live/NN-name.squashfs"),
	      "no layers: %s", err);

	/* -name leaves one out of all; with a number or without */
	make("live.layers=-15-tools", &p);
	CHECK(layers_choose(&p, &b, files, 7, err, sizeof(err)) == 2, "excluded: %s", err);
	CHECK_STR(b.layer[0].name, "10-base");
	CHECK_STR(b.layer[1].name, "20-desktop");
	CHECK_STR(b.layers_excluded, "15-tools");
	plan_print(&p, &b, buf, sizeof(buf));
	CHECK(strstr(buf, "\nlayers=10-base,20-desktop\nlayers.saved=\nlayers.excluded=15-tools\n") != NULL,
	      "plan names both: %s", buf);
	make("live.layers=-desktop,-tools", &p);
	CHECK(layers_choose(&p, &b, files, 7, err, sizeof(err)) == 1 && strcmp(b.layer[0].name, "10-base") == 0,
	      "two excluded by name without number: %s", err);
	CHECK(strstr(b.layers_excluded, "15-tools") && strstr(b.layers_excluded, "20-desktop"), "both named: %s",
	      b.layers_excluded);
	make("live.layers=base,desktop,-desktop", &p);
	CHECK(layers_choose(&p, &b, files, 7, err, sizeof(err)) == 1 && strcmp(b.layer[0].name, "10-base") == 0,
	      "exclude wins over include: %s", err);
	make("live.layers=-99-gone", &p);
	CHECK(layers_choose(&p, &b, files, 7, err, sizeof(err)) == 3, "every medium layer: %s", err);
	CHECK(layers_check_filter(&p, &b, err, sizeof(err)) == -1 && strstr(err, "-99-gone"),
	      "excluding a layer that is not there is an error: %s", err);
	make("live.layers=-desktop", &p);
	CHECK(layers_choose(&p, &b, files, 7, err, sizeof(err)) == 2 &&
		      layers_check_filter(&p, &b, err, sizeof(err)) == 0,
	      "a name that is there passes the check: %s", err);
	make("live.layers=-10-base,-15-tools,-20-desktop", &p);
	CHECK(layers_choose(&p, &b, files, 7, err, sizeof(err)) == -1 && strstr(err, "left by live.layers="),
	      "all excluded: %s", err);
	make("live.layers=esktop", &p);
	CHECK(layers_choose(&p, &b, files, 7, err, sizeof(err)) == -1, "a part of a name is not a name");
	make("live.layers=base,,-,-20-desktop", &p);
	CHECK(p.npicks == 2 && !p.pick[0].exclude && strcmp(p.pick[0].name, "base") == 0 && p.pick[1].exclude &&
		      strcmp(p.pick[1].name, "20-desktop") == 0,
	      "live.layers= parsed once, empty entries and a lone '-' dropped: %d", p.npicks);
	{ /* a name longer than a layer name names none: refused as unknown, not cut short into a match */
		char line[200];

		snprintf(line, sizeof(line), "live.layers=10-base,%070d", 0);
		make(line, &p);
		CHECK(p.npicks == 2 && p.pick[1].too_long, "long entry kept as too long");
		CHECK(layers_choose(&p, &b, files, 7, err, sizeof(err)) == 1 &&
			      layers_check_filter(&p, &b, err, sizeof(err)) == -1 && strstr(err, "names 000"),
		      "and refused: %s", err);
	}
}

/* liveunion save's layers from the store: above the medium's, by name, live.layers= applied both ways. */
static void test_saved(void)
{
	static struct plan p;
	const char *files[] = {"20-desktop.squashfs", "10-base.squashfs"};
	const char *saved[] = {"31-mine.squashfs", "README", "30-older.squashfs", "10-base.squashfs",
			       ".32-x.squashfs.tmp"};
	char err[300], note[300], buf[16384];

	make("", &p);
	CHECK(layers_choose(&p, &b, files, 2, err, sizeof(err)) == 2, "medium: %s", err);
	CHECK(layers_add_saved(&p, &b, saved, 5, "/run/live/store/liveunion-v1/layers", note, sizeof(note)) == 2,
	      "two saved layers: %s", note);
	CHECK(b.nlayers == 4 && b.nsaved == 2, "four in all: %d %d", b.nlayers, b.nsaved);
	CHECK_STR(b.layer[1].name, "20-desktop");
	CHECK_STR(b.layer[2].name, "30-older");
	CHECK_STR(b.layer[3].name, "31-mine");
	CHECK(b.layer[3].saved && !b.layer[1].saved, "marked saved");
	CHECK_STR(b.layer[3].file, "/run/live/store/liveunion-v1/layers/31-mine.squashfs");
	CHECK_STR(b.layer[3].dir, "/run/live/layers/31-mine");
	CHECK(strstr(note, "10-base (a medium layer has that name)") != NULL, "the clash is named: %s", note);
	plan_print(&p, &b, buf, sizeof(buf));
	CHECK(strstr(buf, "\nlayers=10-base,20-desktop,30-older,31-mine\nlayers.saved=30-older,31-mine\n") != NULL &&
		      strstr(buf, "\nlayer.31-mine.from=store\n") != NULL && !strstr(buf, "layer.20-desktop.from"),
	      "plan names them: %s", buf);
	layers_drop_saved(&b);
	CHECK(b.nlayers == 2 && b.nsaved == 0, "dropped again");

	/* -name leaves a saved layer out; the name is known once the store was looked at */
	make("live.layers=-mine", &p);
	CHECK(layers_choose(&p, &b, files, 2, err, sizeof(err)) == 2, "medium: %s", err);
	CHECK(layers_check_filter(&p, &b, err, sizeof(err)) == -1, "before the store: unknown");
	CHECK(layers_add_saved(&p, &b, saved, 5, "/s", note, sizeof(note)) == 1 &&
		      strcmp(b.layer[2].name, "30-older") == 0,
	      "31-mine left out: %s", b.layer[2].name);
	CHECK(layers_check_filter(&p, &b, err, sizeof(err)) == 0, "after: known: %s", err);
	CHECK_STR(b.layers_excluded, "31-mine");

	/* an include list keeps only the saved layers it names */
	make("live.layers=base,older", &p);
	CHECK(layers_choose(&p, &b, files, 2, err, sizeof(err)) == 1, "medium: %s", err);
	CHECK(layers_add_saved(&p, &b, saved, 5, "/s", note, sizeof(note)) == 1 &&
		      strcmp(b.layer[1].name, "30-older") == 0,
	      "only 30-older");
	CHECK(layers_check_filter(&p, &b, err, sizeof(err)) == 0, "all names found: %s", err);
	CHECK(strstr(b.layers_excluded, "20-desktop") && strstr(b.layers_excluded, "31-mine"), "excluded: %s",
	      b.layers_excluded);

	/* The kiosk's lock-down (live.layers=10-base,20-desktop, numbered): a layer whose name only ends in a numbered
	 * entry is not that layer. 11-20-desktop and 99-10-base put in the store (or on the medium) by whoever can
	 * write the stick stay out; before the fix they matched as "20-desktop" and "10-base" without their number. */
	{
		const char *planted[] = {"11-20-desktop.squashfs", "99-10-base.squashfs", "20-desktop.squashfs"};
		const char *medium[] = {"20-desktop.squashfs", "10-base.squashfs", "99-10-base.squashfs",
					"11-20-desktop.squashfs"};

		make("live.layers=10-base,20-desktop", &p);
		CHECK(layers_choose(&p, &b, medium, 4, err, sizeof(err)) == 2 &&
			      strcmp(b.layer[0].name, "10-base") == 0 && strcmp(b.layer[1].name, "20-desktop") == 0,
		      "medium: only the two named: %d %s", b.nlayers, err);
		CHECK(strstr(b.layers_excluded, "99-10-base") && strstr(b.layers_excluded, "11-20-desktop"),
		      "the look-alikes left out: %s", b.layers_excluded);
		CHECK(layers_add_saved(&p, &b, planted, 3, "/s", note, sizeof(note)) == 0 && b.nlayers == 2,
		      "no saved look-alike stacked: %d", b.nlayers);
		/* a name without number still names a numbered layer, and only by its whole name after NN- */
		make("live.layers=base,desktop", &p);
		CHECK(layers_choose(&p, &b, medium, 4, err, sizeof(err)) == 2, "base,desktop: the two: %s", err);
	}

	/* a typo stays a typo with a store */
	make("live.layers=-mien", &p);
	CHECK(layers_choose(&p, &b, files, 2, err, sizeof(err)) == 2, "medium: %s", err);
	CHECK(layers_add_saved(&p, &b, saved, 5, "/s", note, sizeof(note)) == 2, "both saved layers");
	CHECK(layers_check_filter(&p, &b, err, sizeof(err)) == -1 && strstr(err, "-mien") &&
		      strstr(err, "liveunion-v1/layers"),
	      "typo refused: %s", err);
}

static void test_saved_limit(void)
{
	static struct plan p;
	static char names[MAX_LAYERS][32];
	const char *files[MAX_LAYERS];
	const char *saved[] = {"98-a.squashfs", "99-b.squashfs"};
	char err[256], note[300];
	int i;

	for (i = 0; i < MAX_LAYERS - 1; i++) {
		snprintf(names[i], sizeof(names[i]), "%02d-l%d.squashfs", i % 90, i);
		files[i] = names[i];
	}
	make("", &p);
	CHECK(layers_choose(&p, &b, files, MAX_LAYERS - 1, err, sizeof(err)) == MAX_LAYERS - 1, "medium: %s", err);
	CHECK(layers_add_saved(&p, &b, saved, 2, "/s", note, sizeof(note)) == 1 && b.nlayers == MAX_LAYERS,
	      "one fits: %d", b.nlayers);
	CHECK(strstr(note, "99-b (no room") != NULL, "the other is named: %s", note);
}

static void test_many_layers(void)
{
	static struct plan p;
	static char names[MAX_LAYERS + 1][32];
	const char *files[MAX_LAYERS + 1];
	char err[256];
	int i;

	for (i = 0; i <= MAX_LAYERS; i++) {
		snprintf(names[i], sizeof(names[i]), "%02d-l%d.squashfs", i % 100, i);
		files[i] = names[i];
	}
	make("", &p);
	CHECK(layers_choose(&p, &b, files, 50, err, sizeof(err)) == 50, "50 layers: %s", err);
	CHECK(layers_choose(&p, &b, files, MAX_LAYERS, err, sizeof(err)) == MAX_LAYERS, "MAX_LAYERS layers: %s", err);
	CHECK(layers_choose(&p, &b, files, MAX_LAYERS + 1, err, sizeof(err)) == -1 && strstr(err, "more than"),
	      "one more is refused: %s", err);
}

static void test_verify(void)
{
	static struct plan p;
	const char *h1 = "0924e68abba73bd5d7f4aba7da62aeed4f6d34e7bc18a75d4423eacad4b30ce3";
	const char *files[] = {"10-base.squashfs", "20-x.squashfs", "30-y.squashfs"};
	char spec[600], hash[ROOT_HASH_LEN + 1], err[300], buf[16384];

	make("", &p);
	CHECK(p.verify_mode == VERIFY_NONE && p.nverify == 0, "no live.verify: none");
	make("live.verify=off", &p);
	CHECK(p.verify_mode == VERIFY_OFF && p.nverify == 0, "off");
	snprintf(spec, sizeof(spec), "live.verify=10-base:%s,20-x:%.32s", h1, h1);
	make(spec, &p);
	CHECK(p.verify_mode == VERIFY_ON && p.nverify == 2, "on, two entries: %d", p.nverify);
	CHECK(strcmp(p.verify[1].name, "20-x") == 0 && p.verify[1].digits == 32 && p.verify[1].hex,
	      "parsed once: name, digits, hex");
	CHECK(plan_root_hash(&p, "10-base", hash, sizeof(hash), err, sizeof(err)) == 0, "found: %s", err);
	CHECK_STR(hash, h1);
	CHECK(plan_root_hash(&p, "20-x", hash, sizeof(hash), err, sizeof(err)) == 0 && strlen(hash) == 32,
	      "short (md5-sized) hash: %s", err);
	CHECK(plan_root_hash(&p, "10-bas", hash, sizeof(hash), err, sizeof(err)) == -1 &&
		      strstr(err, "no root hash for layer 10-bas"),
	      "a prefix is not the layer: %s", err);
	/* the hash goes with its layer when the layers are chosen, and the printed plan says which guards which */
	CHECK(layers_choose(&p, &b, files, 3, err, sizeof(err)) == 3, "three layers: %s", err);
	CHECK_STR(b.layer[0].root_hash, h1);
	CHECK(strlen(b.layer[1].root_hash) == 32, "20-x has its hash");
	CHECK(b.layer[2].root_hash[0] == '\0' && strstr(b.layer[2].no_hash, "no root hash for layer 30-y"),
	      "30-y has none, and why: %s", b.layer[2].no_hash);
	plan_print(&p, &b, buf, sizeof(buf));
	snprintf(spec, sizeof(spec), "\nlayer.10-base.root_hash=%s\n", h1);
	CHECK(strstr(buf, spec) && strstr(buf, "\nlayer.30-y.root_hash=none: live.verify= has no root hash"),
	      "printed per layer: %s", buf);
	snprintf(spec, sizeof(spec), "\nverify.mode=on\nverify.root_hash.10-base=%s\nverify.root_hash.20-x=%.32s\n", h1,
		 h1);
	CHECK(strstr(buf, spec) != NULL, "the plan's hashes printed: %s", buf);
	CHECK(strstr(buf, "\nverify.covers=10-base,20-x\nverify.outside=upper:") != NULL,
	      "the plan says what dm-verity covers (30-y, without a hash, is not): %s", buf);

	/* The verified set: a layer live.verify= names must be on the medium, unless live.layers= leaves it out. A
	 * medium with 20-x deleted (its .squashfs and .verity) is the attack; live.layers=-x on the signed line is not. */
	snprintf(spec, sizeof(spec), "live.verify=10-base:%s,20-x:%s", h1, h1);
	make(spec, &p);
	CHECK(layers_choose(&p, &b, files, 1, err, sizeof(err)) == -1 &&
		      strstr(err, "root hash for layer 20-x, which is not on the medium") &&
		      strstr(err, "found: 10-base"),
	      "a named layer missing stops the boot, naming it and what was found: %s", err);
	CHECK(layers_choose(&p, &b, files, 2, err, sizeof(err)) == 2, "both there: %s", err);
	snprintf(spec, sizeof(spec), "live.verify=10-base:%s,20-x:%s live.layers=-x", h1, h1);
	make(spec, &p);
	CHECK(layers_choose(&p, &b, files, 1, err, sizeof(err)) == 1 &&
		      layers_check_filter(&p, &b, err, sizeof(err)) == 0,
	      "left out by live.layers=: not required, and the name is known to live.verify=: %s", err);
	snprintf(spec, sizeof(spec), "live.verify=10-base:%s,20-x:%s live.layers=base", h1, h1);
	make(spec, &p);
	CHECK(layers_choose(&p, &b, files, 1, err, sizeof(err)) == 1, "an include list without it: not required: %s",
	      err);
	snprintf(spec, sizeof(spec), "live.verify=10-base:%s,20-x:%s", h1, h1);
	make(spec, &p);
	CHECK(layers_choose(&p, &b, files + 1, 2, err, sizeof(err)) == -1 && strstr(err, "layer 10-base, which") &&
		      strstr(err, "found: 20-x,30-y"),
	      "the base layer missing: %s", err);
	{ /* a saved layer of that name in the store never stands in for a verified one */
		const char *saved[] = {"20-x.squashfs"};
		char note[200];

		CHECK(layers_choose(&p, &b, files, 1, err, sizeof(err)) == -1, "missing before the store: %s", err);
		make("", &p);
		CHECK(layers_choose(&p, &b, files, 1, err, sizeof(err)) == 1 &&
			      layers_add_saved(&p, &b, saved, 1, "/s", note, sizeof(note)) == 1,
		      "unverified: a saved 20-x is stacked: %s", note);
		plan_print(&p, &b, buf, sizeof(buf));
		CHECK(strstr(buf, "\nverify.covers=\nverify.outside=10-base,saved:20-x,upper:") != NULL,
		      "unverified: nothing covered, the saved layer named: %s", buf);
	}

	make("live.verify=10-base:xyz0924e68abba73bd5d7f4aba7da62aeed4f6d34e7bc1", &p);
	CHECK(plan_root_hash(&p, "10-base", hash, sizeof(hash), err, sizeof(err)) == -1 &&
		      strstr(err, "10-base is not hexadecimal"),
	      "not hex: %s", err);
	snprintf(spec, sizeof(spec), "live.verify=10-base:%s,10-base:%s", h1, h1);
	make(spec, &p);
	CHECK(plan_root_hash(&p, "10-base", hash, sizeof(hash), err, sizeof(err)) == -1 && strstr(err, "twice"),
	      "twice: %s", err);
	make("live.verify=10-base:abcd", &p);
	CHECK(plan_root_hash(&p, "10-base", hash, sizeof(hash), err, sizeof(err)) == -1 && strstr(err, "4 digits"),
	      "too short: %s", err);
	make("live.verify=10-base:abcd,20-x", &p);
	CHECK(plan_root_hash(&p, "20-x", hash, sizeof(hash), err, sizeof(err)) == -1 && strstr(err, "no root hash"),
	      "an entry without a colon names no layer: %s", err);
}

static void test_toram(void)
{
	static struct plan p;
	const char *files[] = {"10-base.squashfs"};
	char note[200], err[100];

	make("live.toram", &p);
	CHECK(layers_choose(&p, &b, files, 1, err, sizeof(err)) == 1, "layer");
	b.layer[0].bytes = 100ULL << 20;
	CHECK(plan_toram_fits(&p, &b, note, sizeof(note)), "100 MiB fits into 800 MiB: %s", note);
	b.layer[0].bytes = 750ULL << 20;
	CHECK(!plan_toram_fits(&p, &b, note, sizeof(note)), "750 MiB + reserve does not fit");
	CHECK(strstr(note, "not enough RAM") && strstr(note, "MemAvailable 800 MiB"), "note: %s", note);
}

static void test_persist(void)
{
	static struct plan p;
	char paths[MAX_PATHS][PATH_LEN], err[300], key[64], buf[8192];
	int n;

	CHECK(plan_persist_kind("") == PK_AUTO && plan_persist_kind("auto") == PK_AUTO, "auto");
	CHECK(plan_persist_kind("off") == PK_OFF, "off");
	CHECK(plan_persist_kind("LABEL=x") == PK_LABEL && plan_persist_kind("UUID=1-2") == PK_UUID, "label, uuid");
	CHECK(plan_persist_kind("PARTUUID=0a0b0c0d-03") == PK_PARTUUID, "partuuid");
	CHECK(plan_persist_kind("file:/x.img") == PK_FILE, "file");
	CHECK(plan_persist_kind("LABEL=") == PK_BAD && plan_persist_kind("file:") == PK_BAD, "empty value is bad");
	CHECK(plan_persist_kind("sdb3") == PK_BAD && plan_persist_kind("on") == PK_BAD, "unknown form is bad");

	n = paths_parse("/home,/etc/ssh//,/home/", paths, MAX_PATHS, err, sizeof(err));
	CHECK(n == 2, "two paths, duplicate dropped: %d", n);
	CHECK_STR(paths[0], "/home");
	CHECK_STR(paths[1], "/etc/ssh");
	CHECK_STR(err, "");
	n = paths_parse("/home\n/var/lib/x\n", paths, MAX_PATHS, err, sizeof(err));
	CHECK(n == 2 && strcmp(paths[1], "/var/lib/x") == 0, "newline separated (the store's file)");
	n = paths_parse("home,/,/run/x,/proc,/a/../etc,/ok,/devices", paths, MAX_PATHS, err, sizeof(err));
	CHECK(n == 2 && strcmp(paths[0], "/ok") == 0 && strcmp(paths[1], "/devices") == 0, "only good ones: %d", n);
	CHECK(strstr(err, "'home'") && strstr(err, "'/'") && strstr(err, "'/run/x'") && strstr(err, "'/proc'") &&
		      strstr(err, "'/a/../etc'"),
	      "bad ones named: %s", err);

	{ /* 84 levels of "/ab" fit a path (252 bytes) but not its name in the store (3 bytes a slash): refused */
		char deep[300] = "";
		int i;

		for (i = 0; i < 84; i++)
			strcat(deep, "/ab");
		n = paths_parse(deep, paths, MAX_PATHS, err, sizeof(err));
		CHECK(n == 0 && err[0] == '\'', "a path whose store name is too long is refused: %d, %s", n, err);
		strcpy(deep + 3 * 50, ",/b");
		n = paths_parse(deep, paths, MAX_PATHS, err, sizeof(err));
		CHECK(n == 2 && strcmp(paths[1], "/b") == 0 && err[0] == '\0',
		      "50 levels fit (a store name of 247 bytes): %d, %s", n, err);
		/* no error buffer: the paths past max are dropped without one */
		n = paths_parse("/a,/b,/c", paths, 1, NULL, 0);
		CHECK(n == 1 && strcmp(paths[0], "/a") == 0, "elen 0: nothing read from or written to err: %d", n);
	}
	CHECK(paths_key("/etc/ssh", key, sizeof(key)) == 0, "key");
	CHECK_STR(key, "etc%2Fssh");
	CHECK(paths_key("/a%b", key, sizeof(key)) == 0 && strcmp(key, "a%25b") == 0, "%% escaped: %s", key);
	CHECK(paths_key("/abcdef", key, 4) == -1, "too long refused");

	make("live.persist=LABEL=mine live.persist.paths=/home live.persist.ro", &p);
	plan_print(&p, &b, buf, sizeof(buf));
	CHECK(strstr(buf, "\npersist=LABEL=mine\n") && strstr(buf, "\npersist.paths=/home\n") &&
		      strstr(buf, "\npersist.flags=ro\n"),
	      "plan records persistence: %s", buf);
	/* parsed once: the kind, its argument and the flags are in the plan as such */
	CHECK(p.persist_kind == PK_LABEL && strcmp(p.persist_arg, "mine") == 0 && p.persist_ro && !p.persist_reset,
	      "LABEL= parsed: %d '%s'", p.persist_kind, p.persist_arg);
	make("live.persist=file:/dir/x.img live.persist.reset live.persist.ro", &p);
	plan_print(&p, &b, buf, sizeof(buf));
	CHECK(p.persist_kind == PK_FILE && strcmp(p.persist_arg, "/dir/x.img") == 0 && p.persist_reset,
	      "file: parsed: %d '%s'", p.persist_kind, p.persist_arg);
	CHECK(strstr(buf, "\npersist.flags=ro,reset\n") != NULL, "both flags printed: %s", buf);
	make("live.persist=PARTUUID=1234-02", &p);
	CHECK(p.persist_kind == PK_PARTUUID && strcmp(p.persist_arg, "1234-02") == 0 && !p.persist_ro,
	      "PARTUUID= parsed: '%s'", p.persist_arg);
	make("live.persist=off", &p);
	CHECK(p.persist_kind == PK_OFF && p.persist_arg[0] == '\0', "off has no argument");
	make("live.persist=LABEL=", &p);
	CHECK(p.persist_kind == PK_BAD, "LABEL= without a name is bad");
	make("live.persist=LABEL=s live.persist.paths=/home//,/proc,/var/lib/app", &p);
	CHECK(p.persist_paths_given && p.npersist_paths == 2 && strcmp(p.persist_paths[0], "/home") == 0 &&
		      strcmp(p.persist_paths[1], "/var/lib/app") == 0,
	      "live.persist.paths parsed once: %d", p.npersist_paths);
	CHECK(strcmp(p.persist_paths_bad, "'/proc'") == 0, "what it refused is kept to be said: %s",
	      p.persist_paths_bad);
	plan_print(&p, &b, buf, sizeof(buf));
	CHECK(strstr(buf, "\npersist.paths=/home,/var/lib/app\n") != NULL, "the paths printed: %s", buf);
	make("live.persist=LABEL=s", &p);
	CHECK(!p.persist_paths_given && p.npersist_paths == 0, "no live.persist.paths: the store's paths.conf decides");
}

/* Network boot: the keys, ip= and BOOTIF= planned once; a netbooted client keeps no store unless one is named. */
static void test_net(void)
{
	static struct plan p;
	static char buf[65536];

	make("live.fetch=http://10.0.0.1/images/ab/ BOOTIF=01-52-54-00-12-34-56 ip=dhcp live.toram", &p);
	CHECK(p.net == NET_FETCH && p.nfetch == 1, "one URL: %d", p.nfetch);
	CHECK_STR(p.fetch[0], "http://10.0.0.1/images/ab/");
	CHECK_STR(p.bootif_mac, "52:54:00:12:34:56");
	CHECK(p.ip.dhcp && !p.ip.off, "ip=dhcp");
	CHECK(p.persist_kind == PK_OFF, "netboot: persistence off unless named (%d)", p.persist_kind);
	CHECK(!p.toram && strstr(p.adjusted, "live.toram with live.fetch="), "toram dropped, said: %s", p.adjusted);
	plan_print(&p, &b, buf, sizeof(buf));
	CHECK(strstr(buf, "\nmedium.fetch=http://10.0.0.1/images/ab/\nnet=\n") != NULL, "plan prints the fetch URL");
	make("live.fetch=http://a/x,http://b:8080/y live.verify=10-base:00 live.check", &p);
	CHECK(p.nfetch == 2 && strcmp(p.fetch[1], "http://b:8080/y/") == 0 && !p.net_bad[0], "two URLs: %s", p.net_bad);
	CHECK(p.check, "live.fetch with live.verify=: every layer read in full");
	make("live.fetch=http://a/ live.check", &p);
	CHECK(!p.check, "live.fetch without live.verify=: no check (nothing to check against)");
	make("live.fetch=https://a/x", &p);
	CHECK(p.net == NET_FETCH && p.nfetch == 0 && strstr(p.net_bad, "'https://a/x' is not an http://HOST/PATH URL"),
	      "a bad URL is kept for the medium step to say: %s", p.net_bad);
	make("live.nbd=10.0.0.1/liveunion-ab live.persist=LABEL=mystore", &p);
	CHECK(p.persist_kind == PK_LABEL, "a named store stays (%d)", p.persist_kind);
	CHECK(p.net == NET_NBD && strcmp(p.nbd.host, "10.0.0.1") == 0 && strcmp(p.nbd.port, "10809") == 0 &&
		      strcmp(p.nbd.export, "liveunion-ab") == 0,
	      "nbd parsed once: %s %s %s", p.nbd.host, p.nbd.port, p.nbd.export);
	plan_print(&p, &b, buf, sizeof(buf));
	CHECK(strstr(buf, "\nmedium.nbd=10.0.0.1:10809/liveunion-ab\n") != NULL, "plan prints the nbd export: %s", buf);
	make("live.nbd=server", &p);
	CHECK(p.net == NET_NBD && !p.nbd.host[0] && strstr(p.net_bad, "want HOST[:PORT]/EXPORT"),
	      "a bad export is kept for the medium step to say: %s", p.net_bad);
	make("live.fetch=http://a/ live.nbd=b/c", &p);
	CHECK(p.net == NET_FETCH && !p.nbd.host[0] && strstr(p.adjusted, "live.fetch= used"), "fetch wins, said: %s",
	      p.adjusted);
	make("ip=10.0.0.300 BOOTIF=zz live.fetch=http://a/", &p);
	CHECK(p.ip.dhcp && strstr(p.adjusted, "DHCP on any interface used"), "bad ip=: DHCP, said: %s", p.adjusted);
	CHECK(!p.bootif_mac[0] && strstr(p.adjusted, "BOOTIF=zz"), "bad BOOTIF= ignored, said: %s", p.adjusted);
	make("ip=10.1.2.3::10.1.2.254:255.255.255.0::eth1:off", &p);
	CHECK(!p.ip.dhcp && p.ip.prefix == 24 && strcmp(p.ip.device, "eth1") == 0, "static ip= planned");
	CHECK(p.persist_kind == PK_AUTO, "no network boot: persistence as before");
}

/* Signed layers: a layer live.verify= does not name is chosen with its signature when NAME.roothash and
 * NAME.roothash.p7s lie beside it (the kernel judges the signature at set-up), and refused with both ways named
 * otherwise; a layer live.verify= does name never falls back to a signature. */
static void test_signed(void)
{
	static struct plan p;
	const char *h1 = "0924e68abba73bd5d7f4aba7da62aeed4f6d34e7bc18a75d4423eacad4b30ce3";
	const char *files[] = {"10-base.squashfs", "10-base.verity",    "50-c.squashfs", "50-c.verity",
			       "50-c.roothash",    "50-c.roothash.p7s", "60-u.squashfs", "60-u.roothash",
			       "70-h.squashfs",    "70-h.roothash.p7s"};
	const char *saved[] = {"31-mine.squashfs", "32-sig.squashfs", "32-sig.verity", "32-sig.roothash",
			       "32-sig.roothash.p7s"};
	char spec[300], err[300], note[300], buf[16384];

	snprintf(spec, sizeof(spec), "live.verify=10-base:%s", h1);
	make(spec, &p);
	CHECK(layers_choose(&p, &b, files, 10, err, sizeof(err)) == 4, "four layers: %s", err);
	CHECK(!b.layer[0].sig && strcmp(b.layer[0].root_hash, h1) == 0, "10-base by live.verify=");
	CHECK(b.layer[1].sig && !b.layer[1].root_hash[0], "50-c signed, its hash read at set-up");
	CHECK(!b.layer[2].sig && strstr(b.layer[2].no_hash, "no root hash for layer 60-u and it is not signed (no "
							    ".roothash.p7s beside it): refused"),
	      "60-u: no signature, said: %s", b.layer[2].no_hash);
	CHECK(!b.layer[3].sig && strstr(b.layer[3].no_hash, "a .roothash.p7s but no .roothash beside it"),
	      "70-h: a signature without its hash: %s", b.layer[3].no_hash);
	plan_print(&p, &b, buf, sizeof(buf));
	CHECK(strstr(buf, "\nlayer.50-c.root_hash=signed: ") && strstr(buf, "\nlayer.50-c.signed=1\n") &&
		      !strstr(buf, "layer.60-u.signed"),
	      "the plan says which layer is signed: %s", buf);
	/* unsigned everywhere when nothing is verified */
	make("", &p);
	CHECK(layers_choose(&p, &b, files, 10, err, sizeof(err)) == 4 && !b.layer[1].sig, "no verification: %s", err);
	/* a bad live.verify= entry is not replaced by a signature */
	make("live.verify=10-base:xyz,50-c:abc", &p);
	CHECK(layers_choose(&p, &b, files, 10, err, sizeof(err)) == 4 && !b.layer[1].sig &&
		      strstr(b.layer[1].no_hash, "has 3 digits"),
	      "50-c keeps the command line's verdict: %s", b.layer[1].no_hash);
	/* the store: a signed saved layer gets its hash tree (verified at set-up), an unsigned one stays the user's */
	make(spec, &p);
	CHECK(layers_choose(&p, &b, files, 2, err, sizeof(err)) == 1, "medium: %s", err);
	CHECK(layers_add_saved(&p, &b, saved, 5, "/s", note, sizeof(note)) == 2, "two saved: %s", note);
	CHECK(!b.layer[1].sig && !b.layer[1].hash_file[0], "31-mine: the user's own, not verified");
	CHECK(b.layer[2].sig && strcmp(b.layer[2].hash_file, "/s/32-sig.verity") == 0, "32-sig: signed, %s",
	      b.layer[2].hash_file);
}

int main(void)
{
	test_persist();
	test_net();
	test_saved();
	test_saved_limit();
	test_iso_id();
	test_match();
	test_plan();
	test_layers();
	test_many_layers();
	test_verify();
	test_signed();
	test_toram();
	return t_summary();
}
