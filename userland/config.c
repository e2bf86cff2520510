/* config.c: aheadctl.conf, and the verbs that follow it (apply, verify). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "aheadctl.h"

struct conf_kv {
	char *key, *val;
	int line;
};

struct conf_sec {
	char *kind;		/* nic, fs, block, bios */
	char *name;		/* device or mount point; NULL for bios */
	int line;
	int nkv;
	struct conf_kv *kv;
};

struct conf {
	char *path;
	char *snapshot;		/* the global "snapshot = PATH" */
	int nsec;
	struct conf_sec *sec;
};

/*
 * The keys each section takes.  The fs ranges are those of 'fs set'
 * (fs.c): a bad value is caught here, with its line, not at boot.
 */
struct key_rule {
	const char *kind, *key;
	char type;			/* b: yes/no, n: number, e: one of, s: string, p: policy */
	unsigned long long min, max;
	const char *const *words;
};

static const char *const policies[] = { "local", "spread", "cpus", NULL };
static const char *const prefetches[] = { "ahead", "legacy", "kernel", "off", NULL };
static const char *const snoops[] = { "home", "early", "cod", "osb", NULL };

static const struct key_rule rules[] = {
	{ "nic", "policy", 'p', 0, 0, policies },
	{ "nic", "node", 'n', 0, 1023, NULL },
	{ "nic", "xps", 'b', 0, 0, NULL },
	{ "nic", "irqbalance-ban", 'b', 0, 0, NULL },
	{ "fs", "prefetch", 'e', 0, 0, prefetches },
	{ "fs", "txn_kb", 'n', 4, 1048576, NULL },
	{ "fs", "window_kb", 'n', 0, 4194304, NULL },
	{ "fs", "attr_timeout_ms", 'n', 0, 3600000, NULL },
	{ "fs", "entry_timeout_ms", 'n', 0, 3600000, NULL },
	{ "fs", "negative_timeout_ms", 'n', 0, 3600000, NULL },
	{ "fs", "readdir_cache", 'n', 0, 1, NULL },
	{ "fs", "fh_search_entries", 'n', 0, 16777216, NULL },
	{ "block", "read_ahead_kb", 'n', 0, 1ULL << 31, NULL },
	{ "block", "nr_requests", 'n', 1, 1ULL << 31, NULL },
	{ "bios", "snoop-mode", 'e', 0, 0, snoops },
	{ "bios", "bmc", 's', 0, 0, NULL },
	{ "bios", "user", 's', 0, 0, NULL },
	{ "bios", "password-file", 's', 0, 0, NULL },
	{ "bios", "ca-file", 's', 0, 0, NULL },
	{ "bios", "insecure", 'b', 0, 0, NULL },
	{ "bios", "insecure-http", 'b', 0, 0, NULL },
	{ "bios", "system", 's', 0, 0, NULL },
	{ "", "snapshot", 's', 0, 0, NULL },
	{ NULL, NULL, 0, 0, 0, NULL },
};

char *conf_default_path(void)
{
	return xsprintf("%s/aheadctl/aheadctl.conf", etc_root());
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = 0;
	return s;
}

/* "# ..." after a blank ends a line; a '#' inside a word stays. */
static void strip_comment(char *s)
{
	for (char *p = s; *p; p++)
		if (*p == '#' && (p == s || isspace((unsigned char)p[-1]))) {
			*p = 0;
			return;
		}
}

static bool word_in(const char *w, const char *const *words)
{
	for (int i = 0; words[i]; i++)
		if (!strcmp(w, words[i]))
			return true;
	return false;
}

static char *keys_of(const char *kind)
{
	char *out = xcalloc(1, 256);

	for (int i = 0; rules[i].kind; i++)
		if (!strcmp(rules[i].kind, kind))
			sprintf(out + strlen(out), "%s%s", *out ? ", " : "", rules[i].key);
	return out;
}

static bool is_bool(const char *v)
{
	return !strcmp(v, "yes") || !strcmp(v, "no") || !strcmp(v, "true") ||
		!strcmp(v, "false");
}

static bool bool_of(const char *v)
{
	return !strcmp(v, "yes") || !strcmp(v, "true");
}

/* Checks one value; prints FILE:LINE: why and returns -1 when it is bad. */
static int check_value(const struct conf *c, const struct key_rule *r,
		       const char *val, int line)
{
	unsigned long long v;
	struct cpus cpus;
	char *words;

	switch (r->type) {
	case 'b':
		if (is_bool(val))
			return 0;
		err("%s:%d: %s = %s: expected yes or no", c->path, line, r->key, val);
		return -1;
	case 'n':
		if (parse_u64(val, &v) && v >= r->min && v <= r->max)
			return 0;
		err("%s:%d: %s = %s: expected an integer from %llu to %llu%s", c->path,
		    line, r->key, val, r->min, r->max,
		    val[0] == '0' && val[1] ? ", without leading zeros" : "");
		return -1;
	case 'e':
		if (word_in(val, r->words))
			return 0;
		words = xstrdup("");
		for (int i = 0; r->words[i]; i++) {
			char *w = xsprintf("%s%s%s", words, i ? ", " : "", r->words[i]);

			free(words);
			words = w;
		}
		err("%s:%d: %s = %s: expected one of %s", c->path, line, r->key, val, words);
		free(words);
		return -1;
	case 'p':
		if (!strcmp(val, "local") || !strcmp(val, "spread"))
			return 0;
		if (!strncmp(val, "cpus ", 5) && !cpulist_parse(trim((char *)val + 5), &cpus) &&
		    cpus_count(&cpus))
			return 0;
		err("%s:%d: policy = %s: expected local, spread or cpus LIST (cpus 0-3,8)",
		    c->path, line, val);
		return -1;
	}
	if (!strcmp(r->key, "snapshot") || !strcmp(r->key, "password-file") ||
	    !strcmp(r->key, "ca-file")) {
		if (val[0] == '/')
			return 0;
		err("%s:%d: %s = %s: expected an absolute path", c->path, line, r->key, val);
		return -1;
	}
	return 0;
}

