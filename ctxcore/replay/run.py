"""Replay a whole trace log under new settings: what each run would lose, gain and cost.

For every run of the log (:mod:`ctxcore.replay.read` reads them lazily) the run is built under the
**new** settings and compared with its **baseline**:

* ``policy`` — an imported run whose log holds the prompt that was actually sent: the baseline is a
  build under the policy the logged pipeline appears to follow (:mod:`ctxcore.analysis.policy`), and
  the new settings go on top of that policy, not of ctxcore's defaults, so a replay that changes
  nothing reports nothing changed;
* ``trace`` — a ctxcore trace: its own decisions and prompt (read off the JSON when this engine sealed it,
  :func:`compare_sealed`; an unsealed one is rebuilt by the loader before it is believed);
* ``config`` — ``baseline`` settings were given: a build under them;
* ``file`` — anything else (a candidates file): a build under the file's own settings.

Both the new and the baseline settings go on top of the run's own settings. A run's row holds the
candidates newly dropped and newly kept and every candidate whose fate or stage moved (fate, stage
and reason under each side), evidence and prompt tokens under each, the passages the logged answer
cited and those the new prompt would lose (a likely regression), and the finding kinds present
under one side only. :func:`replay_batch` is what a worker runs; :func:`replay` drives the whole
log through an engine (:mod:`ctxcore.replay.engines`) and streams the rows to
:mod:`ctxcore.replay.report`.
"""

from __future__ import annotations

import dataclasses
import inspect
import signal
import threading
import time
from contextlib import contextmanager
from itertools import islice
from typing import Callable, Iterable, Iterator, Optional

from ..analysis.answer import check_answer, citations, cited_labels
from ..errors import BuildError, InputError
from ..analysis.explain import findings
from ..analysis.policy import infer as infer_policy
from ..io.loaded import Loaded
from ..io.sealed import Stored, read_sealed, stored_trace
from ..pipeline import clear_caches, evidence_cost
from ..records import Trace
from ..serialize import block_to_dict
from .engines import CONNECT_TIMEOUT, default_workers
from .engines import run as run_engine
from .read import Item, items, load_item, sealed_item, total_bytes, why
from .report import Summary, Writer

BASELINES = ("policy", "trace", "config", "file")
BATCH = 16  # runs per task: amortises the pickling and the round trip to a worker


def _findings_kinds(trace: Trace, logged_prompt: Optional[str] = None,
                    logged_prompt_tokens: Optional[int] = None) -> list[str]:
    """The finding kinds of a context: the one place replay calls :func:`ctxcore.analysis.explain.findings`.

    Verification (re-building to prove each fix) is asked off when ``findings`` offers a switch for
    it; the kinds never depend on it. Answer checks are left out on both sides: the answer was
    written from the logged prompt, so the contexts are compared, and the answer's citations are
    compared separately (``lost_ids``)."""
    kwargs = {"logged_prompt": logged_prompt, "logged_prompt_tokens": logged_prompt_tokens}
    kwargs.update({k: False for k in ("verify", "verify_fixes") if k in _FINDINGS_PARAMETERS})
    return sorted({f.kind for f in findings(trace, **kwargs)})


_FINDINGS_PARAMETERS = frozenset(inspect.signature(findings).parameters)


def _present(trace: Trace) -> dict[str, bool]:
    """Is each candidate's text in the prompt: kept, or merged into / an exact copy of a kept passage."""
    fate = {d.id: d.fate for d in trace.decisions}
    out = {}
    for d in trace.decisions:
        other = d.merged_into if d.fate == "merged" else d.duplicate_of if d.fate == "exact_duplicate" else None
        out[d.id] = d.fate == "kept" or (other is not None and fate.get(other) == "kept")
    return out


def _built_side(trace: Trace) -> dict:
    return {"fates": {d.id: (d.fate, d.stage, d.reason) for d in trace.decisions},
            "order": [d.id for d in trace.kept()],
            "evidence": evidence_cost(trace), "prompt": trace.prompt.tokens}


