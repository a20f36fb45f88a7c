#!/usr/bin/env python3
"""The kernel as the oracle of lcfibd's kernel feed (tests/e2e/test_kernel.sh).

  kernel_oracle.py batch FULLVIEW_GZ N4 N6 SEED [STRIDE]
      prints an `ip -batch` file: N4 IPv4 and N6 IPv6 prefixes of the full
      view ("all": all of them; every STRIDE-th one), via 198.18.0.2..9 and
      2001:db8:ff::2..9 on v0.
  kernel_oracle.py converge SOCK NETNS TIMEOUT [TABLE,...] [--sample=N,SEED]
                   [--ordered] [--within=PREFIX,...]
      polls until lcfibd's routes (every table, both families) are the
      kernel's (`ip -N -j route show table all`; only those of the tables
      given, when given), as multisets of (family, table, prefix, type,
      protocol, scope, metric, nexthop id, paths); exits 1 with the
      differences when TIMEOUT seconds pass first. With --sample, tables
      of more than 100k routes are compared by their counts and by all
      their routes within the /12s (IPv4) or /20s (IPv6) of N routes
      picked at random (seed SEED). With --ordered, the routes of each
      prefix are compared as lists in the order listed, their paths too
      (the order of an IPv6 multipath route's siblings); with --within,
      only the routes within those prefixes.
  kernel_oracle.py fibmatch SOCK ADDR...
      run inside the namespace: `ip route get fibmatch ADDR` and lcfibd's
      lookup (tables local, main, default) must give the same route:
      prefix, type, metric and paths in order; exits 1 when one does not.
  kernel_oracle.py count SOCK NETNS TIMEOUT
      the same for the numbers of routes only (cheap: for a full table).
  kernel_oracle.py lookups SOCK N SEED
      run inside the namespace: N addresses (within the kernel's prefixes
      and anywhere) looked up in the kernel (RTM_GETROUTE with
      RTM_F_FIB_MATCH, as `ip route get fibmatch`) and in lcfibd (tables
      local, main, default: the kernel's default rules); their prefixes and
      types must agree; exits 1 when one does not.

Decision: the feed mirrors every table when none is configured, the local
table's local and broadcast routes and IPv6's multicast routes too, so all
of them are compared.
"""
import errno
import gzip
import ipaddress
import json
import os
import random
import socket
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ctl  # noqa: E402

TYPES = {1: "unicast", 2: "local", 3: "broadcast", 4: "anycast", 5: "multicast",
         6: "blackhole", 7: "unreachable", 8: "prohibit", 9: "throw"}
# Types whose device the kernel reports but that forward nowhere.
NO_PATHS = {"blackhole", "unreachable", "prohibit", "throw"}
TABLE_NAMES = {"main": 254, "local": 255, "default": 253}


def fullview(path):
    v4, v6 = [], []
    with gzip.open(path, "rt") as f:
        for line in f:
            p = line.strip()
            if p:
                (v6 if ":" in p else v4).append(p)
    return v4, v6


def pick(lst, n, stride):
    lst = lst[::stride]
    return lst if n == "all" else lst[:int(n)]


def cmd_batch(args):
    gz, n4, n6, seed = args[0], args[1], args[2], int(args[3])
    stride = int(args[4]) if len(args) > 4 else 1
    rnd = random.Random(seed)
    v4, v6 = fullview(gz)
    out = sys.stdout
    for p in pick(v4, n4, stride):
        out.write("route add %s via 198.18.0.%d\n" % (p, rnd.randint(2, 9)))
    for p in pick(v6, n6, stride):
        out.write("route add %s via 2001:db8:ff::%d\n" % (p, rnd.randint(2, 9)))


# ------------------------------------------------------------- the kernel

def ip_json(netns, family):
    cmd = ["ip"] + (["-n", netns] if netns else []) + \
        ["-N", "-j", "-%d" % family, "route", "show", "table", "all"]
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE).stdout
    return json.loads(out or b"[]")


