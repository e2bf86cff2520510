/* bios.c: bios show/set/power-cycle: arguments, credentials, the snoop-mode map. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "aheadctl.h"

const char *const snoop_modes[4] = { "home", "early", "cod", "osb" };

/*
 * Redfish Bios attribute per manufacturer.  Dell: the iDRAC BIOS attribute
 * registry (BIOS.MemSettings.SnoopMode); HPE: the Gen9 BIOS registry's
 * QpiSnoopConfig, where "Standard" is early snoop and there is no OSB.
 * Anything else is refused rather than guessed.
 */
const struct snoop_map snoop_maps[] = {
	{ "Dell", "SnoopMode",
	  { "HomeSnoop", "EarlySnoop", "ClusterOnDie", "OpportunisticSnoopBroadcast" } },
	{ "HPE", "QpiSnoopConfig", { "HomeSnoop", "Standard", "ClusterOnDie", NULL } },
	{ "HP", "QpiSnoopConfig", { "HomeSnoop", "Standard", "ClusterOnDie", NULL } },
	{ NULL, NULL, { NULL } },
};

int snoop_mode_index(const char *mode)
{
	for (int i = 0; i < 4; i++)
		if (!strcmp(mode, snoop_modes[i]))
			return i;
	return -1;
}

const struct snoop_map *snoop_map_for(const char *manufacturer)
{
	for (int i = 0; manufacturer && snoop_maps[i].vendor; i++) {
		size_t l = strlen(snoop_maps[i].vendor);

		/* "Dell Inc.", "HPE", "HP": a word, not a substring. */
		if (!strncasecmp(manufacturer, snoop_maps[i].vendor, l) &&
		    (!manufacturer[l] || manufacturer[l] == ' ' ||
		     manufacturer[l] == ','))
			return &snoop_maps[i];
	}
	return NULL;
}

/*
 * The file's bytes exactly, less one final newline: a password may end in
 * blanks, and only the newline an editor adds is not part of it.  Read
 * through the descriptor that was checked, so the file checked is the one
 * read.  NULL after a message.
 */
static char *read_secret(int fd, const char *file)
{
	char *s = xcalloc(1, 4097);
	size_t len = 0;
	ssize_t n;

	while ((n = read(fd, s + len, 4096 - len)) > 0)
		len += n;
	if (n < 0 || len == 4096) {
		err(n < 0 ? "cannot read password file %s" :
		    "password file %s: longer than 4095 bytes: not a password", file);
		free(s);
		return NULL;
	}
	if (len && s[len - 1] == '\n')
		s[--len] = 0;
	if (memchr(s, 0, len) || !len) {
		err("password file %s: %s", file, len ? "a NUL byte inside" : "empty");
		free(s);
		return NULL;
	}
	return s;
}

