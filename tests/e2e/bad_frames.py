#!/usr/bin/env python3
"""Sends lcfibd frames that break the protocol, and checks it survives them.

  bad_frames.py SOCKET [--seed S] [--random N]

Each case goes on a fresh connection: the bytes, then a half-close, then
everything the daemon sends until it closes. What comes back must parse as
frames, each an error ({"errors":[...]}) or a reply; a frame the daemon
cannot trust must be answered with a "bad frame" error (or, when it stopped
in the middle, just the close). Between cases the daemon must still answer
a get. At the end, state control/bad-frames must have grown by exactly the
number of bad frames sent, which this script works out by framing the bytes
the way lib/ctl.h says the daemon does.
"""
import argparse
import json
import random
import socket
import struct
import sys

import ctl

REQ_MAX = 1 << 20
REQUESTS = (1, 2, 3)          # get, edit, rpc
STREAM = (4, 5)               # data, end
REPLIES = (64, 65, 66, 67, 68)  # reply, error, notify, part, lines (lib/ctl.h)
KNOWN = REQUESTS + STREAM + REPLIES


def expected_bad_frames(data):
    """Bad frames in @data as the daemon frames it (no streamed load is ever started)."""
    bad, off = 0, 0
    while len(data) - off >= 12:
        length, version, ftype, flags, _ = ctl.HDR.unpack(data[off:off + 12])
        if version != 1 or ftype not in KNOWN or length > REQ_MAX:
            return bad + 1                  # answered, then the connection is closed
        if len(data) - off - 12 < length:
            return bad + 1                  # left in the middle of a frame
        if ftype in STREAM or ftype in REPLIES or (ftype == 2 and flags > 2):
            bad += 1                        # answered; the connection stays
        off += 12 + length
    return bad + (1 if off < len(data) else 0)


def exchange(path, data):
    """Sends @data, half-closes, returns the frames that came back until the close."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(120)  # only so that a hung daemon cannot hang the test run
    s.connect(path)
    try:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the daemon closed first: what it said before is still readable
    got = b""
    while True:
        try:
            chunk = s.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        got += chunk
    s.close()
    frames, off = [], 0
    while off < len(got):
        if len(got) - off < 12:
            raise AssertionError("a truncated header came back: %r" % got[off:])
        length, version, ftype, _, ident = ctl.HDR.unpack(got[off:off + 12])
        payload = got[off + 12:off + 12 + length]
        if version != 1 or len(payload) != length:
            raise AssertionError("a malformed answer came back: %r" % got[off:off + 64])
        frames.append((ftype, ident, payload.decode()))
        off += 12 + length
    return frames


def check_answers(what, frames, must_say_bad):
    for ftype, _, payload in frames:
        if ftype == 65:
            errs = json.loads(payload).get("errors")
            if not errs or not all("message" in e for e in errs):
                raise AssertionError("%s: an error answer without messages: %s" % (what, payload))
        elif ftype != 64:
            raise AssertionError("%s: an answer of type %d: %s" % (what, ftype, payload))
    said_bad = any(f[0] == 65 and "bad frame" in f[2] for f in frames)
    if must_say_bad and not said_bad:
        raise AssertionError("%s: no 'bad frame' error came back; got %s" % (what, frames))


def bad_frames(path):
    return int(ctl.leaf(ctl.Conn(path).get("/lcfib:lcfib/state/control/bad-frames"),
                        "/lcfib:lcfib/state/control/bad-frames"))


def alive(path, what):
    try:
        c = ctl.Conn(path, timeout=120)
        if not c.get("/lcfib:lcfib/state/daemon/pid"):
            raise AssertionError("empty answer")
        c.close()
    except (OSError, AssertionError, ctl.Closed) as e:
        sys.exit("the daemon stopped answering after %s: %s" % (what, e))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("socket")
    ap.add_argument("--seed", type=int)
    ap.add_argument("--random", type=int, default=300)
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().getrandbits(32)
    print("bad_frames: seed %d (rerun with E2E_SEED=%d)" % (seed, seed), flush=True)
    rng = random.Random(seed)
    f = ctl.frame
    get = b"/lcfib:lcfib/state/daemon"
    # (name, bytes, whether a "bad frame" error must come back)
    cases = [
        ("version byte 2", f(1, get, 2, version=2), True),
        ("version byte 0", f(1, get, 2, version=0), True),
        ("unknown type 9", f(9, get, 2), True),
        ("unknown type 255", f(255, b""), True),
        ("length 0xffffffff", f(1, b"", 2, length=0xFFFFFFFF), True),
        ("a request of 1 MiB + 1", f(1, b"/" * (REQ_MAX + 1), 2), True),
        ("a truncated frame, then close", f(3, b"{}", length=100)[:40], False),
        ("half a header, then close", f(1, get, 2)[:7], False),
        ("a reply sent as a request", f(64, b"{}"), True),
        ("data without a load", f(4, b"route add 10.0.0.0/8\n"), True),
        ("end without a load", f(5, b""), True),
        ("edit mode 7", f(2, b'{"lcfib:lcfib":{"sync-mem":65536}}', 7), True),
        ("a bad frame after a good one", f(1, get, 2) + f(1, get, 2, version=3), True),
        ("malformed JSON", f(3, b'{"lcfib:lookup":{"address":'), False),
        ("a request of exactly 1 MiB", f(1, b" " * REQ_MAX, 2), False),
    ]
    for i in range(args.random):
        kind = rng.randrange(3)
        if kind == 0:    # bytes
            data = bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 200)))
        elif kind == 1:  # a plausible header, random payload and flags
            body = bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 100)))
            data = f(rng.choice(KNOWN), body, rng.getrandbits(16), rng.getrandbits(32))
        else:            # a header with random fields
            body = bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 40)))
            data = ctl.HDR.pack(rng.choice((0, 1, rng.getrandbits(32))), rng.choice((1, 1, 2)),
                                rng.getrandbits(8), rng.getrandbits(16), 1) + body
        cases.append(("random case %d" % i, data, None))

    before = bad_frames(args.socket)
    want = 0
    for name, data, must_say_bad in cases:
        n = expected_bad_frames(data)
        want += n
        try:
            frames = exchange(args.socket, data)
            check_answers(name, frames, must_say_bad if must_say_bad is not None else False)
        except (AssertionError, ValueError, OSError) as e:
            sys.exit("%s (%r...): %s" % (name, data[:24], e))
        alive(args.socket, name)
    got = bad_frames(args.socket) - before
    print("bad_frames: %d cases, %d bad frames sent, the daemon counted %d and still answers"
          % (len(cases), want, got))
    if got != want:
        sys.exit("state control/bad-frames grew by %d, expected %d" % (got, want))


if __name__ == "__main__":
    main()
