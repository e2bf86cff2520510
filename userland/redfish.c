/* redfish.c: the Redfish client: a session, Bios GET, Bios/Settings PATCH, ComputerSystem.Reset. */
#include <curl/curl.h>
#include <jansson.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "aheadctl.h"

struct buf {
	char *p;
	size_t len, cap;	/* cap: bytes p holds, its NUL included */
	bool too_big;		/* the answer passed RF_ANSWER_MAX: refused */
};

/*
 * The most of one answer kept: a Redfish document is kilobytes, and a BMC
 * that sends more (broken or hostile) must not push the node into OOM.
 */
#define RF_ANSWER_MAX (4 << 20)

/* One conversation with the BMC: one connection, one session. */
struct rf {
	const struct bmc *b;
	CURL *c;
	char *base;		/* scheme://host[:port], no trailing slash */
	char *token;		/* X-Auth-Token of our session; NULL: Basic auth */
	char *session;		/* the session's path, DELETEd at the end */
	char *hdr_token, *hdr_location;	/* from the last answer */
	bool closing;		/* logging out: not to be interrupted */
};

/*
 * Ctrl-C or SIGTERM while a session is open: the request in flight is
 * abandoned and the session still closed, rather than left on the BMC (they
 * hold few).  A second signal acts as usual (SA_RESETHAND).
 */
static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

static int progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	const struct rf *rf = arg;

	(void)dt, (void)dn, (void)ut, (void)un;
	return interrupted && !rf->closing;
}


static size_t collect(char *data, size_t sz, size_t n, void *arg)
{
	struct buf *b = arg;
	char *np;

	if (sz * n > RF_ANSWER_MAX - b->len) {
		b->too_big = true;
		return 0;	/* curl stops with CURLE_WRITE_ERROR */
	}
	/*
	 * Doubling: a realloc per chunk (curl hands over 16 KiB at a time)
	 * copies the answer over and over, and under ASan each freed
	 * buffer waits in its quarantine: a 4 MiB answer then held 300 MiB.
	 */
	if (b->len + sz * n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;

		while (cap < b->len + sz * n + 1)
			cap *= 2;
		np = realloc(b->p, cap);
		if (!np)
			return 0;
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, data, sz * n);
	b->len += sz * n;
	b->p[b->len] = 0;
	return sz * n;
}

/* The value of header name in line ("Name: value\r\n"), malloc'd, or NULL. */
static char *header_value(const char *line, size_t len, const char *name)
{
	size_t nl = strlen(name);
	const char *v, *e = line + len;

	if (len <= nl || strncasecmp(line, name, nl) || line[nl] != ':')
		return NULL;
	v = line + nl + 1;
	while (v < e && (*v == ' ' || *v == '\t'))
		v++;
	while (e > v && (e[-1] == '\r' || e[-1] == '\n' || e[-1] == ' '))
		e--;
	return strndup(v, e - v);
}

static size_t headers(char *data, size_t sz, size_t n, void *arg)
{
	struct rf *rf = arg;
	char *tok = header_value(data, sz * n, "X-Auth-Token");
	char *loc = header_value(data, sz * n, "Location");

	if (tok) {
		free(rf->hdr_token);
		rf->hdr_token = tok;
	}
	if (loc) {
		free(rf->hdr_location);
		rf->hdr_location = loc;
	}
	return sz * n;
}

static char *base_url(const struct bmc *b)
{
	const char *u = b->url, *s = strstr(u, "://");
	size_t l = s ? (size_t)(s + 3 - u) + strcspn(s + 3, "/?#") : strcspn(u, "/?#");
	const char *c = memchr(u, ':', l);

	if (s)
		return xsprintf("%.*s", (int)l, u);
	/* A bare IPv6 address (as IPMI takes it) needs brackets in a URL. */
	if (u[0] != '[' && c && memchr(c + 1, ':', u + l - c - 1))
		return xsprintf("https://[%.*s]", (int)l, u);
	return xsprintf("https://%.*s", (int)l, u);
}