/* The password: a file only its owner can read, or the environment. */
int bmc_password(struct bmc *b, const char *file)
{
	const char *env = getenv("AHEADCTL_BMC_PASSWORD");

	if (file) {
		struct stat st;
		int fd;

		if (check_trusted(file, "password file"))
			return -1;
		fd = open(file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

		if (fd < 0 || fstat(fd, &st)) {
			err("cannot open password file %s: %s", file, strerror(errno));
			if (fd >= 0)
				close(fd);
			return -1;
		}
		if (!S_ISREG(st.st_mode) || (st.st_mode & 077) ||
		    st.st_uid != geteuid()) {
			err("password file %s must be a regular file of yours with mode 0600 (it is %04o, owner %u): refusing it",
			    file, (unsigned int)(st.st_mode & 07777), (unsigned int)st.st_uid);
			close(fd);
			return -1;
		}
		b->password = read_secret(fd, file);
		close(fd);
		return b->password ? 0 : -1;
	}
	if (env) {
		b->password = xstrdup(env);
		return 0;
	}
	b->password = NULL;
	return 0;
}

void reset_json(const struct reset_info *r)
{
	jkey("reset");
	if (!r || !r->type) {
		jnull(NULL);
		return;
	}
	jopen('{');
	jstr("via", r->via);
	jstr("type", r->type);
	jbool("graceful", r->graceful);
	jbool("requested", r->requested);
	if (r->waited > 0)
		jnum("waited_s", r->waited);
	jclose();
}

/*
 * --bmc as given: never with credentials in it (they would be in ps and in
 * our messages), and plain HTTP only when asked for, since the password
 * would cross the network in clear.  Returns 0 or an exit status.
 */
static int check_url(struct bmc *b, const char *src, bool redfish)
{
	const char *s = strstr(b->url, "://"), *auth = s ? s + 3 : b->url;
	size_t alen = strcspn(auth, "/?#");

	if (memchr(auth, '@', alen)) {
		err("%s: a BMC address with credentials in it (USER[:PASSWORD]@HOST) is refused: use --user and --password-file", src);
		return EXIT_USAGE;
	}
	if (!redfish || !s)
		return 0;
	if (!strncasecmp(b->url, "http://", 7)) {
		if (!b->insecure_http) {
			err("%s: plain http:// would send the BMC password in clear: use https://, or --insecure-http to accept that", src);
			return EXIT_USAGE;
		}
		warnx("--insecure-http: talking to the BMC over plain HTTP; the password crosses the network in clear");
		return 0;
	}
	if (strncasecmp(b->url, "https://", 8)) {
		err("%s: expected https://HOST[:PORT] or HOST[:PORT]", src);
		return EXIT_USAGE;
	}
	return 0;
}

static bool parse_secs(const char *v, long *out)
{
	unsigned long long n;

	if (!parse_u64(v, &n) || n < 1 || n > 86400)
		return false;
	*out = n;
	return true;
}

struct bios_args {
	const char *verb, *via, *pwfile;
	int mode;
	bool reboot;
};

/* The options after the verb; 0 or an exit status after a message. */
static int parse_opts(int argc, char **argv, int i, struct bios_args *a, struct bmc *b)
{
	for (; i < argc; i++) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		bool takes = true;

		if (!strcmp(o, "--reboot") && !strcmp(a->verb, "set")) {
			a->reboot = true;
			takes = false;
		} else if (!strcmp(o, "--force") && strcmp(a->verb, "show")) {
			b->force = true;
			takes = false;
		} else if (!strcmp(o, "--insecure")) {
			b->insecure = true;
			takes = false;
		} else if (!strcmp(o, "--insecure-http")) {
			b->insecure_http = true;
			takes = false;
		} else if (!strcmp(o, "--password") || !strncmp(o, "--password=", 11) ||
			   !strcmp(o, "-P") || !strcmp(o, "-p")) {
			err("passwords are not taken from the command line (other users see it in ps): use --password-file FILE (mode 0600) or AHEADCTL_BMC_PASSWORD");
			return EXIT_USAGE;
		} else if (!v || v[0] == '-') {
			if (!strcmp(o, "--via") || !strcmp(o, "--bmc") || !strcmp(o, "--user") ||
			    !strcmp(o, "--password-file") || !strcmp(o, "--system") ||
			    !strcmp(o, "--ca") ||
			    !strcmp(o, "--timeout") || !strcmp(o, "--wait"))
				err("%s needs a value", o);
			else
				err("unknown bios argument '%s'", o);
			return EXIT_USAGE;
		} else if (!strcmp(o, "--via")) {
			a->via = v;
		} else if (!strcmp(o, "--bmc")) {
			b->url = v;
		} else if (!strcmp(o, "--user")) {
			b->user = v;
		} else if (!strcmp(o, "--password-file")) {
			a->pwfile = v;
		} else if (!strcmp(o, "--system")) {
			b->system = v;
		} else if (!strcmp(o, "--ca")) {
			b->ca_file = v;
		} else if (!strcmp(o, "--timeout") || !strcmp(o, "--wait")) {
			if (!parse_secs(v, !strcmp(o, "--wait") ? &b->wait : &b->timeout)) {
				err("%s '%s': expected seconds, 1 to 86400", o, v);
				return EXIT_USAGE;
			}
			b->timeout_given |= !strcmp(o, "--timeout");
		} else {
			err("unknown bios argument '%s'", o);
			return EXIT_USAGE;
		}
		if (takes)
			i++;
	}
	if (b->force && !strcmp(a->verb, "set") && !a->reboot) {
		err("--force says how to reboot: it goes with --reboot");
		return EXIT_USAGE;
	}
	return 0;
}

/* The verb and its words before the options; 0 or an exit status. */
static int parse_verb(int argc, char **argv, struct bios_args *a, int *next)
{
	a->verb = argc ? argv[0] : "";
	a->mode = -1;
	*next = 1;
	if (strcmp(a->verb, "show") && strcmp(a->verb, "set") &&
	    strcmp(a->verb, "power-cycle")) {
		err("unknown bios verb '%s' (show, set, power-cycle)", a->verb);
		return EXIT_USAGE;
	}
	if (strcmp(a->verb, "set"))
		return 0;
	if (argc < 3 || strcmp(argv[1], "snoop-mode")) {
		err("bios set: only 'snoop-mode home|early|cod|osb' can be set");
		return EXIT_USAGE;
	}
	a->mode = snoop_mode_index(argv[2]);
	if (a->mode < 0) {
		err("snoop-mode '%s': expected home, early, cod or osb", argv[2]);
		return EXIT_USAGE;
	}
	*next = 3;
	return 0;
}

/* Whether this command talks IPMI to the BMC (directly or to reboot). */
static bool uses_ipmi(const struct bios_args *a, const struct bmc *b)
{
	if (!strcmp(a->via, "ipmi"))
		return strcmp(a->verb, "set") != 0;
	return strcmp(a->via, "redfish") && a->reboot && vendor_reboot_ipmi(a->via, b->force);
}

