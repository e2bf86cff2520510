#!/usr/bin/env python3
"""bmc_stub.py: a BMC that misbehaves, for aheadctl's host tests.

  bmc_stub.py --ready FILE big BYTES   every request is answered with
                                       BYTES of body (HTTP/1.0, no length)
  bmc_stub.py --ready FILE deaf 0      a TCP port whose backlog is full:
                                       a connection is never completed
  bmc_stub.py --ready FILE mute 0      a UDP port that reads and never
                                       answers (an IPMI BMC gone silent)

The port it listens on (127.0.0.1) is written to FILE once it listens.
"""
import argparse
import os
import socket
import threading


def big(conn, nbytes):
    try:
        conn.recv(65536)
        conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n")
        chunk = b"[" + b"0," * 32767 + b"0"
        sent = 0
        while sent < nbytes:
            conn.sendall(chunk)
            sent += len(chunk)
    except OSError:
        pass
    finally:
        conn.close()


def ready(path, s):
    with open(path + ".tmp", "w") as f:
        f.write(str(s.getsockname()[1]))
    os.rename(path + ".tmp", path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ready", required=True)
    ap.add_argument("mode", choices=["big", "deaf", "mute"])
    ap.add_argument("nbytes", type=int)
    a = ap.parse_args()
    if a.mode == "mute":
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", 0))
        ready(a.ready, s)
        while True:
            s.recv(65536)
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    if a.mode == "deaf":
        # listen(0) and connections nobody accepts: later SYNs are dropped.
        s.listen(0)
        held = []
        for _ in range(4):
            c = socket.socket()
            c.setblocking(False)
            try:
                c.connect(s.getsockname())
            except BlockingIOError:
                pass
            held.append(c)
        ready(a.ready, s)
        threading.Event().wait()
    s.listen(16)
    ready(a.ready, s)
    while True:
        conn, _ = s.accept()
        threading.Thread(target=big, args=(conn, a.nbytes), daemon=True).start()


main()
