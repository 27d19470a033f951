"""How importing a logged trace scales: span exports of 10k-100k spans, and a pandas "columns" bomb.

    python bench/import_scale.py                      # 10k, 20k, 100k spans; a 5,000-column bomb
    python bench/import_scale.py --spans 10000 --bomb 1000 --timeout 120

Each case runs in its own process (time and peak memory are its own) and prints one table row.
Not part of the test suite; tests/test_hostile_imports.py holds the same shapes under a hang guard.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def span_export(spans: int) -> bytes:
    """An OpenInference flattened export (Phoenix ``get_spans_dataframe`` records) of one long agent run:
    a root chain, a retriever, an LLM call, and tool spans under the root for the rest."""
    root, trace, when = f"{0:016x}", "4b1f" * 8, "2024-05-14T09:21:00+00:00"
    docs = {f"attributes.retrieval.documents.{j}.document.{k}": v for j in range(5)
            for k, v in (("id", f"kb-{j}"), ("content", f"Refund rule {j}: above ${j}00 a team lead approves."),
                         ("score", 0.9 - j / 10))}
    rows = [{"name": "agent", "span_kind": "CHAIN", "parent_id": None, "context.span_id": root,
             "attributes.input.value": "Who approves a $450 refund?"},
            {"name": "retrieve", "span_kind": "RETRIEVER", "parent_id": root, "context.span_id": f"{1:016x}",
             "attributes.input.value": "Who approves a $450 refund?", **docs},
            {"name": "llm", "span_kind": "LLM", "parent_id": root, "context.span_id": f"{2:016x}",
             "attributes.llm.model_name": "gpt-4o-mini", "attributes.llm.input_messages.0.message.role": "user",
             "attributes.llm.input_messages.0.message.content": "[1] Refund rule 4: above $400 a team lead approves."}]
    rows += [{"name": f"tool {i}", "span_kind": "TOOL", "parent_id": root, "context.span_id": f"{i:016x}",
              "attributes.input.value": f"lookup {i}"} for i in range(3, spans)]
    for row in rows:
        row.update({"context.trace_id": trace, "start_time": when})
    return json.dumps(rows[:spans]).encode()


def columns_bomb(columns: int) -> bytes:
    """pandas ``to_json(orient="columns")`` where every column holds one row of its own."""
    data = {"span_kind": {"r0": "RETRIEVER"}}
    data.update({f"attributes.c{i}": {f"r{i}": i} for i in range(1, columns)})
    return json.dumps(data).encode()


def _one(kind: str, n: int) -> dict:
    sys.path.insert(0, ROOT)
    from ctxcore import InputError, load

    data = span_export(n) if kind == "spans" else columns_bomb(n)
    start = time.perf_counter()
    try:
        loaded = load(data, f"{kind}.json")
        outcome = f"{len(loaded.candidates)} candidates"
    except InputError as err:
        outcome = f"refused: {str(err)[:70]}"
    return {"seconds": time.perf_counter() - start, "kb": len(data) // 1024, "outcome": outcome,
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--spans", type=int, nargs="*", default=[10_000, 20_000, 100_000])
    p.add_argument("--bomb", type=int, nargs="*", default=[5_000], help="columns of the columns-orient bomb")
    p.add_argument("--timeout", type=float, default=600)
    p.add_argument("--one", nargs=2, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.one:
        print(json.dumps(_one(args.one[0], int(args.one[1]))))
        return
    print(f"{'case':<24}{'file KB':>9}{'seconds':>10}{'peak MB':>9}  outcome")
    for kind, sizes in (("spans", args.spans), ("bomb", args.bomb)):
        for n in sizes:
            label = f"{n:,} spans" if kind == "spans" else f"columns bomb {n:,}x{n:,}"
            try:
                out = subprocess.run([sys.executable, __file__, "--one", kind, str(n)], capture_output=True,
                                     text=True, timeout=args.timeout, check=True).stdout
            except subprocess.TimeoutExpired:
                print(f"{label:<24}{'':>9}{'>' + format(args.timeout, 'g'):>10}{'':>9}  gave up")
                continue
            r = json.loads(out)
            print(f"{label:<24}{r['kb']:>9}{r['seconds']:>10.2f}{r['peak_mb']:>9.0f}  {r['outcome']}")


if __name__ == "__main__":
    main()