/* IPMI's limits, checked before anything is sent. */
static int check_ipmi(const struct bmc *b)
{
	char *host, *port;

	if (bmc_host_port(b->url, &host, &port))
		return EXIT_USAGE;
	free(host);
	free(port);
	if (b->password && strlen(b->password) > 20) {
		err("IPMI passwords are at most 20 bytes; this one has %zu", strlen(b->password));
		return EXIT_USAGE;
	}
	return 0;
}

static int check_target(struct bios_args *a, struct bmc *b)
{
	const char *src = "--bmc";
	int rc;

	if (!b->url && getenv("AHEADCTL_BMC")) {
		b->url = getenv("AHEADCTL_BMC");
		src = "AHEADCTL_BMC";
	}
	if (!b->user)
		b->user = getenv("AHEADCTL_BMC_USER");
	if (!a->via)
		a->via = b->url ? "redfish" : NULL;
	if (!a->via) {
		err("nothing to talk to: give --bmc URL (Redfish) or --via TOOL (a local vendor tool)");
		return EXIT_USAGE;
	}
	if (strcmp(a->via, "redfish") && strcmp(a->via, "ipmi") && !vendor_known(a->via)) {
		err("--via '%s': expected redfish, ipmi, racadm, onecli, ilorest, sum or syscfg", a->via);
		return EXIT_USAGE;
	}
	if ((!strcmp(a->via, "redfish") || !strcmp(a->via, "ipmi")) && !b->url) {
		err("--via %s needs --bmc URL|HOST (or AHEADCTL_BMC)", a->via);
		return EXIT_USAGE;
	}
	if (!strcmp(a->verb, "power-cycle") && strcmp(a->via, "redfish") && strcmp(a->via, "ipmi")) {
		err("bios power-cycle goes through --via redfish or --via ipmi");
		return EXIT_USAGE;
	}
	if (b->url) {
		rc = check_url(b, src, !strcmp(a->via, "redfish"));
		if (rc)
			return rc;
	}
	if (!b->ca_file && getenv("AHEADCTL_CA_FILE") && *getenv("AHEADCTL_CA_FILE"))
		b->ca_file = getenv("AHEADCTL_CA_FILE");
	if (b->ca_file && strcmp(a->via, "redfish")) {
		err("--ca is for Redfish over https:// (--via %s does not use TLS)", a->via);
		return EXIT_USAGE;
	}
	if (b->ca_file && access(b->ca_file, R_OK)) {
		err("CA file %s: %s", b->ca_file, strerror(errno));
		return EXIT_FAILED;
	}
	return 0;
}

int cmd_bios(int argc, char **argv)
{
	struct bmc b = { .timeout = 30, .wait = 300 };
	struct bios_args a = { 0 };
	int i, rc;

	rc = parse_verb(argc, argv, &a, &i);
	if (!rc)
		rc = parse_opts(argc, argv, i, &a, &b);
	if (!rc)
		rc = check_target(&a, &b);
	if (rc)
		return rc;
	if (strcmp(a.verb, "show") && !g.yes && !g.dry_run) {
		err("bios %s changes the machine: add --yes to do it, or -n to see what would be done",
		    a.verb);
		return EXIT_USAGE;
	}
	if (b.url && bmc_password(&b, a.pwfile))
		return EXIT_FAILED;
	if (b.url && (!b.user || !b.password) &&
	    (!strcmp(a.via, "redfish") || !strcmp(a.via, "ipmi"))) {
		err("BMC credentials missing: --user USER (or AHEADCTL_BMC_USER) and --password-file FILE (or AHEADCTL_BMC_PASSWORD)");
		return EXIT_USAGE;
	}
	rc = b.url && uses_ipmi(&a, &b) ? check_ipmi(&b) : 0;
	if (rc)
		return rc;

	if (!strcmp(a.verb, "power-cycle"))
		return !strcmp(a.via, "redfish") ? redfish_reset(&b) : ipmi_power_cycle(&b);
	if (!strcmp(a.via, "redfish"))
		return !strcmp(a.verb, "show") ? redfish_show(&b) : redfish_set(&b, a.mode, a.reboot);
	if (!strcmp(a.via, "ipmi")) {
		if (!strcmp(a.verb, "show"))
			return ipmi_show(&b);
		err("IPMI has no standard command to change a BIOS setting: use --via redfish or a vendor tool; IPMI can restart the machine to apply a pending change (aheadctl --yes bios power-cycle --via ipmi)");
		return EXIT_FAILED;
	}
	return !strcmp(a.verb, "show") ? vendor_show(a.via, &b) :
		vendor_set(a.via, a.mode, a.reboot, &b);
}
