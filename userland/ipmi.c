/* ipmi.c: what IPMI can do for the BIOS story: identify the board, power-cycle (ipmitool). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aheadctl.h"

/* "ipmi://host:port", "https://host", "host:port", "host" -> host, port. */
static void host_port(const char *url, char **host, char **port)
{
	const char *s = strstr(url, "://");
	char *h, *c, *slash;

	h = xstrdup(s ? s + 3 : url);
	slash = strchr(h, '/');
	if (slash)
		*slash = 0;
	c = strrchr(h, ':');
	*port = NULL;
	if (c && strchr(h, ':') == c) {
		*c = 0;
		*port = xstrdup(c + 1);
	}
	*host = h;
}

/* ipmitool over lanplus; the password goes in IPMI_PASSWORD (-E), never argv. */
static int ipmitool(const struct bmc *b, const char *const *cmd, char **out)
{
	char *host, *port, *argv[32], *env[2];
	const char *cipher = getenv("AHEADCTL_IPMI_CIPHER");
	int n = 0, rc;

	host_port(b->url, &host, &port);
	argv[n++] = "ipmitool";
	argv[n++] = "-I";
	argv[n++] = "lanplus";
	argv[n++] = "-H";
	argv[n++] = host;
	if (port) {
		argv[n++] = "-p";
		argv[n++] = port;
	}
	if (cipher) {
		argv[n++] = "-C";
		argv[n++] = (char *)cipher;
	}
	argv[n++] = "-U";
	argv[n++] = (char *)b->user;
	argv[n++] = "-E";
	argv[n++] = "-N";
	argv[n++] = "3";
	argv[n++] = "-R";
	argv[n++] = "2";
	for (int i = 0; cmd[i] && n < 31; i++)
		argv[n++] = (char *)cmd[i];
	argv[n] = NULL;
	if (g.dry_run && out == NULL) {
		printf("would run:");
		for (int i = 0; argv[i]; i++)
			printf(" %s", argv[i]);
		printf("  (password in IPMI_PASSWORD)\n");
		return 0;
	}
	env[0] = xsprintf("IPMI_PASSWORD=%s", b->password);
	env[1] = NULL;
	rc = run_cmd(argv, env, out);
	free(env[0]);
	if (rc == 127)
		err("ipmitool is not installed (Debian package ipmitool)");
	else if (rc)
		err("ipmitool %s failed (exit %d) talking to %s", cmd[0], rc, host);
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

int ipmi_show(struct bmc *b)
{
	static const char *const mc[] = { "mc", "info", NULL };
	static const char *const pw[] = { "chassis", "power", "status", NULL };
	char *out = NULL, *pout = NULL, *maker, *mid, *prod, *fw, *power;

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
	if (ipmitool(b, pw, &pout) == 0 && pout && strstr(pout, "is on"))
		power = "on";
	else if (pout && strstr(pout, "is off"))
		power = "off";
	else
		power = "unknown";
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
	free(pout);
	return 0;
}

int ipmi_power_cycle(struct bmc *b)
{
	static const char *const cyc[] = { "chassis", "power", "cycle", NULL };
	char *out = NULL;
	int rc;

	if (g.dry_run)
		return ipmitool(b, cyc, NULL);
	rc = ipmitool(b, cyc, &out);
	if (rc) {
		free(out);
		return EXIT_FAILED;
	}
	info("power cycle requested through IPMI: %s", out ? strtok(out, "\n") : "");
	free(out);
	return 0;
}
