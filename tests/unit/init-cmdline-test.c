/* Unit tests: kernel command line -> values (initramfs/init/cmdline.c). */
#include "cmdline.h"
#include "init-test.h"
#include "plan_steps.h"

static char warnings[8192];

static void collect(void *ctx, const char *text)
{
	(void)ctx;
	strncat(warnings, text, sizeof(warnings) - strlen(warnings) - 2);
	strcat(warnings, "\n");
}

static void parse(const char *text, struct cmdline *c)
{
	warnings[0] = '\0';
	cmdline_parse(text, c, collect, NULL);
}

static void test_defaults(void)
{
	struct cmdline c;

	parse("BOOT_IMAGE=/vmlinuz console=ttyS0 quiet", &c);
	CHECK(c.warnings == 0, "defaults parse cleanly, got: %s", warnings);
	CHECK_STR(c.v[K_MEDIUM].s, "LABEL=LIVEUNION");
	CHECK(c.v[K_TIMEOUT].u == 30, "timeout %llu", c.v[K_TIMEOUT].u);
	CHECK(c.v[K_SIZE].size.percent && c.v[K_SIZE].size.n == 50, "size default 50%%");
	CHECK(!c.v[K_TORAM].flag && !c.v[K_PANIC].flag && !c.v[K_DEBUG].flag, "flags off by default");
	CHECK_STR(c.v[K_INIT].s, "/sbin/init");
	CHECK_STR(c.v[K_BREAK].s, "");
	CHECK(!c.v[K_TIMEOUT].set, "not set when absent");
}

static void test_last_wins(void)
{
	struct cmdline c;

	parse("live.timeout=5 live.timeout=7 live.init=/a live.init=/bin/sh", &c);
	CHECK(c.v[K_TIMEOUT].u == 7, "last timeout wins: %llu", c.v[K_TIMEOUT].u);
	CHECK(c.v[K_TIMEOUT].set, "set");
	CHECK_STR(c.v[K_INIT].s, "/bin/sh");
	parse("live.toram live.toram=0", &c);
	CHECK(!c.v[K_TORAM].flag, "live.toram=0 after live.toram turns it off");
	parse("live.toram=no live.toram", &c);
	CHECK(c.v[K_TORAM].flag, "bare flag after =no turns it on");
	/* a bad last value resets to the default rather than keeping an earlier one */
	parse("live.timeout=5 live.timeout=x", &c);
	CHECK(c.v[K_TIMEOUT].u == 30, "bad last value -> default, got %llu", c.v[K_TIMEOUT].u);
}

static void test_quotes(void)
{
	struct cmdline c;

	parse("console=tty0 live.layers=\"10-base,20-x\" live.persist=\"LABEL=my disk\" quiet", &c);
	CHECK_STR(c.v[K_LAYERS].s, "10-base,20-x");
	CHECK_STR(c.v[K_PERSIST].s, "LABEL=my disk");
	CHECK(c.warnings == 0, "no warnings: %s", warnings);
	parse("\"live.persist=a b\" live.debug", &c);
	CHECK_STR(c.v[K_PERSIST].s, "a b");
	CHECK(c.v[K_DEBUG].flag, "key after a quoted token still parsed");
	parse("live.init=\"/sbin/my init\"\n", &c);
	CHECK_STR(c.v[K_INIT].s, "/sbin/my init");
	parse("live.persist=\"unterminated live.debug", &c);
	CHECK_STR(c.v[K_PERSIST].s, "unterminated live.debug");
	CHECK(!c.v[K_DEBUG].flag, "inside an open quote it is not a key");
}