static const char *kv_get(const struct conf_sec *s, const char *key)
{
	for (int i = 0; s && i < s->nkv; i++)
		if (!strcmp(s->kv[i].key, key))
			return s->kv[i].val;
	return NULL;
}

static int parse_section(struct conf *c, char *l, int line)
{
	char *end = strrchr(l, ']'), *kind, *name;
	struct conf_sec *s;

	if (!end || *trim(end + 1)) {
		err("%s:%d: a section header is [nic DEV], [fs MOUNTPOINT], [block DEV] or [bios]",
		    c->path, line);
		return -1;
	}
	*end = 0;
	kind = trim(l + 1);
	name = kind + strcspn(kind, " \t");
	if (*name)
		*name++ = 0;
	name = trim(name);
	if (strcmp(kind, "nic") && strcmp(kind, "fs") && strcmp(kind, "block") &&
	    strcmp(kind, "bios")) {
		err("%s:%d: unknown section [%s] (nic, fs, block, bios)", c->path, line, kind);
		return -1;
	}
	if (!strcmp(kind, "bios") && *name) {
		err("%s:%d: [bios %s]: [bios] takes no name", c->path, line, name);
		return -1;
	}
	if (strcmp(kind, "bios") && !*name) {
		err("%s:%d: [%s]: %s", c->path, line, kind, !strcmp(kind, "fs") ?
		    "needs a mount point: [fs /mnt/x]" : "needs a device name");
		return -1;
	}
	if (!strcmp(kind, "fs") ? *name != '/' : strchr(name, '/') != NULL) {
		err("%s:%d: [%s %s]: %s", c->path, line, kind, name, !strcmp(kind, "fs") ?
		    "the mount point must be an absolute path" : "a device name has no '/'");
		return -1;
	}
	for (int i = 0; i < c->nsec; i++)
		if (!strcmp(c->sec[i].kind, kind) &&
		    !strcmp(c->sec[i].name ? c->sec[i].name : "", name)) {
			err("%s:%d: [%s%s%s] again (first at line %d)", c->path, line, kind,
			    *name ? " " : "", name, c->sec[i].line);
			return -1;
		}
	c->sec = realloc(c->sec, (c->nsec + 1) * sizeof(*c->sec));
	if (!c->sec)
		exit(EXIT_FAILED);
	s = &c->sec[c->nsec++];
	memset(s, 0, sizeof(*s));
	s->kind = xstrdup(kind);
	s->name = *name ? xstrdup(name) : NULL;
	s->line = line;
	return 0;
}

static int parse_kv(struct conf *c, char *l, int line)
{
	struct conf_sec *s = c->nsec ? &c->sec[c->nsec - 1] : NULL;
	const char *kind = s ? s->kind : "";
	char *eq = strchr(l, '='), *key, *val;
	const struct key_rule *r = NULL;

	if (!eq) {
		err("%s:%d: expected KEY = VALUE or [SECTION]", c->path, line);
		return -1;
	}
	*eq = 0;
	key = trim(l);
	val = trim(eq + 1);
	for (int i = 0; rules[i].kind; i++)
		if (!strcmp(rules[i].kind, kind) && !strcmp(rules[i].key, key))
			r = &rules[i];
	if (!r) {
		char *keys = keys_of(kind);

		if (s)
			err("%s:%d: unknown key '%s' in [%s%s%s] (%s)", c->path, line, key,
			    kind, s->name ? " " : "", s->name ? s->name : "", keys);
		else
			err("%s:%d: unknown key '%s' before any section (%s)", c->path, line,
			    key, keys);
		free(keys);
		return -1;
	}
	if (!*val) {
		err("%s:%d: %s has no value", c->path, line, key);
		return -1;
	}
	if (check_value(c, r, val, line))
		return -1;
	if (!s) {
		if (c->snapshot) {
			err("%s:%d: snapshot given twice", c->path, line);
			return -1;
		}
		c->snapshot = xstrdup(val);
		return 0;
	}
	for (int i = 0; i < s->nkv; i++)
		if (!strcmp(s->kv[i].key, key)) {
			err("%s:%d: %s given twice in this section (first at line %d)",
			    c->path, line, key, s->kv[i].line);
			return -1;
		}
	s->kv = realloc(s->kv, (s->nkv + 1) * sizeof(*s->kv));
	if (!s->kv)
		exit(EXIT_FAILED);
	s->kv[s->nkv].key = xstrdup(key);
	s->kv[s->nkv].val = xstrdup(val);
	s->kv[s->nkv++].line = line;
	return 0;
}

/* A [nic] section needs a policy to place anything; cpus needs its list. */
static int check_sections(const struct conf *c)
{
	for (int i = 0; i < c->nsec; i++) {
		const struct conf_sec *s = &c->sec[i];

		if (!strcmp(s->kind, "nic") && !kv_get(s, "policy") &&
		    (kv_get(s, "xps") || kv_get(s, "node"))) {
			err("%s:%d: [nic %s]: xps and node need a policy (policy = local)",
			    c->path, s->line, s->name);
			return -1;
		}
		if (!s->nkv) {
			err("%s:%d: [%s%s%s] is empty", c->path, s->line, s->kind,
			    s->name ? " " : "", s->name ? s->name : "");
			return -1;
		}
	}
	return 0;
}

static struct conf *conf_parse(struct conf *c, char *text);

/* Reads and checks the whole file; NULL after one message (errno ENOENT: missing). */
struct conf *conf_read(const char *path)
{
	struct conf *c = xcalloc(1, sizeof(*c));
	char *text;

	c->path = xstrdup(path);
	if (check_trusted(path, "config")) {
		conf_free(c);
		errno = EPERM;
		return NULL;
	}
	text = read_file(path);
	if (!text) {
		int e = errno;

		err("%s: %s", path, strerror(e));
		conf_free(c);
		errno = e;
		return NULL;
	}
	return conf_parse(c, text);
}

void conf_free(struct conf *c)
{
	if (!c)
		return;
	for (int i = 0; i < c->nsec; i++) {
		for (int k = 0; k < c->sec[i].nkv; k++) {
			free(c->sec[i].kv[k].key);
			free(c->sec[i].kv[k].val);
		}
		free(c->sec[i].kv);
		free(c->sec[i].kind);
		free(c->sec[i].name);
	}
	free(c->sec);
	free(c->snapshot);
	free(c->path);
	free(c);
}