def canon_prefix(dst, family):
    """ip prints prefixes as inet_ntop does, as lcfibd does; a host route without its length."""
    if dst == "default":
        return "0.0.0.0/0" if family == 4 else "::/0"
    if "/" not in dst:
        return dst + ("/32" if family == 4 else "/128")
    return dst


def num(v, default):
    if v is None:
        return default
    return int(v) if str(v).isdigit() else v


# --ordered: a multipath route's paths keep their order (IPv6 siblings).
ORDERED = False


def path_tuple(hops):
    return tuple(hops) if ORDERED else tuple(sorted(hops))


def kernel_gateway(h):
    """A path's gateway in `ip -j`: "gateway", or RTA_VIA's {"family","host"} (via inet6)."""
    via = h.get("via")
    return h.get("gateway") or (via.get("host") if isinstance(via, dict) else None)


def kernel_key(r, family):
    rtype = r.get("type", "unicast")
    rtype = TYPES.get(int(rtype), rtype) if str(rtype).isdigit() else rtype
    table = r.get("table", "254")
    table = TABLE_NAMES.get(table, table)
    paths = ()
    if rtype == "blackhole" and r.get("nhid"):
        # A route through a blackhole nexthop object: the kernel (in its
        # nexthop_compat_mode) reports it as of type blackhole, while what
        # was added, and what lcfibd holds, is the unicast route "nhid N"
        # (lib/rtnl.h). Lookups hitting it drop in both (cmd_lookups).
        rtype = "unicast"
    elif rtype not in NO_PATHS:
        hops = r.get("nexthops") or [r]
        paths = path_tuple([(kernel_gateway(h), h.get("dev"), int(h.get("weight", 1)))
                            for h in hops if kernel_gateway(h) or h.get("dev")])
    return ("ipv%d" % family, int(table), canon_prefix(r["dst"], family), rtype,
            num(r.get("protocol"), 3), num(r.get("scope"), 0), int(r.get("metric", 0)),
            int(r.get("nhid", 0)), paths)


# What `ip -o` prints after a route's prefix, as the words of `ip -j`.
TEXT_ARGS = {"via": "gateway", "dev": "dev", "proto": "protocol", "scope": "scope",
             "metric": "metric", "nhid": "nhid", "table": "table", "src": "prefsrc",
             "weight": "weight", "pref": "pref", "expires": "expires", "mtu": "mtu",
             "hoplimit": "hoplimit", "realms": "realms", "tos": "tos", "dsfield": "tos"}


def text_route(words):
    """A route of `ip -N -o route show` as `ip -N -j` shows it (the fields
    kernel_key looks at): a full table's JSON takes ip and python ~15 s."""
    i, r = 0, {}
    if words[0].isdigit():
        r["type"], i = words[0], 1
    r["dst"] = words[i]
    cur = r
    i += 1
    while i < len(words):
        w = words[i]
        if w == "nexthop":
            cur = {}
            r.setdefault("nexthops", []).append(cur)
        elif w in TEXT_ARGS and i + 1 < len(words):
            i += 1
            if w == "via" and words[i] in ("inet", "inet6"):
                i += 1
            (r if w in ("table", "proto", "scope", "metric", "nhid") else cur)[TEXT_ARGS[w]] = \
                words[i]
        i += 1
    return r


def text_dst(line):
    """The prefix of a line of `ip -N -o route show` (after its type, if any)."""
    dst = line[:line.find(" ")]
    return line.split(None, 2)[1] if dst.isdigit() else dst


