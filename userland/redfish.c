/* redfish.c: the Redfish client: Bios GET, Bios/Settings PATCH, ComputerSystem.Reset. */
#include <curl/curl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "aheadctl.h"

struct buf {
	char *p;
	size_t len;
};

static size_t collect(char *data, size_t sz, size_t n, void *arg)
{
	struct buf *b = arg;
	char *np = realloc(b->p, b->len + sz * n + 1);

	if (!np)
		return 0;
	b->p = np;
	memcpy(b->p + b->len, data, sz * n);
	b->len += sz * n;
	b->p[b->len] = 0;
	return sz * n;
}

static char *base_url(const struct bmc *b)
{
	const char *u = b->url;
	size_t l = strlen(u);

	while (l && u[l - 1] == '/')
		l--;
	if (strstr(u, "://"))
		return xsprintf("%.*s", (int)l, u);
	return xsprintf("https://%.*s", (int)l, u);
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

/*
 * One request; path is absolute ("/redfish/v1/...").  Returns the HTTP
 * status (and the parsed body in *out when it is JSON), or -1 after a
 * message when the BMC could not be reached.
 */
static int rf_request(const struct bmc *b, const char *method, const char *path,
		      json_t *body, json_t **out)
{
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;
	struct buf resp = { 0 };
	char *base = base_url(b), *url = xsprintf("%s%s", base, path);
	char *data = body ? json_dumps(body, JSON_COMPACT) : NULL;
	long status = 0;
	CURLcode rc;

	if (out)
		*out = NULL;
	if (!c) {
		err("curl_easy_init failed");
		return -1;
	}
	h = curl_slist_append(h, "Accept: application/json");
	h = curl_slist_append(h, "OData-Version: 4.0");
	if (data)
		h = curl_slist_append(h, "Content-Type: application/json");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_USERNAME, b->user);
	curl_easy_setopt(c, CURLOPT_PASSWORD, b->password);
	curl_easy_setopt(c, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &resp);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, b->insecure ? 0L : 1L);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, b->insecure ? 0L : 2L);
	if (getenv("AHEADCTL_CA_FILE"))
		curl_easy_setopt(c, CURLOPT_CAINFO, getenv("AHEADCTL_CA_FILE"));
	if (data)
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, data);
	rc = curl_easy_perform(c);
	if (rc != CURLE_OK) {
		err("%s %s: %s%s", method, url, curl_easy_strerror(rc),
		    (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE) ?
		    " (the BMC's certificate did not verify; --insecure skips the check)" : "");
		status = -1;
	} else {
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
		if (resp.p && out)
			*out = json_loads(resp.p, 0, NULL);
	}
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	free(resp.p);
	free(data);
	free(url);
	free(base);
	return status;
}

