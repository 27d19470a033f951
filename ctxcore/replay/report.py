"""The replay's outputs: rows written as they come (``runs.jsonl``, ``runs.parquet``) and the aggregate
(``report.json``, ``report.md``), kept as counters only, so memory does not grow with the log.

Percentiles are exact: token differences are whole numbers, kept as a histogram of values.
At most :data:`LISTED` regressions and unreadable runs are listed (their counts are always exact;
every run's row is in ``runs.jsonl``).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections import Counter
from contextlib import contextmanager
from typing import Optional

from ..errors import InputError
from ..escape import md_line

LISTED = 1000
PERCENTILES = (0, 10, 25, 50, 75, 90, 100)
_MOVE_FIELDS = ("id", "before_fate", "before_stage", "before_reason", "after_fate", "after_stage", "after_reason")


def percentiles(histogram: Counter, points=PERCENTILES) -> dict[str, Optional[int]]:
    """Nearest-rank percentiles of the values counted in ``histogram``.

    >>> percentiles(Counter({-5: 1, 0: 2, 10: 1}), (0, 50, 100))
    {'p0': -5, 'p50': 0, 'p100': 10}
    """
    n = sum(histogram.values())
    out: dict[str, Optional[int]] = {}
    values = sorted(histogram.items())
    for p in points:
        if not n:
            out[f"p{p}"] = None
            continue
        rank, seen = max(1, math.ceil(p / 100 * n)), 0
        for value, count in values:
            seen += count
            if seen >= rank:
                out[f"p{p}"] = value
                break
    return out


class Summary:
    """The aggregate of the results, in input order."""

    def __init__(self):
        self.runs = self.changed = self.reordered = self.checked = 0
        self.unreadable: list[dict] = []
        self.unreadable_count = 0
        self.regressions: list[dict] = []
        self.regression_count = 0
        self.saved, self.evidence_saved = Counter(), Counter()
        self.before = self.after = self.evidence_before = self.evidence_after = 0
        self.moves, self.move_runs = Counter(), Counter()
        self.dropped = self.kept = 0
        self.gone, self.new = Counter(), Counter()
        self.baselines = Counter()

    def add(self, result: dict) -> None:
        if not result["ok"]:
            self.unreadable_count += 1
            if len(self.unreadable) < LISTED:
                self.unreadable.append({"source": result["source"], "reason": result["reason"],
                                        **({"run_id": result["run_id"]} if result.get("run_id") else {})})
            return
        row = result["row"]
        self.runs += 1
        self.changed += row["changed"]
        self.reordered += row["reordered"]
        self.checked += row["findings_checked"]
        self.baselines[row["baseline"]] += 1
        self.saved[row["tokens_saved"]] += 1
        self.evidence_saved[row["evidence_tokens_before"] - row["evidence_tokens_after"]] += 1
        self.before += row["prompt_tokens_before"]
        self.after += row["prompt_tokens_after"]
        self.evidence_before += row["evidence_tokens_before"]
        self.evidence_after += row["evidence_tokens_after"]
        pairs = Counter((m["before_fate"], m["after_fate"]) for m in row["moved"])
        self.moves.update(pairs)
        self.move_runs.update(pairs.keys())
        self.dropped += len(row["newly_dropped"])
        self.kept += len(row["newly_kept"])
        self.gone.update(row["findings_gone"])
        self.new.update(row["findings_new"])
        if row["regression"]:
            self.regression_count += 1
            if len(self.regressions) < LISTED:
                self.regressions.append({"run_id": row["run_id"], "lost_ids": row["lost_ids"],
                                         "cited_labels": row["lost_labels"], "source": row["source"],
                                         "time": row["time"], "query": row["query"]})

    def report(self, new: dict, baseline: Optional[dict] = None, with_findings: bool = True) -> dict:
        return {
            "runs": self.runs,
            "changed": self.changed,
            "unchanged": self.runs - self.changed,
            "reordered": self.reordered,
            "regression_count": self.regression_count,
            "regressions": self.regressions,
            "unreadable_count": self.unreadable_count,
            "unreadable": self.unreadable,
            "listed_at_most": LISTED,
            "tokens": {
                "prompt_before": self.before, "prompt_after": self.after, "saved_total": self.before - self.after,
                "saved_per_run": percentiles(self.saved),
                "evidence_before": self.evidence_before, "evidence_after": self.evidence_after,
                "evidence_saved_total": self.evidence_before - self.evidence_after,
                "evidence_saved_per_run": percentiles(self.evidence_saved),
            },
            "newly_dropped": self.dropped,
            "newly_kept": self.kept,
            "fate_moves": [{"from": a, "to": b, "candidates": n, "runs": self.move_runs[(a, b)]}
                           for (a, b), n in sorted(self.moves.items(), key=lambda kv: (-kv[1], kv[0]))],
            "findings": {"gone": dict(sorted(self.gone.items())), "new": dict(sorted(self.new.items())),
                         "runs_checked": self.checked, "compared": with_findings},
            "baselines": dict(sorted(self.baselines.items())),
            "settings": {"new": new, "baseline": baseline},
        }

    @staticmethod
    def markdown(report: dict) -> str:
        return markdown(report)


CELL_CHARS = 200  # characters of a value a table cell shows (escaping may then lengthen it)


def _cell(value) -> str:
    """A value as one Markdown table cell that shows it literally: no delimiter, line, link, image or HTML of its
    own (:func:`ctxcore.escape.md_line`); cut before escaping, so a cut never splits an escape."""
    text = ", ".join(map(str, value)) if isinstance(value, list) else "" if value is None else str(value)
    return md_line(text[:CELL_CHARS])


def _code(text: str) -> str:
    """``text`` as an inline code span whatever backticks it holds: the fence is one backtick longer than its
    longest run of them (a ``caller`` setting is free text)."""
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def interrupted_line(info: dict) -> str:
    """How far an interrupted replay got, in words.

    >>> interrupted_line({"runs": 48, "of": 2000, "of_exact": True})
    'interrupted after 48 of 2,000 runs'
    >>> interrupted_line({"runs": 48, "of": 112, "of_exact": False})
    'interrupted after 48 of at least 112 runs'
    """
    return f"interrupted after {info['runs']:,} of {'' if info['of_exact'] else 'at least '}{info['of']:,} runs"


def markdown(r: dict) -> str:
    """The report as Markdown: the likely regressions first, then tokens, fates, findings, what was unreadable."""
    t = r["tokens"]
    p = t["saved_per_run"]
    lines = ["# Replay report", ""]
    if r.get("interrupted"):
        lines += [f"**{interrupted_line(r['interrupted']).capitalize()}** (Ctrl-C): every figure below covers "
                  "only the runs done.", ""]
    lines += [
        f"New settings: {_code(json.dumps(r['settings']['new'], sort_keys=True))}; baseline: "
        + (_code(json.dumps(r["settings"]["baseline"], sort_keys=True)) if r["settings"]["baseline"] is not None
           else "each run's logged prompt or own trace"), "",
        f"- runs replayed: {r['runs']:,}; changed: {r['changed']:,}; unchanged: {r['unchanged']:,}",
        f"- likely regressions (a passage the logged answer cited would no longer be in the prompt): "
        f"{r['regression_count']:,}",
        f"- unreadable: {r['unreadable_count']:,}",
        f"- prompt tokens: {t['prompt_before']:,} before, {t['prompt_after']:,} after, "
        f"{t['saved_total']:,} saved" if t["saved_total"] >= 0 else
        f"- prompt tokens: {t['prompt_before']:,} before, {t['prompt_after']:,} after, "
        f"{-t['saved_total']:,} added",
        "- saved per run: " + ", ".join(f"{k} {v}" for k, v in p.items()), ""]
    lines += ["## Likely regressions", ""]
    if r["regressions"]:
        lines += ["| run | lost passages | cited as | query |", "|---|---|---|---|"]
        lines += [f"| {_cell(g['run_id'] or g['source'])} | {_cell(g['lost_ids'])} | {_cell(g['cited_labels'])} | "
                  f"{_cell(g['query'])} |" for g in r["regressions"]]
        if r["regression_count"] > len(r["regressions"]):
            lines.append(f"\n(first {len(r['regressions'])} of {r['regression_count']:,}; all are in runs.jsonl)")
    else:
        lines.append("None: every passage a logged answer cited is still in its prompt.")
    lines += ["", "## Fates moved", ""]
    if r["fate_moves"]:
        lines += ["| from | to | candidates | runs |", "|---|---|---|---|"]
        lines += [f"| {m['from']} | {m['to']} | {m['candidates']:,} | {m['runs']:,} |" for m in r["fate_moves"]]
    else:
        lines.append("No candidate's fate moved.")
    f = r["findings"]
    lines += ["", "## Findings", ""]
    if not f["compared"]:
        lines.append("Not compared (replayed without findings).")
        f = {"gone": {}, "new": {}}
    else:
        lines.append(f"Compared in {f['runs_checked']:,} runs (the others built the same context under both "
                     "settings).")
    for name, counts in (("gone under the new settings", f["gone"]), ("new under the new settings", f["new"])):
        lines.append(f"- {name}: " + (", ".join(f"{k} ({v:,} runs)" for k, v in counts.items()) or "none"))
    if r["unreadable"]:
        lines += ["", "## Unreadable", "", "| source | reason |", "|---|---|"]
        lines += [f"| {_cell(u['source'])} | {_cell(u['reason'])} |" for u in r["unreadable"]]
    return "\n".join(lines) + "\n"


def _schema():
    import pyarrow as pa

    move = pa.list_(pa.struct([(name, pa.string()) for name in _MOVE_FIELDS]))
    strings = pa.list_(pa.string())
    return pa.schema([
        ("index", pa.int64()), ("source", pa.string()), ("run_id", pa.string()), ("time", pa.string()),
        ("query", pa.string()), ("baseline", pa.string()), ("candidates", pa.int64()), ("changed", pa.bool_()),
        ("reordered", pa.bool_()), ("kept_before", pa.int64()), ("kept_after", pa.int64()),
        ("newly_dropped", move), ("newly_kept", move), ("moved", move),
        ("evidence_tokens_before", pa.int64()), ("evidence_tokens_after", pa.int64()),
        ("prompt_tokens_before", pa.int64()), ("prompt_tokens_after", pa.int64()), ("tokens_saved", pa.int64()),
        ("cited_labels", strings), ("cited_ids", strings), ("lost_labels", strings), ("lost_ids", strings),
        ("regression", pa.bool_()), ("findings_checked", pa.bool_()), ("findings_before", strings),
        ("findings_after", strings), ("findings_gone", strings), ("findings_new", strings),
    ])


COLUMNS = ("index", "source", "run_id", "time", "query", "baseline", "candidates", "changed", "reordered",
           "kept_before", "kept_after", "newly_dropped", "newly_kept", "moved", "evidence_tokens_before",
           "evidence_tokens_after", "prompt_tokens_before", "prompt_tokens_after", "tokens_saved", "cited_labels",
           "cited_ids", "lost_labels", "lost_ids", "regression", "findings_checked", "findings_before",
           "findings_after", "findings_gone", "findings_new")


class Writer:
    """``runs.jsonl`` and ``runs.parquet`` written a row (a row group) at a time, then the report files.

    A folder that cannot be made or written is refused before any run is replayed; a file that cannot be
    written later is one line naming it (:class:`ctxcore.errors.InputError`), never a traceback."""

    GROUP = 512  # rows per parquet row group: what is held before it is written

    def __init__(self, out: str):
        import pyarrow.parquet as pq

        if os.path.exists(out) and not os.path.isdir(out):
            raise InputError("is a file; --out needs a folder (it is made if missing)", source=out)
        self.out, self.rows, self.jsonl, self.parquet = out, [], None, None
        self.schema = _schema()
        try:
            os.makedirs(out, exist_ok=True)
        except OSError as err:
            raise InputError(f"cannot make the output folder ({_reason(err)})", source=out) from None
        with _writing(os.path.join(out, "runs.jsonl")) as path:
            self.jsonl = open(path, "w", encoding="utf-8")
        try:
            with _writing(os.path.join(out, "runs.parquet")) as path:
                self.parquet = pq.ParquetWriter(path, self.schema)
        except InputError:
            self.jsonl.close()
            raise

    def write(self, row: dict) -> None:
        with _writing(self.jsonl.name):
            self.jsonl.write(json.dumps(row, ensure_ascii=False) + "\n")
        self.rows.append(row)
        if len(self.rows) >= self.GROUP:
            self._flush()

    def _flush(self) -> None:
        import pyarrow as pa

        if self.rows:
            with _writing(os.path.join(self.out, "runs.parquet")):
                self.parquet.write_table(pa.Table.from_pylist([{k: r[k] for k in COLUMNS} for r in self.rows],
                                                              schema=self.schema))
            self.rows = []

    def close(self) -> None:
        """Flush and close both files; each is closed even when writing the other fails."""
        if self.parquet is None:
            return
        try:
            self._flush()
            with _writing(os.path.join(self.out, "runs.parquet")):
                self.parquet.close()
        finally:
            self.parquet = None
            with _writing(self.jsonl.name):
                self.jsonl.close()

    def finish(self, report: dict, md: str) -> list[str]:
        """Write ``report.json`` and ``report.md``; what could not be written, one line each (the other file is
        still written, and the caller still has the report to show)."""
        failed = []
        for name, text in (("report.json", json.dumps(report, ensure_ascii=False, indent=2) + "\n"),
                           ("report.md", md)):
            try:
                with _writing(os.path.join(self.out, name)) as path, open(path, "w", encoding="utf-8") as f:
                    f.write(text)
            except InputError as err:
                failed.append(str(err))
        return failed


def _reason(err: OSError) -> str:
    return err.strerror or str(err) or type(err).__name__


@contextmanager
def _writing(path: str):
    """An OSError while writing ``path`` as one line naming it."""
    try:
        yield path
    except OSError as err:
        raise InputError(f"cannot write the file ({_reason(err)})", source=path) from None