def kernel_routes_sampled(netns, sample):
    """kernel_routes() for a full table: the tables of more than BIG routes
    are read from `ip -o` (`ip -j` of a full table takes ip and python ~15
    s) and only their routes within @sample[0] blocks parsed, blocks of
    routes picked at random (seed @sample[1]); the other tables from `ip
    -j`. Returns the routes, the number of routes of every table, and the
    blocks {(table, family): [prefixes]}."""
    routes, n, cut = [], {}, {}
    rnd = random.Random(sample[1])
    for family in (4, 6):
        fam = "ipv%d" % family
        cmd = ["ip", "-n", netns, "-N", "-o", "-%d" % family, "route", "show", "table", "all"]
        out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE).stdout.decode()
        lines = {}
        for line in out.splitlines():
            if " table " in line:
                words = line.split()
                t = words[words.index("table") + 1]
                table = int(TABLE_NAMES.get(t, t))
            else:
                table = 254  # ip omits main's name: the full table's lines, looked at little
            lines.setdefault(table, []).append(line)
        for table, ls in lines.items():
            n[(table, fam)] = len(ls)
            if len(ls) <= BIG:
                continue
            blocks = {block_of(canon_prefix(text_dst(rnd.choice(ls)), family))
                      for _ in range(sample[0])} - {None}
            cut[(table, fam)] = [block_name(family, b) for b in sorted(blocks)]
            for line in ls:
                if block_of(canon_prefix(text_dst(line), family)) in blocks:
                    r = text_route(line.replace("\\", " ").split())
                    r["table"] = str(table)
                    routes.append(kernel_key(r, family))
    for (table, fam) in n:
        if (table, fam) in cut:
            continue
        family = int(fam[3])
        cmd = ["ip", "-n", netns, "-N", "-j", "-%d" % family, "route", "show", "table",
               str(table)]
        for r in json.loads(subprocess.run(cmd, check=True, stdout=subprocess.PIPE).stdout
                            or b"[]"):
            if "dst" in r:
                r.setdefault("table", str(table))
                routes.append(kernel_key(r, family))
    return routes, n, cut


def kernel_routes(netns):
    """The kernel's routes, and the number of routes of every table."""
    routes, n = [], {}
    for family in (4, 6):
        fam = "ipv%d" % family
        for r in ip_json(netns, family):
            if "dst" not in r:
                continue
            table = int(TABLE_NAMES.get(r.get("table", "254"), r.get("table", "254")))
            n[(table, fam)] = n.get((table, fam), 0) + 1
            routes.append(kernel_key(r, family))
    return routes, n


def kernel_count(netns):
    n = 0
    for family in (4, 6):
        cmd = ["ip", "-n", netns, "-o", "-%d" % family, "route", "show", "table", "all"]
        out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE).stdout
        n += out.count(b"\n")
    return n


# ---------------------------------------------------------------- lcfibd

def lcfib_tables(c):
    st = c.state("/lcfib:lcfib/state/table")
    return [(int(t["id"]), t["family"], int(t.get("routes", 0))) for t in st.get("table", [])]


def lcfib_key(r, family):
    rtype = r.get("type", "unicast")
    paths = ()
    if rtype not in NO_PATHS:
        paths = path_tuple([(h.get("gateway"), h.get("interface"), int(h.get("weight", 1)))
                            for h in r.get("nexthop", [])])
    return (family, int(r["table"]), r["prefix"], rtype,
            int(r.get("protocol", 0)), int(r.get("scope", 0)), int(r.get("metric", 0)),
            int(r.get("nexthop-id", 0)), paths)


# The routes RPC builds its whole reply as one libyang tree, at a cost
# that grows faster than its length: 1000 routes take ~0.1 s, 4000 ~0.5
# s, 8000 ~1.3 s, 25000 (in blocks of up to 4000) ~7 s. A table of up to
# WHOLE routes is asked for at once (a cut reply is wasted: its halves are
# asked for again); bigger ones, and sample blocks, in chunks of CHUNK.
CHUNK = 2000
WHOLE = 20000
# Tables with more routes are compared in samples, when asked (a full table
# takes minutes to list): their counts, and all routes within random blocks.
BIG = 100000


