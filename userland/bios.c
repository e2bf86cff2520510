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

/* The password: a file only its owner can read, or the environment. */
int bmc_password(struct bmc *b, const char *file)
{
	const char *env = getenv("AHEADCTL_BMC_PASSWORD");

	if (file) {
		struct stat st;
		int fd = open(file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		char *s;

		if (fd < 0 || fstat(fd, &st)) {
			err("cannot open password file %s: %s", file, strerror(errno));
			if (fd >= 0)
				close(fd);
			return -1;
		}
		close(fd);
		if (!S_ISREG(st.st_mode) || (st.st_mode & 077) ||
		    st.st_uid != geteuid()) {
			err("password file %s must be a regular file of yours with mode 0600 (it is %04o, owner %u): refusing it",
			    file, (unsigned int)(st.st_mode & 07777), (unsigned int)st.st_uid);
			return -1;
		}
		s = read_file(file);
		if (!s) {
			err("cannot read password file %s: %s", file, strerror(errno));
			return -1;
		}
		s[strcspn(s, "\r\n")] = 0;
		b->password = s;
		return 0;
	}
	if (env) {
		b->password = xstrdup(env);
		return 0;
	}
	b->password = NULL;
	return 0;
}

int cmd_bios(int argc, char **argv)
{
	struct bmc b = { 0 };
	const char *verb = argc ? argv[0] : "", *via = NULL, *pwfile = NULL;
	int mode = -1, i = 1;
	bool reboot = false;

	if (strcmp(verb, "show") && strcmp(verb, "set") && strcmp(verb, "power-cycle")) {
		err("unknown bios verb '%s' (show, set, power-cycle)", verb);
		return EXIT_USAGE;
	}
	if (!strcmp(verb, "set")) {
		if (argc < 3 || strcmp(argv[1], "snoop-mode")) {
			err("bios set: only 'snoop-mode home|early|cod|osb' can be set");
			return EXIT_USAGE;
		}
		mode = snoop_mode_index(argv[2]);
		if (mode < 0) {
			err("snoop-mode '%s': expected home, early, cod or osb", argv[2]);
			return EXIT_USAGE;
		}
		i = 3;
	}
	for (; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		bool takes = true;

		if (!strcmp(a, "--reboot") && !strcmp(verb, "set")) {
			reboot = true;
			takes = false;
		} else if (!strcmp(a, "--insecure")) {
			b.insecure = true;
			takes = false;
		} else if (!strcmp(a, "--password") || !strncmp(a, "--password=", 11) ||
			   !strcmp(a, "-P") || !strcmp(a, "-p")) {
			err("passwords are not taken from the command line (other users see it in ps): use --password-file FILE (mode 0600) or AHEADCTL_BMC_PASSWORD");
			return EXIT_USAGE;
		} else if (!v || v[0] == '-') {
			if (!strcmp(a, "--via") || !strcmp(a, "--bmc") || !strcmp(a, "--user") ||
			    !strcmp(a, "--password-file") || !strcmp(a, "--system"))
				err("%s needs a value", a);
			else
				err("unknown bios argument '%s'", a);
			return EXIT_USAGE;
		} else if (!strcmp(a, "--via")) {
			via = v;
		} else if (!strcmp(a, "--bmc")) {
			b.url = v;
		} else if (!strcmp(a, "--user")) {
			b.user = v;
		} else if (!strcmp(a, "--password-file")) {
			pwfile = v;
		} else if (!strcmp(a, "--system")) {
			b.system = v;
		} else {
			err("unknown bios argument '%s'", a);
			return EXIT_USAGE;
		}
		if (takes)
			i++;
	}
	if (!b.url)
		b.url = getenv("AHEADCTL_BMC");
	if (!b.user)
		b.user = getenv("AHEADCTL_BMC_USER");
	if (!via)
		via = b.url ? "redfish" : NULL;
	if (!via) {
		err("nothing to talk to: give --bmc URL (Redfish) or --via TOOL (a local vendor tool)");
		return EXIT_USAGE;
	}
	if (strcmp(via, "redfish") && strcmp(via, "ipmi") && !vendor_known(via)) {
		err("--via '%s': expected redfish, ipmi, racadm, onecli, ilorest, sum or syscfg", via);
		return EXIT_USAGE;
	}
	if ((!strcmp(via, "redfish") || !strcmp(via, "ipmi")) && !b.url) {
		err("--via %s needs --bmc URL|HOST (or AHEADCTL_BMC)", via);
		return EXIT_USAGE;
	}
	if (!strcmp(verb, "power-cycle") && strcmp(via, "redfish") && strcmp(via, "ipmi")) {
		err("bios power-cycle goes through --via redfish or --via ipmi");
		return EXIT_USAGE;
	}
	if (strcmp(verb, "show") && !g.yes && !g.dry_run) {
		err("bios %s changes the machine: add --yes to do it, or -n to see what would be done",
		    verb);
		return EXIT_USAGE;
	}
	if (b.url && bmc_password(&b, pwfile))
		return EXIT_FAILED;
	if (b.url && (!b.user || !b.password) && (!strcmp(via, "redfish") || !strcmp(via, "ipmi"))) {
		err("BMC credentials missing: --user USER (or AHEADCTL_BMC_USER) and --password-file FILE (or AHEADCTL_BMC_PASSWORD)");
		return EXIT_USAGE;
	}

	if (!strcmp(verb, "power-cycle"))
		return !strcmp(via, "redfish") ? redfish_reset(&b) : ipmi_power_cycle(&b);
	if (!strcmp(via, "redfish"))
		return !strcmp(verb, "show") ? redfish_show(&b) : redfish_set(&b, mode, reboot);
	if (!strcmp(via, "ipmi")) {
		if (!strcmp(verb, "show"))
			return ipmi_show(&b);
		err("IPMI has no standard command to change a BIOS setting: use --via redfish or a vendor tool; IPMI can power-cycle to apply a pending change (aheadctl --yes bios power-cycle --via ipmi)");
		return EXIT_FAILED;
	}
	return !strcmp(verb, "show") ? vendor_show(via) : vendor_set(via, mode, reboot, &b);
}