_IN_PROMPT = ("kept",)


def _moves(before: dict, after: dict) -> list[dict]:
    out = []
    for cid, (fate_a, stage_a, reason_a) in before["fates"].items():
        fate_b, stage_b, reason_b = after["fates"][cid]
        if (fate_a, stage_a) != (fate_b, stage_b):
            out.append({"id": cid, "before_fate": fate_a, "before_stage": stage_a, "before_reason": reason_a,
                        "after_fate": fate_b, "after_stage": stage_b, "after_reason": reason_b})
    return out


def _same_context(a: Trace, b: Trace) -> bool:
    """Same fates, places, blocks and budget: the finding kinds cannot differ, so they are not computed."""
    return a.budget == b.budget and a.blocks == b.blocks and all(
        (x.fate, x.stage, x.position) == (y.fate, y.stage, y.position) for x, y in zip(a.decisions, b.decisions))


def _cited(own: Trace, answer: Optional[str], sent: Optional[str]) -> list[tuple[str, str]]:
    """(label, candidate id) for each passage the logged answer cites that the check ties to a candidate:
    against the prompt that was sent when it is known, else against the run's own trace."""
    if not answer:
        return []
    if not sent:
        return _cited_own(own, answer)
    return citations(own, answer, sent)  # the answer check's citations only: its other checks are not compared


def _cited_checked(own: Trace, answer: str, sent: Optional[str]) -> list[tuple[str, str]]:
    """:func:`_cited` by the whole answer check: the plain definition (of :func:`_cited_own` and of
    :func:`ctxcore.analysis.answer.citations`)."""
    out = []
    for c in check_answer(own, answer, sent):
        if c.kind == "citation" and c.verdict == "ok":
            out.extend((c.claim.strip("[]"), cid) for cid in c.ids)
    return out


def _cited_own(own: Trace, answer: str) -> list[tuple[str, str]]:
    """:func:`_cited_checked` without a sent prompt, fast: the check then ties ``[S#]`` citations to the trace's
    kept labels and nothing else (no sent context to read, no quotes, numbers or claims to weigh); a test holds
    the two equal."""
    return _cited_labels({d.label: d.id for d in own.kept()}, answer)


def _cited_labels(kept: dict, answer: str) -> list[tuple[str, str]]:
    """(label, id) of each ``[S#]`` the answer cites that names a kept passage (``kept``: label -> id)."""
    return [(label, kept[label]) for label in cited_labels(answer) if kept.get(label)]


def policy_settings(loaded: Loaded) -> dict:
    """The settings of the policy an imported run's pipeline appears to follow: the ground the new settings
    go on (a saved trace that stored its policy keeps it)."""
    trace = loaded.trace if loaded.trace is not None and loaded.trace.logged is not None else None
    stored = trace.logged.policy if trace is not None else None
    if stored is not None and isinstance(stored.get("config"), dict):
        return dict(stored["config"])
    return dict(infer_policy(trace if trace is not None else loaded, reproduce=False).settings)


def compare(loaded: Loaded, new: dict, baseline: Optional[dict] = None, with_findings: bool = True) -> dict:
    """One run's row (without its place in the log): the new settings against the baseline.

    Findings are compared only where the two contexts differ (``findings_checked``), and not at all
    without ``with_findings``: they re-build the run many times to verify fixes, which costs more than the
    replay itself."""
    logged = loaded.logged or (loaded.trace.logged if loaded.trace is not None else None)
    sent = logged.prompt_text if logged is not None else None
    ground = policy_settings(loaded) if baseline is None and sent else {}
    after = loaded.build(loaded.settings(**{**ground, **new}))
    if baseline is not None:
        kind, base = "config", loaded.build(loaded.settings(**baseline))
    elif sent:
        kind, base = "policy", loaded.build(loaded.settings(**ground))
    elif loaded.trace is not None:
        kind, base = "trace", loaded.trace
    else:
        kind, base = "file", loaded.build()
    side_a, side_b = _built_side(base), _built_side(after)
    if with_findings and not _same_context(base, after):
        f_a, f_b, checked = _findings_kinds(base), _findings_kinds(after), True
    else:
        f_a, f_b, checked = [], [], False
    answer = logged.answer if logged is not None else None
    if loaded.trace is not None or kind != "config":
        own = loaded.trace if loaded.trace is not None else base  # what the answer's labels refer to
    else:
        own = loaded.build() if answer else None
    return _row(after, kind, side_a, side_b, (f_a, f_b, checked), _cited(own, answer, sent))


