#!/usr/bin/env python3
"""An FPM sender for tests: plays zebra's part of dplane_fpm_nl.

Connects over TCP to lcfibd's FPM feed and sends netlink route and nexthop
messages (built here with struct.pack) in FPM frames: a 4-byte header
(version 1, type 1 netlink, 16-bit big-endian length with the header) and
one or more netlink messages.

  fpm_send.py [OPTIONS] script FILE|-     exact scenarios, one line each
  fpm_send.py [OPTIONS] bulk PREFIXFILE   volume: a route per prefix
  fpm_send.py [OPTIONS] probe             connect; say whether we are refused
  fpm_send.py [OPTIONS] replay FILE       send a stream saved with --save, as fast
                                          as the socket takes it

Options: --host, --port (127.0.0.1:2620); --hold SECS (keep the connection
open after sending: lcfibd sees no disconnect; at the end the sender
half-closes and waits for lcfibd to close, as lcfibd refuses a peer whose
socket is gone before it could check its owner); --expect-close SECS (wait for
lcfibd to close the connection: exit 0 when it does, 3 when it does not);
--save FILE (script, bulk: write the stream to FILE instead of sending it, so
that a benchmark measures lcfibd rather than this script);
--wait-routes SOCKET N (after sending, poll lcfibd's control socket until it
holds N routes, then print the time from the first frame).

replay --then FILE2 --until XPATH VALUE (with --wait-routes): once lcfibd holds
the N routes and its replay has settled (the FPM feed's state says it is not
syncing), send FILE2 on the same connection, poll XPATH until it is VALUE, and
print the time from FILE2's first byte: updates outside a sync, as zebra sends
them after its replay.

Script lines (# comments, blank lines skipped); a line is one frame, and
"  ;  " joins messages into one frame, as zebra does with a route update's
RTM_DELROUTE and RTM_NEWROUTE:

  route add|replace|append|del PREFIX [type unicast|blackhole|unreachable|prohibit]
        [via GW] [dev IFINDEX] [nhid ID] [metric N] [table T] [proto P]
        [nexthop via GW [dev IFINDEX] [weight W]]...
  nexthop add|del id ID [via GW] [dev IFINDEX] [blackhole] [group ID[,W]/ID[,W]...]
  garbage HEX            bytes as they are (a broken frame, say)
  frame VERSION TYPE LEN [HEX]   a frame with the header given
  sleep SECS
  wait FILE              wait until FILE exists (the test has checked a stage)
  close                  end the connection here

bulk: PREFIXFILE holds one prefix a line (CRLF fine; '-': stdin; .gz read
as gzip). --per-frame M messages a frame (default 1, as zebra); --limit N;
--nhg (a nexthop object first, the routes carry RTA_NH_ID); --update (each
route as RTM_DELROUTE + RTM_NEWROUTE in one frame); --via4/--via6 gateways,
--dev ifindex; --proto (default 186, bgp); --skip N (prefixes to leave out:
every Nth, for partial replays); --delete (RTM_DELROUTE for each instead).
Prints "sent N messages in F frames, B bytes, S s".
"""
import argparse
import gzip
import ipaddress
import os
import select
import socket
import struct
import sys
import time

NLM_F_REQUEST = 0x1
NLM_F_REPLACE = 0x100
NLM_F_EXCL = 0x200
NLM_F_CREATE = 0x400
NLM_F_APPEND = 0x800

RTM_NEWROUTE, RTM_DELROUTE = 24, 25
RTM_NEWNEXTHOP, RTM_DELNEXTHOP = 104, 105

RTA_DST, RTA_OIF, RTA_GATEWAY, RTA_PRIORITY = 1, 4, 5, 6
RTA_MULTIPATH, RTA_TABLE, RTA_VIA, RTA_NH_ID = 9, 15, 18, 30
NHA_ID, NHA_GROUP, NHA_BLACKHOLE, NHA_OIF, NHA_GATEWAY = 1, 2, 4, 5, 6

RTN = {"unicast": 1, "blackhole": 6, "unreachable": 7, "prohibit": 8}
RT_SCOPE_UNIVERSE = 0
RT_TABLE_MAIN = 254
RTPROT_BGP = 186

FPM_HDR = struct.Struct(">BBH")
FPM_MAX = 65535


def align4(n):
    return (n + 3) & ~3


