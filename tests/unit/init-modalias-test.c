/* Unit tests: modalias matching and module load order (initramfs/init/modalias.c). */
#include <stdlib.h>
#include <string.h>

#include "init-test.h"
#include "modalias.h"

static const char dep_fixture[] =
	"kernel/drivers/ata/ahci.ko.xz: kernel/drivers/ata/libahci.ko.xz kernel/drivers/ata/libata.ko.xz "
	"kernel/drivers/scsi/scsi_mod.ko.xz\n"
	"kernel/drivers/ata/libahci.ko.xz: kernel/drivers/ata/libata.ko.xz kernel/drivers/scsi/scsi_mod.ko.xz\n"
	"kernel/drivers/ata/libata.ko.xz: kernel/drivers/scsi/scsi_mod.ko.xz\n"
	"kernel/drivers/scsi/scsi_mod.ko.xz:\n"
	"kernel/drivers/scsi/sr_mod.ko.xz: kernel/drivers/cdrom/cdrom.ko.xz kernel/drivers/scsi/scsi_mod.ko.xz\n"
	"kernel/drivers/cdrom/cdrom.ko.xz:\n"
	"kernel/drivers/usb/host/xhci-pci.ko.zst: kernel/drivers/usb/host/xhci-hcd.ko.zst\n"
	"kernel/drivers/usb/host/xhci-hcd.ko.zst:\n"
	"extra/plain.ko:\n";

static const char alias_fixture[] = "# Aliases extracted from modules themselves.\n"
				    "alias pci:v*d*sv*sd*bc01sc06i01* ahci\n"
				    "alias pci:v00008086d00002922sv*sd*bc*sc*i* ahci\n"
				    "alias scsi:t-0x05* sr_mod\n"
				    "alias scsi:t-0x04* sr_mod\n"
				    "alias pci:v*d*sv*sd*bc0Csc03i30* xhci_pci\n"
				    "alias pci:v*d*sv*sd*bc0Csc03i30* ghost_module\n"
				    "alias fs-plain plain\n";

static int load(struct mod_index *ix, char **a, char **d)
{
	char err[200];

	*a = strdup(alias_fixture);
	*d = strdup(dep_fixture);
	if (mod_index_parse(ix, *a, *d, err, sizeof(err)) != 0) {
		CHECK(0, "fixture parses: %s", err);
		return -1;
	}
	return 0;
}

static void test_names(void)
{
	char n[MOD_NAME_LEN];

	CHECK(mod_name_of("kernel/drivers/usb/host/xhci-pci.ko.xz", n, sizeof(n)) == 0, "name");
	CHECK_STR(n, "xhci_pci");
	CHECK(mod_name_of("overlay.ko", n, sizeof(n)) == 0, "name");
	CHECK_STR(n, "overlay");
	CHECK(mod_name_of("dm-verity", n, sizeof(n)) == 0, "a bare name");
	CHECK_STR(n, "dm_verity");
	CHECK(mod_name_of("a/.ko", n, sizeof(n)) == -1, "empty name refused");
	CHECK(mod_name_of("averyveryveryveryveryveryveryveryveryveryveryveryveryverylongname.ko", n, 16) == -1,
	      "a name that does not fit is refused, not cut");
	CHECK(mod_compressed("k/a.ko.xz") && mod_compressed("k/a.ko.zst") && mod_compressed("k/a.ko.gz"), "compressed");
	CHECK(!mod_compressed("k/a.ko") && !mod_compressed("xz"), "not compressed");
}

static void test_match(void)
{
	struct mod_index ix;
	char *a, *d;
	int m[8], n;

	if (load(&ix, &a, &d) != 0)
		return;
	CHECK(ix.nentry == 9 && ix.nalias == 7, "%d entries, %d aliases", ix.nentry, ix.nalias);
	/* an ICH9 AHCI controller matches both the class and the vendor/device pattern: ahci once */
	n = mod_match(&ix, "pci:v00008086d00002922sv00001AF4sd00001100bc01sc06i01", m, 8);
	CHECK(n == 1 && m[0] == mod_find(&ix, "ahci"), "ahci once, n=%d", n);
	n = mod_match(&ix, "scsi:t-0x05", m, 8);
	CHECK(n == 1 && m[0] == mod_find(&ix, "sr_mod"), "a CD drive pulls sr_mod");
	CHECK(mod_match(&ix, "scsi:t-0x00", m, 8) == 0, "a disk has no module here");
	/* ghost_module is in modules.alias but not in modules.dep: skipped, xhci_pci stays */
	n = mod_match(&ix, "pci:v00001B36d0000000Dsv00001AF4sd00001100bc0Csc03i30", m, 8);
	CHECK(n == 1 && m[0] == mod_find(&ix, "xhci-pci"), "xhci only, n=%d", n);
	CHECK(mod_match(&ix, "pci:v00001B36d0000000Dsv00001AF4sd00001100bc0Csc03i20", m, 8) == 0, "EHCI: none");
	CHECK(mod_match(&ix, "pci:v*d*sv*sd*bc01sc06i01*", m, 1) == 1, "max honoured");
	CHECK(mod_find(&ix, "xhci_hcd") >= 0 && mod_find(&ix, "xhci-hcd") == mod_find(&ix, "xhci_hcd"), "- and _");
	CHECK(mod_find(&ix, "nvme") == -1, "absent module");
	mod_index_free(&ix);
	free(a);
	free(d);
}