/*
 * A path the BMC gave us as it is sent back: absolute paths as they are;
 * a full URL only for its path, so a token never goes to another host.
 * Anything else (a link without its leading '/': "@evil.example/x" after
 * the base URL would name another host) is NULL: not followed.
 */
static const char *path_of(const char *p)
{
	const char *s = strstr(p, "://");

	if (s && strchr(p, '/') == s + 1) {
		s = strchr(s + 3, '/');
		return s ? s : "/";
	}
	return p[0] == '/' ? p : NULL;
}

/* The first message a Redfish error body carries, if any. */
static const char *rf_message(json_t *body)
{
	json_t *e = json_object_get(body, "error"), *ext, *m;

	if (!e)
		return NULL;
	ext = json_object_get(e, "@Message.ExtendedInfo");
	if (json_is_array(ext) && json_array_size(ext)) {
		m = json_object_get(json_array_get(ext, 0), "Message");
		if (json_is_string(m))
			return json_string_value(m);
	}
	m = json_object_get(e, "message");
	return json_is_string(m) ? json_string_value(m) : NULL;
}

static void rf_options(struct rf *rf, long timeout, bool auth)
{
	const struct bmc *b = rf->b;

	curl_easy_reset(rf->c);
	curl_easy_setopt(rf->c, CURLOPT_HEADERFUNCTION, headers);
	curl_easy_setopt(rf->c, CURLOPT_HEADERDATA, rf);
	curl_easy_setopt(rf->c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(rf->c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)RF_ANSWER_MAX);
	curl_easy_setopt(rf->c, CURLOPT_TIMEOUT, timeout);
	curl_easy_setopt(rf->c, CURLOPT_CONNECTTIMEOUT, timeout);
	curl_easy_setopt(rf->c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(rf->c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(rf->c, CURLOPT_XFERINFOFUNCTION, progress);
	curl_easy_setopt(rf->c, CURLOPT_XFERINFODATA, rf);
	curl_easy_setopt(rf->c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(rf->c, CURLOPT_SSL_VERIFYPEER, b->insecure ? 0L : 1L);
	curl_easy_setopt(rf->c, CURLOPT_SSL_VERIFYHOST, b->insecure ? 0L : 2L);
	if (b->ca_file)
		curl_easy_setopt(rf->c, CURLOPT_CAINFO, b->ca_file);
	if (auth && !rf->token && b->user && b->password) {
		curl_easy_setopt(rf->c, CURLOPT_USERNAME, b->user);
		curl_easy_setopt(rf->c, CURLOPT_PASSWORD, b->password);
		curl_easy_setopt(rf->c, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
	}
}

/*
 * One request; path is absolute ("/redfish/v1/...").  Returns the HTTP
 * status (and the parsed body in *out when it is JSON), or -1 after a
 * message when the BMC could not be reached or did not answer in time.
 * auth: whether to present our session (or Basic credentials).
 */
static int rf_call(struct rf *rf, const char *method, const char *path,
		   json_t *body, json_t **out, bool auth, long timeout)
{
	struct curl_slist *h = NULL;
	struct buf resp = { 0 };
	const char *rel = path_of(path);
	char *url, *tok = NULL, *data;
	char ebuf[CURL_ERROR_SIZE] = "";
	long status = 0;
	CURLcode rc;

	if (out)
		*out = NULL;
	if (!rel) {
		err("%s '%s': the BMC gave a link that is not a path on it (no leading '/'): refused, nothing sent",
		    method, path);
		return -1;
	}
	url = xsprintf("%s%s", rf->base, rel);
	data = body ? json_dumps(body, JSON_COMPACT) : NULL;
	rf_options(rf, timeout, auth);
	h = curl_slist_append(h, "Accept: application/json");
	h = curl_slist_append(h, "OData-Version: 4.0");
	if (auth && rf->token) {
		tok = xsprintf("X-Auth-Token: %s", rf->token);
		h = curl_slist_append(h, tok);
	}
	if (data)
		h = curl_slist_append(h, "Content-Type: application/json");
	free(rf->hdr_token);
	free(rf->hdr_location);
	rf->hdr_token = rf->hdr_location = NULL;
	curl_easy_setopt(rf->c, CURLOPT_URL, url);
	curl_easy_setopt(rf->c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(rf->c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(rf->c, CURLOPT_WRITEDATA, &resp);
	curl_easy_setopt(rf->c, CURLOPT_ERRORBUFFER, ebuf);
	if (data)
		curl_easy_setopt(rf->c, CURLOPT_POSTFIELDS, data);
	rc = curl_easy_perform(rf->c);
	if (rc == CURLE_ABORTED_BY_CALLBACK) {
		err("%s %s: interrupted", method, url);
		status = -1;
	} else if (rc == CURLE_OPERATION_TIMEDOUT) {
		err("%s %s: the BMC did not answer within %ld s (--timeout sets the limit)",
		    method, url, timeout);
		status = -1;
	} else if (resp.too_big || rc == CURLE_FILESIZE_EXCEEDED) {
		err("%s %s: the BMC's answer is larger than %d MiB (a Redfish document is kilobytes): refused",
		    method, url, RF_ANSWER_MAX >> 20);
		status = -1;
	} else if (rc == CURLE_SSL_CACERT_BADFILE) {
		err("%s %s: the CA file %s could not be loaded (%s)", method, url,
		    rf->b->ca_file ? rf->b->ca_file : "of the system", *ebuf ? ebuf : curl_easy_strerror(rc));
		status = -1;
	} else if (rc == CURLE_PEER_FAILED_VERIFICATION) {
		err("%s %s: the BMC's certificate did not verify: %s (%s%s; --insecure skips the check)",
		    method, url, *ebuf ? ebuf : curl_easy_strerror(rc),
		    rf->b->ca_file ? "checked against " : "give the CA that signed it with --ca FILE or ca-file =",
		    rf->b->ca_file ? rf->b->ca_file : "");
		status = -1;
	} else if (rc != CURLE_OK) {
		err("%s %s: %s", method, url, *ebuf ? ebuf : curl_easy_strerror(rc));
		status = -1;
	} else {
		curl_easy_getinfo(rf->c, CURLINFO_RESPONSE_CODE, &status);
		if (resp.p && out)
			*out = json_loads(resp.p, 0, NULL);
	}
	curl_slist_free_all(h);
	free(resp.p);
	free(data);
	free(url);
	free(tok);
	return status;
}

static int rf_request(struct rf *rf, const char *method, const char *path,
		      json_t *body, json_t **out)
{
	return rf_call(rf, method, path, body, out, true, rf->b->timeout);
}

static void refused(const struct rf *rf, int st)
{
	err("the BMC refused the credentials of user '%s' (HTTP %d)", rf->b->user, st);
}

/* GET that must succeed with a JSON object; one message otherwise. */
static json_t *rf_get(struct rf *rf, const char *path)
{
	json_t *o;
	int st = rf_request(rf, "GET", path, NULL, &o);

	if (st < 0)
		return NULL;
	if (st == 401 || st == 403) {
		refused(rf, st);
		json_decref(o);
		return NULL;
	}
	if (st != 200 || !json_is_object(o)) {
		const char *m = rf_message(o);

		err("GET %s: HTTP %d%s%s", path, st, m ? ": " : "", m ? m : "");
		json_decref(o);
		return NULL;
	}
	return o;
}

static const char *odata_id(json_t *o, const char *key)
{
	json_t *l = key ? json_object_get(o, key) : o;

	l = json_object_get(l, "@odata.id");
	return json_is_string(l) ? json_string_value(l) : NULL;
}

static const char *str_of(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

/*
 * Opens the session: the service root (readable without credentials) names
 * the sessions collection; a POST there with the credentials gives a token
 * for every later request and the session's URI to delete at the end.  A
 * service that advertises no sessions gets Basic auth on each request.
 */
static int rf_open(struct rf *rf, const struct bmc *b, json_t **root)
{
	const char *sessions;
	json_t *body, *resp = NULL;
	int st;

	memset(rf, 0, sizeof(*rf));
	rf->b = b;
	rf->base = base_url(b);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	rf->c = curl_easy_init();
	if (!rf->c) {
		err("curl_easy_init failed");
		return -1;
	}
	st = rf_call(rf, "GET", "/redfish/v1", NULL, root, false, b->timeout);
	if (st < 0)
		return -1;
	if (st != 200 || !json_is_object(*root)) {
		err("GET /redfish/v1: HTTP %d: not a Redfish service", st);
		return -1;
	}
	sessions = odata_id(json_object_get(*root, "Links"), "Sessions");
	if (!sessions) {
		warnx("the Redfish service advertises no sessions (Links.Sessions): using Basic auth on each request");
		return 0;
	}
	body = json_pack("{s:s, s:s}", "UserName", b->user, "Password", b->password);
	st = rf_call(rf, "POST", sessions, body, &resp, false, b->timeout);
	json_decref(body);
	if (st == 401 || st == 403)
		refused(rf, st);
	else if (st >= 0 && (st < 200 || st > 299 || !rf->hdr_token))
		err("POST %s: HTTP %d%s: the BMC opened no session", sessions, st,
		    st >= 200 && st <= 299 ? " without an X-Auth-Token" : "");
	if (st < 200 || st > 299 || !rf->hdr_token) {
		json_decref(resp);
		return -1;
	}
	rf->token = rf->hdr_token;
	rf->hdr_token = NULL;
	if (rf->hdr_location && path_of(rf->hdr_location))
		rf->session = xstrdup(path_of(rf->hdr_location));
	else if (odata_id(resp, NULL) && path_of(odata_id(resp, NULL)))
		rf->session = xstrdup(path_of(odata_id(resp, NULL)));
	else
		warnx("the BMC gave no path for the session: it stays open until it times out");
	json_decref(resp);
	return 0;
}

/* Logs out, whatever happened before; a failure here is only a warning. */
static void rf_close(struct rf *rf, json_t *root)
{
	rf->closing = true;
	if (rf->session) {
		long t = rf->b->timeout < 10 ? rf->b->timeout : 10;
		int st = rf_call(rf, "DELETE", rf->session, NULL, NULL, true, t);

		if (st >= 0 && (st < 200 || st > 299))
			warnx("DELETE %s: HTTP %d: the session stays open until it times out",
			      rf->session, st);
	}
	if (rf->c)
		curl_easy_cleanup(rf->c);
	json_decref(root);
	free(rf->base);
	free(rf->token);
	free(rf->session);
	free(rf->hdr_token);
	free(rf->hdr_location);
}

struct rf_sys {
	json_t *coll, *sys, *bios;
	char *sys_path;
	const char *bios_path, *maker, *model;
	const struct snoop_map *map;
	const char *value;	/* current attribute value */
};

/* A member's name, as --system takes it: its last path segment. */
static char *member_name(const char *id)
{
	size_t l = strlen(id);
	const char *s;

	while (l > 1 && id[l - 1] == '/')
		l--;
	for (s = id + l; s > id && s[-1] != '/'; s--)
		;
	return xsprintf("%.*s", (int)(id + l - s), s);
}

/* A member link as a path: a relative one is taken under the collection. */
static char *member_path(const char *systems, const char *id)
{
	if (path_of(id))
		return xstrdup(path_of(id));
	return xsprintf("%s/%s", systems, id);
}

static void list_systems(const char *systems, json_t *members)
{
	size_t n = json_array_size(members);

	fprintf(stderr, "aheadctl: %s has %zu systems; choose one with --system ID:", systems, n);
	for (size_t i = 0; i < n; i++) {
		const char *id = odata_id(json_array_get(members, i), NULL);
		char *name = id ? member_name(id) : NULL;

		fprintf(stderr, " %s", name ? name : "?");
		free(name);
	}
	fputc('\n', stderr);
}

/* The system's path: the only member, or the one --system names. */
static int find_system(struct rf *rf, json_t *root, struct rf_sys *s)
{
	const char *systems = odata_id(root, "Systems");
	json_t *members;
	size_t n;

	if (!systems) {
		err("the service root has no Systems collection");
		return -1;
	}
	s->coll = rf_get(rf, systems);
	if (!s->coll)
		return -1;
	members = json_object_get(s->coll, "Members");
	n = json_array_size(members);
	if (!n) {
		err("%s has no members", systems);
		return -1;
	}
	for (size_t i = 0; i < n && !s->sys_path; i++) {
		const char *id = odata_id(json_array_get(members, i), NULL);
		char *name = id ? member_name(id) : NULL;

		if (id && (rf->b->system ? !strcmp(name, rf->b->system) : n == 1))
			s->sys_path = member_path(systems, id);
		free(name);
	}
	if (s->sys_path)
		return 0;
	if (rf->b->system)
		err("no system '%s' in %s", rf->b->system, systems);
	else
		list_systems(systems, members);
	return -1;
}

/* Finds the system, its Bios, and the vendor's attribute; refuses unknowns. */
static int rf_load(struct rf *rf, json_t *root, struct rf_sys *s)
{
	json_t *attrs;

	if (find_system(rf, root, s))
		return -1;
	s->sys = rf_get(rf, s->sys_path);
	if (!s->sys)
		return -1;
	s->maker = str_of(s->sys, "Manufacturer");
	s->model = str_of(s->sys, "Model");
	s->bios_path = odata_id(s->sys, "Bios");
	if (!s->bios_path) {
		err("%s exposes no Bios resource: this BMC cannot change BIOS settings over Redfish",
		    s->sys_path);
		return -1;
	}
	s->map = snoop_map_for(s->maker);
	if (!s->map) {
		err("unknown manufacturer '%s' (model '%s'): no snoop-mode attribute is known for it; refusing to guess (Documentation/aheadctl.rst lists the map)",
		    s->maker ? s->maker : "?", s->model ? s->model : "?");
		return -1;
	}
	s->bios = rf_get(rf, s->bios_path);
	if (!s->bios)
		return -1;
	attrs = json_object_get(s->bios, "Attributes");
	s->value = str_of(attrs, s->map->attr);
	if (!s->value) {
		err("%s %s: the Bios has no attribute %s: refusing to guess another",
		    s->maker, s->model ? s->model : "", s->map->attr);
		return -1;
	}
	return 0;
}

static void rf_sys_free(struct rf_sys *s)
{
	json_decref(s->coll);
	json_decref(s->sys);
	json_decref(s->bios);
	free(s->sys_path);
}

static const char *mode_of(const struct snoop_map *m, const char *value)
{
	for (int i = 0; i < 4; i++)
		if (m->val[i] && value && !strcmp(m->val[i], value))
			return snoop_modes[i];
	return NULL;
}

static char *settings_path(const struct rf_sys *s)
{
	json_t *set = json_object_get(s->bios, "@Redfish.Settings");
	const char *p = odata_id(set, "SettingsObject");

	return p ? xstrdup(p) : xsprintf("%s/Settings", s->bios_path);
}

/*
 * The value pending in the settings object (applied at the next reset), if
 * it differs from the current one: a new string in *pending, or NULL when
 * nothing else is pending.  A BMC whose Bios advertises no settings object
 * and has none at the default path (404) has nothing pending.  0, or -1
 * after a message: what the next reset would apply is unknown.
 */
static int read_pending(struct rf *rf, const struct rf_sys *s, const char *sp,
			char **pending)
{
	json_t *set = NULL;
	bool advertised = odata_id(json_object_get(s->bios, "@Redfish.Settings"),
				   "SettingsObject") != NULL;
	const char *v, *m;
	int st = rf_request(rf, "GET", sp, NULL, &set);

	*pending = NULL;
	if (st == 404 && !advertised) {
		json_decref(set);
		return 0;
	}
	if (st != 200 || !json_is_object(set)) {
		m = rf_message(set);
		if (st >= 0)
			err("GET %s: HTTP %d%s%s", sp, st, m ? ": " : "", m ? m : "");
		err("the pending BIOS settings (%s) cannot be read: what the next reset applies is unknown",
		    sp);
		json_decref(set);
		return -1;
	}
	v = str_of(json_object_get(set, "Attributes"), s->map->attr);
	if (v && strcmp(v, s->value))
		*pending = xstrdup(v);
	json_decref(set);
	return 0;
}

static int do_show(struct rf *rf, json_t *root)
{
	struct rf_sys s = { 0 };
	char *sp, *pending = NULL;
	const char *m;

	if (rf_load(rf, root, &s)) {
		rf_sys_free(&s);
		return EXIT_FAILED;
	}
	sp = settings_path(&s);
	if (read_pending(rf, &s, sp, &pending)) {
		free(sp);
		rf_sys_free(&s);
		return EXIT_FAILED;
	}
	m = mode_of(s.map, s.value);
	if (g.json) {
		jopen('{');
		jstr("via", "redfish");
		jstr("system", s.sys_path);
		jstr("manufacturer", s.maker);
		jstr("model", s.model);
		jstr("attribute", s.map->attr);
		jstr("value", s.value);
		jstr("snoop_mode", m);
		jstr("pending", pending);
		jclose();
		jend();
	} else {
		printf("%s %s (%s): %s = %s (snoop-mode %s)\n", s.maker,
		       s.model ? s.model : "", s.sys_path, s.map->attr, s.value,
		       m ? m : "unknown");
		if (pending)
			printf("pending: %s = %s, applied at the next reboot\n",
			       s.map->attr, pending);
	}
	free(pending);
	free(sp);
	rf_sys_free(&s);
	return 0;
}

static bool allows(json_t *allowed, const char *type)
{
	/* Without the annotation the service lists nothing: assume it can. */
	if (!json_is_array(allowed))
		return true;
	for (size_t k = 0; k < json_array_size(allowed); k++)
		if (!strcmp(json_string_value(json_array_get(allowed, k)) ?: "", type))
			return true;
	return false;
}

/* The allowed values, for a message: "A, B, C" (malloc'd). */
static char *allowed_list(json_t *allowed)
{
	char *l = xstrdup("");

	for (size_t k = 0; k < json_array_size(allowed); k++) {
		const char *v = json_string_value(json_array_get(allowed, k));
		char *n = xsprintf("%s%s%s", l, *l ? ", " : "", v ? v : "?");

		free(l);
		l = n;
	}
	return l;
}

/*
 * GracefulRestart by default: the OS shuts down cleanly, which a storage
 * node running a filesystem needs.  --force: ForceRestart, else PowerCycle.
 */
static int rf_reset(struct rf *rf, json_t *sys, const char *sys_path,
		    struct reset_info *r)
{
	json_t *act = json_object_get(json_object_get(sys, "Actions"),
				      "#ComputerSystem.Reset");
	json_t *allowed = json_object_get(act, "ResetType@Redfish.AllowableValues");
	const char *target = str_of(act, "target"), *type = NULL;
	json_t *body, *resp = NULL;
	int st;

	r->via = "redfish";
	r->graceful = !rf->b->force;
	if (!target) {
		err("%s has no ComputerSystem.Reset action: reboot it another way (aheadctl --yes bios power-cycle --via ipmi)",
		    sys_path);
		return EXIT_FAILED;
	}
	if (!rf->b->force)
		type = allows(allowed, "GracefulRestart") ? "GracefulRestart" : NULL;
	else if (allows(allowed, "ForceRestart"))
		type = "ForceRestart";
	else if (allows(allowed, "PowerCycle"))
		type = "PowerCycle";
	if (!type) {
		char *l = allowed_list(allowed);

		err("%s allows no %s reset (it allows: %s)%s", sys_path,
		    rf->b->force ? "ForceRestart or PowerCycle" : "GracefulRestart", l,
		    rf->b->force ? "" : "; --force asks for a hard one (ForceRestart or PowerCycle), an unclean stop of the running OS");
		free(l);
		return EXIT_FAILED;
	}
	r->type = type;
	if (g.dry_run) {
		info("would POST %s {\"ResetType\": \"%s\"}", target, type);
		return 0;
	}
	body = json_pack("{s:s}", "ResetType", type);
	st = rf_request(rf, "POST", target, body, &resp);
	json_decref(body);
	if (st >= 0 && st != 200 && st != 202 && st != 204) {
		const char *m = rf_message(resp);

		err("POST %s: HTTP %d%s%s", target, st, m ? ": " : "", m ? m : "");
	}
	json_decref(resp);
	if (st != 200 && st != 202 && st != 204)
		return EXIT_FAILED;
	r->requested = true;
	info("reset requested: %s (%s)", type, r->graceful ? "graceful" :
	     "hard, --force");
	return 0;
}

/* -j for set: what was (or would be) changed, and the reset. */
static void set_json(const struct rf_sys *s, const char *sp, const char *want,
		     int mode, bool changed, const char *was_pending,
		     const struct reset_info *r)
{
	jopen('{');
	jstr("via", "redfish");
	jbool("dry_run", g.dry_run);
	jstr("system", s->sys_path);
	jstr("manufacturer", s->maker);
	jstr("model", s->model);
	jstr("attribute", s->map->attr);
	jstr("snoop_mode", snoop_modes[mode]);
	jstr("from", s->value);
	jstr("to", want);
	jbool("changed", changed);
	jstr("settings", sp);
	jstr("was_pending", was_pending);
	jstr("pending", changed && strcmp(s->value, want) ? want : NULL);
	reset_json(r);
	jclose();
	jend();
}

static int do_set(struct rf *rf, json_t *root, int mode, bool reboot)
{
	struct rf_sys s = { 0 };
	struct reset_info r = { 0 };
	const char *want;
	char *sp = NULL, *dump = NULL, *pending = NULL;
	json_t *body = NULL, *resp = NULL;
	bool clear;
	int st, rc = EXIT_FAILED;

	if (rf_load(rf, root, &s))
		goto out;
	want = s.map->val[mode];
	if (!want) {
		err("%s offers no '%s' snoop mode (attribute %s)", s.maker,
		    snoop_modes[mode], s.map->attr);
		goto out;
	}
	/* Another value pending would apply at the next reset, whatever is current. */
	sp = settings_path(&s);
	if (read_pending(rf, &s, sp, &pending)) {
		err("refusing to set snoop-mode %s without knowing what is pending",
		    snoop_modes[mode]);
		goto out;
	}
	if (!strcmp(s.value, want) && (!pending || !strcmp(pending, want))) {
		info("%s is already %s (snoop-mode %s), nothing else pending: nothing to change",
		     s.map->attr, want, snoop_modes[mode]);
		if (g.json)
			set_json(&s, NULL, want, mode, false, NULL, NULL);
		rc = 0;
		goto out;
	}
	/* The value is current, another pending: set back, nothing left to reset for. */
	clear = !strcmp(s.value, want);
	body = json_pack("{s:{s:s}, s:{s:s}}", "Attributes", s.map->attr, want,
			 "@Redfish.SettingsApplyTime", "ApplyTime", "OnReset");
	dump = json_dumps(body, JSON_COMPACT | JSON_SORT_KEYS);
	if (g.dry_run) {
		info("would PATCH %s %s", sp, dump);
	} else {
		st = rf_request(rf, "PATCH", sp, body, &resp);
		if (st >= 0 && st != 200 && st != 202 && st != 204) {
			const char *m = rf_message(resp);

			err("PATCH %s: HTTP %d%s%s", sp, st, m ? ": " : "", m ? m : "");
		}
		if (st != 200 && st != 202 && st != 204)
			goto out;
		if (clear)
			info("%s: %s is %s, but %s was pending (it would have applied at the next reset): set back to %s, nothing pending",
			     s.sys_path, s.map->attr, s.value, pending, want);
		else
			info("%s: %s %s -> %s is pending (applies at the next reset)", s.sys_path,
			     s.map->attr, s.value, want);
	}
	if (clear && reboot)
		info("no reset: the BIOS already runs %s (snoop-mode %s)", want, snoop_modes[mode]);
	if (reboot && !clear && rf_reset(rf, s.sys, s.sys_path, &r))
		goto out;
	if (!reboot && !clear && !g.dry_run)
		info("not rebooting: run 'aheadctl --yes bios power-cycle --bmc %s%s' (a graceful restart) or add --reboot",
		     rf->b->url, rf->b->insecure_http ? " --insecure-http" : "");
	if (g.json)
		set_json(&s, sp, want, mode, true, pending, reboot ? &r : NULL);
	rc = 0;
out:
	json_decref(body);
	json_decref(resp);
	free(dump);
	free(sp);
	free(pending);
	rf_sys_free(&s);
	return rc;
}

static int do_reset(struct rf *rf, json_t *root)
{
	struct rf_sys s = { 0 };
	struct reset_info r = { 0 };
	int rc = EXIT_FAILED;

	if (find_system(rf, root, &s))
		goto out;
	s.sys = rf_get(rf, s.sys_path);
	if (!s.sys || rf_reset(rf, s.sys, s.sys_path, &r))
		goto out;
	if (g.json) {
		jopen('{');
		jstr("via", "redfish");
		jbool("dry_run", g.dry_run);
		jstr("system", s.sys_path);
		reset_json(&r);
		jclose();
		jend();
	}
	rc = 0;
out:
	rf_sys_free(&s);
	return rc;
}

typedef int (*rf_verb)(struct rf *rf, json_t *root, const void *arg);

/* Every verb: one session around it, closed whatever the verb's outcome. */
static int with_session(struct bmc *b, rf_verb verb, const void *arg)
{
	struct stop_signals saved;
	struct rf rf;
	json_t *root = NULL;
	int rc = EXIT_FAILED;

	catch_stop_signals(on_signal, &saved);
	if (!rf_open(&rf, b, &root) && !interrupted)
		rc = verb(&rf, root, arg);
	rf_close(&rf, root);
	catch_stop_signals(NULL, &saved);
	return rc;
}

static int show_verb(struct rf *rf, json_t *root, const void *arg)
{
	(void)arg;
	return do_show(rf, root);
}

struct set_args {
	int mode;
	bool reboot;
};

static int set_verb(struct rf *rf, json_t *root, const void *arg)
{
	const struct set_args *a = arg;

	return do_set(rf, root, a->mode, a->reboot);
}

static int reset_verb(struct rf *rf, json_t *root, const void *arg)
{
	(void)arg;
	return do_reset(rf, root);
}

int redfish_show(struct bmc *b)
{
	return with_session(b, show_verb, NULL);
}

int redfish_set(struct bmc *b, int mode, bool reboot)
{
	struct set_args a = { mode, reboot };

	return with_session(b, set_verb, &a);
}

int redfish_reset(struct bmc *b)
{
	return with_session(b, reset_verb, NULL);
}

/*
 * Fuzzing (userland/fuzz/): one BMC answer through what reads it offline:
 * the size cap, a header line, the service root's links, a Systems
 * collection's members, a ComputerSystem's maker and reset types, a Bios
 * attribute and its mode, an error body's message.
 */
void fuzz_redfish_answer(const char *data, size_t n)
{
	struct buf b = { 0 };
	json_t *o, *members, *allowed;
	const struct snoop_map *map;
	char *h, *l;

	collect((char *)data, 1, n, &b);
	h = header_value(data, n, "X-Auth-Token");
	free(h);
	free(b.p);
	o = json_loadb(data, n, 0, NULL);
	if (!o)
		return;
	(void)rf_message(o);
	(void)odata_id(json_object_get(o, "Links"), "Sessions");
	(void)path_of(odata_id(o, "Systems") ? odata_id(o, "Systems") : "/");
	members = json_object_get(o, "Members");
	for (size_t i = 0; i < json_array_size(members); i++) {
		const char *id = odata_id(json_array_get(members, i), NULL);

		if (id) {
			char *name = member_name(id), *p = member_path("/redfish/v1/Systems", id);

			free(name);
			free(p);
		}
	}
	map = str_of(o, "Manufacturer") ? snoop_map_for(str_of(o, "Manufacturer")) : NULL;
	if (map)
		(void)mode_of(map, str_of(json_object_get(o, "Attributes"), map->attr));
	allowed = json_object_get(json_object_get(json_object_get(o, "Actions"),
						  "#ComputerSystem.Reset"),
				  "ResetType@Redfish.AllowableValues");
	(void)allows(allowed, "GracefulRestart");
	l = allowed_list(allowed);
	free(l);
	json_decref(o);
}
