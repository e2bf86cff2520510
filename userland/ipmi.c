/* ipmi.c: what IPMI can do for the BIOS story: identify the board, restart it (ipmitool). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "aheadctl.h"

static bool valid_port(const char *p)
{
	unsigned long long v;

	return parse_u64(p, &v) && v >= 1 && v <= 65535;
}

/*
 * --bmc for IPMI: "host", "host:port", "[v6addr]", "[v6addr]:port" or a
 * bare IPv6 address, with an optional scheme and path ("ipmi://h:623/").
 * ipmitool wants the host and the port apart (-H, -p), without brackets.
 */
int bmc_host_port(const char *url, char **host, char **port)
{
	const char *s = strstr(url, "://"), *p;
	size_t len;

	s = s ? s + 3 : url;
	len = strcspn(s, "/");
	*host = *port = NULL;
	if (s[0] == '[') {
		const char *close = memchr(s, ']', len);

		if (!close || close == s + 1) {
			err("--bmc '%s': a bracketed IPv6 address needs its closing ']'", url);
			return -1;
		}
		p = close + 1;
		if (p < s + len && *p != ':') {
			err("--bmc '%s': expected ':PORT' after ']'", url);
			return -1;
		}
		*host = strndup(s + 1, close - s - 1);
		if (p < s + len)
			*port = strndup(p + 1, s + len - p - 1);
	} else {
		const char *c = memchr(s, ':', len);

		/* Two colons or more without brackets: an IPv6 address, no port. */
		if (c && !memchr(c + 1, ':', s + len - c - 1)) {
			*host = strndup(s, c - s);
			*port = strndup(c + 1, s + len - c - 1);
		} else {
			*host = strndup(s, len);
		}
	}
	if (!*host || !**host || (*port && !valid_port(*port))) {
		err("--bmc '%s': expected HOST, HOST:PORT or [IPV6]:PORT (port 1-65535)", url);
		free(*host);
		free(*port);
		*host = *port = NULL;
		return -1;
	}
	return 0;
}

/*
 * ipmitool's -f reads the password file up to the first blank and at most
 * 20 bytes (IPMI's limit): a password with a blank inside must travel in
 * IPMI_PASSWORD (-E) instead.
 */
static bool file_safe(const char *pw)
{
	return !strpbrk(pw, " \t\r\n");
}

/* A failure: on stderr (err), or kept in *why (malloc'd) when why is given. */
static void failure(char **why, const char *fmt, ...)
{
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	if (why) {
		free(*why);
		*why = msg;
		return;
	}
	err("%s", msg ? msg : fmt);
	free(msg);
}

/*
 * The argv of one ipmitool call; the password goes through a pipe read as
 * "-f /dev/fd/N" (gone once read, never in argv nor in the environment),
 * or for a password -f would cut, in IPMI_PASSWORD of that child only.
 * why: where a failure is said (NULL: on stderr).
 */
