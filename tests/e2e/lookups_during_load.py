#!/usr/bin/env python3
"""Looks sentinel routes up, over and over, while lcfibd loads a route file.

  lookups_during_load.py SOCKET FILE [--routes N] [--min M]
                         TABLE,ADDRESS,PREFIX[,GATEWAY]...

One connection asks for a transient load of FILE; a second one looks up each
sentinel ADDRESS in TABLE in turn until the load's reply arrives. Each
answer must be PREFIX (and GATEWAY when given), or no route when PREFIX is
'-'. Lookups answered between the load's first 'applying' notification and
its reply are counted: there must be at least M of them. With --routes, the
load must have applied N routes. Exits 1 on any wrong answer.
"""
import argparse
import json
import sys

import ctl


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("socket")
    ap.add_argument("file")
    ap.add_argument("--routes", type=int)
    ap.add_argument("--min", type=int, default=50)
    ap.add_argument("sentinel", nargs="+")
    args = ap.parse_args()
    sentinels = []
    for s in args.sentinel:
        f = s.split(",")
        table = int(f[0]) if f[0].isdigit() else f[0]
        sentinels.append((table, f[1], None if f[2] == "-" else f[2], f[3] if len(f) > 3 else None))

    loader = ctl.Conn(args.socket)
    looker = ctl.Conn(args.socket)
    load_id = loader.send(3, json.dumps({"lcfib:load": {"path": args.file, "transient": True}}))
    phases = []
    total = during_apply = 0
    reply = None
    while reply is None:
        table, addr, prefix, gw = sentinels[total % len(sentinels)]
        ok, r = looker.rpc({"lcfib:lookup": {"address": addr, "table": table}})
        total += 1
        r = r.get("lcfib:lookup", r)
        got_gw = [n.get("gateway") for n in r.get("nexthop", [])]
        right = ok and (r.get("found") is False if prefix is None else
                        r.get("found") is True and r.get("prefix") == prefix and
                        (gw is None or got_gw == [gw]))
        if not right:
            sys.exit("lookup %d of %s in table %s during the load (phases so far %s): got %s; "
                     "expected %s" % (total, addr, table, phases, r,
                                      prefix and "%s via %s" % (prefix, gw) or "no route"))
        if phases and phases[-1] == "applying":
            during_apply += 1
        while loader.pending():
            name, rid, payload = loader.recv()
            if rid != load_id:
                sys.exit("an answer to request %d on the loading connection" % rid)
            if name == "notify":
                p = json.loads(payload).get("lcfib:load-progress", {}).get("phase")
                if not phases or phases[-1] != p:
                    phases.append(p)
            else:
                reply = (name, payload)
                break
    print("lookups_during_load: %d lookups answered right during the load, %d of them while "
          "it was applying; phases %s" % (total, during_apply, " ".join(map(str, phases))))
    if reply[0] != "reply":
        sys.exit("the load failed: %s" % reply[1])
    applied = int(json.loads(reply[1])["lcfib:load"]["applied"])
    if args.routes is not None and applied != args.routes:
        sys.exit("the load applied %d routes, expected %d" % (applied, args.routes))
    if "applying" not in phases:
        sys.exit("no 'applying' progress came from the load")
    if during_apply < args.min:
        sys.exit("only %d lookups while the load was applying, expected at least %d"
                 % (during_apply, args.min))


if __name__ == "__main__":
    main()