/* The file's text (consumed, freed) into c; c, or NULL after one message. */
static struct conf *conf_parse(struct conf *c, char *text)
{
	int line = 0;

	for (char *p = text, *nl; p; p = nl) {
		char *l;

		nl = strchr(p, '\n');
		if (nl)
			*nl++ = 0;
		line++;
		strip_comment(p);
		l = trim(p);
		if (!*l)
			continue;
		if ((*l == '[' ? parse_section(c, l, line) : parse_kv(c, l, line))) {
			free(text);
			conf_free(c);
			errno = EINVAL;
			return NULL;
		}
	}
	free(text);
	if (check_sections(c)) {
		conf_free(c);
		errno = EINVAL;
		return NULL;
	}
	return c;
}

/* Fuzzing (userland/fuzz/): an aheadctl.conf's text. */
void fuzz_conf(const char *data, size_t n)
{
	struct conf *c = xcalloc(1, sizeof(*c));
	char *text = xcalloc(1, n + 1);

	memcpy(text, data, n);
	c->path = xstrdup("fuzz.conf");
	conf_free(conf_parse(c, text));
}

const char *conf_snapshot(const struct conf *c)
{
	return c->snapshot;
}

static const struct conf_sec *conf_bios(const struct conf *c)
{
	for (int i = 0; i < c->nsec; i++)
		if (!strcmp(c->sec[i].kind, "bios"))
			return &c->sec[i];
	return NULL;
}

/*
 * Runs this aheadctl again (the verbs' own entry points, isolated from
 * their exits and their output); stdout captured into *out.  quiet sends
 * the child's stderr to /dev/null.  Returns its exit status.
 */
