/* vendor.c: snoop mode through the vendors' in-band tools (racadm, ilorest, onecli, sum, syscfg). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aheadctl.h"

#define VAL "\x01"	/* placeholder for the value in a set command */

struct tool {
	const char *name;
	const char *get[8];
	const char *set[10];
	const char *apply[10];		/* after set, without --reboot */
	const char *apply_reboot[10];	/* after set, with --reboot; empty: IPMI */
	const char *val[4];		/* home, early, cod, osb */
	const char *refuse_set;		/* set not automated: why */
};

static const struct tool tools[] = {
	{ "racadm",
	  { "racadm", "get", "BIOS.MemSettings.SnoopMode" },
	  { "racadm", "set", "BIOS.MemSettings.SnoopMode", VAL },
	  { "racadm", "jobqueue", "create", "BIOS.Setup.1-1" },
	  { "racadm", "jobqueue", "create", "BIOS.Setup.1-1", "-r", "pwrcycle", "-s", "TIME_NOW" },
	  { "HomeSnoop", "EarlySnoop", "ClusterOnDie", "OpportunisticSnoopBroadcast" }, NULL },
	{ "ilorest",
	  { "ilorest", "get", "QpiSnoopConfig", "--selector", "Bios." },
	  { "ilorest", "set", "QpiSnoopConfig=" VAL, "--selector", "Bios.", "--commit" },
	  { NULL },
	  { "ilorest", "reboot" },
	  { "HomeSnoop", "Standard", "ClusterOnDie", NULL }, NULL },
	{ "onecli",
	  { "onecli", "config", "show", "Processors.SnoopMode" },
	  { "onecli", "config", "set", "Processors.SnoopMode", VAL },
	  { NULL },
	  { NULL },
	  { "Home Snoop", "Early Snoop", "Cluster On Die", NULL }, NULL },
	{ "syscfg",
	  { "syscfg", "/d", "biossettings", "Snoop Mode" },
	  { "syscfg", "/bcs", "", "Snoop Mode", VAL },
	  { NULL },
	  { NULL },
	  { "Home Snoop", "Early Snoop", "Cluster On Die", NULL }, NULL },
	{ "sum",
	  { "sum", "-c", "GetCurrentBiosCfg", "--file", "/dev/stdout" },
	  { NULL }, { NULL }, { NULL }, { NULL },
	  "Supermicro SUM changes BIOS options from a whole configuration file, which aheadctl does not rewrite: run 'sum -c GetCurrentBiosCfg --file bios.txt', change 'Snoop Mode' in it, then 'sum -c ChangeBiosCfg --file bios.txt' and reboot" },
	{ NULL },
};

static const struct tool *tool_of(const char *name)
{
	for (int i = 0; tools[i].name; i++)
		if (!strcmp(tools[i].name, name))
			return &tools[i];
	return NULL;
}

bool vendor_known(const char *tool)
{
	return tool_of(tool) != NULL;
}

static bool in_path(const char *bin)
{
	const char *path = getenv("PATH");
	char *p = xstrdup(path ? path : "/usr/bin:/bin"), *save = NULL;
	bool found = false;

	for (char *d = strtok_r(p, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
		char *f = xsprintf("%s/%s", d, bin);

		found = !access(f, X_OK);
		free(f);
	}
	free(p);
	return found;
}

/* argv with the value substituted; quoted for display in *shown. */
static char **build(const char *const *tmpl, const char *val, char **shown)
{
	int n = 0;
	char **argv;
	size_t len = 1;

	while (tmpl[n])
		n++;
	argv = xcalloc(n + 1, sizeof(char *));
	for (int i = 0; i < n; i++) {
		const char *v = strstr(tmpl[i], VAL);

		argv[i] = v ? xsprintf("%.*s%s", (int)(v - tmpl[i]), tmpl[i], val) :
			xstrdup(tmpl[i]);
		len += strlen(argv[i]) + 3;
	}
	*shown = xcalloc(1, len);
	for (int i = 0; i < n; i++) {
		bool q = !*argv[i] || strpbrk(argv[i], " \"'");

		if (i)
			strcat(*shown, " ");
		if (q)
			strcat(*shown, "\"");
		strcat(*shown, argv[i]);
		if (q)
			strcat(*shown, "\"");
	}
	return argv;
}

static int step(const char *const *tmpl, const char *val, bool quiet)
{
	char *shown, **argv = build(tmpl, val, &shown), *out = NULL;
	int rc;

	if (g.dry_run) {
		info("would run: %s", shown);
		return 0;
	}
	rc = run_cmd(argv, NULL, &out);
	if (!quiet || rc)
		fputs(out ? out : "", g.json ? stderr : stdout);
	if (rc)
		err("'%s' failed (exit %d)", shown, rc);
	free(out);
	return rc;
}

int vendor_show(const char *name)
{
	const struct tool *t = tool_of(name);

	if (!g.dry_run && !in_path(t->get[0])) {
		err("%s is not installed (not in PATH)", t->get[0]);
		return EXIT_FAILED;
	}
	return step(t->get, NULL, false) ? EXIT_FAILED : 0;
}

int vendor_set(const char *name, int mode, bool reboot, struct bmc *b)
{
	const struct tool *t = tool_of(name);
	const char *v;

	if (t->refuse_set) {
		err("%s", t->refuse_set);
		return EXIT_FAILED;
	}
	v = t->val[mode];
	if (!v) {
		err("%s: no '%s' snoop mode on these machines", name, snoop_modes[mode]);
		return EXIT_FAILED;
	}
	/* Everything checked before the first change. */
	if (reboot && !t->apply_reboot[0] && (!b->url || !b->user || !b->password)) {
		err("%s cannot reboot the machine itself: --reboot needs --bmc/--user and a password for an IPMI power cycle",
		    name);
		return EXIT_USAGE;
	}
	if (!g.dry_run && !in_path(t->get[0])) {
		err("%s is not installed (not in PATH)", t->get[0]);
		return EXIT_FAILED;
	}
	/* The get proves the attribute exists here before anything changes. */
	if (step(t->get, NULL, true)) {
		err("%s cannot read the snoop-mode setting on this machine: refusing to set it", name);
		return EXIT_FAILED;
	}
	if (step(t->set, v, false))
		return EXIT_FAILED;
	if (reboot && t->apply_reboot[0])
		return step(t->apply_reboot, NULL, false) ? EXIT_FAILED : 0;
	if (!reboot && t->apply[0] && step(t->apply, NULL, false))
		return EXIT_FAILED;
	if (reboot)
		return ipmi_power_cycle(b);
	info("snoop-mode %s is pending: it applies at the next reboot", snoop_modes[mode]);
	return 0;
}
