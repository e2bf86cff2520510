#!/usr/bin/env python3
"""redfish_emu.py: the smallest Redfish service aheadctl's tests need.

Written for these tests from the DMTF schemas (ServiceRoot, ComputerSystem,
Bios v1.1 with @Redfish.Settings, Settings v1.3 SettingsApplyTime,
SessionService/Session), because sushy-tools' emulator cannot play a Dell
or HPE BIOS: its systems report no vendor Manufacturer and its BIOS
attributes are a fixed set without a snoop setting (the tests run the calls
it can play against it too, 55-bios-sushy.sh).

Sessions as a BMC does them: POST /redfish/v1/SessionService/Sessions with
UserName/Password answers 201 with X-Auth-Token and Location; every other
request but GET /redfish/v1 needs a live token (Basic only with --basic);
DELETE of the session's URI logs out.  Every request is logged (JSON lines:
method, path, body with any Password masked, auth used, sessions still open)
for the tests to assert on.

  redfish_emu.py --vendor dell|hpe|acme|dell-nosnoop --ready FILE --log FILE
                 [--user U --password P] [--tls CERT KEY] [--systems N]
                 [--basic] [--bare-ids] [--reset-types A,B,...]
                 [--hang METHOD:PATH] [--sessions-link LINK]

--bare-ids: Systems members' @odata.id is the bare id ("1"), no path.
--hang: a request with that method and path is read and never answered.
--sessions-link: the service root's Links.Sessions is LINK (a hostile BMC's
  "@other.host/..." that is no path).
"""
import argparse
import base64
import json
import os
import secrets
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

VENDORS = {
    "dell": ("Dell Inc.", "PowerEdge R730", {
        "SnoopMode": ("EarlySnoop", ["HomeSnoop", "EarlySnoop", "ClusterOnDie",
                                     "OpportunisticSnoopBroadcast"]),
        "LogicalProc": ("Enabled", ["Enabled", "Disabled"])}),
    "dell-nosnoop": ("Dell Inc.", "PowerEdge R740", {
        "SubNumaCluster": ("Disabled", ["Enabled", "Disabled"])}),
    "hpe": ("HPE", "ProLiant DL380 Gen9", {
        "QpiSnoopConfig": ("Standard", ["Standard", "HomeSnoop", "ClusterOnDie"]),
        "ProcHyperthreading": ("Enabled", ["Enabled", "Disabled"])}),
    "acme": ("Acme Servers", "X1", {
        "SnoopMode": ("EarlySnoop", ["HomeSnoop", "EarlySnoop"])}),
}
RESET_TYPES = ["On", "ForceOff", "GracefulShutdown", "GracefulRestart", "ForceRestart",
               "PowerCycle"]
SESSIONS = "/redfish/v1/SessionService/Sessions"


def error(code, msgid, message):
    return code, {"error": {"code": "Base.1.8.GeneralError", "message": message,
                            "@Message.ExtendedInfo": [{"MessageId": "Base.1.8." + msgid,
                                                       "Message": message}]}}