int self_run(char *const args[], char **out, bool quiet)
{
	int pfd[2], status, n = 0;
	size_t len = 0, cap = 4096;
	ssize_t r;
	char **argv;
	pid_t pid;

	while (args[n])
		n++;
	argv = xcalloc(n + 2, sizeof(char *));
	argv[0] = "aheadctl";
	memcpy(argv + 1, args, n * sizeof(char *));
	*out = xcalloc(1, cap + 1);
	fflush(stdout);
	fflush(stderr);
	if (pipe2(pfd, O_CLOEXEC) < 0) {
		free(argv);
		return 127;
	}
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		free(argv);
		return 127;
	}
	if (pid == 0) {
		dup2(pfd[1], 1);
		if (quiet) {
			int fd = open("/dev/null", O_WRONLY);

			if (fd >= 0)
				dup2(fd, 2);
		}
		execv("/proc/self/exe", argv);
		fprintf(stderr, "aheadctl: cannot run itself again: %s\n", strerror(errno));
		_exit(127);
	}
	close(pfd[1]);
	/* A signal apply catches interrupts a call here: the child goes on. */
	while ((r = read(pfd[0], *out + len, cap - len)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			break;
		len += r;
		if (len == cap) {
			cap *= 2;
			*out = realloc(*out, cap + 1);
			if (!*out)
				exit(EXIT_FAILED);
		}
	}
	(*out)[len] = 0;
	close(pfd[0]);
	free(argv);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return 127;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* self_run with -j; the parsed document, or NULL. */
json_t *self_json(char *const args[], int *rc, bool quiet)
{
	char *out = NULL;
	json_t *j;

	*rc = self_run(args, &out, quiet);
	j = json_loads(out, 0, NULL);
	free(out);
	return j;
}

/* Re-emits a parsed JSON value through the writer, under key k. */
void jvalue(const char *k, const struct json_t *cv)
{
	json_t *v = (json_t *)cv;
	const char *key;
	json_t *e;
	size_t i;

	switch (json_typeof(v)) {
	case JSON_OBJECT:
		jkey(k);
		jopen('{');
		json_object_foreach(v, key, e)
			jvalue(key, e);
		jclose();
		break;
	case JSON_ARRAY:
		jkey(k);
		jopen('[');
		json_array_foreach(v, i, e)
			jvalue(NULL, e);
		jclose();
		break;
	case JSON_STRING:
		jstr(k, json_string_value(v));
		break;
	case JSON_INTEGER:
		jint(k, json_integer_value(v));
		break;
	case JSON_REAL:
		jnum(k, json_real_value(v));
		break;
	case JSON_TRUE:
	case JSON_FALSE:
		jbool(k, json_is_true(v));
		break;
	default:
		jnull(k);
	}
}

/* Whether [bios] names a BMC to read the snoop mode from. */
bool conf_has_bmc(const struct conf *c)
{
	const struct conf_sec *b = c ? conf_bios(c) : NULL;

	return b && kv_get(b, "bmc");
}

/* The snoop mode the BMC of [bios] reports, or NULL (no BMC, or it failed). */
char *conf_snoop_mode(const struct conf *c, const char **expected, bool quiet)
{
	const struct conf_sec *b = conf_bios(c);
	const char *args[16];
	char *mode = NULL;
	json_t *j;
	int n = 0, rc;

	*expected = b ? kv_get(b, "snoop-mode") : NULL;
	if (!b || !kv_get(b, "bmc"))
		return NULL;
	args[n++] = "-j";
	args[n++] = "bios";
	args[n++] = "show";
	args[n++] = "--bmc";
	args[n++] = kv_get(b, "bmc");
	if (kv_get(b, "user")) {
		args[n++] = "--user";
		args[n++] = kv_get(b, "user");
	}
	if (kv_get(b, "password-file")) {
		args[n++] = "--password-file";
		args[n++] = kv_get(b, "password-file");
	}
	if (kv_get(b, "ca-file")) {
		args[n++] = "--ca";
		args[n++] = kv_get(b, "ca-file");
	}
	if (kv_get(b, "insecure") && bool_of(kv_get(b, "insecure")))
		args[n++] = "--insecure";
	if (kv_get(b, "insecure-http") && bool_of(kv_get(b, "insecure-http")))
		args[n++] = "--insecure-http";
	if (kv_get(b, "system")) {
		args[n++] = "--system";
		args[n++] = kv_get(b, "system");
	}
	args[n] = NULL;
	j = self_json((char *const *)args, &rc, quiet);
	if (!rc && json_string_value(json_object_get(j, "snoop_mode")))
		mode = xstrdup(json_string_value(json_object_get(j, "snoop_mode")));
	json_decref(j);
	return mode;
}

/* [bios]'s BMC options as a user types them, each word quoted; "" if none. */
static char *bios_opts(const struct conf_sec *b)
{
	static const char *const keys[] = { "bmc", "user", "password-file", "ca", "system", NULL };
	char *o = xstrdup("");

	for (int i = 0; b && keys[i]; i++) {
		const char *v = kv_get(b, strcmp(keys[i], "ca") ? keys[i] : "ca-file");
		char *q, *n;

		if (!v)
			continue;
		q = shell_quote(v);
		n = xsprintf("%s --%s %s", o, keys[i], q);
		free(q);
		free(o);
		o = n;
	}
	for (int i = 0; b && i < 2; i++) {
		const char *k = i ? "insecure-http" : "insecure";
		char *n;

		if (!kv_get(b, k) || !bool_of(kv_get(b, k)))
			continue;
		n = xsprintf("%s --%s", o, k);
		free(o);
		o = n;
	}
	return o;
}

char *conf_bios_fix(const struct conf *c, const char *mode)
{
	const struct conf_sec *b = conf_bios(c);
	char *o = bios_opts(b), *q = shell_quote(mode);
	char *fix = xsprintf("aheadctl --yes bios set snoop-mode %s --reboot%s%s (a BIOS change needs a reboot: plan it)",
			     q, b && kv_get(b, "bmc") ? "" : " --bmc URL", o);

	free(o);
	free(q);
	return fix;
}

/* ---- apply ---- */

struct run {
	const struct conf *c;
	const char *only;	/* --dev: just this device's sections */
	bool skip_bios;		/* --skip-bios: no BMC (at boot, before the network) */
	int failed, skipped, done;
};

static bool dev_exists(const char *cls, const char *name)
{
	char *p = xsprintf("%s/class/%s/%s", sysfs_root(), cls, name);
	struct stat st;
	bool ok = !stat(p, &st);

	free(p);
	return ok;
}

/* The argv of 'irq set' for a [nic] section; NULL if it sets no policy. */
static char **nic_set_args(const struct conf_sec *s, bool dry, bool json)
{
	const char *pol = kv_get(s, "policy"), *xps = kv_get(s, "xps");
	const char *node = kv_get(s, "node");
	char **a = xcalloc(16, sizeof(char *));
	int n = 0;

	if (!pol)
		return NULL;
	if (json)
		a[n++] = "-j";
	if (dry)
		a[n++] = "-n";
	a[n++] = "irq";
	a[n++] = "set";
	a[n++] = "dev";
	a[n++] = s->name;
	a[n++] = "policy";
	if (!strncmp(pol, "cpus", 4)) {
		a[n++] = "cpus";
		a[n++] = trim(xstrdup(pol + 4));
	} else {
		a[n++] = (char *)pol;
	}
	if (xps && bool_of(xps))
		a[n++] = "xps";
	if (node) {
		a[n++] = "node";
		a[n++] = (char *)node;
	}
	return a;
}

/* The same command as a human types it: the fix verify prints. */
static char *nic_set_cmd(const struct conf_sec *s)
{
	char **a = nic_set_args(s, false, false);
	char *cmd = xstrdup("aheadctl");

	for (int i = 0; a && a[i]; i++) {
		char *q = shell_quote(a[i]), *n = xsprintf("%s %s", cmd, q);

		free(q);
		free(cmd);
		cmd = n;
	}
	free(a);
	return cmd;
}

static bool nic_bans(const struct conf_sec *s)
{
	const char *b = kv_get(s, "irqbalance-ban");

	/* A placement irqbalance may undo is no placement: ban by default. */
	return b ? bool_of(b) : kv_get(s, "policy") != NULL;
}

static void print_indented(const char *out)
{
	for (const char *l = out; l && *l;) {
		const char *nl = strchr(l, '\n');
		int len = nl ? nl - l : (int)strlen(l);

		printf("  %.*s\n", len, l);
		l = nl ? nl + 1 : NULL;
	}
}

/* One child verb: its JSON under key (-j) or its text indented. */
static int apply_child(char **args, const char *key)
{
	char *out = NULL;
	int rc;

	if (g.json) {
		json_t *j = self_json(args, &rc, false);

		if (j)
			jvalue(key, j);
		else
			jnull(key);
		json_decref(j);
		return rc;
	}
	rc = self_run(args, &out, false);
	print_indented(out);
	free(out);
	return rc;
}

static void item_open(const struct conf_sec *s)
{
	if (g.json) {
		jopen('{');
		jstr("kind", s->kind);
		jstr("name", s->name);
	} else {
		printf("[%s%s%s]\n", s->kind, s->name ? " " : "", s->name ? s->name : "");
	}
}

static void item_close(struct run *r, const char *status, const char *why)
{
	if (!strcmp(status, "failed"))
		r->failed++;
	else if (!strcmp(status, "skipped"))
		r->skipped++;
	else
		r->done++;
	if (g.json) {
		jstr("status", status);
		jstr("reason", why);
		jclose();
	} else if (why) {
		printf("  %s: %s\n", status, why);
	}
}

static void skip_absent(struct run *r, const struct conf_sec *s, const char *what)
{
	char *why = xsprintf("%s %s", what, s->name);

	item_close(r, "skipped", why);
	free(why);
}

static void apply_nic(struct run *r, const struct conf_sec *s)
{
	char **set = nic_set_args(s, g.dry_run, g.json);
	int rc = 0;

	item_open(s);
	if (!dev_exists("net", s->name)) {
		skip_absent(r, s, "no such network device");
		free(set);
		return;
	}
	/* The ban first: a running irqbalance must not move what is placed next. */
	if (nic_bans(s)) {
		char *ban[8] = { 0 };
		int n = 0;

		if (g.json)
			ban[n++] = "-j";
		if (g.dry_run)
			ban[n++] = "-n";
		ban[n++] = "irq";
		ban[n++] = "ban";
		ban[n++] = "dev";
		ban[n++] = s->name;
		rc = apply_child(ban, "ban");
	}
	if (!rc && set)
		rc = apply_child(set, "placement");
	free(set);
	item_close(r, rc ? "failed" : g.dry_run ? "dry-run" : "applied",
		   rc ? "see the message above" : NULL);
}

/*
 * The aheadfs mount of an [fs] section, as 'fs show -j' lists it: its
 * tunables (a new reference) in *tun, NULL when it is not mounted.  -1
 * when the mounts cannot be listed (fs show said why): not "absent".
 */
static int fs_mount_of(const struct conf_sec *s, json_t **tun)
{
	char *list[] = { "-j", "fs", "show", NULL };
	json_t *mnts;
	int rc;

	*tun = NULL;
	mnts = self_json(list, &rc, false);
	if (rc || !json_is_array(mnts)) {
		json_decref(mnts);
		return -1;
	}
	for (size_t i = 0; i < json_array_size(mnts); i++) {
		json_t *m = json_array_get(mnts, i);
		const char *mp = json_string_value(json_object_get(m, "mountpoint"));

		if (mp && !strcmp(mp, s->name) && !*tun)
			*tun = json_incref(json_object_get(m, "tunables"));
	}
	json_decref(mnts);
	return 0;
}

static void apply_fs(struct run *r, const struct conf_sec *s)
{
	char **a = xcalloc(s->nkv + 8, sizeof(char *));
	int n = 0, rc;
	json_t *tun;

	item_open(s);
	if (fs_mount_of(s, &tun)) {
		item_close(r, "failed", "the aheadfs mounts cannot be listed (see above)");
		free(a);
		return;
	}
	if (!tun) {
		skip_absent(r, s, "not an aheadfs mount (yet)");
		free(a);
		return;
	}
	json_decref(tun);
	if (g.json)
		a[n++] = "-j";
	if (g.dry_run)
		a[n++] = "-n";
	a[n++] = "fs";
	a[n++] = "set";
	a[n++] = s->name;
	for (int i = 0; i < s->nkv; i++)
		a[n++] = xsprintf("%s=%s", s->kv[i].key, s->kv[i].val);
	rc = apply_child(a, "set");
	item_close(r, rc ? "failed" : g.dry_run ? "dry-run" : "applied",
		   rc ? "see the message above" : NULL);
}

static char *queue_path(const char *dev, const char *key)
{
	return xsprintf("%s/class/block/%s/queue/%s", sysfs_root(), dev, key);
}

/* Writes one block setting and reads it back; a malloc'd reason on failure. */
static char *block_write(const struct conf_sec *s, int k)
{
	char *p = queue_path(s->name, s->kv[k].key), *now = NULL, *msg = NULL;
	int e = write_file(p, s->kv[k].val);

	if (e)
		msg = xsprintf("%s: writing %s failed: %s", p, s->kv[k].val, strerror(-e));
	else if (!(now = read_file(p)) || strcmp(now, s->kv[k].val))
		msg = xsprintf("%s: wrote %s, read back '%s' (the kernel adjusted it)",
			       p, s->kv[k].val, now ? now : "");
	free(now);
	free(p);
	return msg;
}

/* Block queue settings: all checked, then written; a failure puts back the rest. */
static void apply_block(struct run *r, const struct conf_sec *s)
{
	char **old = xcalloc(s->nkv, sizeof(char *)), *msg = NULL;
	struct undo_log *log = undo_new();
	int k;

	item_open(s);
	if (!dev_exists("block", s->name)) {
		skip_absent(r, s, "no such block device");
		free(old);
		undo_free(log);
		return;
	}
	for (k = 0; k < s->nkv && !msg; k++) {
		char *p = queue_path(s->name, s->kv[k].key);

		old[k] = read_file(p);
		if (!old[k] || (!g.dry_run && access(p, W_OK)))
			msg = xsprintf("cannot %s %s: %s%s", old[k] ? "write" : "read", p,
				       strerror(errno), errno == EACCES ? " (apply needs root)" : "");
		free(p);
	}
	for (k = 0; k < s->nkv && !msg; k++) {
		/* Noted before the write: a refused value may still have taken. */
		if (!g.dry_run) {
			char *p = queue_path(s->name, s->kv[k].key);
			char *what = xsprintf("%s %s", s->name, s->kv[k].key);

			if (undo_note(log, p, old[k], what, false))
				msg = xsprintf("%s not written: its value could not be recorded for revert (see above)",
					       p);
			free(what);
			free(p);
			if (msg || (msg = block_write(s, k)))
				break;
		}
		if (g.json) {
			jkey(s->kv[k].key);
			jopen('{');
			jstr("old", old[k]);
			jstr("new", s->kv[k].val);
			jclose();
		} else {
			printf("  %s%s %s -> %s\n", g.dry_run ? "would set " : "",
			       s->kv[k].key, old[k], s->kv[k].val);
		}
	}
	if (msg) {
		err("[block %s]: %s", s->name, msg);
		undo_rollback(log);
	}
	undo_free(log);
	item_close(r, msg ? "failed" : g.dry_run ? "dry-run" : "applied",
		   msg ? "see the message above" : NULL);
	free(msg);
	for (k = 0; k < s->nkv; k++)
		free(old[k]);
	free(old);
}

/* The snoop mode is checked only: changing it needs a BMC and a reboot. */
static void apply_bios(struct run *r, const struct conf_sec *s)
{
	const char *want = kv_get(s, "snoop-mode");
	char *mode = NULL, *why = NULL;

	item_open(s);
	if (want && kv_get(s, "bmc") && !r->skip_bios)
		mode = conf_snoop_mode(r->c, &want, false);
	if (!want)
		why = xsprintf("nothing to check (no snoop-mode)");
	else if (!kv_get(s, "bmc"))
		why = xsprintf("snoop-mode %s expected, not checked: no bmc in [bios]", want);
	else if (r->skip_bios)
		why = xsprintf("snoop-mode %s expected, not checked (--skip-bios): aheadctl verify checks it",
			       want);
	else if (!mode)
		why = xsprintf("snoop-mode %s expected, not checked: the BMC did not answer (see above)",
			       want);
	else if (strcmp(mode, want)) {
		char *fix = conf_bios_fix(r->c, want);

		why = xsprintf("snoop-mode is %s, %s expected: not changed at boot; run: %s",
			       mode, want, fix);
		warnx("%s", why);
		free(fix);
	} else {
		why = xsprintf("snoop-mode %s, as expected", mode);
	}
	if (g.json)
		jstr("snoop_mode", mode);
	item_close(r, "checked", why);
	free(why);
	free(mode);
}

static int apply_usage(void)
{
	err("usage: aheadctl [-n] [-j] apply [-c FILE] [--dev DEV | --devpath DEVPATH] [--skip-bios]");
	return EXIT_USAGE;
}

/*
 * --devpath: a uevent's DEVPATH (udev's %p).  A queue's
 * (/devices/.../net/eth0/queues/rx-3) names its NIC after "/net/".
 */
static char *dev_of_devpath(const char *p)
{
	const char *n = NULL, *s;
	char *dev;

	for (s = strstr(p, "/net/"); s; s = strstr(s + 1, "/net/"))
		n = s + 5;
	if (!n) {
		n = strrchr(p, '/');
		n = n ? n + 1 : p;
	}
	dev = xstrdup(n);
	dev[strcspn(dev, "/")] = 0;
	return dev;
}

static int parse_apply_args(int argc, char **argv, char **path, char **only,
			    bool *skip_bios, bool *strict)
{
	for (int i = 0; i < argc; i++) {
		if (skip_bios && !strcmp(argv[i], "--skip-bios")) {
			*skip_bios = true;
			continue;
		}
		if (strict && !strcmp(argv[i], "--strict")) {
			*strict = true;
			continue;
		}
		if (i + 1 >= argc)
			return apply_usage();
		if (!strcmp(argv[i], "-c") || !strcmp(argv[i], "--config"))
			*path = xstrdup(argv[++i]);
		else if (!strcmp(argv[i], "--dev"))
			*only = xstrdup(argv[++i]);
		else if (!strcmp(argv[i], "--devpath"))
			*only = dev_of_devpath(argv[++i]);
		else
			return apply_usage();
	}
	if (*only && (!**only || strchr(*only, '/')))
		return apply_usage();
	if (!*path)
		*path = conf_default_path();
	return 0;
}

/*
 * SIGINT or SIGTERM during apply: no other section starts, the one running
 * ends (a verb it runs goes on unless the signal reached it too), and what
 * was changed is merged into the record before apply exits.  Each value is
 * in the journal on disk before it is written, so even a kill that cannot
 * be caught loses nothing: the next apply or revert merges the journal.  A
 * second signal acts as usual (SA_RESETHAND).
 */
static volatile sig_atomic_t apply_stop;

static void on_stop(int sig)
{
	apply_stop = sig;
}

static struct stop_signals stop_saved;

static bool selected(const struct run *r, const struct conf_sec *s)
{
	if (!r->only)
		return true;
	return s->name && strcmp(s->kind, "fs") && !strcmp(s->name, r->only);
}

int cmd_apply(int argc, char **argv)
{
	struct run r = { 0 };
	char *path = NULL, *only = NULL, *state_path = undo_state_path();
	struct state *st = NULL;
	struct conf *c;
	int fd, sel = 0, recorded = 0, added = 0, left = 0;

	if (parse_apply_args(argc, argv, &path, &only, &r.skip_bios, NULL))
		return EXIT_USAGE;
	c = conf_read(path);
	if (!c)
		return EXIT_FAILED;
	r.c = c;
	r.only = only;
	/*
	 * udev runs one apply per queue event, several at once for one
	 * channel change: they take turns, so the last sees the final queues.
	 */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && !g.dry_run)
		flock(fd, LOCK_EX);
	/* What apply replaces is recorded for revert, or nothing is written. */
	if (!g.dry_run && !(st = undo_begin(path))) {
		if (fd >= 0)
			close(fd);
		return EXIT_FAILED;
	}
	if (st)
		catch_stop_signals(on_stop, &stop_saved);
	if (g.json) {
		jopen('{');
		jstr("config", path);
		jbool("applied", !g.dry_run);
		jstr("dev", only);
		jkey("items");
		jopen('[');
	}
	for (int i = 0; i < c->nsec; i++) {
		const struct conf_sec *s = &c->sec[i];

		if (!selected(&r, s) || (only && !strcmp(s->kind, "bios")))
			continue;
		if (apply_stop) {
			left++;
			continue;
		}
		sel++;
		if (!strcmp(s->kind, "nic"))
			apply_nic(&r, s);
		else if (!strcmp(s->kind, "fs"))
			apply_fs(&r, s);
		else if (!strcmp(s->kind, "block"))
			apply_block(&r, s);
		else
			apply_bios(&r, s);
	}
	if (apply_stop) {
		char *n = xsprintf(" (%d sections not started)", left);

		err("stopped by %s%s: what was changed is recorded for 'aheadctl revert'",
		    strsignal(apply_stop), left ? n : "");
		free(n);
		r.failed++;
	}
	if (st) {
		recorded = undo_end(st, &added);
		if (recorded < 0)
			r.failed++;
		catch_stop_signals(NULL, &stop_saved);
	}
	if (g.json) {
		jclose();
		jint("done", r.done);
		jint("skipped", r.skipped);
		jint("failed", r.failed);
		jstr("state", g.dry_run ? NULL : state_path);
		jint("recorded", recorded > 0 ? recorded : 0);
		jint("recorded_now", added);
		jclose();
		jend();
	} else {
		if (only && !sel)
			printf("nothing configured for %s in %s\n", only, path);
		else
			printf("%s%d done, %d skipped, %d failed\n", g.dry_run ? "dry run: " : "",
			       r.done, r.skipped, r.failed);
		if (recorded > 0)
			printf("%d values recorded in %s (%d by this run): 'aheadctl revert' puts them back\n",
			       recorded, state_path, added);
	}
	free(state_path);
	if (fd >= 0)
		close(fd);
	return r.failed ? EXIT_FAILED : 0;
}

