#!/usr/bin/env python3
"""Routes in lcfibd over time, while a command feeds it: the benchmark
behind the timeline plots of docs/BENCHMARKS.md.

  timeline.py SOCKET WANT [--every S] [--timeout S] [--at ROUTES CMD]
              [--batch FILE] [--zebra VTYDIR] [--no-wait] [-- CMD ARG...]

Starts CMD (if given) and polls lcfibd's state every S seconds (default
0.01) until it holds WANT routes (IPv4 + IPv6) and CMD has ended (with
--no-wait, CMD is a daemon: not waited for, left running). Prints,
with t in seconds from the start:

  sample T ROUTES FORCED-WAITS WAIT-MS SENT ZEBRA
  event T NAME              (cmd-start, cmd-end, at-start, at-end, want)
  # summary lines

SENT is how many lines of FILE (--batch) the command had read, from its
file offset in /proc/PID/fdinfo: for `ip -batch`, which waits for the
kernel's answer to each line, the routes the kernel holds, within one
stdio buffer. ZEBRA is the routes in zebra's RIB (`show ip[v6] route
summary` through vtysh --vty_socket VTYDIR), asked once a second from a
thread, or '-'. --at runs CMD (split on spaces) once, when lcfibd holds
ROUTES routes (the sync-mem change during a load). A missing figure is '-'.
"""
import argparse
import bisect
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import ctl  # noqa: E402


def held(c):
    """Routes lcfibd holds, and its forced grace-period waits and their time (ms)."""
    st = c.state("/lcfib:lcfib/state/routes")
    r = st.get("routes", {})
    rc = c.state("/lcfib:lcfib/state/reclamation").get("reclamation", {})
    return (int(r.get("ipv4", 0)) + int(r.get("ipv6", 0)), int(rc.get("forced-waits", 0)),
            int(rc.get("wait-time", 0)) / 1000.0)


def line_ends(path):
    """Byte offsets just past each line of @path, for offset -> lines read."""
    ends, pos = [], 0
    with open(path, "rb") as f:
        for line in f:
            pos += len(line)
            ends.append(pos)
    return ends


def file_offset(pid, path):
    """The offset of @pid's descriptor open on @path, or None."""
    real = os.path.realpath(path)
    try:
        for fd in os.listdir("/proc/%d/fd" % pid):
            if os.readlink("/proc/%d/fd/%s" % (pid, fd)) == real:
                with open("/proc/%d/fdinfo/%s" % (pid, fd)) as f:
                    return int(f.readline().split()[1])
    except OSError:
        pass
    return None


class Zebra(threading.Thread):
    """Asks zebra for its RIB's route count once a second; .count is the last answer."""

    def __init__(self, vtydir):
        super().__init__(daemon=True)
        self.vtydir, self.count, self.stop = vtydir, None, False

    def rib(self, fam):
        out = subprocess.run(["vtysh", "--vty_socket", self.vtydir, "-c",
                              "show %s route summary" % fam], capture_output=True, text=True)
        for line in out.stdout.splitlines():
            if line.startswith("Totals"):
                return int(line.split()[1])
        return None

    def run(self):
        while not self.stop:
            v4, v6 = self.rib("ip"), self.rib("ipv6")
            if v4 is not None and v6 is not None:
                self.count = v4 + v6
            time.sleep(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("socket")
    ap.add_argument("want", type=int)
    ap.add_argument("--every", type=float, default=0.01)
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--at", nargs=2, metavar=("ROUTES", "CMD"))
    ap.add_argument("--batch")
    ap.add_argument("--zebra")
    ap.add_argument("--no-wait", action="store_true")
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    args = ap.parse_args(argv[:cut])
    args.cmd = argv[cut + 1:]
    ends = line_ends(args.batch) if args.batch else None
    c = ctl.Conn(args.socket)
    zebra = None
    if args.zebra:
        zebra = Zebra(args.zebra)
        zebra.start()
    t0 = time.monotonic()

    def event(name):
        print("event %.4f %s" % (time.monotonic() - t0, name), flush=True)

    proc = at_proc = None
    if args.cmd:
        event("cmd-start")
        proc = subprocess.Popen(args.cmd, stdout=sys.stderr)
    at_routes = int(args.at[0]) if args.at else None
    want_at = None
    while True:
        t = time.monotonic() - t0
        n, waits, waited = held(c)
        sent = "-"
        if ends is not None and proc and proc.returncode is None:
            off = file_offset(proc.pid, args.batch)
            sent = "-" if off is None else str(bisect.bisect_right(ends, off))
        elif ends is not None and proc:
            sent = str(len(ends))
        z = zebra.count if zebra and zebra.count is not None else "-"
        print("sample %.4f %d %d %.1f %s %s" % (t, n, waits, waited, sent, z), flush=True)
        if at_routes is not None and at_proc is None and n >= at_routes:
            event("at-start")
            at_proc = subprocess.Popen(args.at[1].split(), stdout=sys.stderr)
        if at_proc and at_proc.returncode is None and at_proc.poll() is not None:
            event("at-end")
            if at_proc.returncode:
                sys.exit("timeline: %s failed" % args.at[1])
        if proc and not args.no_wait and proc.returncode is None and proc.poll() is not None:
            event("cmd-end")
            cmd_end = time.monotonic() - t0
            if proc.returncode:
                sys.exit("timeline: %s failed (%d)" % (" ".join(args.cmd), proc.returncode))
        if n == args.want and want_at is None:
            want_at = t
            event("want")
        done = want_at is not None and (not proc or args.no_wait or proc.returncode is not None) and \
            (not at_proc or at_proc.returncode is not None)
        if done:
            break
        if t > args.timeout:
            sys.exit("timeline: lcfibd holds %d routes after %.0f s, not %d" % (n, t, args.want))
        time.sleep(args.every)
    if zebra:
        zebra.stop = True
    end = "" if not proc or args.no_wait else "; the command ended at %.3f s" % cmd_end
    print("# %d routes in lcfibd %.3f s after the start (%.0f routes/s)%s; %d forced waits, %.1f ms"
          % (args.want, want_at, args.want / want_at, end, waits, waited))


if __name__ == "__main__":
    main()