static void test_bad_values(void)
{
	struct cmdline c;

	parse("live.timeout=abc", &c);
	CHECK(c.v[K_TIMEOUT].u == 30, "bad timeout -> default");
	CHECK(strstr(warnings, "live.timeout") && strstr(warnings, "'abc'") && strstr(warnings, "'30'"),
	      "warning names key, value and default: %s", warnings);
	parse("live.timeout=99999", &c);
	CHECK(c.v[K_TIMEOUT].u == 30 && c.warnings == 1, "timeout over the maximum");
	parse("live.timeout=-1", &c);
	CHECK(c.v[K_TIMEOUT].u == 30 && c.warnings == 1, "negative timeout");
	parse("live.timeout", &c);
	CHECK(c.v[K_TIMEOUT].u == 30 && strstr(warnings, "(none)"), "timeout without value: %s", warnings);
	parse("live.timeout=", &c);
	CHECK(c.v[K_TIMEOUT].u == 30 && c.warnings == 1, "empty timeout");
	parse("live.toram=maybe", &c);
	CHECK(!c.v[K_TORAM].flag && strstr(warnings, "live.toram") && strstr(warnings, "maybe"), "bad flag: %s",
	      warnings);
	parse("live.break=bogus", &c);
	CHECK_STR(c.v[K_BREAK].s, "");
	CHECK(strstr(warnings, "live.break") && strstr(warnings, "bogus"), "bad break: %s", warnings);
	parse("live.init=sbin/init", &c);
	CHECK_STR(c.v[K_INIT].s, "/sbin/init");
	CHECK(c.warnings == 1, "relative init rejected");
	parse("live.medium=UUID=1234", &c);
	CHECK_STR(c.v[K_MEDIUM].s, "LABEL=LIVEUNION");
	CHECK(strstr(warnings, "UUID=1234") != NULL, "bad medium named: %s", warnings);
	parse("live.medium=sr0", &c);
	CHECK_STR(c.v[K_MEDIUM].s, "LABEL=LIVEUNION");
	parse("live.medium=LABEL=", &c);
	CHECK(c.warnings == 1, "empty label rejected");
	parse("live.medium=UUID=2025-01-02-03-04-05-00", &c);
	CHECK_STR(c.v[K_MEDIUM].s, "UUID=2025-01-02-03-04-05-00");
	CHECK(c.warnings == 0, "UUID with hyphens accepted: %s", warnings);
}

static void test_unknown(void)
{
	struct cmdline c;

	parse("live.bogus=1 live.timeout=3 live. livexyz=1 live.Timeout=9", &c);
	CHECK(strstr(warnings, "unknown key live.bogus") != NULL, "unknown warned: %s", warnings);
	CHECK(strstr(warnings, "live.Timeout") != NULL, "keys are case-sensitive: %s", warnings);
	CHECK(c.v[K_TIMEOUT].u == 3, "known key after unknown still parsed");
	CHECK(c.warnings == 3, "three warnings (bogus, empty name, Timeout), got %d: %s", c.warnings, warnings);
	parse("live.timeout=3 -- live.timeout=9", &c);
	CHECK(c.v[K_TIMEOUT].u == 3, "after -- belongs to the live root's init");
	parse("root=live:CDLABEL=x rd.live.image live_timeout=4", &c);
	CHECK(c.warnings == 0, "other people's keys ignored silently: %s", warnings);
}

