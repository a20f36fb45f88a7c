#!/usr/bin/env python3
"""A raw client of lcfibd's control socket (lib/ctl.h framing), for tests.

  ctl.py SOCKET get [config|state|all] [XPATH]
  ctl.py SOCKET edit merge|replace|delete DATA
  ctl.py SOCKET rpc JSON
  ctl.py SOCKET raw HEXBYTES        send bytes as they are, print what comes back

Prints each answer as "TYPE PAYLOAD" (reply, error, notify); exits 1 on an
error answer, 3 when the daemon closes the connection without one.
"""
import socket
import struct
import sys

TYPES = {"get": 1, "edit": 2, "rpc": 3, "data": 4, "end": 5}
NAMES = {64: "reply", 65: "error", 66: "notify"}


def frame(ftype, payload=b"", flags=0, ident=1, version=1):
    return struct.pack(">IBBHI", len(payload), version, ftype, flags, ident) + payload


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def answers(s):
    """Yields (type name, payload) until a reply or an error."""
    while True:
        hdr = recv_exact(s, 12)
        if hdr is None:
            return
        length, _ver, ftype, _flags, _ident = struct.unpack(">IBBHI", hdr)
        payload = recv_exact(s, length) if length else b""
        name = NAMES.get(ftype, str(ftype))
        yield name, (payload or b"").decode()
        if name != "notify":
            return


def main():
    sock, cmd = sys.argv[1], sys.argv[2]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock)
    if cmd == "get":
        what = sys.argv[3] if len(sys.argv) > 3 else "all"
        flags = {"config": 1, "state": 2, "all": 3}[what]
        path = sys.argv[4] if len(sys.argv) > 4 else ""
        s.sendall(frame(1, path.encode(), flags))
    elif cmd == "edit":
        mode = {"merge": 0, "replace": 1, "delete": 2}[sys.argv[3]]
        s.sendall(frame(2, sys.argv[4].encode(), mode))
    elif cmd == "rpc":
        s.sendall(frame(3, sys.argv[3].encode()))
    elif cmd == "raw":
        s.sendall(bytes.fromhex(sys.argv[3]))
        s.shutdown(socket.SHUT_WR)
    else:
        sys.exit("unknown command " + cmd)
    status = 3
    for name, payload in answers(s):
        print(name, payload)
        status = 1 if name == "error" else 0 if name == "reply" else status
    sys.exit(status)


if __name__ == "__main__":
    main()