static void test_order(void)
{
	struct mod_index ix;
	char *a, *d;
	int o[16], n, i;
	char got[200] = "";

	if (load(&ix, &a, &d) != 0)
		return;
	n = mod_load_order(&ix, mod_find(&ix, "ahci"), o, 16);
	for (i = 0; i < n; i++) {
		strcat(got, ix.entry[o[i]].name);
		strcat(got, " ");
	}
	CHECK_STR(got, "scsi_mod libata libahci ahci ");
	n = mod_load_order(&ix, mod_find(&ix, "plain"), o, 16);
	CHECK(n == 1 && o[0] == mod_find(&ix, "plain"), "no deps: itself");
	CHECK(mod_load_order(&ix, mod_find(&ix, "ahci"), o, 3) == -1, "an order that does not fit is refused");
	CHECK(mod_load_order(&ix, -1, o, 16) == -1, "no module");
	mod_index_free(&ix);
	free(a);
	free(d);
}

static void test_bad(void)
{
	struct mod_index ix;
	char err[200];
	char dep1[] = "kernel/a.ko: kernel/b.ko\n";
	char dep2[] = "kernel/a.ko kernel/b.ko\n";
	char dep3[] = "kernel/a.ko: kernel/b.ko\nkernel/b.ko: kernel/a.ko\n";
	char al1[] = "alias onlypattern\n";
	char al2[] = "";
	char al3[] = "";
	char al4[] = "";
	int o[8];

	CHECK(mod_index_parse(&ix, al2, dep1, err, sizeof(err)) == -1 && strstr(err, "kernel/b.ko"),
	      "a dependency without a line is named: %s", err);
	CHECK(mod_index_parse(&ix, al3, dep2, err, sizeof(err)) == -1 && strstr(err, "line 1"), "no colon: %s", err);
	{
		char ok[] = "kernel/a.ko:\n";

		CHECK(mod_index_parse(&ix, al1, ok, err, sizeof(err)) == -1 && strstr(err, "modules.alias line 1"),
		      "bad alias line: %s", err);
	}
	CHECK(mod_index_parse(&ix, al4, dep3, err, sizeof(err)) == 0, "a cycle parses");
	CHECK(mod_load_order(&ix, 0, o, 8) == -1, "but gives no load order");
	mod_index_free(&ix);
}

static void test_options(void)
{
	char o[64];
	const char *line = "BOOT_IMAGE=/boot/bzImage usb_storage.delay_use=100ms live.medium=UUID=1 "
			   "usb-storage.quirks=0781:5580:u i915.modeset=0 usb_storage.delay_use=0 usb_storagex.a=1 "
			   "usb_storage. .x=1 usb_storage.=1 a=b.c usb_storage.msg=\"a b\" -- usb_storage.after=1";

	CHECK(mod_options(line, "usb_storage", o, sizeof(o)) == 0, "options fit");
	CHECK(strcmp(o, "delay_use=100ms quirks=0781:5580:u delay_use=0 msg=\"a b\"") == 0,
	      "usb_storage's words, either spelling, in order, quoted value kept, none after --: '%s'", o);
	CHECK(mod_options(line, "usb-storage", o, sizeof(o)) == 0 && strncmp(o, "delay_use=100ms", 15) == 0,
	      "the module asked for by its other spelling");
	CHECK(mod_options(line, "i915", o, sizeof(o)) == 0 && strcmp(o, "modeset=0") == 0, "another module: '%s'", o);
	CHECK(mod_options(line, "ahci", o, sizeof(o)) == 0 && o[0] == '\0', "a module the line does not name: none");
	CHECK(mod_options(line, "usb", o, sizeof(o)) == 0 && o[0] == '\0', "a prefix of a module name is not it");
	CHECK(mod_options("", "x", o, sizeof(o)) == 0 && o[0] == '\0', "an empty line");
	CHECK(mod_options("x.a=1 x.bb=22 x.c=3", "x", o, 9) == -1 && strcmp(o, "a=1 c=3") == 0,
	      "what does not fit is left out, the rest kept: '%s'", o);
}

int main(void)
{
	test_names();
	test_options();
	test_match();
	test_order();
	test_bad();
	return t_summary();
}