def rta(kind, payload):
    """One netlink attribute, padded."""
    n = 4 + len(payload)
    return struct.pack("=HH", n, kind) + payload + b"\0" * (align4(n) - n)


def nlmsg(kind, flags, body, seq=0):
    n = 16 + len(body)
    return struct.pack("=IHHII", n, kind, flags, seq, 0) + body + b"\0" * (align4(n) - n)


def family_of(addr):
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


def packed(addr):
    return socket.inet_pton(family_of(addr), addr)


class Route:
    """What a route message says."""

    def __init__(self, prefix):
        net = ipaddress.ip_network(prefix, strict=True)
        self.family = socket.AF_INET6 if net.version == 6 else socket.AF_INET
        self.dst = net.network_address.packed
        self.plen = net.prefixlen
        self.type = RTN["unicast"]
        self.via = None
        self.dev = 0
        self.nhid = 0
        self.metric = None
        self.table = RT_TABLE_MAIN
        self.proto = RTPROT_BGP
        self.paths = []  # (gw, dev, weight)


def route_msg(kind, flags, r, seq=0):
    body = struct.pack("=BBBBBBBBI", r.family, r.plen, 0, 0,
                       r.table if r.table < 256 else 0, r.proto, RT_SCOPE_UNIVERSE,
                       r.type, 0)
    if r.plen:
        body += rta(RTA_DST, r.dst)
    body += rta(RTA_TABLE, struct.pack("=I", r.table))
    if r.metric is not None:
        body += rta(RTA_PRIORITY, struct.pack("=I", r.metric))
    if r.nhid:
        body += rta(RTA_NH_ID, struct.pack("=I", r.nhid))
    if r.via:
        body += gateway_attr(r.family, r.via)
    if r.dev:
        body += rta(RTA_OIF, struct.pack("=i", r.dev))
    if r.paths:
        mp = b""
        for gw, dev, weight in r.paths:
            attrs = gateway_attr(r.family, gw) if gw else b""
            mp += struct.pack("=HBBi", 8 + len(attrs), 0, weight - 1, dev) + attrs
        body += rta(RTA_MULTIPATH, mp)
    return nlmsg(kind, flags, body, seq)


def gateway_attr(family, gw):
    if family_of(gw) == family:
        return rta(RTA_GATEWAY, packed(gw))
    return rta(RTA_VIA, struct.pack("=H", family_of(gw)) + packed(gw))


def nexthop_msg(kind, flags, nhid, via=None, dev=0, blackhole=False, group=None, seq=0):
    fam = family_of(via) if via else (socket.AF_UNSPEC if group or blackhole
                                      else socket.AF_INET)
    body = struct.pack("=BBBBI", fam, 0, RTPROT_BGP, 0, 0)
    body += rta(NHA_ID, struct.pack("=I", nhid))
    if kind == RTM_NEWNEXTHOP:
        if group:
            body += rta(NHA_GROUP, b"".join(struct.pack("=IBBH", i, w - 1, 0, 0)
                                            for i, w in group))
        elif blackhole:
            body += rta(NHA_BLACKHOLE, b"")
        else:
            if via:
                body += rta(NHA_GATEWAY, packed(via))
            if dev:
                body += rta(NHA_OIF, struct.pack("=I", dev))
    return nlmsg(kind, flags, body, seq)


def fpm_frame(payload):
    if 4 + len(payload) > FPM_MAX:
        raise ValueError("a frame of %d bytes" % (4 + len(payload)))
    return FPM_HDR.pack(1, 1, 4 + len(payload)) + payload


# ----------------------------------------------------------- script lines

ROUTE_FLAGS = {
    "add": NLM_F_REQUEST | NLM_F_CREATE | NLM_F_REPLACE,  # zebra's for IPv4
    "replace": NLM_F_REQUEST | NLM_F_CREATE | NLM_F_REPLACE,
    "append": NLM_F_REQUEST | NLM_F_CREATE | NLM_F_APPEND,
    "prepend": NLM_F_REQUEST | NLM_F_CREATE,
}


