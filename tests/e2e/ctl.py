#!/usr/bin/env python3
"""A raw client of lcfibd's control socket (lib/ctl.h framing), for tests.

  ctl.py SOCKET get [config|state|all] [XPATH]
  ctl.py SOCKET edit merge|replace|delete DATA
  ctl.py SOCKET rpc JSON
  ctl.py SOCKET raw HEXBYTES        send bytes as they are, print what comes back
  ctl.py SOCKET value XPATH         print the value of the leaf at XPATH
  ctl.py SOCKET load-stream FILE [JSON]
                                    load FILE streamed over the socket (path
                                    "-"); JSON adds input leaves to the load

Prints each answer as "TYPE PAYLOAD" (reply, error, notify; the pieces of
a long reply are joined into it: lib/ctl.h's "part"); exits 1 on an
error answer, 3 when the daemon closes the connection without one. `value`
prints nothing and exits 4 when the leaf is absent.

Imported by the other helpers for Conn, frame() and leaf().
"""
import json
import re
import socket
import struct
import sys

TYPES = {"get": 1, "edit": 2, "rpc": 3, "data": 4, "end": 5}
NAMES = {64: "reply", 65: "error", 66: "notify", 67: "part", 68: "lines"}
HDR = struct.Struct(">IBBHI")
GET_CONFIG, GET_STATE = 1, 2


def frame(ftype, payload=b"", flags=0, ident=1, version=1, length=None):
    """One frame; @length overrides the header's payload length."""
    if isinstance(payload, str):
        payload = payload.encode()
    n = len(payload) if length is None else length
    return HDR.pack(n, version, ftype, flags, ident) + payload


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def answers(s):
    """Yields (type name, payload) until a reply or an error; parts join the reply
    (a listing's JSON), lines come one frame at a time (a streamed answer)."""
    parts = b""
    while True:
        hdr = recv_exact(s, 12)
        if hdr is None:
            return
        length, _ver, ftype, _flags, _ident = HDR.unpack(hdr)
        payload = recv_exact(s, length) if length else b""
        name = NAMES.get(ftype, str(ftype))
        if name == "part":
            parts += payload or b""
            continue
        if name == "reply":
            payload = parts + (payload or b"")
        yield name, (payload or b"").decode()
        if name not in ("notify", "lines"):
            return


class Closed(Exception):
    """The daemon closed the connection."""


class Conn:
    """One connection; requests answered in order, notifications collected."""

    def __init__(self, path, timeout=None):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(timeout)
        self.s.connect(path)
        self.next_id = 1
        self.buf = b""

    def close(self):
        self.s.close()

    def send(self, ftype, payload=b"", flags=0):
        ident = self.next_id
        self.next_id += 1
        self.s.sendall(frame(ftype, payload, flags, ident))
        return ident

    def _fill(self, n):
        while len(self.buf) < n:
            chunk = self.s.recv(max(65536, n - len(self.buf)))
            if not chunk:
                raise Closed()
            self.buf += chunk

    def pending(self):
        """Whether a whole frame can be read without waiting."""
        self.s.setblocking(False)
        try:
            while True:
                chunk = self.s.recv(65536)
                if not chunk:
                    break
                self.buf += chunk
        except BlockingIOError:
            pass
        finally:
            self.s.setblocking(True)
        if len(self.buf) < 12:
            return False
        return len(self.buf) >= 12 + HDR.unpack(self.buf[:12])[0]

    def recv(self):
        """The next frame: (type name, id, payload str)."""
        self._fill(12)
        length, _ver, ftype, _flags, ident = HDR.unpack(self.buf[:12])
        self._fill(12 + length)
        payload = self.buf[12:12 + length].decode()
        self.buf = self.buf[12 + length:]
        return NAMES.get(ftype, str(ftype)), ident, payload

    def wait(self, ident, notify=None):
        """The answer to request @ident: (ok, payload); notifications go to @notify."""
        parts = ""
        while True:
            name, rid, payload = self.recv()
            if rid != ident:
                raise AssertionError("answer to request %d while waiting for %d: %s %s"
                                     % (rid, ident, name, payload))
            if name == "notify":
                if notify:
                    notify(payload)
                continue
            if name == "part":
                parts += payload
                continue
            if name not in ("reply", "error"):
                raise AssertionError("unexpected frame type %s" % name)
            return name == "reply", (parts + payload if name == "reply" else payload)

    def request(self, ftype, payload=b"", flags=0, notify=None):
        return self.wait(self.send(ftype, payload, flags), notify)

    def get(self, xpath="", what=GET_CONFIG | GET_STATE):
        ok, payload = self.request(1, xpath, what)
        if not ok:
            raise AssertionError("get %s: %s" % (xpath, payload))
        return json.loads(payload) if payload else {}

    def state(self, xpath="/lcfib:lcfib/state"):
        """The state under @xpath, as a dict (the 'state' container's content)."""
        return self.get(xpath, GET_STATE).get("lcfib:lcfib", {}).get("state", {})

    def edit(self, data, mode=0):
        if not isinstance(data, str):
            data = json.dumps(data)
        return self.request(2, data, mode)

    def rpc(self, data, notify=None):
        """(ok, parsed reply or error payload)."""
        if not isinstance(data, str):
            data = json.dumps(data)
        ok, payload = self.request(3, data, 0, notify)
        return ok, (json.loads(payload) if payload else {})


def leaf(tree, xpath):
    """
    The value at @xpath in RFC 7951 JSON, or None. Steps are node names
    (module prefix optional), list steps have key predicates:
    /lcfib:lcfib/state/table[id='100'][family='ipv4']/routes.
    """
    node = tree
    for step in re.findall(r"(?:[^/\[]|\[[^\]]*\])+", xpath):
        name = step.split("[", 1)[0]
        keys = re.findall(r"\[([^=\]]+)=['\"]([^'\"]*)['\"]\]", step)
        if not isinstance(node, dict):
            return None
        bare = re.sub(r"^[^:]*:", "", name)
        qualified = [k for k in node if re.sub(r"^[^:]*:", "", k) == bare]
        if not qualified:
            return None
        node = node[qualified[0]]
        if keys:
            if not isinstance(node, list):
                return None
            match = [e for e in node if all(str(e.get(k)) == v for k, v in keys)]
            if not match:
                return None
            node = match[0]
    return node


def main():
    sock, cmd = sys.argv[1], sys.argv[2]
    if cmd == "value":
        c = Conn(sock)
        v = leaf(c.get(sys.argv[3]), sys.argv[3])
        if v is None or isinstance(v, (dict, list)):
            sys.exit(4)
        print(str(v).lower() if isinstance(v, bool) else v)
        return
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
    elif cmd == "load-stream":
        rpc = {"path": "-"}
        rpc.update(json.loads(sys.argv[4]) if len(sys.argv) > 4 else {})
        s.sendall(frame(3, json.dumps({"lcfib:load": rpc}).encode()))
        with open(sys.argv[3], "rb") as f:
            for chunk in iter(lambda: f.read(1 << 16), b""):
                s.sendall(frame(4, chunk))
        s.sendall(frame(5))
    else:
        sys.exit("unknown command " + cmd)
    status = 3
    for name, payload in answers(s):
        print(name, payload)
        status = 1 if name == "error" else 0 if name == "reply" else status
    sys.exit(status)


if __name__ == "__main__":
    main()