def lcfib_within(c, table, prefix, limit=CHUNK):
    """lcfibd's routes of @table within @prefix, fetched in chunks: a reply
    cut at @limit routes is split into the prefix's two halves. The routes
    of exactly @prefix come first in a cut reply: the walk goes in key order
    and @prefix's key is the lowest within it."""
    ok, reply = c.rpc({"lcfib:routes": {"table": table, "prefix": prefix, "limit": limit}})
    if not ok:
        raise AssertionError("routes of table %d within %s: %s" % (table, prefix, reply))
    out = reply.get("lcfib:routes", {})
    routes = out.get("route", [])
    if not out.get("truncated"):
        return routes
    net = ipaddress.ip_network(prefix)
    exact = [r for r in routes if ipaddress.ip_network(r["prefix"]) == net]
    for half in net.subnets(1):
        exact += lcfib_within(c, table, str(half), limit)
    return exact


class Moving(Exception):
    """lcfibd's tables changed while they were read."""


# Samples are blocks of this length: a few hundred routes each in a full
# view, up to ~3000 (random routes fall in dense blocks more often).
BLOCK = {"ipv4": 12, "ipv6": 20}


def block_name(version, n):
    bits = 32 if version == 4 else 128
    blen = BLOCK["ipv%d" % version]
    return str(ipaddress.ip_network((n << (bits - blen), blen)))


def block_of(prefix):
    """The number of @prefix's block (as block_name() takes it); None when
    the prefix is shorter than a block."""
    addr, plen = prefix.split("/")
    v6 = ":" in addr
    if not v6:
        # A full table's worth of these: the short way (blocks of /16 or less).
        a, b, _ = addr.split(".", 2)
        blen = BLOCK["ipv4"]
        return (int(a) << 8 | int(b)) >> (16 - blen) if int(plen) >= blen else None
    blen = BLOCK["ipv6" if v6 else "ipv4"]
    if int(plen) < blen:
        return None
    raw = socket.inet_pton(socket.AF_INET6 if v6 else socket.AF_INET, addr)
    return int.from_bytes(raw, "big") >> (len(raw) * 8 - blen)


def lcfib_routes(c, tables, cut):
    """lcfibd's routes: of the tables in @cut, those within their blocks."""
    routes = []
    for table, family, n in tables:
        if not n:
            continue
        if (table, family) in cut:
            got = []
            for b in cut[(table, family)]:
                got += lcfib_within(c, table, b)
        else:
            got = lcfib_within(c, table, "0.0.0.0/0" if family == "ipv4" else "::/0",
                               n + 1 if n <= WHOLE else CHUNK)
            if len(got) != n:
                raise Moving("table %d %s: %d routes listed, %d counted" % (table, family,
                                                                         len(got), n))
        routes += [lcfib_key(r, family) for r in got]
    return routes


def lcfib_count(c):
    r = c.state("/lcfib:lcfib/state/routes").get("routes", {})
    return int(r.get("ipv4", 0)) + int(r.get("ipv6", 0))


# ------------------------------------------------------------- comparing

def multiset_diff(a, b):
    ca, cb = {}, {}
    for k in a:
        ca[k] = ca.get(k, 0) + 1
    for k in b:
        cb[k] = cb.get(k, 0) + 1
    only_a = [k for k in ca for _ in range(ca[k] - cb.get(k, 0))]
    only_b = [k for k in cb for _ in range(cb[k] - ca.get(k, 0))]
    return only_a, only_b


def show(routes, limit=15):
    for r in sorted(routes, key=str)[:limit]:
        print("    ", r)
    if len(routes) > limit:
        print("     ... and %d more" % (len(routes) - limit))


def counts_differ(kern_n, lcfib_n, tables):
    """Whether the tables (all, or those in @tables) hold different numbers of routes."""
    keys = {k for k in list(kern_n) + list(lcfib_n) if tables is None or k[0] in tables}
    return any(kern_n.get(k, 0) != lcfib_n.get(k, 0) for k in keys)