def compare_sealed(stored: Stored, new: dict, with_findings: bool = True) -> Optional[dict]:
    """:func:`compare` of a trace this engine sealed, against its stored fates (the trace is its own rebuild, so
    it is not rebuilt; a test holds the two equal); None for a run whose baseline is not its trace (a logged
    prompt: the policy's build). Where findings are compared its records are the rebuild's, warm after the new
    settings' build, and a stored side that differs from them sends the run the loader's way."""
    logged = stored.logged
    if logged is not None and logged.prompt_text:
        return None
    after = stored.loaded.build(stored.loaded.settings(**new))
    side_a = {"fates": stored.fates, "order": list(stored.order), "evidence": stored.evidence,
              "prompt": stored.prompt_tokens}
    if with_findings and not _same_stored(stored, after):
        base = stored_trace(stored)
        if _built_side(base) != side_a:  # a seal made for fates this engine does not decide: the loader's way
            return None
        found = (_findings_kinds(base), _findings_kinds(after), True)
    else:
        found = ([], [], False)
    answer = logged.answer if logged is not None else None
    cited = _cited_labels(stored.labels, answer) if answer else []
    return _row(after, "trace", side_a, _built_side(after), found, cited)


def _same_stored(stored: Stored, after: Trace) -> bool:
    """:func:`_same_context` of a stored trace's JSON and a build."""
    return stored.budget == dataclasses.asdict(after.budget) and stored.blocks == [
        block_to_dict(b) for b in after.blocks] and stored.places == tuple(
        (d.fate, d.stage, d.position) for d in after.decisions)


def _row(after: Trace, kind: str, side_a: dict, side_b: dict, found: tuple, cited: list) -> dict:
    """One run's row: the moves between the two sides, the finding kinds, the cited passages the new prompt loses."""
    moved = _moves(side_a, side_b)
    dropped = [m for m in moved if m["before_fate"] in _IN_PROMPT and m["after_fate"] not in _IN_PROMPT]
    kept = [m for m in moved if m["before_fate"] not in _IN_PROMPT and m["after_fate"] in _IN_PROMPT]
    common = set(side_a["order"]) & set(side_b["order"])
    reordered = [i for i in side_a["order"] if i in common] != [i for i in side_b["order"] if i in common]
    f_a, f_b, checked = found
    present = _present(after)
    lost = [(label, cid) for label, cid in cited if not present.get(cid, False)]
    return {
        "query": after.query, "baseline": kind, "candidates": len(after.candidates),
        "changed": bool(moved) or reordered, "reordered": reordered,
        "kept_before": len(side_a["order"]), "kept_after": len(side_b["order"]),
        "newly_dropped": dropped, "newly_kept": kept, "moved": moved,
        "evidence_tokens_before": side_a["evidence"], "evidence_tokens_after": side_b["evidence"],
        "prompt_tokens_before": side_a["prompt"], "prompt_tokens_after": side_b["prompt"],
        "tokens_saved": side_a["prompt"] - side_b["prompt"],
        "cited_labels": [label for label, _ in cited], "cited_ids": [cid for _, cid in cited],
        "lost_labels": [label for label, _ in lost], "lost_ids": [cid for _, cid in lost],
        "regression": bool(lost),
        "findings_checked": checked, "findings_before": f_a, "findings_after": f_b,
        "findings_gone": sorted(set(f_a) - set(f_b)), "findings_new": sorted(set(f_b) - set(f_a)),
    }