static int ipmitool(const struct bmc *b, const char *const *cmd, char **out, char **why)
{
	char *host, *port, *argv[32], *env[2] = { NULL, NULL }, *fdpath = NULL, nsec[24];
	const char *cipher = getenv("AHEADCTL_IPMI_CIPHER");
	int n = 0, rc, pfd[2] = { -1, -1 };
	bool via_file = file_safe(b->password);
	bool show_only = g.dry_run && !out;	/* reads run even under -n */

	if (bmc_host_port(b->url, &host, &port))
		return EXIT_USAGE;
	argv[n++] = "ipmitool";
	argv[n++] = "-I";
	argv[n++] = "lanplus";
	argv[n++] = "-H";
	argv[n++] = host;
	if (port) {
		argv[n++] = "-p";
		argv[n++] = port;
	}
	if (cipher && *cipher) {
		argv[n++] = "-C";
		argv[n++] = (char *)cipher;
	}
	argv[n++] = "-U";
	argv[n++] = (char *)b->user;
	if (via_file && !show_only) {
		/* Fits the pipe's buffer: bios.c refuses more than 20 bytes. */
		if (pipe2(pfd, O_CLOEXEC) < 0) {
			err("pipe: %s", strerror(errno));
			free(host);
			free(port);
			return EXIT_FAILED;
		}
		if (write(pfd[1], b->password, strlen(b->password)) < 0 ||
		    write(pfd[1], "\n", 1) < 0) {
			err("pipe: %s", strerror(errno));
			rc = EXIT_FAILED;
			goto out;
		}
		close(pfd[1]);
		pfd[1] = -1;
		fdpath = xsprintf("/dev/fd/%d", pfd[0]);
		argv[n++] = "-f";
		argv[n++] = fdpath;
	} else if (via_file) {
		argv[n++] = "-f";
		argv[n++] = "<pipe>";
	} else {
		argv[n++] = "-E";
	}
	/* ipmitool's own retries fit in --timeout; the deadline below ends it. */
	snprintf(nsec, sizeof(nsec), "%ld", b->timeout < 3 ? b->timeout : 3L);
	argv[n++] = "-N";
	argv[n++] = nsec;
	argv[n++] = "-R";
	argv[n++] = "2";
	for (int i = 0; cmd[i] && n < 31; i++)
		argv[n++] = (char *)cmd[i];
	argv[n] = NULL;
	if (show_only) {
		char *line = xstrdup("would run:");

		for (int i = 0; argv[i]; i++) {
			char *l = xsprintf("%s %s", line, argv[i]);

			free(line);
			line = l;
		}
		info("%s  (password %s)", line, via_file ? "through a pipe" :
		     "in IPMI_PASSWORD of ipmitool only");
		free(line);
		rc = 0;
		goto out;
	}
	if (!via_file)
		env[0] = xsprintf("IPMI_PASSWORD=%s", b->password);
	rc = run_cmd_limit(argv, env, pfd[0], out, b->timeout);
	free(env[0]);
	if (rc == RUN_TIMED_OUT)
		failure(why, "ipmitool %s %s: the BMC at %s did not answer within %ld s (--timeout sets the limit)",
			cmd[0], cmd[1] ? cmd[1] : "", host, b->timeout);
	else if (rc == RUN_TOO_BIG)
		failure(why, "ipmitool %s %s: more than %d MiB of output: stopped", cmd[0],
			cmd[1] ? cmd[1] : "", RUN_OUTPUT_MAX >> 20);
	else if (rc == 127)
		failure(why, "ipmitool is not installed (Debian package ipmitool)");
	else if (rc)
		failure(why, "ipmitool %s %s failed (exit %d) talking to %s", cmd[0],
			cmd[1] ? cmd[1] : "", rc, host);
out:
	if (pfd[0] >= 0)
		close(pfd[0]);
	if (pfd[1] >= 0)
		close(pfd[1]);
	free(fdpath);
	free(host);
	free(port);
	return rc;
}

static char *field(const char *text, const char *name)
{
	const char *l = text;
	size_t nl = strlen(name);

	while (l && *l) {
		const char *s = l;

		while (*s == ' ')
			s++;
		if (!strncmp(s, name, nl)) {
			const char *c = strchr(s, ':');
			const char *e = strchr(s, '\n');

			if (c && (!e || c < e)) {
				c++;
				while (*c == ' ')
					c++;
				return strndup(c, e ? (size_t)(e - c) : strlen(c));
			}
		}
		l = strchr(l, '\n');
		if (l)
			l++;
	}
	return NULL;
}

/* "on", "off", or NULL after a message (on stderr, or in *why if given). */
static const char *power_state(const struct bmc *b, char **why)
{
	static const char *const pw[] = { "chassis", "power", "status", NULL };
	char *out = NULL;
	const char *st = NULL;

	if (ipmitool(b, pw, &out, why) == 0 && out) {
		if (strstr(out, "is on"))
			st = "on";
		else if (strstr(out, "is off"))
			st = "off";
		else
			failure(why, "ipmitool chassis power status: unexpected answer '%.60s'", out);
	}
	free(out);
	return st;
}

int ipmi_show(struct bmc *b)
{
	static const char *const mc[] = { "mc", "info", NULL };
	char *out = NULL, *maker, *mid, *prod, *fw;
	const char *power;

	if (ipmitool(b, mc, &out, NULL)) {
		free(out);
		return EXIT_FAILED;
	}
	maker = field(out, "Manufacturer Name");
	mid = field(out, "Manufacturer ID");
	prod = field(out, "Product ID");
	fw = field(out, "Firmware Revision");
	if (!mid || !prod) {
		err("ipmitool mc info: no Manufacturer ID / Product ID in its output");
		return EXIT_FAILED;
	}
	power = power_state(b, NULL);
	if (!power)
		return EXIT_FAILED;
	if (g.json) {
		jopen('{');
		jstr("via", "ipmi");
		jstr("manufacturer", maker);
		jint("manufacturer_id", atoll(mid));
		jstr("product_id", prod);
		jstr("firmware", fw);
		jstr("power", power);
		jnull("snoop_mode");
		jstr("note", "IPMI has no standard command to read or change BIOS settings");
		jclose();
		jend();
	} else {
		printf("board: %s (IANA %s), product %s, BMC firmware %s, power %s\n",
		       maker ? maker : "?", mid, prod, fw ? fw : "?", power);
		printf("snoop mode: not readable over IPMI (no standard BIOS-setting command); use --via redfish or the vendor's tool\n");
	}
	free(out);
	return 0;
}