def by_prefix(keys):
    """Routes grouped by (family, table, prefix), each group in the order listed."""
    out = {}
    for k in keys:
        out.setdefault(k[:3], []).append(k)
    return out


def ordered_diff(a, b):
    """The routes of the prefixes whose lists differ, as multiset_diff gives them."""
    ga, gb = by_prefix(a), by_prefix(b)
    bad = [p for p in set(ga) | set(gb) if ga.get(p) != gb.get(p)]
    return ([("#%d" % i,) + k for p in bad for i, k in enumerate(ga.get(p, []))],
            [("#%d" % i,) + k for p in bad for i, k in enumerate(gb.get(p, []))])


def within(key, nets):
    net = ipaddress.ip_network(key[2])
    return any(net.version == n.version and net.subnet_of(n) for n in nets)


def cmd_converge(args):
    global ORDERED
    sample, nets = None, None
    while args and args[-1].startswith("--"):
        opt = args.pop()
        if opt.startswith("--sample="):
            sample = (int(opt.split("=")[1].split(",")[0]),
                      int(opt.split(",")[1]) if "," in opt else 1)
        elif opt == "--ordered":
            ORDERED = True
        elif opt.startswith("--within="):
            nets = [ipaddress.ip_network(p) for p in opt.split("=")[1].split(",")]
        else:
            sys.exit("converge: unknown option %s" % opt)
    sock, netns, timeout = args[0], args[1], float(args[2])
    tables = {int(t) for t in args[3].split(",")} if len(args) > 3 else None
    deadline = time.monotonic() + timeout
    t0 = time.monotonic()
    polls = 0
    while True:
        c = ctl.Conn(sock)
        polls += 1
        t_kern = t_mine = 0.0
        try:
            t = time.monotonic()
            lt = lcfib_tables(c)
            if sample:
                kern, kern_n, cut = kernel_routes_sampled(netns, sample)
            else:
                cut = {}
                kern, kern_n = kernel_routes(netns)
            t_kern = time.monotonic() - t
            kern = [r for r in kern if tables is None or r[1] in tables]
            lcfib_n = {(t, f): n for t, f, n in lt if n}
            if nets:
                kern = [r for r in kern if within(r, nets)]
            elif counts_differ(kern_n, lcfib_n, tables) and time.monotonic() < deadline:
                # Listing lcfibd's routes costs more than the kernel's: not
                # before the numbers of routes agree.
                time.sleep(0.05)
                continue
            t = time.monotonic()
            mine = lcfib_routes(c, lt, cut)
            if nets:
                mine = [r for r in mine if within(r, nets)]
            t_mine = time.monotonic() - t
        except Moving as e:
            kern, mine, cut, kern_n, lcfib_n = [], [e], {}, {}, {}
        finally:
            c.close()
        if ORDERED and not any(isinstance(r, Moving) for r in mine):
            only_k, only_l = ordered_diff(kern, mine)
        else:
            only_k, only_l = multiset_diff(kern, mine)
        same_n = all(kern_n.get(k) == lcfib_n.get(k) for k in cut)
        if not only_k and not only_l and same_n:
            print("# converged: %d routes%s, %.2f s (%d polls; the last read the kernel in "
                  "%.2f s, lcfibd in %.2f s)" % (
                      len(kern), " (in samples of %d tables)" % len(cut) if cut else "",
                      time.monotonic() - t0, polls, t_kern, t_mine))
            return 0
        if time.monotonic() > deadline:
            print("lcfibd did not converge to the kernel's %d routes in %.0f s "
                  "(it holds %d):" % (len(kern), timeout, len(mine)))
            for k in cut:
                print("  table %d %s: the kernel %s routes, lcfibd %s; compared within %s" % (
                    k[0], k[1], kern_n.get(k), lcfib_n.get(k), " ".join(cut[k])))
            print("  only in the kernel (%d):" % len(only_k))
            show(only_k)
            print("  only in lcfibd (%d):" % len(only_l))
            show(only_l)
            return 1
        time.sleep(0.2)