def parse_route(words):
    verb, prefix, rest = words[0], words[1], words[2:]
    r = Route(prefix)
    i = 0
    while i < len(rest):
        w = rest[i]
        if w == "nexthop":
            gw, dev, weight = None, 0, 1
            i += 1
            while i < len(rest) and rest[i] in ("via", "dev", "weight"):
                if rest[i] == "via":
                    gw = rest[i + 1]
                elif rest[i] == "dev":
                    dev = int(rest[i + 1])
                else:
                    weight = int(rest[i + 1])
                i += 2
            r.paths.append((gw, dev, weight))
            continue
        v = rest[i + 1]
        if w == "type":
            r.type = RTN[v]
        elif w == "via":
            r.via = v
        elif w == "dev":
            r.dev = int(v)
        elif w == "nhid":
            r.nhid = int(v)
        elif w == "metric":
            r.metric = int(v)
        elif w == "table":
            r.table = int(v)
        elif w == "proto":
            r.proto = int(v)
        else:
            raise ValueError("unknown route word %r" % w)
        i += 2
    if verb == "del":
        return route_msg(RTM_DELROUTE, NLM_F_REQUEST, r)
    return route_msg(RTM_NEWROUTE, ROUTE_FLAGS[verb], r)


def parse_nexthop(words):
    verb, rest = words[0], words[1:]
    nhid, via, dev, blackhole, group = 0, None, 0, False, None
    i = 0
    while i < len(rest):
        w = rest[i]
        if w == "blackhole":
            blackhole = True
            i += 1
            continue
        v = rest[i + 1]
        if w == "id":
            nhid = int(v)
        elif w == "via":
            via = v
        elif w == "dev":
            dev = int(v)
        elif w == "group":
            group = []
            for m in v.split("/"):
                mid, _, weight = m.partition(",")
                group.append((int(mid), int(weight or 1)))
        else:
            raise ValueError("unknown nexthop word %r" % w)
        i += 2
    if verb == "del":
        return nexthop_msg(RTM_DELNEXTHOP, NLM_F_REQUEST, nhid)
    return nexthop_msg(RTM_NEWNEXTHOP, NLM_F_REQUEST | NLM_F_CREATE | NLM_F_REPLACE, nhid,
                       via, dev, blackhole, group)


def message(text):
    words = text.split()
    if words[0] == "route":
        return parse_route(words[1:])
    if words[0] == "nexthop":
        return parse_nexthop(words[1:])
    raise ValueError("unknown message %r" % text)


# ------------------------------------------------------------- sending

class Sender:
    def __init__(self, host, port):
        self.s = socket.create_connection((host, port), timeout=10)
        self.s.settimeout(None)
        self.frames = self.messages = self.bytes = 0
        self.t0 = None
        self.out = bytearray()

    def queue(self, data, messages=0):
        """Buffers a frame (or raw bytes); sent in large writes."""
        if self.t0 is None:
            self.t0 = time.monotonic()
        self.out += data
        self.frames += 1
        self.messages += messages
        if len(self.out) >= 1 << 20:
            self.flush()

    def flush(self):
        if self.out:
            self.s.sendall(self.out)
            self.bytes += len(self.out)
            self.out = bytearray()

    def replay(self, path):
        """Sends a saved stream in large writes."""
        with open(path, "rb") as f:
            data = f.read()
        self.t0 = time.monotonic()
        view = memoryview(data)
        for off in range(0, len(data), 4 << 20):
            self.s.sendall(view[off:off + (4 << 20)])
        self.bytes = len(data)

    def closed_by_peer(self, timeout):
        """Whether lcfibd closes the connection within @timeout seconds."""
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return False
            r, _, _ = select.select([self.s], [], [], left)
            if r:
                try:
                    if not self.s.recv(4096):
                        return True
                except ConnectionResetError:
                    return True

    def close(self):
        """Half-closes, then waits (10 s at most) until lcfibd closes: lcfibd
        checks who owns the socket at the connection's other end, and a
        socket closed at once has no owner left to check (refused)."""
        self.flush()
        if isinstance(self.s, socket.socket):
            try:
                self.s.shutdown(socket.SHUT_WR)
                self.closed_by_peer(10)
            except OSError:
                pass
        self.s.close()


class FileSender(Sender):
    """A Sender that writes the stream to a file (--save)."""

    def __init__(self, path):  # pylint: disable=super-init-not-called
        self.s = open(path, "wb")
        self.frames = self.messages = self.bytes = 0
        self.t0 = None
        self.out = bytearray()

    def flush(self):
        if self.out:
            self.s.write(self.out)
            self.bytes += len(self.out)
            self.out = bytearray()