/* GET that must succeed with a JSON object; one message otherwise. */
static json_t *rf_get(const struct bmc *b, const char *path)
{
	json_t *o;
	int st = rf_request(b, "GET", path, NULL, &o);

	if (st < 0)
		return NULL;
	if (st == 401 || st == 403) {
		err("the BMC refused the credentials of user '%s' (HTTP %d)", b->user, st);
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

struct rf_sys {
	json_t *sys, *bios;
	const char *sys_path, *bios_path, *maker, *model;
	const struct snoop_map *map;
	const char *value;	/* current attribute value */
};

/* Finds the system, its Bios, and the vendor's attribute; refuses unknowns. */
static int rf_load(const struct bmc *b, struct rf_sys *s)
{
	json_t *root = rf_get(b, "/redfish/v1"), *coll, *members, *attrs;
	const char *systems;
	size_t n;

	memset(s, 0, sizeof(*s));
	if (!root)
		return -1;
	systems = odata_id(root, "Systems");
	if (!systems) {
		err("the service root has no Systems collection");
		return -1;
	}
	coll = rf_get(b, systems);
	if (!coll)
		return -1;
	members = json_object_get(coll, "Members");
	n = json_array_size(members);
	if (!n) {
		err("%s has no members", systems);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		const char *id = odata_id(json_array_get(members, i), NULL);
		const char *slash = id ? strrchr(id, '/') : NULL;

		if (!id)
			continue;
		if (b->system ? (slash && !strcmp(slash + 1, b->system)) : n == 1) {
			s->sys_path = id;
			break;
		}
	}
	if (!s->sys_path) {
		if (b->system) {
			err("no system '%s' in %s", b->system, systems);
		} else {
			fprintf(stderr, "aheadctl: %s has %zu systems; choose one with --system ID:", systems, n);
			for (size_t i = 0; i < n; i++) {
				const char *id = odata_id(json_array_get(members, i), NULL);

				fprintf(stderr, " %s", id ? strrchr(id, '/') + 1 : "?");
			}
			fputc('\n', stderr);
		}
		return -1;
	}
	s->sys = rf_get(b, s->sys_path);
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
	s->bios = rf_get(b, s->bios_path);
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

int redfish_show(struct bmc *b)
{
	struct rf_sys s;
	char *sp;
	json_t *set;
	const char *pending = NULL;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (rf_load(b, &s))
		return EXIT_FAILED;
	sp = settings_path(&s);
	if (rf_request(b, "GET", sp, NULL, &set) == 200)
		pending = str_of(json_object_get(set, "Attributes"), s.map->attr);
	if (pending && !strcmp(pending, s.value))
		pending = NULL;
	if (g.json) {
		jopen('{');
		jstr("via", "redfish");
		jstr("system", s.sys_path);
		jstr("manufacturer", s.maker);
		jstr("model", s.model);
		jstr("attribute", s.map->attr);
		jstr("value", s.value);
		jstr("snoop_mode", mode_of(s.map, s.value));
		jstr("pending", pending);
		jclose();
		jend();
	} else {
		const char *m = mode_of(s.map, s.value);

		printf("%s %s (%s): %s = %s (snoop-mode %s)\n", s.maker,
		       s.model ? s.model : "", s.sys_path, s.map->attr, s.value,
		       m ? m : "unknown");
		if (pending)
			printf("pending: %s = %s, applied at the next reboot\n",
			       s.map->attr, pending);
	}
	free(sp);
	return 0;
}

static int rf_reset(const struct bmc *b, json_t *sys, const char *sys_path)
{
	json_t *act = json_object_get(json_object_get(sys, "Actions"),
				      "#ComputerSystem.Reset");
	json_t *allowed = json_object_get(act, "ResetType@Redfish.AllowableValues");
	const char *target = str_of(act, "target"), *type = NULL;
	static const char *const prefer[] = { "ForceRestart", "PowerCycle",
		"GracefulRestart", NULL };
	json_t *body, *resp;
	int st;

	if (!target) {
		err("%s has no ComputerSystem.Reset action: reboot it another way (aheadctl --yes bios power-cycle --via ipmi)",
		    sys_path);
		return EXIT_FAILED;
	}
	for (int i = 0; prefer[i] && !type; i++) {
		if (!json_is_array(allowed)) {
			type = prefer[i];
			break;
		}
		for (size_t k = 0; k < json_array_size(allowed); k++)
			if (!strcmp(json_string_value(json_array_get(allowed, k)) ?: "", prefer[i]))
				type = prefer[i];
	}
	if (!type) {
		err("%s allows no restart reset type", sys_path);
		return EXIT_FAILED;
	}
	if (g.dry_run) {
		info("would POST %s {\"ResetType\": \"%s\"}", target, type);
		return 0;
	}
	body = json_pack("{s:s}", "ResetType", type);
	st = rf_request(b, "POST", target, body, &resp);
	json_decref(body);
	if (st < 0)
		return EXIT_FAILED;
	if (st != 200 && st != 202 && st != 204) {
		const char *m = rf_message(resp);

		err("POST %s: HTTP %d%s%s", target, st, m ? ": " : "", m ? m : "");
		return EXIT_FAILED;
	}
	info("reset requested: %s", type);
	return 0;
}

int redfish_set(struct bmc *b, int mode, bool reboot)
{
	struct rf_sys s;
	const char *want;
	char *sp, *dump;
	json_t *body, *resp;
	int st;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (rf_load(b, &s))
		return EXIT_FAILED;
	want = s.map->val[mode];
	if (!want) {
		err("%s offers no '%s' snoop mode (attribute %s)", s.maker,
		    snoop_modes[mode], s.map->attr);
		return EXIT_FAILED;
	}
	if (!strcmp(s.value, want)) {
		info("%s is already %s (snoop-mode %s): nothing to change", s.map->attr,
		     want, snoop_modes[mode]);
		return 0;
	}
	sp = settings_path(&s);
	body = json_pack("{s:{s:s}, s:{s:s}}", "Attributes", s.map->attr, want,
			 "@Redfish.SettingsApplyTime", "ApplyTime", "OnReset");
	dump = json_dumps(body, JSON_COMPACT | JSON_SORT_KEYS);
	if (g.dry_run) {
		info("would PATCH %s %s", sp, dump);
		if (reboot)
			return rf_reset(b, s.sys, s.sys_path);
		return 0;
	}
	st = rf_request(b, "PATCH", sp, body, &resp);
	if (st < 0)
		return EXIT_FAILED;
	if (st != 200 && st != 202 && st != 204) {
		const char *m = rf_message(resp);

		err("PATCH %s: HTTP %d%s%s", sp, st, m ? ": " : "", m ? m : "");
		return EXIT_FAILED;
	}
	info("%s: %s %s -> %s is pending (applies at the next reset)", s.sys_path,
	     s.map->attr, s.value, want);
	if (reboot)
		return rf_reset(b, s.sys, s.sys_path);
	info("not rebooting: run 'aheadctl --yes bios power-cycle --bmc %s' or add --reboot", b->url);
	return 0;
}

int redfish_reset(struct bmc *b)
{
	json_t *root, *coll, *sys;
	const char *systems, *id;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	root = rf_get(b, "/redfish/v1");
	if (!root)
		return EXIT_FAILED;
	systems = odata_id(root, "Systems");
	coll = systems ? rf_get(b, systems) : NULL;
	if (!coll)
		return EXIT_FAILED;
	if (json_array_size(json_object_get(coll, "Members")) != 1 && !b->system) {
		err("%s has several systems; choose one with --system ID", systems);
		return EXIT_FAILED;
	}
	id = odata_id(json_array_get(json_object_get(coll, "Members"), 0), NULL);
	if (b->system) {
		char *p = xsprintf("%s/%s", systems, b->system);

		id = p;
	}
	sys = rf_get(b, id);
	if (!sys)
		return EXIT_FAILED;
	return rf_reset(b, sys, id);
}