def replay_one(item: Item, new: dict, baseline: Optional[dict] = None, with_findings: bool = True) -> dict:
    """The result for one run: ``{"index", "source", "ok": True, "row": {...}}`` or, when it cannot be
    read or built, ``{"index", "source", "ok": False, "reason": ...}``."""
    head = {"index": item.index, "source": item.source}
    try:
        sealed = sealed_item(item) if baseline is None else None
        row = compare_sealed(sealed[0], new, with_findings) if sealed is not None else None
        if row is not None:
            run_id, when = sealed[1], sealed[2]
        else:
            loaded, run_id, when = load_item(item)
            row = compare(loaded, new, baseline, with_findings)
    except (InputError, BuildError) as err:
        return {**head, "ok": False, "run_id": item.run_id, "reason": why(err, item.source)}
    except (RecursionError, MemoryError, ValueError, TypeError, KeyError) as err:
        return {**head, "ok": False, "run_id": item.run_id, "reason": f"{type(err).__name__}: {err}"}
    finally:
        clear_caches()  # every run's texts are new: caching them across runs would only grow the worker
    return {**head, "ok": True, "row": {**head, "run_id": run_id or item.run_id, "time": when, **row}}


def replay_batch(batch: list[Item], new: dict, baseline: Optional[dict] = None,
                 with_findings: bool = True) -> list[dict]:
    """What a worker runs: :func:`replay_one` for each run of the batch, in order."""
    return [replay_one(item, new, baseline, with_findings) for item in batch]


def _batches(runs: Iterable[Item], size: int) -> Iterator[list[Item]]:
    it = iter(runs)
    while batch := list(islice(it, size)):
        yield batch