class State:
    def __init__(self, vendor, systems, reset_types):
        self.lock = threading.Lock()
        self.sessions = {}      # token -> session id
        self.next_session = 1
        self.reset_types = reset_types
        self.maker, self.model, attrs = VENDORS[vendor]
        self.allowed = {k: v[1] for k, v in attrs.items()}
        self.systems = {str(i + 1): {"attrs": {k: v[0] for k, v in attrs.items()},
                                     "pending": {}, "power": "On", "resets": 0}
                        for i in range(systems)}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, code, body=None, headers=()):
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("OData-Version", "4.0")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def auth_kind(self):
        """token, basic, none, or bad (credentials that do not match)."""
        st = self.server.state
        tok = self.headers.get("X-Auth-Token")
        if tok is not None:
            with st.lock:
                return "token" if tok in st.sessions else "bad"
        h = self.headers.get("Authorization")
        if h is None:
            return "none"
        want = "Basic " + base64.b64encode(
            ("%s:%s" % (self.server.user, self.server.password)).encode()).decode()
        return "basic" if h == want else "bad"

    def log(self, method, body, auth):
        if isinstance(body, dict) and "Password" in body:
            body = dict(body, Password="***")
        st = self.server.state
        with st.lock, open(self.server.log, "a") as f:
            f.write(json.dumps({"method": method, "path": self.path, "body": body,
                                "auth": auth, "open": len(st.sessions)}) + "\n")

    def handle_any(self, method):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = "<invalid json>"
        path = self.path.rstrip("/")
        auth = self.auth_kind()
        if "%s:%s" % (method, path) in self.server.hang:
            self.log(method, body, auth)
            time.sleep(3600)    # never answers; the server is killed first
            return
        if body == "<invalid json>":
            self.log(method, body, auth)
            return self.reply(*error(400, "MalformedJSON", "The request body is not JSON"))
        if path == SESSIONS and method == "POST":
            return self.login(body, auth)
        ok = auth == "token" or (auth == "basic" and self.server.basic)
        if path != "/redfish/v1" and not ok:
            self.log(method, body, auth)
            return self.reply(*error(401, "InsufficientPrivilege", "Authentication failed"))
        if path.startswith(SESSIONS + "/") and method == "DELETE":
            return self.logout(path, body, auth)
        code, out = self.route(method, path, body)
        self.log(method, body, auth)
        self.reply(code, out)

    def login(self, body, auth):
        st = self.server.state
        if not isinstance(body, dict) or body.get("UserName") != self.server.user or \
                body.get("Password") != self.server.password:
            self.log("POST", body, auth)
            return self.reply(*error(401, "InsufficientPrivilege", "Authentication failed"))
        tok = secrets.token_hex(16)
        with st.lock:
            sid = str(st.next_session)
            st.next_session += 1
            st.sessions[tok] = sid
        self.log("POST", body, auth)
        uri = SESSIONS + "/" + sid
        self.reply(201, {"@odata.id": uri, "@odata.type": "#Session.v1_0_0.Session",
                         "Id": sid, "Name": "User Session", "UserName": body["UserName"]},
                   [("X-Auth-Token", tok), ("Location", uri)])

    def logout(self, path, body, auth):
        st = self.server.state
        sid = path.rsplit("/", 1)[1]
        with st.lock:
            tok = [t for t, s in st.sessions.items() if s == sid]
            for t in tok:
                del st.sessions[t]
        self.log("DELETE", body, auth)
        if not tok:
            return self.reply(*error(404, "ResourceMissingAtURI", "No session " + sid))
        self.reply(204)

    def route(self, method, path, body):
        st = self.server.state
        if path == "/redfish/v1" and method == "GET":
            return 200, {"@odata.id": "/redfish/v1", "@odata.type": "#ServiceRoot.v1_5_0.ServiceRoot",
                         "Id": "RootService", "Name": "Root Service", "RedfishVersion": "1.6.0",
                         "Systems": {"@odata.id": "/redfish/v1/Systems"},
                         "SessionService": {"@odata.id": "/redfish/v1/SessionService"},
                         "Links": {"Sessions": {"@odata.id": self.server.sessions_link or SESSIONS}}}
        if path == "/redfish/v1/Systems" and method == "GET":
            return 200, {"@odata.id": path, "@odata.type": "#ComputerSystemCollection.ComputerSystemCollection",
                         "Name": "Computer System Collection",
                         "Members@odata.count": len(st.systems),
                         "Members": [{"@odata.id": i if self.server.bare_ids else "/redfish/v1/Systems/" + i}
                                     for i in st.systems]}
        parts = path.split("/")
        if len(parts) < 5 or parts[:4] != ["", "redfish", "v1", "Systems"] or parts[4] not in st.systems:
            return error(404, "ResourceMissingAtURI", "No resource at " + path)
        sid, sys_ = parts[4], st.systems[parts[4]]
        base = "/redfish/v1/Systems/" + sid
        rest = "/".join(parts[5:])
        if rest == "" and method == "GET":
            return 200, {"@odata.id": base, "@odata.type": "#ComputerSystem.v1_10_0.ComputerSystem",
                         "Id": sid, "Name": "System", "Manufacturer": st.maker, "Model": st.model,
                         "PowerState": sys_["power"], "Bios": {"@odata.id": base + "/Bios"},
                         "Actions": {"#ComputerSystem.Reset": {
                             "target": base + "/Actions/ComputerSystem.Reset",
                             "ResetType@Redfish.AllowableValues": st.reset_types}}}
        if rest == "Bios" and method == "GET":
            return 200, {"@odata.id": base + "/Bios", "@odata.type": "#Bios.v1_1_0.Bios", "Id": "BIOS",
                         "Name": "BIOS Configuration Current Settings",
                         "AttributeRegistry": "BiosAttributeRegistry.v1_0_0",
                         "Attributes": dict(sys_["attrs"]),
                         "@Redfish.Settings": {"@odata.type": "#Settings.v1_3_0.Settings",
                                               "SettingsObject": {"@odata.id": base + "/Bios/Settings"},
                                               "SupportedApplyTimes": ["OnReset"]}}
        if rest == "Bios/Settings" and method == "GET":
            return 200, {"@odata.id": base + "/Bios/Settings", "@odata.type": "#Bios.v1_1_0.Bios",
                         "Id": "Settings", "Name": "BIOS Configuration Pending Settings",
                         "Attributes": dict(sys_["pending"])}
        if rest == "Bios/Settings" and method == "PATCH":
            if not isinstance(body, dict) or not isinstance(body.get("Attributes"), dict):
                return error(400, "PropertyMissing", "The property Attributes is required")
            at = body.get("@Redfish.SettingsApplyTime", {}).get("ApplyTime")
            if at not in ("OnReset", None):
                return error(400, "PropertyValueNotInList",
                             "The value %s for ApplyTime is not supported" % at)
            for k, v in body["Attributes"].items():
                if k not in st.allowed:
                    return error(400, "PropertyUnknown", "The property %s is not in the list of valid properties" % k)
                if v not in st.allowed[k]:
                    return error(400, "PropertyValueNotInList",
                                 "The value %s for the property %s is not in the list of acceptable values" % (v, k))
            sys_["pending"].update(body["Attributes"])
            return 202, {"@odata.id": base + "/Bios/Settings", "Attributes": dict(sys_["pending"])}
        if rest == "Actions/ComputerSystem.Reset" and method == "POST":
            rt = (body or {}).get("ResetType") if isinstance(body, dict) else None
            if rt not in st.reset_types:
                return error(400, "ActionParameterNotSupported", "ResetType %s is not supported" % rt)
            if rt in ("GracefulRestart", "ForceRestart", "PowerCycle", "On"):
                sys_["attrs"].update(sys_["pending"])
                sys_["pending"] = {}
            sys_["power"] = "Off" if rt in ("ForceOff", "GracefulShutdown") else "On"
            sys_["resets"] += 1
            return 204, None
        return error(405 if rest in ("", "Bios", "Bios/Settings") else 404,
                     "ActionNotSupported", "%s not supported on %s" % (method, path))

    def do_GET(self):
        self.handle_any("GET")

    def do_PATCH(self):
        self.handle_any("PATCH")

    def do_POST(self):
        self.handle_any("POST")

    def do_DELETE(self):
        self.handle_any("DELETE")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vendor", default="dell", choices=sorted(VENDORS))
    ap.add_argument("--ready", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--user", default="root")
    ap.add_argument("--password", default="calvin")
    ap.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
    ap.add_argument("--systems", type=int, default=1)
    ap.add_argument("--basic", action="store_true", help="accept Basic auth too")
    ap.add_argument("--bare-ids", action="store_true")
    ap.add_argument("--reset-types", default=",".join(RESET_TYPES))
    ap.add_argument("--hang", action="append", default=[], metavar="METHOD:PATH")
    ap.add_argument("--sessions-link")
    a = ap.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    srv.state = State(a.vendor, a.systems, a.reset_types.split(","))
    srv.log, srv.user, srv.password = a.log, a.user, a.password
    srv.basic, srv.bare_ids, srv.hang = a.basic, a.bare_ids, set(a.hang)
    srv.sessions_link = a.sessions_link
    if a.tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(a.tls[0], a.tls[1])
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    with open(a.ready + ".tmp", "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.rename(a.ready + ".tmp", a.ready)
    sys.stdout.flush()
    srv.serve_forever()


if __name__ == "__main__":
    main()