/* ---- verify ---- */

struct drift {
	int n, ok;
	bool strict;		/* --strict: an absent device or mount is drift */
	json_t *skipped;	/* sections skipped as apply skips them */
};

static void drift(struct drift *d, const struct conf_sec *s, const char *what,
		  const char *expected, const char *found, const char *fix)
{
	d->n++;
	if (g.json) {
		jopen('{');
		jstr("kind", s->kind);
		jstr("name", s->name);
		jstr("what", what);
		jstr("expected", expected);
		jstr("found", found);
		jstr("fix", fix);
		jclose();
		return;
	}
	printf("DRIFT [%s%s%s] %s: expected %s, found %s\n  fix: %s\n", s->kind,
	       s->name ? " " : "", s->name ? s->name : "", what, expected, found, fix);
}

static void fine(struct drift *d, const struct conf_sec *s, const char *what)
{
	d->ok++;
	if (!g.json)
		printf("ok [%s%s%s] %s\n", s->kind, s->name ? " " : "",
		       s->name ? s->name : "", what);
}

/*
 * A device or mount that is not there: skipped and said once, as apply
 * skips it (a NIC not probed yet, a mount made later); drift with --strict.
 */
static void absent(struct drift *d, const struct conf_sec *s, const char *what,
		   const char *fix)
{
	char *why;

	if (d->strict) {
		drift(d, s, !strcmp(s->kind, "fs") ? "mount" : "device",
		      !strcmp(s->kind, "fs") ? "an aheadfs mount" : "present",
		      !strcmp(s->kind, "fs") ? "not mounted" : "absent", fix);
		return;
	}
	why = xsprintf("%s %s", what, s->name);
	json_array_append_new(d->skipped, json_pack("{s:s, s:s, s:s}", "kind", s->kind,
						    "name", s->name, "reason", why));
	if (!g.json)
		printf("skipped [%s %s]: %s, as apply skips it (--strict: drift)\n", s->kind,
		       s->name, why);
	free(why);
}