class Progress:
    """Runs done, runs per second and the time left (estimated from the input bytes read), to a callback
    and, when ``stream`` is given, as one line on it at most every ``every`` seconds."""

    def __init__(self, total_bytes: int, stream=None, callback: Optional[Callable] = None, every: float = 1.0):
        self.total, self.stream, self.callback, self.every = max(total_bytes, 1), stream, callback, every
        self.start = self.last = time.monotonic()
        self.runs = self.unreadable = self.read_runs = 0
        self.all_read = False
        self.ends: dict[int, int] = {}  # run index -> input bytes read up to its end (runs read, not yet done)

    def read(self, runs: Iterable[Item]) -> Iterator[Item]:
        """The runs, noting how far into the input each one ends, how many were read, and whether all were."""
        for item in runs:
            self.ends[item.index] = item.done_bytes
            self.read_runs += 1
            yield item
        self.all_read = True

    def step(self, result: dict) -> None:
        self.runs += 1
        self.unreadable += not result["ok"]
        self._show(self.ends.pop(result["index"], 0), final=False)

    def finish(self) -> None:
        self._show(self.total, final=True)

    def _show(self, done_bytes: int, final: bool) -> None:
        now = time.monotonic()
        if not final and now - self.last < self.every:
            return
        self.last = now
        elapsed = max(now - self.start, 1e-9)
        share = min(done_bytes / self.total, 1.0)
        eta = elapsed * (1 - share) / share if share > 0 else None
        state = {"runs": self.runs, "unreadable": self.unreadable, "rate": self.runs / elapsed,
                 "eta": 0.0 if final else eta, "fraction": 1.0 if final else share}
        if self.callback is not None:
            self.callback(state)
        if self.stream is not None:
            left = "" if state["eta"] is None else f", ETA {_duration(state['eta'])}"
            self.stream.write(f"replay: {self.runs:,} runs ({self.unreadable:,} unreadable), "
                              f"{state['rate']:.1f} runs/s{left}{' — done' if final else ''}\n")
            self.stream.flush()


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def replay(logs: Iterable[str], new: dict, baseline: Optional[dict] = None, *, out: Optional[str] = None,
           engine: str = "local", workers: Optional[int] = None, scheduler: Optional[str] = None,
           batch: int = BATCH, with_findings: bool = True, progress=None, on_progress: Optional[Callable] = None,
           on_row: Optional[Callable] = None, connect_timeout: float = CONNECT_TIMEOUT) -> dict:
    """Replay every run of ``logs`` under ``new`` settings; the aggregate report (``report.json``'s content).

    With ``out``, ``runs.parquet``, ``runs.jsonl``, ``report.json`` and ``report.md`` are written there,
    rows as they come. Memory stays bounded: runs are read lazily, a bounded number of batches is in
    flight, and only the aggregate is kept. ``progress`` is a stream for progress lines (e.g. stderr),
    ``on_progress`` a callback with ``{runs, unreadable, rate, eta, fraction}``, ``on_row`` one called
    with every result in input order.

    Ctrl-C stops the workers and still writes the report of the runs done, which then holds
    ``interrupted``; a report file that cannot be written is named in ``unwritten`` (the report is still
    returned, to be shown)."""
    logs = list(logs)
    summary, meter = Summary(), Progress(total_bytes(logs), progress, on_progress)
    workers = workers or default_workers()
    writer = Writer(out) if out else None
    runs = meter.read(items(logs))
    interrupted = False
    try:
        results = run_engine(replay_batch, _batches(runs, batch), (new, baseline, with_findings), engine=engine,
                             workers=workers, scheduler=scheduler, connect_timeout=connect_timeout)
        try:
            _drain(results, summary, writer, on_row, meter)
        except KeyboardInterrupt:
            interrupted = True
            results.close()  # the engine stops its workers
        else:
            meter.finish()
    finally:
        if writer is not None:
            writer.close()
    report = summary.report(new=new, baseline=baseline, with_findings=with_findings)
    if interrupted:
        report["interrupted"] = _interrupted(summary, meter, runs)
    if writer is not None:
        unwritten = writer.finish(report, summary.markdown(report))
        if unwritten:
            report["unwritten"] = unwritten
    return report


@contextmanager
def _whole():
    """Ctrl-C waits until a run is both counted and written: the partial report must agree with its rows (a
    signal between the two left runs.jsonl one row short of report.json). A SIGINT that comes meanwhile is held
    and raised again when the run is done. Blocking the signal at the OS level was not enough: one the process had
    already taken runs its Python handler at the next bytecode, inside the run's bookkeeping (seen once in about
    a hundred Ctrl-C tests: 101 runs counted, 100 written)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # Python delivers Ctrl-C to the main thread only (the app replays in a script thread)
        return
    held: list = []
    old = signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old if old is not None else signal.default_int_handler)
        if held:
            signal.raise_signal(signal.SIGINT)  # to the handler the replay had: KeyboardInterrupt, or ignored


def _drain(results: Iterator, summary: Summary, writer: Optional[Writer], on_row: Optional[Callable],
           meter: Progress) -> None:
    """Every result of the engine into the summary, the rows files, the row callback and the meter, in order."""
    for chunk in results:
        for result in chunk:
            with _whole():
                summary.add(result)
                if writer is not None and result["ok"]:
                    writer.write(result["row"])
            if on_row is not None:
                on_row(result)
            meter.step(result)


def _interrupted(summary: Summary, meter: Progress, rest: Iterator[Item]) -> dict:
    """How far an interrupted replay got: ``runs`` done of ``of`` in the log. The runs not yet read are counted by
    reading on (cutting only, nothing is built); a second Ctrl-C, or a read that the first one broke off, leaves
    ``of`` a lower bound (``of_exact`` false)."""
    try:
        for _ in rest:
            pass
    except KeyboardInterrupt:
        pass
    return {"runs": summary.runs + summary.unreadable_count, "of": meter.read_runs, "of_exact": meter.all_read}
