#!/usr/bin/env python3
"""Changes sync-mem while lcfibd loads a route file, and watches the counters.

  sync_mem_during_load.py SOCKET FILE --from A --to B -- COMMAND...

sync-mem must be A to begin with. A transient load of FILE starts on one
connection; another polls state until the load is applying and has forced
the writer to wait for a grace period at least once, runs COMMAND
(which should set sync-mem to B: lcfibctl or ctl.py), then polls until the
load's reply. Checks: while the load ran, state showed sync-mem A before the
command and B after it (with ingest/load present both times); after the
load, B. Exits 2, inconclusive, when the
load ended before the command could run inside it (the caller may retry).
"""
import argparse
import json
import subprocess
import sys

import ctl

INCONCLUSIVE = 2


def sample(c):
    st = c.state()
    rec, load = st.get("reclamation", {}), st.get("ingest", {}).get("load")
    return int(rec["sync-mem"]), int(rec["forced-waits"]), load


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("socket")
    ap.add_argument("file")
    ap.add_argument("--from", dest="old", type=int, required=True)
    ap.add_argument("--to", dest="new", type=int, required=True)
    ap.add_argument("command", nargs="+")
    args = ap.parse_args()

    c = ctl.Conn(args.socket)
    sync_mem, waits0, load = sample(c)
    if sync_mem != args.old or load:
        sys.exit("before the load: sync-mem %d (expected %d), load %s" % (sync_mem, args.old, load))
    loader = ctl.Conn(args.socket)
    load_id = loader.send(3, json.dumps({"lcfib:load": {"path": args.file, "transient": True}}))
    reply = []

    def load_ended():
        """Whether the load's answer came (notifications are read and dropped)."""
        while not reply and loader.pending():
            name, rid, payload = loader.recv()
            if rid != load_id:
                sys.exit("an answer to request %d on the loading connection" % rid)
            if name != "notify":
                reply.append((name, payload))
        return bool(reply)

    polls = 0
    while True:
        sync_mem, waits1, load = sample(c)
        polls += 1
        # Applying, and sync-mem A has already made the writer wait.
        if load and load.get("phase") in ("applying", "rebalancing") and waits1 > waits0:
            break
        if load_ended():
            print("sync_mem_during_load: the load ended before it was seen applying with "
                  "forced waits (%d polls)" % polls)
            sys.exit(INCONCLUSIVE)
    print("during the load, before the change: sync-mem %d, forced-waits %d, load %s"
          % (sync_mem, waits1, load))
    if sync_mem != args.old:
        sys.exit("during the load, before the change: sync-mem %d, expected %d"
                 % (sync_mem, args.old))
    p = subprocess.run(args.command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True)
    if p.returncode != 0:
        sys.exit("%s: exit status %d: %s" % (" ".join(args.command), p.returncode, p.stdout))
    sync_mem, waits2, load = sample(c)
    print("during the load, after the change: sync-mem %d, forced-waits %d, load %s"
          % (sync_mem, waits2, load))
    if not load:
        print("sync_mem_during_load: the load ended before the change was seen inside it")
        sys.exit(INCONCLUSIVE)
    if sync_mem != args.new:
        sys.exit("during the load, after the change: sync-mem %d, expected %d"
                 % (sync_mem, args.new))
    if not load_ended():
        ok, payload = loader.wait(load_id)
        reply.append(("reply" if ok else "error", payload))
    if reply[0][0] != "reply":
        sys.exit("the load failed: %s" % reply[0][1])
    sync_mem, waits3, load = sample(c)
    print("after the load: sync-mem %d, forced-waits %d (%d before it)"
          % (sync_mem, waits3, waits0))
    if load or sync_mem != args.new:
        sys.exit("after the load: sync-mem %d (expected %d), load %s" % (sync_mem, args.new, load))


if __name__ == "__main__":
    main()