/* Appends to a malloc'd string. */
static void append(char **buf, const char *fmt, ...)
{
	va_list ap;
	char *more, *n;

	va_start(ap, fmt);
	if (vasprintf(&more, fmt, ap) < 0)
		exit(EXIT_FAILED);
	va_end(ap);
	n = xsprintf("%s%s%s", *buf, **buf ? " " : "", more);
	free(more);
	free(*buf);
	*buf = n;
}

static json_t *irq_show_json(const struct conf_sec *s, int *rc)
{
	const char *node = kv_get(s, "node");
	char *a[] = { "-j", "irq", "show", "dev", s->name, node ? "node" : NULL,
		      (char *)node, NULL };

	return self_json(a, rc, false);
}

/* Placement and XPS: what 'irq set -n' would write, against what is there. */
static void verify_placement(struct drift *d, const struct conf_sec *s, json_t *show)
{
	char **a = nic_set_args(s, true, true);
	char *exp = xstrdup(""), *got = xstrdup(""), *fix = nic_set_cmd(s);
	json_t *plan, *e;
	size_t i;
	int rc;

	plan = self_json(a, &rc, false);
	free(a);
	if (rc || !plan) {
		drift(d, s, "IRQ placement", kv_get(s, "policy"), "a plan that cannot be made (see above)", fix);
		goto out;
	}
	json_array_foreach(json_object_get(plan, "irqs"), i, e) {
		json_t *cpu = json_object_get(e, "cpu");
		const char *old = json_string_value(json_object_get(e, "old"));
		const char *want = json_string_value(json_object_get(e, "cpus"));

		if (!json_is_integer(cpu) || !want)
			continue;	/* managed: the kernel places it */
		/* The plan's whole CPU list (a hint may span several CPUs). */
		if (old && !strcmp(old, want))
			continue;
		append(&exp, "IRQ%lld:%s", json_integer_value(json_object_get(e, "irq")),
		       want);
		append(&got, "IRQ%lld:%s", json_integer_value(json_object_get(e, "irq")),
		       old ? old : "?");
	}
	if (*exp)
		drift(d, s, "IRQ affinity", exp, got, fix);
	else
		fine(d, s, "IRQ affinity");
	free(exp);
	free(got);
	exp = xstrdup("");
	got = xstrdup("");
	json_array_foreach(json_object_get(plan, "xps"), i, e) {
		long long q = json_integer_value(json_object_get(e, "queue"));
		const char *cpus = json_string_value(json_object_get(e, "cpus"));
		char qn[32], *want;
		const char *now = NULL;
		json_t *x;
		size_t k;

		snprintf(qn, sizeof(qn), "tx-%lld", q);
		/* A queue follows its IRQ: one CPU, or a list (a hint, a managed IRQ). */
		if (cpus)
			want = xstrdup(cpus);
		else
			want = xsprintf("%lld", (long long)json_integer_value(json_object_get(e, "cpu")));
		json_array_foreach(json_object_get(show, "queues"), k, x)
			if (!strcmp(json_string_value(json_object_get(x, "queue")) ?: "", qn))
				now = json_string_value(json_object_get(x, "xps"));
		if (!now || strcmp(now, want)) {
			append(&exp, "%s:%s", qn, want);
			append(&got, "%s:%s", qn, now ? (*now ? now : "none") : "?");
		}
		free(want);
	}
	if (*exp)
		drift(d, s, "XPS", exp, got, fix);
	else if (json_array_size(json_object_get(plan, "xps")))
		fine(d, s, "XPS");
out:
	json_decref(plan);
	free(exp);
	free(got);
	free(fix);
}

