#!/usr/bin/env python3
"""The soak of `httpdns serve` (scripts/soak.sh starts it; read that first).

Starts dnsmasq and the service over TLS on loopback, measures the service's peak with h2load, then for MINUTES
keeps h2load sending cache hits at half that rate while this script's own clients send a mix over HTTP/2 and
HTTP/1.1 and time every request: hits (native and DoH), misses, NXDOMAIN, bad requests, and HTTP/2 streams reset
as soon as they are sent (one a second per connection). Halfway through, dnsmasq is stopped and started again on the same address.

Each minute it prints what was sent, the errors nobody expected, p50 and p99 latency, and the service's resident
memory. Expected: 503 for a miss or NXDOMAIN name while the upstream is down (and a few seconds after). Anything
else that is not the answer the kind of request should get counts as unexpected.

Exit status: 0 when there were no unexpected errors, every h2load request succeeded, and resident memory stayed
within 10% of the first minute's; 1 otherwise; 2 when something could not be started.
"""
import argparse
import asyncio
import base64
import json
import os
import random
import re
import signal
import ssl
import struct
import subprocess
import sys
import tempfile
import threading
import time

import h2.config
import h2.connection
import h2.events
import h2.exceptions

DNS_IP, DNS_PORT = "127.0.0.96", 25691
SERVICE_IP, SERVICE_PORT = "127.0.0.97", 28643
MISS_NAMES = 5000          # r<N>.miss.test: any name under miss.test is 127.0.0.3, TTL 1 s (cached 5 s)
NX_NAMES = 5000            # x<N>.nx.test: NXDOMAIN (negative TTL 30 s)
UPSTREAM_DOWN_SECONDS = 3
# After the upstream is back, a 503 is still expected this long: a request may join the service's query for its name
# that began while the upstream was down, which fails only after c-ares's tries (upstreamTimeoutMs 1 s, then 2 s:
# c-ares 1.18 doubles the timeout on the second try).
GRACE_SECONDS = 3
RESETS_PER_CONNECTION = 900  # under the service's 1,000 over a connection's life; then a new connection
CONNECT_TIMEOUT = 10


def doh_query(name, qtype=1):
    question = b"".join(bytes([len(label)]) + label.encode() for label in name.split(".")) + b"\0"
    message = struct.pack(">HHHHHH", 0, 0x100, 1, 0, 0, 0) + question + struct.pack(">HH", qtype, 1)
    return base64.urlsafe_b64encode(message).decode().rstrip("=")


HIT_DOH = "/dns-query?dns=" + doh_query("serve.test")


def pick_request(rng, counter, reset_allowed):
    """(kind, path, reset) for the next request of the mix."""
    roll = rng.random()
    if reset_allowed:
        return "reset", f"/d?host=r{rng.randrange(MISS_NAMES)}.miss.test", True
    if roll < 0.45:
        return "hit", "/d?host=serve.test", False
    if roll < 0.60:
        return "hit-doh", HIT_DOH, False
    if roll < 0.80:
        return "miss", f"/d?host=r{rng.randrange(MISS_NAMES)}.miss.test", False
    if roll < 0.93:
        return "nxdomain", f"/d?host=x{rng.randrange(NX_NAMES)}.nx.test", False
    if roll < 0.97:
        return "bad-host", f"/d?host=bad_name{counter}", False
    return "bad-doh", "/dns-query?dns=!!!", False


def check(kind, status, body):
    """None when the answer is what `kind` should get, else what was wrong."""
    try:
        if kind in ("hit",):
            return None if status == 200 and json.loads(body)["ips"] == ["127.0.0.1"] else f"{status} {body[:120]!r}"
        if kind == "hit-doh":
            return None if status == 200 and len(body) > 12 and body[3] & 0x0F == 0 else f"{status} {body[:40]!r}"
        if kind == "miss":
            return None if status == 200 and json.loads(body)["ips"] == ["127.0.0.3"] else f"{status} {body[:120]!r}"
        if kind == "nxdomain":
            return None if status == 200 and json.loads(body)["ips"] == [] else f"{status} {body[:120]!r}"
        if kind in ("bad-host", "bad-doh"):
            return None if status == 400 else f"{status} {body[:120]!r}"
    except (ValueError, KeyError, TypeError) as error:
        return f"{status} unreadable: {error}: {body[:120]!r}"
    return f"unknown kind {kind}"


