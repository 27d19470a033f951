"""The live endpoint under load (issue #32), measured, not asserted: spans per second acknowledged, p50/p99 ack
latency, the endpoint's RSS as the store sits at its retention limit, and that every acknowledged span is stored.

    python bench/live_bench.py [--seconds 10] [--clients 4] [--rate 5000] [--rate-seconds 20] [--with-app]

``python -m ctxcore serve`` runs in its own process (``--with-app``: the Streamlit app runs beside it, idle).
Requests are what an SDK's BatchSpanProcessor sends: 512 spans (64 traces of 8 spans, about 600 bytes of
OpenInference attributes each), binary protobuf, on keep-alive connections from ``--clients`` threads.
Phase 1, saturation (below the retention limit): each client sends its next request as soon as the last is
answered (closed loop); throughput, latency, the endpoint's CPU per request, and stored == acknowledged.
Phase 2, offered rate (``--rate`` spans/s, 0 skips it): requests fall due at a fixed pace whether or not the
endpoint keeps up (open loop), and each latency counts from when its request fell due, so waiting for a free
connection is included (no coordinated omission): the latency a steady sender sees below the limit.
Phase 3: a store capped at 200 runs, RSS sampled each second (flat = memory bounded at the limit).
Prints one JSON object.
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2 as ts

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ctxcore.io.live import store as live_store  # noqa: E402

SPANS, TRACES = 512, 64


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def request(seq: int) -> bytes:
    req = ts.ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    rs.resource.attributes.add(key="service.name").value.string_value = "bench"
    scope = rs.scope_spans.add()
    for i in range(SPANS):
        t = (seq * TRACES + i % TRACES + 1).to_bytes(16, "big")
        span = scope.spans.add(trace_id=t, span_id=(seq * SPANS + i + 1).to_bytes(8, "big"), name="retrieve",
                               start_time_unix_nano=1_700_000_000_000_000_000 + i, end_time_unix_nano=1_700_000_001_000_000_000)
        for key, value in (("openinference.span.kind", "RETRIEVER"), ("input.value", "How long do refunds take?"),
                           ("retrieval.documents.0.document.content", "Refunds are processed within five days. " * 8),
                           ("retrieval.documents.0.document.id", f"doc-{i}")):
            span.attributes.add(key=key).value.string_value = value
    return req.SerializeToString()


def client(port: int, bodies: list, stop: float, out: list) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    n = 0
    while time.monotonic() < stop:
        body = bodies[n % len(bodies)]
        n += 1
        t0 = time.perf_counter()
        conn.request("POST", "/v1/traces", body=body, headers={"Content-Type": "application/x-protobuf"})
        resp = conn.getresponse()
        reply = resp.read()
        took = time.perf_counter() - t0
        rejected = ts.ExportTraceServiceResponse.FromString(reply).partial_success.rejected_spans \
            if resp.status == 200 else SPANS
        out.append((resp.status, took, SPANS - rejected if resp.status == 200 else 0))
    conn.close()


def paced(port: int, bodies: list, start: float, interval: float, stop: float, due: list, lock, out: list) -> None:
    """Open loop: take the next due slot, wait for it, send; the latency counts from the slot. Every other slot
    is the floor: an empty request (no span: nothing decoded or stored), what HTTP, the threads and this busy
    machine's scheduling cost alone, measured in the same run."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    while True:
        with lock:
            k = due[0]
            due[0] += 1
        at = start + k * interval
        if at >= stop:
            break
        if at > time.perf_counter():
            time.sleep(at - time.perf_counter())
        floor = k % 2 == 1
        conn.request("POST", "/v1/traces", body=b"" if floor else bodies[(k // 2) % len(bodies)],
                     headers={"Content-Type": "application/x-protobuf"})
        resp = conn.getresponse()
        resp.read()
        out.append((resp.status, time.perf_counter() - at, 0 if floor or resp.status != 200 else SPANS, floor))
    conn.close()


def offered(port: int, rate: float, seconds: float, clients: int, first: int) -> list:
    bodies = [request(first + i) for i in range(clients * 40)]
    results: list = []
    start = time.perf_counter() + 0.2
    lock, due = threading.Lock(), [0]
    args = (port, bodies, start, SPANS / rate / 2, start + seconds, due, lock, results)   # half the slots: floor
    threads = [threading.Thread(target=paced, args=args) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def pct(values: list, p: float) -> float:
    """The nearest-rank percentile (never below the true one)."""
    ordered = sorted(values)
    return round(ordered[max(math.ceil(len(ordered) * p / 100) - 1, 0)], 1)


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def serve(port: int, db: Path, *extra: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "ctxcore", "serve", "--port", str(port), "--store", str(db), *extra],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc
        except OSError:
            time.sleep(0.1)
    raise SystemExit("the endpoint did not start")


def burst(port: int, seconds: float, clients: int, first: int, rss_of=None) -> tuple[list, list]:
    bodies = [request(first + i) for i in range(clients * 40)]   # distinct trace ids per request
    results: list = []
    stop = time.monotonic() + seconds
    threads = [threading.Thread(target=client, args=(port, bodies[i::clients], stop, results)) for i in range(clients)]
    for t in threads:
        t.start()
    samples = []
    while any(t.is_alive() for t in threads):
        time.sleep(1.0)
        if rss_of is not None:
            samples.append(rss_kb(rss_of))
    for t in threads:
        t.join()
    return results, samples


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--rate", type=float, default=5000.0, help="spans/s offered in phase 2 (0: skip it)")
    ap.add_argument("--rate-seconds", type=float, default=20.0)
    ap.add_argument("--with-app", action="store_true")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="live-bench-"))
    app = None
    if args.with_app:
        app = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(_port()),
                                "--server.headless", "true"], cwd=ROOT, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, env={**os.environ, "CTXCORE_DATA_DIR": str(tmp)})
        time.sleep(5)
    report = {"machine": f"{os.cpu_count()} cores, shared with other developers' jobs", "spans_per_request": SPANS,
              "clients": args.clients, "app_running": bool(args.with_app)}
    try:
        port = _port()
        proc = serve(port, tmp / "below.db", "--max-runs", "100000", "--max-mb", "4096")
        cpu0, t0 = cpu_s(proc.pid), time.monotonic()
        res, _ = burst(port, args.seconds, args.clients, 0)
        wall, cpu = time.monotonic() - t0, cpu_s(proc.pid) - cpu0
        ok = [r for r in res if r[0] == 200]
        lat = [r[1] * 1000 for r in ok]
        acked = sum(r[2] for r in ok)
        proc.terminate()
        proc.wait()
        runs, stored, size = live_store.totals(tmp / "below.db")
        report["below_limit"] = {
            "requests": len(res), "refused": {str(s): sum(1 for r in res if r[0] == s) for s in {r[0] for r in res}
                                              if s != 200},
            "spans_acked": acked, "spans_stored": stored, "all_acked_stored": acked == stored,
            "spans_per_second": round(acked / wall), "ack_ms_p50": round(statistics.median(lat), 1),
            "ack_ms_p99": pct(lat, 99), "endpoint_cpu_ms_per_request": round(cpu * 1000 / max(len(res), 1), 1),
            "runs": runs, "store_mb": round(size / 2**20, 1)}
        if args.rate > 0:
            port = _port()
            proc = serve(port, tmp / "rate.db", "--max-runs", "100000", "--max-mb", "4096")
            res = offered(port, args.rate, args.rate_seconds, args.clients, 10**5)
            proc.terminate()
            proc.wait()
            ok = [r for r in res if r[0] == 200 and not r[3]]
            lat = [r[1] * 1000 for r in ok]
            floor = [r[1] * 1000 for r in res if r[0] == 200 and r[3]]
            report["offered_rate"] = {
                "spans_per_second_offered": args.rate, "seconds": args.rate_seconds,
                "requests": sum(1 for r in res if not r[3]), "refused": sum(1 for r in res if r[0] != 200),
                "spans_acked": sum(r[2] for r in ok), "spans_stored": live_store.totals(tmp / "rate.db")[1],
                "ack_ms_p50": round(statistics.median(lat), 1), "ack_ms_p99": pct(lat, 99),
                "ack_ms_max": round(max(lat), 1), "floor_requests": len(floor),
                "floor_ms_p50": round(statistics.median(floor), 1), "floor_ms_p99": pct(floor, 99)}
        port = _port()
        proc = serve(port, tmp / "at.db", "--max-runs", "200", "--max-mb", "64")
        res, rss = burst(port, max(args.seconds, 10.0), args.clients, 10**6, rss_of=proc.pid)
        proc.terminate()
        proc.wait()
        lat = [r[1] * 1000 for r in res if r[0] == 200]
        report["at_limit"] = {"runs_kept": live_store.totals(tmp / "at.db")[0], "rss_mb_each_second":
                              [round(k / 1024, 1) for k in rss], "ack_ms_p99": pct(lat, 99),
                              "spans_per_second": round(sum(r[2] for r in res) / max(args.seconds, 10.0))}
    finally:
        if app is not None:
            app.terminate()
            app.wait()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