def run_script(snd, lines):
    for lineno, line in enumerate(lines, 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        words = line.split()
        try:
            if words[0] == "sleep":
                snd.flush()
                time.sleep(float(words[1]))
            elif words[0] == "wait":
                snd.flush()
                end = time.monotonic() + 120
                while not os.path.exists(words[1]):
                    if time.monotonic() > end:
                        sys.exit("script line %d: %s never appeared" % (lineno, words[1]))
                    time.sleep(0.01)
            elif words[0] == "close":
                snd.close()
                return False
            elif words[0] == "garbage":
                snd.queue(bytes.fromhex("".join(words[1:])))
            elif words[0] == "frame":
                body = bytes.fromhex("".join(words[4:]))
                snd.queue(struct.pack(">BBH", int(words[1]), int(words[2]), int(words[3]))
                          + body)
            else:
                msgs = [message(m) for m in line.split(" ; ")]
                snd.queue(fpm_frame(b"".join(msgs)), len(msgs))
        except (ValueError, IndexError, KeyError) as e:
            sys.exit("script line %d: %s: %s" % (lineno, line, e))
    snd.flush()
    return True


def read_prefixes(path, limit, skip):
    if path == "-":
        f = sys.stdin
    elif path.endswith(".gz"):
        f = gzip.open(path, "rt")
    else:
        f = open(path)
    n = 0
    for i, line in enumerate(f):
        p = line.strip()
        if not p or p.startswith("#"):
            continue
        if skip and i % skip == 0:
            continue
        yield p
        n += 1
        if limit and n >= limit:
            break


def run_bulk(snd, a):
    r4 = Route("0.0.0.0/0")
    r4.via, r4.dev = a.via4, a.dev
    r6 = Route("::/0")
    r6.via, r6.dev = a.via6, a.dev
    if a.nhg:
        # One object per family, as zebra makes one per distinct nexthop set.
        snd.queue(fpm_frame(nexthop_msg(RTM_NEWNEXTHOP, NLM_F_REQUEST | NLM_F_CREATE, a.nhg,
                                        a.via4, a.dev)), 1)
        snd.queue(fpm_frame(nexthop_msg(RTM_NEWNEXTHOP, NLM_F_REQUEST | NLM_F_CREATE,
                                        a.nhg + 1, a.via6, a.dev)), 1)
        for r, nhid in ((r4, a.nhg), (r6, a.nhg + 1)):
            r.via, r.dev, r.nhid = None, 0, nhid
    for r in (r4, r6):
        r.proto = a.proto
    new_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_REPLACE
    batch, nb = [], 0
    for p in read_prefixes(a.file, a.limit, a.skip):
        six = ":" in p
        addr, _, plen = p.partition("/")
        r = r6 if six else r4
        r.dst = socket.inet_pton(socket.AF_INET6 if six else socket.AF_INET, addr)
        r.plen = int(plen)
        if a.delete:
            msg = route_msg(RTM_DELROUTE, NLM_F_REQUEST, r)
            n = 1
        elif a.update:
            msg = route_msg(RTM_DELROUTE, NLM_F_REQUEST, r) + route_msg(RTM_NEWROUTE, new_flags, r)
            n = 2
        else:
            msg = route_msg(RTM_NEWROUTE, new_flags, r)
            n = 1
        if nb + len(msg) + 4 > FPM_MAX:
            snd.queue(fpm_frame(b"".join(batch)), len(batch))
            batch, nb = [], 0
        batch.append(msg)
        nb += len(msg)
        if len(batch) * n >= a.per_frame:
            snd.queue(fpm_frame(b"".join(batch)), len(batch) * n)
            batch, nb = [], 0
    if batch:
        snd.queue(fpm_frame(b"".join(batch)), len(batch) * (2 if a.update else 1))
    snd.flush()


def routes_held(conn):
    st = conn.state("/lcfib:lcfib/state/routes")
    r = st.get("routes", {})
    return int(r.get("ipv4", 0)) + int(r.get("ipv6", 0))


def wait_routes(snd, sock, want, timeout=600):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import ctl  # pylint: disable=import-outside-toplevel

    c = ctl.Conn(sock)
    end = time.monotonic() + timeout
    while True:
        n = routes_held(c)
        if n == want:
            break
        if time.monotonic() > end:
            sys.exit("lcfibd holds %d routes after %d s, not %d" % (n, timeout, want))
        time.sleep(0.02)
    t = time.monotonic() - snd.t0
    print("lcfibd holds %d routes %.3f s after the first frame: %.0f routes/s"
          % (want, t, want / t))


def then_replay(snd, a):
    """replay --then: FILE2 after the replay settled, timed until XPATH is VALUE."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import ctl  # pylint: disable=import-outside-toplevel

    c = ctl.Conn(a.wait_routes[0])
    syncing = "/lcfib:lcfib/state/feeds/feed[name='fpm']/syncing"
    end = time.monotonic() + 600
    while ctl.leaf(c.get(syncing), syncing) is not False:
        if time.monotonic() > end:
            sys.exit("lcfibd's FPM replay did not settle in 600 s")
        time.sleep(0.02)
    snd.replay(a.then)
    while str(ctl.leaf(c.get(a.until[0]), a.until[0])).lower() != a.until[1]:
        if time.monotonic() > end:
            sys.exit("%s is not %s after 600 s" % (a.until[0], a.until[1]))
        time.sleep(0.02)
    t = time.monotonic() - snd.t0
    print("then: %s is %s %.3f s after its first byte" % (a.until[0], a.until[1], t))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=2620)
    ap.add_argument("--hold", type=float, default=0)
    ap.add_argument("--expect-close", type=float, default=0)
    ap.add_argument("--wait-routes", nargs=2, metavar=("SOCKET", "N"))
    ap.add_argument("--save", metavar="FILE")
    ap.add_argument("--connect-timeout", type=float, default=10,
                    help="retry connecting this long (lcfibd may just be starting)")
    sub = ap.add_subparsers(dest="mode", required=True)
    sp = sub.add_parser("script")
    sp.add_argument("file")
    bp = sub.add_parser("bulk")
    bp.add_argument("file")
    bp.add_argument("--per-frame", type=int, default=1)
    bp.add_argument("--limit", type=int, default=0)
    bp.add_argument("--skip", type=int, default=0)
    bp.add_argument("--nhg", type=int, default=0, metavar="ID")
    bp.add_argument("--update", action="store_true")
    bp.add_argument("--delete", action="store_true")
    bp.add_argument("--via4", default="192.0.2.1")
    bp.add_argument("--via6", default="2001:db8::1")
    bp.add_argument("--dev", type=int, default=2)
    bp.add_argument("--proto", type=int, default=RTPROT_BGP)
    sub.add_parser("probe")
    rp = sub.add_parser("replay")
    rp.add_argument("file")
    rp.add_argument("--then", metavar="FILE2")
    rp.add_argument("--until", nargs=2, metavar=("XPATH", "VALUE"))
    a = ap.parse_args()
    if a.mode == "replay" and a.then and not (a.until and a.wait_routes):
        ap.error("replay --then needs --until and --wait-routes")

    if a.save:
        snd = FileSender(a.save)
        if a.mode == "script":
            with (sys.stdin if a.file == "-" else open(a.file)) as f:
                run_script(snd, f.readlines())
        elif a.mode == "bulk":
            run_bulk(snd, a)
        snd.s.close()
        print("saved %d messages in %d frames, %d bytes" % (snd.messages, snd.frames, snd.bytes))
        return
    end = time.monotonic() + a.connect_timeout
    while True:
        try:
            snd = Sender(a.host, a.port)
            break
        except ConnectionRefusedError:
            if time.monotonic() > end:
                raise
            time.sleep(0.05)
    open_after = True
    if a.mode == "script":
        with (sys.stdin if a.file == "-" else open(a.file)) as f:
            open_after = run_script(snd, f.readlines())
    elif a.mode == "bulk":
        run_bulk(snd, a)
    elif a.mode == "replay":
        snd.replay(a.file)
    if a.mode not in ("probe", "replay"):
        t = time.monotonic() - snd.t0 if snd.t0 else 0
        print("sent %d messages in %d frames, %d bytes, %.3f s"
              % (snd.messages, snd.frames, snd.bytes, t))
    sys.stdout.flush()
    if a.wait_routes:
        wait_routes(snd, a.wait_routes[0], int(a.wait_routes[1]))
        if a.mode == "replay" and a.then:
            then_replay(snd, a)
        sys.stdout.flush()
    if a.expect_close or a.mode == "probe":
        closed = open_after and snd.closed_by_peer(a.expect_close or 2)
        print("closed by lcfibd" if closed else "still open")
        sys.stdout.flush()
        if not closed:
            sys.exit(3)
    if a.hold and open_after:
        time.sleep(a.hold)
    if open_after:
        snd.close()


if __name__ == "__main__":
    main()