class Stats:
    def __init__(self, started):
        self.started = started
        self.minutes = {}
        self.upstream_down = None   # (from, to) in monotonic seconds, once the restart is under way
        self.crashed = False

    def minute(self, now):
        index = int((now - self.started) // 60)
        return self.minutes.setdefault(index, {"sent": 0, "latencies": [], "unexpected": [], "expected": 0, "kinds": {}})

    def record(self, kind, began, problem, timed=True):
        """One request of `kind`, begun at `began`: None when it got what it should, else what went wrong. A reset
        stream is not timed (there is no answer to wait for)."""
        now = time.monotonic()
        bucket = self.minute(now)
        bucket["sent"] += 1
        bucket["kinds"][kind] = bucket["kinds"].get(kind, 0) + 1
        if timed:
            bucket["latencies"].append(now - began)
        if problem is None:
            return
        if kind in ("miss", "nxdomain") and problem.startswith("503") and self.in_upstream_window(began, now):
            bucket["expected"] += 1
        else:
            bucket["unexpected"].append(f"{kind}: {problem}")

    def in_upstream_window(self, began, ended):
        if self.upstream_down is None:
            return False
        down, up = self.upstream_down
        return ended >= down and began <= (up if up is not None else ended) + GRACE_SECONDS


def tls_context(cafile, alpn):
    context = ssl.create_default_context(cafile=cafile)
    context.set_alpn_protocols([alpn])
    return context


async def connect(args, stats, alpn):
    """A TLS connection to the service, or None (counted as an unexpected error, after half a second) when it fails."""
    try:
        return await asyncio.wait_for(asyncio.open_connection(
            SERVICE_IP, SERVICE_PORT, ssl=tls_context(args.cafile, alpn), server_hostname="serve.test"), CONNECT_TIMEOUT)
    except (OSError, asyncio.TimeoutError) as error:
        stats.minute(time.monotonic())["unexpected"].append(f"{alpn} connect: {type(error).__name__} {error}")
        await asyncio.sleep(0.5)
        return None


async def http2_client(args, stats, stop, rng, concurrency):
    """One HTTP/2 connection with `concurrency` requests in flight. A new connection when this one fails, or once it
    has reset RESETS_PER_CONNECTION streams (its workers finish what they sent first)."""
    while not stop.is_set():
        connected = await connect(args, stats, "h2")
        if connected is None:
            continue
        reader, writer = connected
        connection = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        connection.initiate_connection()
        writer.write(connection.data_to_send())
        pending = {}   # stream id -> [kind, began, status, body, future]
        lock = asyncio.Lock()
        # One stream reset a second per connection: a client cancelling now and then. The service tolerates 200
        # resets per 30 s and 1,000 over a connection's life (then GOAWAY ENHANCE_YOUR_CALM).
        last_reset = [time.monotonic()]
        resets = [0]

        def settle(entry, error=None):
            if not entry[4].done():
                entry[4].set_exception(error) if error else entry[4].set_result(None)

        async def pump():
            while True:
                data = await reader.read(65536)
                if not data:
                    raise ConnectionError("the service closed the connection")
                for event in connection.receive_data(data):
                    entry = pending.get(getattr(event, "stream_id", None))
                    if isinstance(event, h2.events.ResponseReceived) and entry:
                        entry[2] = int(dict(event.headers)[":status"])
                    elif isinstance(event, h2.events.DataReceived):
                        connection.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                        if entry:
                            entry[3] += event.data
                    elif isinstance(event, h2.events.StreamEnded) and entry:
                        pending.pop(event.stream_id)
                        settle(entry)
                    elif isinstance(event, h2.events.StreamReset) and entry:
                        pending.pop(event.stream_id)
                        settle(entry, ConnectionError(f"stream reset by the service, code {event.error_code}"))
                    elif isinstance(event, h2.events.ConnectionTerminated):
                        raise ConnectionError(f"GOAWAY {event.error_code}")
                writer.write(connection.data_to_send())

        async def one():
            counter = 0
            while not stop.is_set() and resets[0] < RESETS_PER_CONNECTION and not pump_task.done():
                counter += 1
                reset_allowed = time.monotonic() - last_reset[0] >= 1.0
                if reset_allowed:
                    last_reset[0] = time.monotonic()
                kind, path, reset = pick_request(rng, counter, reset_allowed)
                began = time.monotonic()
                async with lock:
                    try:
                        stream = connection.get_next_available_stream_id()
                        connection.send_headers(stream, [(":method", "GET"), (":scheme", "https"),
                                                         (":authority", "serve.test"), (":path", path)], end_stream=True)
                        if reset:
                            connection.reset_stream(stream, 8)  # CANCEL
                            resets[0] += 1
                    except h2.exceptions.H2Error:
                        # The connection has ended (GOAWAY): the pump records what was in flight; nothing was sent.
                        return
                    writer.write(connection.data_to_send())
                if reset:
                    stats.record(kind, began, None, timed=False)
                    continue
                entry = [kind, began, 0, b"", asyncio.get_running_loop().create_future()]
                pending[stream] = entry
                try:
                    await asyncio.wait_for(entry[4], args.request_timeout)
                    stats.record(kind, began, check(kind, entry[2], entry[3]))
                except asyncio.TimeoutError:
                    pending.pop(stream, None)
                    stats.record(kind, began, f"no answer in {args.request_timeout} s")
                    async with lock:  # give the stream up, so that it does not count against the service's limit
                        try:
                            connection.reset_stream(stream, 8)
                            writer.write(connection.data_to_send())
                        except h2.exceptions.H2Error:
                            pass
                except ConnectionError as error:
                    stats.record(kind, began, str(error))

        pump_task = asyncio.create_task(pump())
        workers = [asyncio.create_task(one()) for _ in range(concurrency)]
        stopper = asyncio.create_task(stop.wait())
        # Until the connection ends, the soak stops, or every worker has finished (a reconnect after its resets).
        everyone = asyncio.ensure_future(asyncio.wait(workers))
        await asyncio.wait([pump_task, stopper, everyone], return_when=asyncio.FIRST_COMPLETED)
        if not stop.is_set():
            if pump_task.done() and not pump_task.cancelled():
                stats.minute(time.monotonic())["unexpected"].append(f"h2 connection: {type(pump_task.exception()).__name__} {pump_task.exception()}")
                # Requests in flight on a connection that ended: each is an error of its own, counted once.
                for entry in list(pending.values()):
                    if not entry[4].done():
                        entry[4].set_exception(ConnectionError("in flight when the connection ended"))
            # Let the workers count what they were waiting for, then stop them.
            await asyncio.wait(workers, timeout=1)
            for task in workers:
                if task.done() and not task.cancelled() and task.exception() is not None:
                    stats.minute(time.monotonic())["unexpected"].append(f"h2 worker: {type(task.exception()).__name__} {task.exception()}")
        for task in (pump_task, stopper, everyone, *workers):
            task.cancel()
        await asyncio.gather(pump_task, stopper, everyone, *workers, return_exceptions=True)
        writer.close()


async def http1_client(args, stats, stop, rng):
    """One HTTP/1.1 keep-alive connection, a request at a time; a new connection if this one fails."""
    while not stop.is_set():
        connected = await connect(args, stats, "http/1.1")
        if connected is None:
            continue
        reader, writer = connected
        counter = 0
        while not stop.is_set():
            counter += 1
            kind, path, _ = pick_request(rng, counter, False)
            began = time.monotonic()
            try:
                writer.write(f"GET {path} HTTP/1.1\r\nHost: serve.test\r\n\r\n".encode())
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), args.request_timeout)
                lines = head.decode("latin-1").split("\r\n")
                status = int(lines[0].split(" ")[1])
                length = next(int(line.split(":", 1)[1]) for line in lines if line.lower().startswith("content-length:"))
                body = await asyncio.wait_for(reader.readexactly(length), args.request_timeout)
            except asyncio.CancelledError:
                raise
            except Exception as error:  # noqa: BLE001 — every failure of a request is counted, then a new connection
                if not stop.is_set():
                    stats.record(kind, began, f"HTTP/1.1: {type(error).__name__} {error}")
                break
            stats.record(kind, began, check(kind, status, body))
            if any(line.lower() == "connection: close" for line in lines):
                break
        writer.close()


