#!/usr/bin/env python3
"""Checks lcfibd's lookups against a brute-force longest-prefix match.

  lpm_check.py SOCKET PREFIX-FILE [--count N] [--seed S] [--table T]
               [--cli LCFIBCTL --cli-count M [--cli-arg ARG]...]

PREFIX-FILE is a plain route file (one IPv4 or IPv6 prefix per line,
optionally gzipped) as loaded into table T: every prefix a blackhole route.
The reference keeps a set of networks per (family, prefix length) and tries
the lengths from the longest down. N addresses are drawn with seed S, three
in four IPv4: a third of them at random (mostly misses), the rest the first,
last or a random address inside a prefix of the file, so that long and
short matches both come up. Every address is looked up through the socket;
M of them (spread over the list) also with
`LCFIBCTL [ARG...] --json lookup ADDR [table T]`. Exits 1 at the first
disagreement, printing it.
"""
import argparse
import gzip
import json
import random
import socket
import subprocess
import sys

import ctl

FAMILIES = {4: (socket.AF_INET, 32), 6: (socket.AF_INET6, 128)}


def parse_prefix(text):
    addr, plen = text.split("/")
    fam = 6 if ":" in addr else 4
    af, bits = FAMILIES[fam]
    net, plen = int.from_bytes(socket.inet_pton(af, addr), "big"), int(plen)
    if not 0 <= plen <= bits or net & ((1 << (bits - plen)) - 1):
        raise ValueError("%s is not a prefix" % text)
    return fam, net, plen


def fmt(fam, a):
    af, bits = FAMILIES[fam]
    return socket.inet_ntop(af, a.to_bytes(bits // 8, "big"))


def read_prefixes(path):
    opener = gzip.open if path.endswith(".gz") else open
    nets = {4: [set() for _ in range(33)], 6: [set() for _ in range(129)]}
    listed = {4: [], 6: []}
    with opener(path, "rt") as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            try:
                fam, net, plen = parse_prefix(line.split()[0])
            except (ValueError, OSError) as e:
                sys.exit("%s:%d: %s" % (path, n, e))
            nets[fam][plen].add(net)
            listed[fam].append((net, plen))
    return nets, listed


def lpm(nets, fam, a):
    """The longest prefix of @nets holding @a, as text, or None."""
    bits = FAMILIES[fam][1]
    for plen in range(bits, -1, -1):
        net = a & ~((1 << (bits - plen)) - 1)
        if net in nets[fam][plen]:
            return "%s/%d" % (fmt(fam, net), plen)
    return None


def addresses(listed, count, rng):
    out = []
    for i in range(count):
        fam = 6 if i % 4 == 3 and listed[6] else 4
        bits = FAMILIES[fam][1]
        if not listed[fam] or rng.randrange(3) == 0:
            # At random; for IPv6 within 2000::/3, where the routes are.
            a = rng.getrandbits(bits) if fam == 4 else (1 << 125) | rng.getrandbits(125)
            out.append((fam, a))
            continue
        net, plen = rng.choice(listed[fam])
        size = 1 << (bits - plen)
        out.append((fam, net + (0, size - 1, rng.randrange(size))[rng.randrange(3)]))
    return out


def check(what, text, want, r):
    found, prefix, rtype = r.get("found"), r.get("prefix"), r.get("type")
    if want is None and found is False:
        return
    if want is not None and found is True and prefix == want and rtype == "blackhole":
        return
    sys.exit("%s lookup of %s: the daemon says found=%s prefix=%s type=%s; brute force says %s"
             % (what, text, found, prefix, rtype, want or "no route"))


def cli_lookup(args, addr):
    cmd = [args.cli] + args.cli_arg + ["--json", "lookup", addr]
    if args.table != "main":
        cmd += ["table", args.table]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    # 0 with a route, 5 (lcfibctl(8): not found) without one; anything else is an error
    if p.returncode not in (0, 5):
        sys.exit("%s: exit status %d: %s%s" % (" ".join(cmd), p.returncode, p.stdout, p.stderr))
    try:
        out = json.loads(p.stdout)
    except ValueError:
        sys.exit("%s: not JSON: %s" % (" ".join(cmd), p.stdout))
    out = out.get("lcfib:lookup", out)
    if (p.returncode == 5) != (not out.get("found")):
        sys.exit("%s: exit status %d with found=%s" % (" ".join(cmd), p.returncode,
                                                        out.get("found")))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("socket")
    ap.add_argument("prefixes")
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--table", default="main")
    ap.add_argument("--cli")
    ap.add_argument("--cli-count", type=int, default=0)
    ap.add_argument("--cli-arg", action="append", default=[])
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().getrandbits(32)
    print("lpm_check: seed %d (rerun with E2E_SEED=%d)" % (seed, seed), flush=True)
    rng = random.Random(seed)
    nets, listed = read_prefixes(args.prefixes)
    addrs = addresses(listed, args.count, rng)
    c = ctl.Conn(args.socket)
    hits = {4: 0, 6: 0}
    # RFC 7951: a table number is a JSON number, a name a string.
    table = int(args.table) if args.table.isdigit() else args.table
    for fam, a in addrs:
        text = fmt(fam, a)
        want = lpm(nets, fam, a)
        ok, r = c.rpc({"lcfib:lookup": {"address": text, "table": table}})
        if not ok:
            sys.exit("lookup of %s answered with an error: %s" % (text, r))
        check("socket", text, want, r.get("lcfib:lookup", {}))
        hits[fam] += want is not None
    n_cli = 0
    if args.cli and args.cli_count:
        for fam, a in addrs[::max(1, len(addrs) // args.cli_count)][:args.cli_count]:
            text = fmt(fam, a)
            check("lcfibctl", text, lpm(nets, fam, a), cli_lookup(args, text))
            n_cli += 1
    n4 = sum(1 for fam, _ in addrs if fam == 4)
    n6 = len(addrs) - n4
    print("lpm_check: %d lookups through the socket (IPv4 %d hits of %d, IPv6 %d hits of %d), "
          "%d through lcfibctl: all agree" % (len(addrs), hits[4], n4, hits[6], n6, n_cli))
    for fam, n in ((4, n4), (6, n6)):
        if n and hits[fam] in (0, n):
            sys.exit("lpm_check: IPv%d: hits and misses should both come up" % fam)
    if args.cli_count and n_cli < args.cli_count:
        sys.exit("lpm_check: only %d lookups through lcfibctl" % n_cli)


if __name__ == "__main__":
    main()