static int chassis(const struct bmc *b, const char *what, char **why)
{
	const char *const cmd[] = { "chassis", "power", what, NULL };
	char *out = NULL;
	int rc;

	if (g.dry_run)
		return ipmitool(b, cmd, NULL, why);
	rc = ipmitool(b, cmd, &out, why);
	free(out);
	return rc ? EXIT_FAILED : 0;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Polls the power state every second until off (0) or --wait runs out
 * (-1).  A poll that fails (a lost UDP answer, a BMC busy with the
 * shutdown) is tried again: only the deadline ends the wait.  *last: the
 * last state read ("on", or NULL when the last poll failed, its reason in
 * *why).
 */
static int wait_off(const struct bmc *b, struct reset_info *r, const char **last,
		    char **why)
{
	double start = now();

	for (;;) {
		const char *st = power_state(b, why);
		struct timespec tick = { 1, 0 };

		*last = st;
		if (st && !strcmp(st, "off")) {
			r->waited = now() - start;
			return 0;
		}
		if (now() - start >= b->wait)
			return -1;
		nanosleep(&tick, NULL);
	}
}

/*
 * The soft shutdown is asked: from here on "chassis power on" is always
 * sent, whatever the polls said, so that a node that went off (or goes off
 * later) is not left off because a status answer was lost.
 */
static int soft_then_on(struct bmc *b, struct reset_info *r)
{
	const char *last = NULL;
	char *why = NULL, *soft_why = NULL, *on_why = NULL;
	int off, on, rc = 0;

	if (chassis(b, "soft", &soft_why))
		warnx("the soft shutdown request failed (%s): it may have reached the BMC; waiting up to %ld s for the system to go off all the same",
		      soft_why ? soft_why : "?", b->wait);
	off = wait_off(b, r, &last, &why);
	on = chassis(b, "on", &on_why);
	if (!off && on) {
		err("the system is off and 'chassis power on' failed (%s): the node stays off until it is powered on ('aheadctl --yes bios power-cycle --via ipmi' powers on a system that is off)",
		    on_why ? on_why : "?");
		rc = EXIT_FAILED;
	} else if (off && last) {
		err("the system is still on %ld s after the soft (ACPI) shutdown request: the BIOS change stays pending; 'chassis power on' was %s in case the OS is still shutting down, but it may yet end up off: check it ('aheadctl bios show --via ipmi' shows the power state); shut the OS down, or power-cycle hard with --force",
		    b->wait, on ? "refused" : "sent");
		rc = EXIT_FAILED;
	} else if (off) {
		err("the power state could not be read for %ld s after the soft (ACPI) shutdown request (%s): the node may be off; 'chassis power on' was %s%s%s%s: check it ('aheadctl bios show --via ipmi' shows the power state)",
		    b->wait, why ? why : "?", on ? "refused too" : "sent",
		    on && on_why ? " (" : "", on && on_why ? on_why : "", on && on_why ? ")" : "");
		rc = EXIT_FAILED;
	}
	free(why);
	free(soft_why);
	free(on_why);
	return rc;
}

/*
 * Restarts the machine so a pending BIOS change applies.  Graceful by
 * default: a soft (ACPI) shutdown lets the OS unmount its filesystems,
 * then power on; --force is a power cycle, an unclean stop of whatever runs.
 * This is IPMI over the LAN (-H): the soft shutdown stops the node's OS,
 * so the power on must come from another machine.
 */
int ipmi_reset(struct bmc *b, struct reset_info *r)
{
	const char *st;

	r->via = "ipmi";
	r->graceful = !b->force;
	r->requested = !g.dry_run;
	if (b->force) {
		r->type = "chassis power cycle";
		return chassis(b, "cycle", NULL);
	}
	if (g.dry_run) {
		r->type = "chassis power soft, wait for off, chassis power on";
		info("would run ipmitool chassis power status every second, up to %ld s, until the system is off",
		     b->wait);
		if (chassis(b, "soft", NULL) || chassis(b, "on", NULL))
			return EXIT_FAILED;
		return 0;
	}
	st = power_state(b, NULL);
	if (!st)
		return EXIT_FAILED;
	if (!strcmp(st, "off")) {
		r->type = "chassis power on (the system was off)";
		return chassis(b, "on", NULL);
	}
	r->type = "chassis power soft, wait for off, chassis power on";
	return soft_then_on(b, r);
}

int ipmi_power_cycle(struct bmc *b)
{
	struct reset_info r = { 0 };

	if (ipmi_reset(b, &r))
		return EXIT_FAILED;
	if (g.json) {
		jopen('{');
		jstr("via", "ipmi");
		jbool("dry_run", g.dry_run);
		reset_json(&r);
		jclose();
		jend();
	} else {
		info("%s%s restart through IPMI: %s", g.dry_run ? "would do a " : "",
		     r.graceful ? "graceful" : "hard (--force)", r.type);
	}
	return 0;
}
