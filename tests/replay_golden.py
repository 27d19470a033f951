"""The replay's golden: every row and the report of six replays (two generated logs, ctxcore traces and a Phoenix
span export; with and without findings) as the code before the replay's speed-ups (#33) wrote them.

    python tests/replay_golden.py CTXCORE_ROOT OUT.json   # made with main's code in a scratch copy

``tests/test_replay_golden.py`` replays the same logs with this code and compares, row by row (a row is kept as
a digest of its JSON; the report whole)."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
LOGS = {"traces": dict(runs=30, seed=11, candidates=(15, 30), sentences=(1, 3)),
        "spans": dict(runs=24, seed=12, candidates=(15, 30), sentences=(1, 3))}
CASES = {"traces-mp3": ("traces", {"max_passages": 3}, True), "traces-b1000": ("traces", {"budget": 1000}, False),
         "traces-b1000-f": ("traces", {"budget": 1000}, True), "spans-mp4": ("spans", {"max_passages": 4}, True),
         "spans-mp4-nf": ("spans", {"max_passages": 4}, False), "spans-b300": ("spans", {"budget": 300}, True)}


def make_logs(folder: str, replaylog) -> dict[str, str]:
    """The two logs, generated (seeded) into ``folder``: name -> path."""
    out = {}
    for name, kw in LOGS.items():
        path = os.path.join(folder, f"{name}.jsonl")
        kw = dict(kw)
        runs = kw.pop("runs")
        (replaylog.generate if name == "traces" else replaylog.generate_spans)(path, runs, **kw)
        out[name] = path
    return out


def _log_digest(path: str) -> str:
    """A generated log's digest, each trace line without its seal (the seal names the engine's source, which
    changes with every commit by design; the traces the log holds do not), written back as the generator writes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for line in f:
            data = json.loads(line) if b'"seal"' in line else None
            if isinstance(data, dict) and "seal" in data:
                data.pop("seal")
                line = (json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
            h.update(line)
    return h.hexdigest()[:16]


def digest(row: dict, folder: str) -> str:
    text = json.dumps(row, ensure_ascii=False, sort_keys=True).replace(folder, "LOG")
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def outputs(replay, logs: dict[str, str], folder: str, work: str) -> dict:
    """Every case replayed in-process: the log's digest, the report (paths made ``LOG``) and the rows' digests."""
    out = {"logs": {name: _log_digest(p) for name, p in logs.items()}}
    for name, (log, new, with_findings) in CASES.items():
        target = os.path.join(work, name)
        report = replay([logs[log]], new, out=target, engine="inprocess", with_findings=with_findings)
        with open(os.path.join(target, "runs.jsonl"), encoding="utf-8") as f:
            rows = [digest(json.loads(line), folder) for line in f]
        out[name] = {"report": json.loads(json.dumps(report).replace(folder, "LOG")), "rows": rows}
    return out


def main(root: str, target: str) -> None:
    sys.path.insert(0, root)
    sys.path.insert(1, os.path.join(os.path.dirname(HERE), "bench"))
    import replaylog
    from ctxcore.replay import replay

    with tempfile.TemporaryDirectory() as folder:
        result = outputs(replay, make_logs(folder, replaylog), folder, os.path.join(folder, "out"))
    with open(target, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main(*sys.argv[1:3])
