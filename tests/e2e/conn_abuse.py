#!/usr/bin/env python3
"""Clients that abuse lcfibd's control socket, and what another client sees.

  conn_abuse.py greedy SOCKET PID SECONDS
      One connection writes `get` frames and never reads its replies, for
      at most SECONDS; meanwhile another connection asks for the state
      every 50 ms. Then the greedy one goes, and the daemon's CPU use is
      measured for 2 s. Prints key=value lines: frames (sent by the greedy
      one), dropped (1 when the daemon closed it), dropped_after (s),
      max_latency and median_latency (s, of the other's requests),
      cpu_after (share of a CPU the daemon used once the greedy one left).

  conn_abuse.py listing SOCKET PID SECONDS [N]
      N connections (default 1) each ask for every IPv4 route
      (limit 10000000) and never read; another connection asks for the
      state every 50 ms for SECONDS. Prints rss_before, rss_max, rss_after
      (KiB: before, during, and 2 s after the listers left), max_latency,
      median_latency.

  conn_abuse.py slots SOCKET N SECONDS
      Opens N connections, asks the state on each, and sorts the answers:
      served, refused (an error frame with id 0), silent (closed without
      a word). Prints those counts, the first refusal's message, then
      "holding" and keeps the connections open for SECONDS.

Figures are printed, not judged: the test says what it expects.
"""
import os
import socket
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ctl  # noqa: E402

STATE = "/lcfib:lcfib/state/routes"


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime


class Prober(threading.Thread):
    """Asks for the state every 50 ms on a connection of its own; notes each latency."""

    def __init__(self, sock):
        super().__init__(daemon=True)
        self.conn = ctl.Conn(sock, timeout=60)
        self.latencies = []
        self.stop = threading.Event()
        self.error = None

    def run(self):
        try:
            while not self.stop.is_set():
                t0 = time.monotonic()
                self.conn.get(STATE, ctl.GET_STATE)
                self.latencies.append(time.monotonic() - t0)
                time.sleep(0.05)
        except Exception as e:  # noqa: BLE001 - reported below
            self.error = repr(e)

    def report(self):
        self.stop.set()
        self.join(70)
        lat = self.latencies or [float("inf")]
        print("requests=%d" % len(self.latencies))
        print("max_latency=%.3f" % max(lat))
        print("median_latency=%.3f" % statistics.median(lat))
        if self.error:
            print("prober_error=%s" % self.error)


def greedy(sock, pid, seconds, kind="get"):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock)
    s.settimeout(1)
    prober = Prober(sock)
    prober.start()
    # The whole datastore: the heaviest answer (it walks every trie). Or
    # (kind "lookup") lookups: answers quick to make, for a sanitizer build,
    # where 60 s of whole-datastore gets fill no buffer. (Not listings: an
    # unread listing waits for its reader and fills nothing, by design.)
    if kind == "lookup":
        req = '{"lcfib:lookup":{"address":"192.0.2.1"}}'
        burst = b"".join(ctl.frame(3, req, 0, i) for i in range(100))
    else:
        burst = b"".join(ctl.frame(1, "", 0, i) for i in range(100))
    sent, dropped, t0 = 0, None, time.monotonic()
    while time.monotonic() - t0 < seconds:
        try:
            s.sendall(burst)
            sent += 100
        except socket.timeout:
            continue  # the daemon stopped reading: so far so good
        except OSError:
            dropped = time.monotonic() - t0
            break
    prober.report()
    s.close()
    print("frames=%d" % sent)
    print("dropped=%d" % (dropped is not None))
    print("dropped_after=%.1f" % (dropped if dropped is not None else -1))
    time.sleep(0.5)
    hz = os.sysconf("SC_CLK_TCK")
    c0, t1 = cpu_ticks(pid), time.monotonic()
    time.sleep(2)
    print("cpu_after=%.2f" % ((cpu_ticks(pid) - c0) / hz / (time.monotonic() - t1)))


def listing(sock, pid, seconds, n):
    before = rss_kib(pid)
    listers = []
    for _ in range(n):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(sock)
        s.sendall(ctl.frame(3, '{"lcfib:routes":{"limit":10000000,"family":"ipv4"}}'))
        listers.append(s)
    prober = Prober(sock)
    prober.start()
    peak, t0 = before, time.monotonic()
    while time.monotonic() - t0 < seconds:
        peak = max(peak, rss_kib(pid))
        time.sleep(0.1)
    prober.report()
    for s in listers:
        s.close()
    time.sleep(2)
    print("rss_before=%d" % before)
    print("rss_max=%d" % peak)
    print("rss_after=%d" % rss_kib(pid))


def slots(sock, n, seconds):
    conns = []
    counts = {"served": 0, "refused": 0, "silent": 0}
    first = ""
    for _ in range(n):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(sock)  # blocking: waits while the listen backlog is full
        s.settimeout(10)
        conns.append(s)
    for s in conns:
        try:
            s.sendall(ctl.frame(1, STATE, ctl.GET_STATE, 7))
        except OSError:
            pass  # refused already: its error frame waits to be read
        try:
            c = ctl.Conn.__new__(ctl.Conn)
            c.s, c.buf = s, b""
            name, ident, payload = c.recv()
            if name == "error" and ident == 0:
                counts["refused"] += 1
                first = first or payload
            else:
                counts["served"] += 1
        except (ctl.Closed, OSError):
            counts["silent"] += 1
    for k, v in counts.items():
        print("%s=%d" % (k, v))
    print("refusal=%s" % first)
    print("holding", flush=True)
    time.sleep(seconds)


def main():
    cmd, sock = sys.argv[1], sys.argv[2]
    if cmd == "greedy":
        greedy(sock, int(sys.argv[3]), float(sys.argv[4]), *sys.argv[5:6])
    elif cmd == "listing":
        listing(sock, int(sys.argv[3]), float(sys.argv[4]),
                int(sys.argv[5]) if len(sys.argv) > 5 else 1)
    elif cmd == "slots":
        slots(sock, int(sys.argv[3]), float(sys.argv[4]))
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main()