def cmd_count(args):
    sock, netns, timeout = args[0], args[1], float(args[2])
    deadline = time.monotonic() + timeout
    t0 = time.monotonic()
    want = kernel_count(netns)
    c = ctl.Conn(sock)
    while True:
        got = lcfib_count(c)
        if got == want:
            print("# %d routes, %.2f s" % (got, time.monotonic() - t0))
            return 0
        if time.monotonic() > deadline:
            print("lcfibd holds %d routes after %.0f s, the kernel %d" % (got, timeout, want))
            return 1
        time.sleep(0.05)


# --------------------------------------------------------------- lookups

RTM_GETROUTE, RTM_NEWROUTE, NLMSG_ERROR = 26, 24, 2
RTA_DST = 1
RTM_F_FIB_MATCH = 0x2000


class Rtnl:
    """A NETLINK_ROUTE socket for `ip route get fibmatch`."""

    def __init__(self):
        self.s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
        self.s.bind((0, 0))
        self.seq = 0

    def fibmatch(self, addr):
        """(prefix, type) of the route the kernel picks for @addr, or None. Not
        its table: IPv4's local and main tables share one trie until a rule
        is added, and the reply then says main for the local table's routes."""
        a = ipaddress.ip_address(addr)
        fam = socket.AF_INET if a.version == 4 else socket.AF_INET6
        self.seq += 1
        raw = a.packed
        rtm = struct.pack("=BBBBBBBBI", fam, len(raw) * 8, 0, 0, 0, 0, 0, 0, RTM_F_FIB_MATCH)
        attr = struct.pack("=HH", 4 + len(raw), RTA_DST) + raw
        body = rtm + attr
        self.s.send(struct.pack("=IHHII", 16 + len(body), RTM_GETROUTE, 1, self.seq, 0) + body)
        data = self.s.recv(65536)
        length, mtype, _flags, _seq, _pid = struct.unpack_from("=IHHII", data)
        self.error = 0
        if mtype == NLMSG_ERROR:
            self.error = -struct.unpack_from("=i", data, 16)[0]
            return None
        assert mtype == RTM_NEWROUTE, mtype
        fam, dst_len, _s, _t, _table, _proto, _scope, rtype = struct.unpack_from("=BBBBBBBB",
                                                                               data, 16)
        off, dst = 16 + 12, None
        while off + 4 <= length:
            alen, atype = struct.unpack_from("=HH", data, off)
            val = data[off + 4:off + alen]
            if atype == RTA_DST:
                dst = val
            off += (alen + 3) & ~3
        if dst is None:
            dst = bytes(len(raw))
        net = ipaddress.ip_network((ipaddress.ip_address(dst), dst_len))
        return str(net), TYPES.get(rtype, rtype)


def lcfib_fibmatch(c, addr):
    for table in (255, 254, 253):
        ok, reply = c.rpc({"lcfib:lookup": {"address": addr, "table": table}})
        if not ok:
            raise AssertionError("lookup %s: %s" % (addr, reply))
        out = reply.get("lcfib:lookup", {})
        if out.get("found") and out.get("prefix"):
            rtype = out.get("type", "unicast")
            if rtype == "unicast" and out.get("nexthop-id") and not out.get("nexthop"):
                # Through a nexthop object without paths: a blackhole object,
                # which the kernel reports as a blackhole route (kernel_key).
                rtype = "blackhole"
            return str(ipaddress.ip_network(out["prefix"])), rtype
    return None


