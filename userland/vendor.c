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
	const char *reboot[10];		/* after set, with --reboot; empty: in-band */
	const char *reboot_force[10];	/* the same with --force; empty: IPMI */
	const char *val[4];		/* home, early, cod, osb */
	const char *refuse_set;		/* set not automated: why */
	const char *graceful_note;	/* why reboot[] is empty, if it is */
};

/*
 * Restarts are graceful unless --force: racadm's BIOS job reboots with a
 * graceful shutdown (-r graceful; the job fails if the OS does not stop)
 * or, forced, a power cycle (-r pwrcycle).  "ilorest reboot" knows only
 * hard resets (ForceRestart and the like); onecli and syscfg cannot
 * restart at all.  These tools run on the node itself, so a graceful
 * restart without the tool's own is the node's: "systemctl reboot", a
 * warm reboot the firmware applies the pending change in.  IPMI's
 * graceful restart (soft off, then power on) cannot be driven from the
 * node it stops; its power cycle, one command to the BMC, can (--force).
 */
static const char *const inband_reboot[] = { "systemctl", "reboot", NULL };

/* Seconds a vendor tool may run without --timeout: OneCLI takes tens. */
#define TOOL_SECONDS 300
static const struct tool tools[] = {
	{ "racadm",
	  { "racadm", "get", "BIOS.MemSettings.SnoopMode" },
	  { "racadm", "set", "BIOS.MemSettings.SnoopMode", VAL },
	  { "racadm", "jobqueue", "create", "BIOS.Setup.1-1" },
	  { "racadm", "jobqueue", "create", "BIOS.Setup.1-1", "-r", "graceful", "-s", "TIME_NOW" },
	  { "racadm", "jobqueue", "create", "BIOS.Setup.1-1", "-r", "pwrcycle", "-s", "TIME_NOW" },
	  { "HomeSnoop", "EarlySnoop", "ClusterOnDie", "OpportunisticSnoopBroadcast" }, NULL, NULL },
	{ "ilorest",
	  { "ilorest", "get", "QpiSnoopConfig", "--selector", "Bios." },
	  { "ilorest", "set", "QpiSnoopConfig=" VAL, "--selector", "Bios.", "--commit" },
	  { NULL },
	  { NULL },
	  { "ilorest", "reboot", "ForceRestart" },
	  { "HomeSnoop", "Standard", "ClusterOnDie", NULL }, NULL,
	  "ilorest reboot only does hard resets" },
	{ "onecli",
	  { "onecli", "config", "show", "Processors.SnoopMode" },
	  { "onecli", "config", "set", "Processors.SnoopMode", VAL },
	  { NULL }, { NULL }, { NULL },
	  { "Home Snoop", "Early Snoop", "Cluster On Die", NULL }, NULL,
	  "onecli cannot restart the machine" },
	{ "syscfg",
	  { "syscfg", "/d", "biossettings", "Snoop Mode" },
	  { "syscfg", "/bcs", "", "Snoop Mode", VAL },
	  { NULL }, { NULL }, { NULL },
	  { "Home Snoop", "Early Snoop", "Cluster On Die", NULL }, NULL,
	  "syscfg cannot restart the machine" },
	{ "sum",
	  { "sum", "-c", "GetCurrentBiosCfg", "--file", "/dev/stdout" },
	  { NULL }, { NULL }, { NULL }, { NULL }, { NULL },
	  "Supermicro SUM changes BIOS options from a whole configuration file, which aheadctl does not rewrite: run 'sum -c GetCurrentBiosCfg --file bios.txt', change 'Snoop Mode' in it, then 'sum -c ChangeBiosCfg --file bios.txt' and reboot",
	  NULL },
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

static const char *const *reboot_cmd(const struct tool *t, bool force)
{
	return force ? t->reboot_force : t->reboot;
}

/* Whether --reboot runs the tool itself, rather than systemctl or IPMI. */
bool vendor_reboots_itself(const char *tool, bool force)
{
	const struct tool *t = tool_of(tool);

	return t && reboot_cmd(t, force)[0];
}

/* Whether --reboot goes through IPMI (--bmc): a forced one the tool cannot do. */
bool vendor_reboot_ipmi(const char *tool, bool force)
{
	return force && !vendor_reboots_itself(tool, force);
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

/* The commands run (or shown under -n), for -j; seconds: each one's limit. */
struct steps {
	int n;
	long seconds;
	char *shown[4];
	int rc[4];
	char *out[4];
};

static int step(struct steps *st, const char *const *tmpl, const char *val, bool quiet)
{
	char *shown, **argv = build(tmpl, val, &shown), *out = NULL;
	int rc = 0;

	if (g.dry_run) {
		info("would run: %s", shown);
	} else {
		rc = run_cmd_limit(argv, NULL, -1, &out, st->seconds);
		if (!g.json && (!quiet || rc) && rc != RUN_TOO_BIG)
			fputs(out ? out : "", stdout);
		if (rc == RUN_TIMED_OUT)
			err("'%s' did not finish within %ld s (--timeout sets the limit): stopped it and what it started",
			    shown, st->seconds);
		else if (rc == RUN_TOO_BIG)
			err("'%s' wrote more than %d MiB: stopped it (a BIOS setting is a line)",
			    shown, RUN_OUTPUT_MAX >> 20);
		else if (rc)
			err("'%s' failed (exit %d)", shown, rc);
	}
	for (int i = 0; argv[i]; i++)
		free(argv[i]);
	free(argv);
	st->shown[st->n] = shown;
	st->rc[st->n] = rc;
	st->out[st->n++] = out;
	return rc;
}

static void steps_json(const struct steps *st)
{
	jkey("commands");
	jopen('[');
	for (int i = 0; i < st->n; i++) {
		jopen('{');
		jstr("command", st->shown[i]);
		if (g.dry_run) {
			jbool("run", false);
		} else if (st->rc[i] == RUN_TIMED_OUT || st->rc[i] == RUN_TOO_BIG) {
			jbool("run", true);
			jnull("exit");
			jstr("stopped", st->rc[i] == RUN_TIMED_OUT ? "timeout" : "output too large");
		} else {
			jbool("run", true);
			jint("exit", st->rc[i]);
			jstr("output", st->out[i]);
		}
		jclose();
	}
	jclose();
}

static void steps_free(struct steps *st)
{
	for (int i = 0; i < st->n; i++) {
		free(st->shown[i]);
		free(st->out[i]);
	}
}

static long tool_seconds(const struct bmc *b)
{
	return b->timeout_given ? b->timeout : TOOL_SECONDS;
}

int vendor_show(const char *name, const struct bmc *b)
{
	const struct tool *t = tool_of(name);
	struct steps st = { .seconds = tool_seconds(b) };
	int rc;

	if (!g.dry_run && !in_path(t->get[0])) {
		err("%s is not installed (not in PATH)", t->get[0]);
		return EXIT_FAILED;
	}
	rc = step(&st, t->get, NULL, false);
	if (!rc && g.json) {
		jopen('{');
		jstr("via", name);
		jbool("dry_run", g.dry_run);
		steps_json(&st);
		jclose();
		jend();
	}
	steps_free(&st);
	return rc ? EXIT_FAILED : 0;
}

/* Everything checked before the first change; 0 or an exit status. */
static int check_set(const struct tool *t, int mode, bool reboot, struct bmc *b)
{
	if (t->refuse_set) {
		err("%s", t->refuse_set);
		return EXIT_FAILED;
	}
	if (!t->val[mode]) {
		err("%s: no '%s' snoop mode on these machines", t->name, snoop_modes[mode]);
		return EXIT_FAILED;
	}
	if (reboot && vendor_reboot_ipmi(t->name, b->force) &&
	    (!b->url || !b->user || !b->password)) {
		err("%s: --reboot --force needs --bmc/--user and a password for an IPMI power cycle (a graceful --reboot is in-band: systemctl reboot)",
		    t->graceful_note);
		return EXIT_USAGE;
	}
	if (reboot && !reboot_cmd(t, b->force)[0] && !b->force && b->url)
		warnx("--bmc is not used: %s, so the graceful restart is in-band ('systemctl reboot'); IPMI restarts only with --force (a power cycle)",
		      t->graceful_note);
	if (!g.dry_run && !in_path(t->get[0])) {
		err("%s is not installed (not in PATH)", t->get[0]);
		return EXIT_FAILED;
	}
	if (reboot && !reboot_cmd(t, b->force)[0] && !b->force && !g.dry_run &&
	    !in_path(inband_reboot[0])) {
		err("--reboot restarts the node in-band with 'systemctl reboot', and there is no systemctl here: set without --reboot and restart the node another way");
		return EXIT_FAILED;
	}
	return 0;
}

static void set_json(const struct tool *t, int mode, const struct steps *st,
		     const struct reset_info *r)
{
	jopen('{');
	jstr("via", t->name);
	jbool("dry_run", g.dry_run);
	jstr("snoop_mode", snoop_modes[mode]);
	jstr("value", t->val[mode]);
	steps_json(st);
	jbool("pending", !r || !r->type);
	reset_json(r);
	jclose();
	jend();
}

static int set_steps(const struct tool *t, int mode, bool reboot, struct bmc *b,
		     struct steps *st, struct reset_info *r)
{
	const char *const *rb = reboot_cmd(t, b->force);

	/* The get proves the attribute exists here before anything changes. */
	if (step(st, t->get, NULL, true)) {
		err("%s cannot read the snoop-mode setting on this machine: refusing to set it", t->name);
		return EXIT_FAILED;
	}
	if (step(st, t->set, t->val[mode], false))
		return EXIT_FAILED;
	if (reboot && rb[0]) {
		r->via = t->name;
		r->type = b->force ? "forced (power cycle)" : "graceful";
		r->graceful = !b->force;
		r->requested = !g.dry_run;
		if (step(st, rb, NULL, false))
			return EXIT_FAILED;
		info("%s%s restart through %s", g.dry_run ? "would request a " : "",
		     r->graceful ? "graceful" : "hard (--force)", t->name);
		return 0;
	}
	if (!reboot && t->apply[0] && step(st, t->apply, NULL, false))
		return EXIT_FAILED;
	if (reboot && b->force) {
		if (ipmi_reset(b, r))
			return EXIT_FAILED;
		info("%s%s restart through IPMI: %s", g.dry_run ? "would do a " : "",
		     r->graceful ? "graceful" : "hard (--force)", r->type);
		return 0;
	}
	if (reboot) {
		/* aheadctl runs on the node it restarts: the OS's own reboot. */
		r->via = "systemd";
		r->type = "systemctl reboot";
		r->graceful = true;
		r->requested = !g.dry_run;
		if (step(st, inband_reboot, NULL, false)) {
			err("the in-band restart failed: snoop-mode %s stays pending until the next reboot",
			    snoop_modes[mode]);
			return EXIT_FAILED;
		}
		info("%sgraceful restart in-band: systemctl reboot (the OS stops cleanly; the firmware applies the change as the node boots)",
		     g.dry_run ? "would do a " : "");
		return 0;
	}
	info("snoop-mode %s is pending: it applies at the next reboot", snoop_modes[mode]);
	return 0;
}

int vendor_set(const char *name, int mode, bool reboot, struct bmc *b)
{
	const struct tool *t = tool_of(name);
	struct steps st = { .seconds = tool_seconds(b) };
	struct reset_info r = { 0 };
	int rc = check_set(t, mode, reboot, b);

	if (rc)
		return rc;
	rc = set_steps(t, mode, reboot, b, &st, &r);
	if (!rc && g.json)
		set_json(t, mode, &st, reboot ? &r : NULL);
	steps_free(&st);
	return rc;
}