static void test_size(void)
{
	struct size_spec s;
	struct cmdline c;

	CHECK(cmdline_size_parse("50%", &s) == 0 && s.percent && s.n == 50, "50%%");
	CHECK(cmdline_size_parse("100%", &s) == 0 && s.percent && s.n == 100, "100%%");
	CHECK(cmdline_size_parse("512M", &s) == 0 && !s.percent && s.n == 512ULL << 20, "512M");
	CHECK(cmdline_size_parse("2G", &s) == 0 && s.n == 2ULL << 30, "2G");
	CHECK(cmdline_size_parse("64k", &s) == 0 && s.n == 64ULL << 10, "64k");
	CHECK(cmdline_size_parse("1048576", &s) == 0 && s.n == 1048576, "bytes");
	CHECK(cmdline_size_parse("0%", &s) != 0, "0%% rejected");
	CHECK(cmdline_size_parse("101%", &s) != 0, "101%% rejected");
	CHECK(cmdline_size_parse("0", &s) != 0, "0 rejected");
	CHECK(cmdline_size_parse("abc", &s) != 0, "garbage rejected");
	CHECK(cmdline_size_parse("12MB", &s) != 0, "two-letter suffix rejected");
	CHECK(cmdline_size_parse("1T", &s) != 0, "unknown suffix rejected");
	CHECK(cmdline_size_parse("", &s) != 0, "empty rejected");
	CHECK(cmdline_size_parse("-5M", &s) != 0, "negative rejected");
	CHECK(cmdline_size_parse("99999999999999999999", &s) != 0, "overflow rejected");
	CHECK(cmdline_size_parse("99999999999G", &s) != 0, "overflow with suffix rejected");
	s.percent = true;
	s.n = 50;
	CHECK(cmdline_size_resolve(&s, 1000ULL << 20) == 500ULL << 20, "50%% of 1000 MiB");
	parse("live.size=garbage", &c);
	CHECK(c.v[K_SIZE].size.percent && c.v[K_SIZE].size.n == 50, "bad size -> 50%%");
	CHECK(strstr(warnings, "live.size") && strstr(warnings, "garbage"), "bad size named: %s", warnings);
	parse("live.size=2G", &c);
	CHECK(!c.v[K_SIZE].size.percent && c.v[K_SIZE].size.n == 2ULL << 30, "live.size=2G");
}

static void test_long_value(void)
{
	static char line[VALUE_MAX + 200];
	struct cmdline c;

	strcpy(line, "live.persist=");
	memset(line + 13, 'a', VALUE_MAX + 50);
	line[13 + VALUE_MAX + 50] = '\0';
	strcat(line, " live.debug");
	parse(line, &c);
	CHECK_STR(c.v[K_PERSIST].s, "");
	CHECK(strstr(warnings, "live.persist") && strstr(warnings, "too long"), "too long named: %s", warnings);
	CHECK(c.v[K_DEBUG].flag, "parsing goes on after a long value");
}

static void test_table(void)
{
	char buf[8192];
	size_t n = cmdline_help(buf, sizeof(buf));
	int k, i;

	CHECK(n > 0 && n < sizeof(buf), "help fits");
	for (k = 0; k < K_COUNT; k++) {
		char name[64];

		snprintf(name, sizeof(name), "\nlive.%s\t", key_table[k].name);
		CHECK(strstr(buf, name) != NULL, "help lists live.%s", key_table[k].name);
		CHECK(key_table[k].help && key_table[k].help[0], "live.%s has help", key_table[k].name);
	}
	/* The documented step names are exactly the ones live.break= accepts, one choice per step in order. */
	CHECK(strstr(buf, "the boot continues when it exits: medium|layers|toram|store|upper|overlay|switch\n") != NULL,
	      "help lists the choices of live.break");
	for (i = 0; i < S_COUNT; i++) {
		char line[64];
		struct cmdline c;

		CHECK(key_table[K_BREAK].choices[i] != NULL, "a choice for step %d", i);
		if (!key_table[K_BREAK].choices[i])
			break;
		snprintf(line, sizeof(line), "live.break=%s", plan_step_name(i));
		parse(line, &c);
		CHECK_STR(c.v[K_BREAK].s, plan_step_name(i));
		CHECK(c.v[K_BREAK].choice == i, "live.break=%s is step %d", plan_step_name(i), i);
	}
	CHECK(i == S_COUNT && key_table[K_BREAK].choices[S_COUNT] == NULL, "as many live.break choices as steps");
}

int main(void)
{
	test_defaults();
	test_last_wins();
	test_quotes();
	test_bad_values();
	test_unknown();
	test_size();
	test_long_value();
	test_table();
	return t_summary();
}