def addresses(n, seed, netns_routes):
    """Half within the kernel's prefixes (their host bits random), half anywhere."""
    rnd = random.Random(seed)
    dsts = [r["dst"] for r in netns_routes if r.get("dst", "default") != "default"]
    out = []
    for i in range(n):
        if dsts and i % 2 == 0:
            net = ipaddress.ip_network(rnd.choice(dsts), strict=False)
            host = rnd.getrandbits(net.max_prefixlen - net.prefixlen) if net.prefixlen < \
                net.max_prefixlen else 0
            out.append(str(net.network_address + host))
        elif i % 4 == 1:
            out.append(str(ipaddress.IPv4Address(rnd.getrandbits(32))))
        else:
            out.append(str(ipaddress.IPv6Address((0x2000 << 112) | rnd.getrandbits(125))))
    return out


def cmd_lookups(args):
    sock, n, seed = args[0], int(args[1]), int(args[2])
    routes = ip_json(None, 4) + ip_json(None, 6)
    nl, c = Rtnl(), ctl.Conn(sock)
    bad = []
    found = 0
    for a in addresses(n, seed, routes):
        k, m = nl.fibmatch(a), lcfib_fibmatch(c, a)
        found += k is not None
        if k != m:
            bad.append((a, k, m))
    print("# %d lookups (seed %d), %d matched a route, %d disagree" % (n, seed, found, len(bad)))
    for a, k, m in bad[:20]:
        print("  %s: kernel %s, lcfibd %s" % (a, k, m))
    return 1 if bad else 0


def lcfib_route_of(c, addr):
    """The route lcfibd's lookup picks for @addr (tables local, main, default), as lcfib_key."""
    family = "ipv%d" % ipaddress.ip_address(addr).version
    for table in (255, 254, 253):
        ok, reply = c.rpc({"lcfib:lookup": {"address": addr, "table": table}})
        if not ok:
            raise AssertionError("lookup %s: %s" % (addr, reply))
        out = reply.get("lcfib:lookup", {})
        if out.get("found") and out.get("prefix"):
            return lcfib_key(dict(out, table=table), family)[2:]
    return None


# What the kernel answers `ip route get fibmatch` with for a route that drops.
DROP_ERRORS = {errno.EINVAL: "blackhole", errno.EHOSTUNREACH: "unreachable",
               errno.EACCES: "prohibit"}


def kernel_route_of(nl, addr):
    """`ip route get fibmatch @addr` as kernel_key, or None. ip refuses routes of
    the types that drop (their error is the answer): their prefix and type then."""
    family = ipaddress.ip_address(addr).version
    p = subprocess.run(["ip", "-N", "-j", "-%d" % family, "route", "get", "fibmatch", addr],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    routes = json.loads(p.stdout or b"[]") if p.returncode == 0 else []
    if routes:
        return kernel_key(routes[0], family)[2:]
    k = nl.fibmatch(addr)
    if k is None and nl.error in DROP_ERRORS:
        # The kernel answers a route that drops with its error, not the route.
        return (None, DROP_ERRORS[nl.error])
    return k


def cmd_fibmatch(args):
    """Paths compared as sets: fibmatch lists the sibling the multipath hash
    picked first (`converge --ordered` compares their order)."""
    sock, addrs = args[0], args[1:]
    nl, c = Rtnl(), ctl.Conn(sock)
    bad = []
    for a in addrs:
        k, m = kernel_route_of(nl, a), lcfib_route_of(c, a)
        if k is not None and len(k) == 2 and m is not None:
            # Only the prefix and type are known of a route that drops, or its type.
            m = (m[0] if k[0] else None, m[1])
        if k != m:
            bad.append((a, k, m))
    c.close()
    print("# %d addresses looked up: %d disagree with ip route get fibmatch" % (len(addrs),
                                                                               len(bad)))
    for a, k, m in bad:
        print("  %s:\n    kernel %s\n    lcfibd %s" % (a, k, m))
    return 1 if bad else 0


def main():
    cmds = {"batch": cmd_batch, "converge": cmd_converge, "count": cmd_count,
            "lookups": cmd_lookups, "fibmatch": cmd_fibmatch}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        sys.exit(__doc__)
    sys.exit(cmds[sys.argv[1]](sys.argv[2:]) or 0)


if __name__ == "__main__":
    main()
