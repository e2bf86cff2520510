/* ipmi.c: what IPMI can do for the BIOS story: identify the board, restart it (ipmitool). */
#include <errno.h>
#include <fcntl.h>
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

/*
 * The argv of one ipmitool call; the password goes through a pipe read as
 * "-f /dev/fd/N" (gone once read, never in argv nor in the environment),
 * or for a password -f would cut, in IPMI_PASSWORD of that child only.
 */
static int ipmitool(const struct bmc *b, const char *const *cmd, char **out)
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
		err("ipmitool %s %s: the BMC at %s did not answer within %ld s (--timeout sets the limit)",
		    cmd[0], cmd[1] ? cmd[1] : "", host, b->timeout);
	else if (rc == 127)
		err("ipmitool is not installed (Debian package ipmitool)");
	else if (rc)
		err("ipmitool %s %s failed (exit %d) talking to %s", cmd[0],
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

/* "on", "off", or NULL after a message. */
static const char *power_state(const struct bmc *b)
{
	static const char *const pw[] = { "chassis", "power", "status", NULL };
	char *out = NULL;
	const char *st = NULL;

	if (ipmitool(b, pw, &out) == 0 && out) {
		if (strstr(out, "is on"))
			st = "on";
		else if (strstr(out, "is off"))
			st = "off";
		else
			err("ipmitool chassis power status: unexpected answer '%.60s'", out);
	}
	free(out);
	return st;
}

int ipmi_show(struct bmc *b)
{
	static const char *const mc[] = { "mc", "info", NULL };
	char *out = NULL, *maker, *mid, *prod, *fw;
	const char *power;

	if (ipmitool(b, mc, &out)) {
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
	power = power_state(b);
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

static int chassis(const struct bmc *b, const char *what)
{
	const char *const cmd[] = { "chassis", "power", what, NULL };
	char *out = NULL;
	int rc;

	if (g.dry_run)
		return ipmitool(b, cmd, NULL);
	rc = ipmitool(b, cmd, &out);
	free(out);
	return rc ? EXIT_FAILED : 0;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Polls the power state until off; -1 after a message at the deadline. */
static int wait_off(const struct bmc *b, struct reset_info *r)
{
	double start = now();

	for (;;) {
		const char *st = power_state(b);
		struct timespec tick = { 1, 0 };

		if (!st)
			return -1;
		if (!strcmp(st, "off")) {
			r->waited = now() - start;
			return 0;
		}
		if (now() - start >= b->wait) {
			err("the system is still on %ld s after the soft (ACPI) shutdown request: the BIOS change stays pending; shut the OS down, or power-cycle hard with --force",
			    b->wait);
			return -1;
		}
		nanosleep(&tick, NULL);
	}
}

/*
 * Restarts the machine so a pending BIOS change applies.  Graceful by
 * default: a soft (ACPI) shutdown lets the OS unmount its filesystems,
 * then power on; --force is a power cycle, an unclean stop of whatever runs.
 */
int ipmi_reset(struct bmc *b, struct reset_info *r)
{
	const char *st;

	r->via = "ipmi";
	r->graceful = !b->force;
	r->requested = !g.dry_run;
	if (b->force) {
		r->type = "chassis power cycle";
		return chassis(b, "cycle");
	}
	if (g.dry_run) {
		r->type = "chassis power soft, wait for off, chassis power on";
		info("would run ipmitool chassis power status every second, up to %ld s, until the system is off",
		     b->wait);
		if (chassis(b, "soft") || chassis(b, "on"))
			return EXIT_FAILED;
		return 0;
	}
	st = power_state(b);
	if (!st)
		return EXIT_FAILED;
	if (!strcmp(st, "off")) {
		r->type = "chassis power on (the system was off)";
		return chassis(b, "on");
	}
	r->type = "chassis power soft, wait for off, chassis power on";
	if (chassis(b, "soft") || wait_off(b, r) || chassis(b, "on"))
		return EXIT_FAILED;
	return 0;
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
