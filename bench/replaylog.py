"""Generate a production-like trace log for ``python -m ctxcore replay``: a JSONL of ctxcore traces,
one run a line, each with its run id, time and the answer the model gave.

Every run is built by the engine under the log's own settings (``BASE``), so each line is exactly
what a system logging ctxcore traces would write. Candidates carry planted exact and near
duplicates and dated versions of documents; scores fall with the rank. The answer of most runs
cites the best kept passage; every ``regression_every``-th run (the planted regressions) cites the
*weakest* kept passage instead, so a new setting that keeps fewer passages (``max_passages: 3``)
loses exactly the passage those answers relied on.

``--spans`` writes the same runs as a Phoenix/OpenInference span export instead (one span a line: a
chain, a retriever with every candidate and an LLM call whose prompt holds the passages the logged
pipeline sent, ``[1]``..., the top ``SENT`` by score), so the replay reads it whole, cuts it into runs
and infers each run's policy from its sent prompt.

    python bench/replaylog.py OUT.jsonl --runs 10000 [--seed 1] [--min 20 --max 60] [--spans]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from datetime import datetime, timedelta, timezone

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ctxcore import Candidate, Config, Inputs, Logged, build  # noqa: E402
import dataclasses  # noqa: E402

BASE = {"budget": 1500}  # the settings the log was written under
START = datetime(2026, 11, 2, 8, 0, tzinfo=timezone.utc)

_TOPICS = {
    "refund": ("refunds", "original payment method", "business days", "store credit", "receipt"),
    "shipping": ("parcels", "carrier", "tracking number", "express delivery", "customs"),
    "warranty": ("devices", "manufacturing defects", "serial number", "repair centre", "replacement"),
    "invoice": ("invoices", "billing address", "VAT number", "credit note", "payment terms"),
    "account": ("accounts", "password reset", "two-factor code", "recovery email", "login attempts"),
    "subscription": ("plans", "annual renewal", "monthly billing", "cancellation", "upgrade"),
    "router": ("routers", "firmware", "factory reset", "status light", "network cable"),
    "discount": ("coupons", "loyalty points", "promotion code", "minimum order", "expiry date"),
}
_VERBS = ("are handled within", "must be confirmed within", "are reviewed after", "can be requested within",
          "are limited to", "expire after", "are processed within", "need approval above")
_UNITS = ("days", "hours", "EUR", "weeks", "attempts", "months")
_OPENERS = ("As a rule,", "For enterprise customers,", "In most regions,", "Since the last update,",
            "Unless stated otherwise,", "For orders placed online,", "During peak season,", "")
_TAILS = ("The team records every exception in the ticket.", "Agents should quote the policy number.",
          "A manager can extend this once per customer.", "Customers are told by email.",
          "This applies to every sales channel.", "Older tickets follow the previous rule.")


def _sentence(rng: random.Random, topic: str) -> str:
    noun, *things = _TOPICS[topic]
    thing = rng.choice(things)
    return (f"{rng.choice(_OPENERS)} {noun} with a {thing} {rng.choice(_VERBS)} "
            f"{rng.randint(2, 900)} {rng.choice(_UNITS)}.").strip().replace("  ", " ")


def _text(rng: random.Random, topic: str, sentences: tuple[int, int]) -> str:
    parts = [_sentence(rng, topic) for _ in range(rng.randint(*sentences))]
    parts.insert(rng.randrange(len(parts) + 1), rng.choice(_TAILS))
    return " ".join(p[0].upper() + p[1:] for p in parts)


def run_candidates(rng: random.Random, n: int, sentences: tuple[int, int]) -> tuple[str, list[Candidate]]:
    """(query, candidates) of one run: scores falling with the rank, duplicates and versions planted."""
    topic = rng.choice(sorted(_TOPICS))
    query = f"What is the rule for {rng.choice(_TOPICS[topic][1:])} on {_TOPICS[topic][0]}?"
    out: list[Candidate] = []
    score = rng.uniform(0.85, 0.97)
    for i in range(n):
        kind = rng.random()
        doc = f"{topic}-{rng.randint(1, max(2, n // 3)):03d}"
        date = None
        if out and kind < 0.05:
            text = rng.choice(out).text
        elif out and kind < 0.13:
            words = rng.choice(out).text.split()
            words[rng.randrange(len(words))] = rng.choice(("usually", "often", "normally"))
            text = " ".join(words)
        else:
            text = _text(rng, rng.choice(sorted(_TOPICS)) if rng.random() < 0.3 else topic, sentences)
            if rng.random() < 0.15:
                date = rng.choice(("2025-01-10", "2025-09-01", "2026-06-30"))
        out.append(Candidate(id=f"{doc}#{i}", text=text, score=round(score, 4), doc_id=doc, chunk_index=i,
                             title=f"{topic.title()} policy", section=f"{topic.title()} > Rules", date=date))
        score *= rng.uniform(0.9, 0.995)
    return query, out


def _answer(trace, planted: bool) -> str:
    kept = trace.kept()
    if not kept:
        return "I cannot answer from the documents provided."
    by_score = {c.id: c.score for c in trace.candidates}
    pick = min(kept, key=lambda d: by_score[d.id]) if planted else max(kept, key=lambda d: by_score[d.id])
    return f"Going by the policy in the documents, the rule is stated in [{pick.label}]."


def generate(path: str, runs: int, *, seed: int = 1, candidates: tuple[int, int] = (20, 60),
             sentences: tuple[int, int] = (2, 7), base: dict = BASE, regression_every: int = 5,
             system: str = "You are a support assistant. Answer from the documents and cite them.") -> list[str]:
    """Write ``runs`` lines to ``path``; the ids of the planted runs (whose answer cites its weakest passage)."""
    rng = random.Random(seed)
    config, inputs, planted = Config(**base), Inputs(system=system), []
    with open(path, "w", encoding="utf-8") as f:
        for i in range(runs):
            query, cands = run_candidates(rng, rng.randint(*candidates), sentences)
            trace = build(cands, query, config, inputs)
            run_id = f"run-{i:05d}"
            is_planted = regression_every > 0 and i % regression_every == regression_every - 1 \
                and len(trace.kept()) > 3
            if is_planted:
                planted.append(run_id)
            logged = Logged(format="ctxcore", trace_id=run_id, model="gpt-4o-mini",
                            answer=_answer(trace, is_planted))
            line = dataclasses.replace(trace, logged=logged).to_dict()
            line["time"] = (START + timedelta(seconds=37 * i)).isoformat().replace("+00:00", "Z")
            f.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
    return planted


SENT = 6  # passages the span log's pipeline sends: the top six by score


def _span(tid: str, sid: str, name: str, kind: str, parent, start: datetime, attributes: dict) -> dict:
    when = start.isoformat()
    return {"name": name, "context": {"trace_id": tid, "span_id": sid}, "span_kind": kind, "parent_id": parent,
            "start_time": when, "end_time": when, "status_code": "OK", "status_message": "",
            "attributes": {"openinference.span.kind": kind, **attributes}, "events": [], "conversation": None}


def span_run(i: int, query: str, cands: list[Candidate], planted: bool, system: str) -> list[dict]:
    """The three spans of one run: what a LangChain pipeline traced by OpenInference exports to Phoenix."""
    tid, start = f"{i + 1:032x}", START + timedelta(seconds=37 * i)
    sent = sorted(cands, key=lambda c: -c.score)[:SENT]
    pick = len(sent) if planted else 1  # the planted runs cite their weakest sent passage
    answer = f"Going by the policy in the documents, the rule is stated in [{pick}]."
    docs = {}
    for j, c in enumerate(cands):
        docs.update({f"retrieval.documents.{j}.document.id": c.id, f"retrieval.documents.{j}.document.content": c.text,
                     f"retrieval.documents.{j}.document.score": c.score})
    context = "\n\n".join(f"[{k}] {c.text}" for k, c in enumerate(sent, 1))
    root = f"{3 * i + 1:016x}"
    return [_span(tid, root, "query", "CHAIN", None, start, {"input.value": query, "output.value": answer}),
            _span(tid, f"{3 * i + 2:016x}", "retrieve", "RETRIEVER", root, start, {"input.value": query, **docs}),
            _span(tid, f"{3 * i + 3:016x}", "llm", "LLM", root, start, {
                "llm.model_name": "gpt-4o-mini",
                "llm.input_messages.0.message.role": "system", "llm.input_messages.0.message.content": system,
                "llm.input_messages.1.message.role": "user",
                "llm.input_messages.1.message.content": f"Context:\n{context}\n\nQuestion: {query}",
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.content": answer})]


def generate_spans(path: str, runs: int, *, seed: int = 1, candidates: tuple[int, int] = (20, 40),
                   sentences: tuple[int, int] = (1, 4), regression_every: int = 5,
                   system: str = "You are a support assistant. Answer from the context only and cite it.") -> list[str]:
    """Write ``runs`` runs as one Phoenix span export (a span a line); the trace ids of the planted runs."""
    rng, planted = random.Random(seed), []
    with open(path, "w", encoding="utf-8") as f:
        for i in range(runs):
            query, cands = run_candidates(rng, rng.randint(*candidates), sentences)
            is_planted = regression_every > 0 and i % regression_every == regression_every - 1
            spans = span_run(i, query, cands, is_planted, system)
            if is_planted:
                planted.append(spans[0]["context"]["trace_id"])
            for span in spans:
                f.write(json.dumps(span, ensure_ascii=False, separators=(",", ":")) + "\n")
    return planted


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--runs", type=int, default=1000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--min", type=int, default=20, help="fewest candidates in a run")
    p.add_argument("--max", type=int, default=60, help="most candidates in a run")
    p.add_argument("--sentences", type=int, nargs=2, default=(2, 7), metavar=("FEWEST", "MOST"))
    p.add_argument("--budget", type=int, default=BASE["budget"], help="the docs budget the log was built with")
    p.add_argument("--every", type=int, default=5, help="plant a regression in every N-th run (0: none)")
    p.add_argument("--spans", action="store_true", help="a Phoenix/OpenInference span export instead of traces")
    a = p.parse_args(argv)
    if a.spans:
        planted = generate_spans(a.out, a.runs, seed=a.seed, candidates=(a.min, a.max),
                                 sentences=tuple(a.sentences), regression_every=a.every)
        print(f"{a.runs} runs of spans written to {a.out} ({os.path.getsize(a.out) / 1e6:.1f} MB); "
              f"{len(planted)} answers cite their weakest sent passage", file=sys.stderr)
        return 0
    planted = generate(a.out, a.runs, seed=a.seed, candidates=(a.min, a.max), sentences=tuple(a.sentences),
                       base={"budget": a.budget}, regression_every=a.every)
    print(f"{a.runs} runs written to {a.out} ({os.path.getsize(a.out) / 1e6:.1f} MB); {len(planted)} answers cite "
          f"their weakest passage", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
