#!/usr/bin/env python3
"""bmc_stub.py: a BMC that misbehaves, for aheadctl's host tests.

  bmc_stub.py --ready FILE big BYTES   every request is answered with
                                       BYTES of body (HTTP/1.0, no length)

The port it listens on (127.0.0.1) is written to FILE once it listens.
"""
import argparse
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ready", required=True)
    ap.add_argument("mode", choices=["big"])
    ap.add_argument("nbytes", type=int)
    a = ap.parse_args()
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    with open(a.ready + ".tmp", "w") as f:
        f.write(str(s.getsockname()[1]))
    import os
    os.rename(a.ready + ".tmp", a.ready)
    while True:
        conn, _ = s.accept()
        threading.Thread(target=big, args=(conn, a.nbytes), daemon=True).start()


main()