static void verify_nic(struct drift *d, const struct conf_sec *s)
{
	json_t *show, *e, *ib;
	char *owned = xstrdup("");
	size_t i;
	int rc;

	if (!dev_exists("net", s->name)) {
		absent(d, s, "no such network device",
		       "none here: load its driver, or rename the section if the NIC was renamed (ip -br link)");
		free(owned);
		return;
	}
	show = irq_show_json(s, &rc);
	if (rc || !show) {
		char *fix = xsprintf("aheadctl irq show dev %s (it says why)", s->name);

		drift(d, s, "IRQs", "readable", "unreadable (see above)", fix);
		free(fix);
		json_decref(show);
		free(owned);
		return;
	}
	if (kv_get(s, "policy"))
		verify_placement(d, s, show);
	ib = json_object_get(show, "irqbalance");
	json_array_foreach(json_object_get(show, "irqs"), i, e)
		if (json_is_true(json_object_get(e, "irqbalance")))
			append(&owned, "%lld", json_integer_value(json_object_get(e, "irq")));
	for (char *p = owned; *p; p++)
		*p = *p == ' ' ? ',' : *p;
	if (nic_bans(s) && *owned) {
		char *found = xsprintf("irqbalance (pid %lld) owns IRQs %s",
				       json_integer_value(json_object_get(ib, "pid")), owned);
		char *fix = xsprintf("aheadctl irq ban dev %s (and start irqbalance with --policyscript=%s/aheadctl/irqbalance-policy.sh)",
				     s->name, etc_root());

		drift(d, s, "irqbalance ban", "no IRQ of the NIC left to irqbalance", found, fix);
		free(found);
		free(fix);
	} else if (nic_bans(s)) {
		fine(d, s, json_is_true(json_object_get(ib, "running")) ?
		     "irqbalance ban" : "irqbalance not running");
	}
	free(owned);
	json_decref(show);
}