def start_dnsmasq(work):
    return subprocess.Popen(["dnsmasq", "--no-daemon", f"--conf-file={work}/dnsmasq.conf"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def wait_for_dns():
    for _ in range(100):
        answer = subprocess.run(["dig", "+short", "+time=1", "+tries=1", f"@{DNS_IP}", "-p", str(DNS_PORT), "serve.test"],
                                capture_output=True, text=True)
        if "127.0.0.1" in answer.stdout:
            return
        time.sleep(0.1)
    raise RuntimeError("dnsmasq did not come up")


def start_service(args, work, processes):
    """Starts `httpdns serve` (in `processes` at once, so that it is stopped whatever happens) and waits until it
    answers /healthz."""
    environment = dict(os.environ, HTTPDNS_RATE_LIMIT_PER_SECOND="0", HTTPDNS_LOG_LEVEL="warning")
    service = subprocess.Popen([args.httpdns, "serve", "--listen", f"{SERVICE_IP}:{SERVICE_PORT}",
                                "--upstream", f"{DNS_IP}:{DNS_PORT}", "--tls-cert", f"{work}/cert.pem",
                                "--tls-key", f"{work}/key.pem"], env=environment, stderr=subprocess.DEVNULL)
    processes.append(service)
    for _ in range(100):
        if subprocess.run(["curl", "-s", "-o", "/dev/null", "--cacert", f"{work}/cert.pem", "--resolve",
                           f"serve.test:{SERVICE_PORT}:{SERVICE_IP}", f"https://serve.test:{SERVICE_PORT}/healthz"]).returncode == 0:
            return service
        time.sleep(0.1)
    raise RuntimeError("httpdns serve did not come up")


def client_soak(args, work, service, processes):
    """The library client: `httpdns-bench soak-client` (HostResolver through the service) for MINUTES, with the
    service killed (SIGKILL) and started again halfway. Every lookup must be answered, stale while the service is
    away."""
    client = subprocess.Popen([args.httpdns_bench, "soak-client", "--server", f"https://{SERVICE_IP}:{SERVICE_PORT}",
                               "--cacert", f"{work}/cert.pem", "--seconds", str(args.minutes * 60)],
                              stdout=subprocess.PIPE, text=True)
    processes.append(client)
    # The client stops by itself after its seconds; past two minutes more, it is stopped.
    watchdog = threading.Timer(args.minutes * 60 + 120, client.kill)
    watchdog.daemon = True
    watchdog.start()
    lines = []
    halfway = args.minutes * 30
    restarted = False
    try:
        for line in client.stdout:
            lines.append(json.loads(line))
            if not restarted and lines[-1]["second"] + 1 >= halfway:
                restarted = True
                print(f"soak: killing the service, and starting it again {UPSTREAM_DOWN_SECONDS} s later", file=sys.stderr)
                service.kill()
                service.wait(timeout=30)
                time.sleep(UPSTREAM_DOWN_SECONDS)
                service = start_service(args, work, processes)
        client.wait()
    finally:
        watchdog.cancel()
    print(f"{'minute':>6} {'lookups':>11} {'answered':>11} {'stale':>11} {'failed':>6}")
    failed = 0
    errors = []
    for minute in range(args.minutes + 1):
        bucket = [line for line in lines if line["second"] // 60 == minute]
        if not bucket:
            continue
        answered = sum(line["answered"] for line in bucket)
        failures = sum(line["failed"] for line in bucket)
        failed += failures
        errors += [error for line in bucket for error in line["errors"]]
        print(f"{minute + 1:>6} {answered + failures:>11} {answered:>11} {sum(line['stale'] for line in bucket):>11} {failures:>6}")
    print(f"lookups failed: {failed}; client exit status {client.returncode}")
    for error in errors[:10]:
        print(f"  {error}")
    return 0 if failed == 0 and client.returncode == 0 and restarted else 1


def resident_kib(pid):
    """The resident memory of a running process, or None once it has exited."""
    try:
        with open(f"/proc/{pid}/status") as status:
            line = next((line for line in status if line.startswith("VmRSS:")), None)
    except OSError:
        return None
    return int(line.split()[1]) if line else None


def h2load(args, extra, seconds):
    url = f"https://{SERVICE_IP}:{SERVICE_PORT}/d?host=serve.test"
    return subprocess.Popen(["h2load", "-D", str(seconds), *extra, url], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def h2load_figures(output):
    rate = re.search(r"finished in [\d.]+\w+, ([\d.]+) req/s", output)
    requests = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout", output)
    codes = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", output)
    if not (rate and requests and codes):
        raise RuntimeError(f"h2load printed no figures:\n{output}")
    return float(rate.group(1)), [int(x) for x in requests.groups()], [int(x) for x in codes.groups()]


async def soak(args, work, dnsmasq, service, processes):
    stats = Stats(time.monotonic())
    stop = asyncio.Event()
    rng = random.Random(args.seed)
    clients = [asyncio.create_task(http2_client(args, stats, stop, rng, args.h2_streams)) for _ in range(args.h2_connections)]
    clients += [asyncio.create_task(http1_client(args, stats, stop, rng)) for _ in range(args.h1_connections)]
    memory = {}
    loop = asyncio.get_running_loop()
    total = args.minutes * 60
    for second in range(1, total + 1):
        await asyncio.sleep(max(0, stats.started + second - time.monotonic()))
        if service.poll() is not None:
            stats.minute(time.monotonic())["unexpected"].append(f"httpdns serve exited ({service.returncode})")
            stats.crashed = True
            break
        if second == total // 2:
            print(f"soak: stopping the upstream for {UPSTREAM_DOWN_SECONDS} s", file=sys.stderr)
            stats.upstream_down = (time.monotonic(), None)
            dnsmasq.terminate()
            await loop.run_in_executor(None, dnsmasq.wait)
            await asyncio.sleep(UPSTREAM_DOWN_SECONDS)
            dnsmasq = start_dnsmasq(work)
            processes.append(dnsmasq)
            await loop.run_in_executor(None, wait_for_dns)
            stats.upstream_down = (stats.upstream_down[0], time.monotonic())
        if second % 60 == 0 and (resident := resident_kib(service.pid)) is not None:
            memory[second // 60 - 1] = resident
    stop.set()
    for outcome in await asyncio.gather(*clients, return_exceptions=True):
        if isinstance(outcome, BaseException) and not isinstance(outcome, asyncio.CancelledError):
            stats.minute(time.monotonic())["unexpected"].append(f"a client died: {type(outcome).__name__} {outcome}")
    return stats, memory


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))] if ordered else float("nan")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("minutes", type=int)
    parser.add_argument("--httpdns", required=True)
    parser.add_argument("--httpdns-bench", help="the httpdns-bench binary, for --client")
    parser.add_argument("--h2-connections", type=int, default=4)
    parser.add_argument("--h2-streams", type=int, default=4, help="requests in flight on each HTTP/2 connection")
    parser.add_argument("--h1-connections", type=int, default=4)
    parser.add_argument("--load-fraction", type=float, default=0.5, help="h2load's share of the measured peak (0.5)")
    parser.add_argument("--request-timeout", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--json", help="write the figures here too")
    parser.add_argument("--client", action="store_true",
                        help="soak the library client instead: HostResolver through the service, restarted halfway")
    args = parser.parse_args()
    # A plain kill still stops every process the soak started (the finally clauses below).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.minutes < 2:
        parser.error("at least 2 minutes: the first is the baseline for memory")
    if args.client and not args.httpdns_bench:
        parser.error("--client needs --httpdns-bench")

    with tempfile.TemporaryDirectory(prefix="httpdns-soak.") as work:
        with open(f"{work}/dnsmasq.conf", "w") as conf:
            conf.write("\n".join([
                f"port={DNS_PORT}", f"listen-address={DNS_IP}", "bind-interfaces", "no-resolv", "no-hosts", "user=root",
                "local=/test/", "local=/invalid/", "local-ttl=1", "host-record=serve.test,127.0.0.1,3600",
                "address=/miss.test/127.0.0.3", ""]))
        try:
            subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                            "-keyout", f"{work}/key.pem", "-out", f"{work}/cert.pem", "-days", "1", "-subj", "/CN=soak",
                            "-addext", f"subjectAltName=DNS:serve.test,IP:{SERVICE_IP}"], check=True, capture_output=True)
        except (OSError, subprocess.CalledProcessError) as error:
            print(f"soak: could not make a certificate: {error}", file=sys.stderr)
            return 2
        args.cafile = f"{work}/cert.pem"
        processes = []
        try:
            dnsmasq = start_dnsmasq(work)
            processes.append(dnsmasq)
            wait_for_dns()
            service = start_service(args, work, processes)
            if args.client:
                return client_soak(args, work, service, processes)
            measure = h2load(args, ["-c", "16", "-m", "10", "-t", "1"], 5)
            processes.append(measure)
            peak, _, _ = h2load_figures(measure.communicate()[0])
            clients = 16
            rate = max(1, int(peak * args.load_fraction / clients))
            print(f"soak: peak {peak:.0f} req/s (h2load, 16 connections × 10 streams, 5 s); "
                  f"h2load sends {rate * clients} req/s for {args.minutes} min", file=sys.stderr)
            bulk = h2load(args, ["-c", str(clients), "-m", "10", "-t", "1", "--rps", str(rate)], args.minutes * 60)
            processes.append(bulk)
            stats, memory = asyncio.run(soak(args, work, dnsmasq, service, processes))
            if stats.crashed:
                bulk.send_signal(signal.SIGINT)  # h2load prints its figures when interrupted
            try:
                bulk_rate, bulk_requests, bulk_codes = h2load_figures(bulk.communicate()[0])
            except RuntimeError as error:
                stats.minute(time.monotonic())["unexpected"].append(f"h2load: {error}")
                bulk_rate, bulk_requests, bulk_codes = 0.0, [0, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0]
        except (RuntimeError, OSError, subprocess.CalledProcessError) as error:
            print(f"soak: could not run: {error}", file=sys.stderr)
            return 2
        finally:
            for process in processes:
                if process.poll() is None:
                    process.send_signal(signal.SIGTERM)
            for process in processes:
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()

    print(f"{'minute':>6} {'sent':>7} {'req/s':>6} {'unexpected':>10} {'expected':>8} {'p50 ms':>7} {'p99 ms':>7} {'RSS MiB':>8}")
    unexpected = []
    for index in range(args.minutes):
        bucket = stats.minutes.get(index, {"sent": 0, "latencies": [], "unexpected": [], "expected": 0})
        unexpected += bucket["unexpected"]
        print(f"{index + 1:>6} {bucket['sent']:>7} {bucket['sent'] / 60:>6.0f} {len(bucket['unexpected']):>10} {bucket['expected']:>8} "
              f"{percentile(bucket['latencies'], 0.5) * 1000:>7.1f} {percentile(bucket['latencies'], 0.99) * 1000:>7.1f} "
              f"{memory.get(index, 0) / 1024:>8.1f}")
    # Requests still open when the clients stopped land in a bucket past the end; their errors count too.
    for index in stats.minutes:
        if index >= args.minutes:
            unexpected += stats.minutes[index]["unexpected"]
    later = [memory[index] for index in range(1, args.minutes) if index in memory]
    # The furthest from the first minute's, either way.
    growth = max((value / memory[0] - 1 for value in later), key=abs) if later and memory.get(0) else 0.0
    failed = bulk_requests[0] - bulk_requests[3]
    print(f"h2load: {bulk_rate:.0f} req/s of cache hits, {bulk_requests[3]} succeeded, {failed} not "
          f"(2xx {bulk_codes[0]}, 4xx {bulk_codes[2]}, 5xx {bulk_codes[3]})")
    print(f"unexpected errors: {len(unexpected)}; resident memory after the first minute: {growth * 100:+.1f}% at the furthest (target within ±10%)")
    for line in unexpected[:20]:
        print(f"  {line}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"peak": peak, "bulk_rate": bulk_rate, "bulk_failed": failed, "unexpected": unexpected,
                       "memory_kib": memory, "minutes": {i: {k: v for k, v in b.items() if k != "latencies"} | {
                           "p50_ms": percentile(b["latencies"], 0.5) * 1000, "p99_ms": percentile(b["latencies"], 0.99) * 1000}
                           for i, b in stats.minutes.items()}}, out, indent=1)
    return 0 if not unexpected and failed == 0 and abs(growth) <= 0.10 else 1


if __name__ == "__main__":
    sys.exit(main())