static void verify_fs(struct drift *d, const struct conf_sec *s)
{
	char *q = shell_quote(s->name);
	json_t *tun;

	if (fs_mount_of(s, &tun)) {
		drift(d, s, "mount", "an aheadfs mount", "unknown: the mounts cannot be listed (see above)",
		      "aheadctl fs show (it says why)");
		free(q);
		return;
	}
	if (!tun) {
		char *fix = xsprintf("mount -t aheadfs LOWERDIR %s (then aheadctl apply)", q);

		absent(d, s, "not an aheadfs mount (yet)", fix);
		free(fix);
	}
	for (int k = 0; tun && k < s->nkv; k++) {
		json_t *v = json_object_get(tun, s->kv[k].key);
		char *now = json_is_integer(v) ? xsprintf("%lld", (long long)json_integer_value(v)) :
			xstrdup(json_string_value(v) ? json_string_value(v) : "unreadable");

		if (strcmp(now, s->kv[k].val)) {
			char *fix = xsprintf("aheadctl fs set %s %s=%s", q, s->kv[k].key,
					     s->kv[k].val);

			drift(d, s, s->kv[k].key, s->kv[k].val, now, fix);
			free(fix);
		} else {
			fine(d, s, s->kv[k].key);
		}
		free(now);
	}
	json_decref(tun);
	free(q);
}

static void verify_block(struct drift *d, const struct conf_sec *s)
{
	if (!dev_exists("block", s->name)) {
		absent(d, s, "no such block device",
		       "none here: check the disk and its driver (lsblk, dmesg)");
		return;
	}
	for (int k = 0; k < s->nkv; k++) {
		char *p = queue_path(s->name, s->kv[k].key), *now = read_file(p);

		if (!now || strcmp(now, s->kv[k].val)) {
			char *qp = shell_quote(p);
			char *fix = xsprintf("echo %s > %s", s->kv[k].val, qp);

			drift(d, s, s->kv[k].key, s->kv[k].val, now ? now : "unreadable", fix);
			free(fix);
			free(qp);
		} else {
			fine(d, s, s->kv[k].key);
		}
		free(now);
		free(p);
	}
}

static void verify_bios(struct drift *d, const struct conf *c, const struct conf_sec *s)
{
	const char *want;
	char *mode = conf_snoop_mode(c, &want, false);

	if (!want) {
		free(mode);
		return;
	}
	if (!kv_get(s, "bmc")) {
		if (!g.json)
			printf("not checked [bios] snoop-mode %s: no bmc in [bios]\n", want);
	} else if (!mode) {
		char *o = bios_opts(s);
		char *fix = xsprintf("aheadctl bios show%s", o);

		free(o);

		drift(d, s, "snoop-mode", want, "unknown (the BMC did not answer)", fix);
		free(fix);
	} else if (strcmp(mode, want)) {
		char *fix = conf_bios_fix(c, want);

		drift(d, s, "snoop-mode", want, mode, fix);
		free(fix);
	} else {
		fine(d, s, "snoop-mode");
	}
	free(mode);
}

int cmd_verify(int argc, char **argv)
{
	struct drift d = { 0 };
	char *path = NULL, *only = NULL;
	struct conf *c;
	struct run r = { 0 };

	if (parse_apply_args(argc, argv, &path, &only, NULL, &d.strict)) {
		err("usage: aheadctl [-j] verify [-c FILE] [--dev DEV] [--strict]");
		return EXIT_USAGE;
	}
	d.skipped = json_array();
	c = conf_read(path);
	if (!c)
		return EXIT_FAILED;
	r.only = only;
	if (g.json) {
		jopen('{');
		jstr("config", path);
		jkey("drift");
		jopen('[');
	}
	for (int i = 0; i < c->nsec; i++) {
		const struct conf_sec *s = &c->sec[i];

		if (!selected(&r, s) || (only && !strcmp(s->kind, "bios")))
			continue;
		if (!strcmp(s->kind, "nic"))
			verify_nic(&d, s);
		else if (!strcmp(s->kind, "fs"))
			verify_fs(&d, s);
		else if (!strcmp(s->kind, "block"))
			verify_block(&d, s);
		else
			verify_bios(&d, c, s);
	}
	if (g.json) {
		jclose();
		jint("count", d.n);
		jint("ok", d.ok);
		jvalue("skipped", d.skipped);
		jclose();
		jend();
	} else {
		printf("%d drifted, %d as configured, %zu skipped (absent)\n", d.n, d.ok,
		       json_array_size(d.skipped));
	}
	json_decref(d.skipped);
	return d.n ? EXIT_FAILED : 0;
}
