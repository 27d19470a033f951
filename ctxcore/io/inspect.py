"""What a logged-trace file holds, as the CLI's ``inspect`` and the app's "About this file" panel
show it: the detected format, the runs found, and for the chosen run the query, model, logged
prompt, answer and documents, with what was not found and why."""

from __future__ import annotations

from typing import Any, Callable, Optional

from ..errors import BuildError, InputError
from .formats.parquet import is_parquet
from .formats.shapes import family_of, load_run
from .loaded import Loaded
from .loaders import load
from .reading import decode, parse_text, read_bytes

PROMPT_LINES = 8


def closest(data) -> str:
    """For a file no family reads: the closest format recognised and the field it lacked."""
    if isinstance(data, list):
        data = next((x for x in data if isinstance(x, dict)), None)
    if not isinstance(data, dict):
        return "not a logged trace: no format recognised (expected a JSON object, a list of spans or JSONL)"
    guesses = (("resourceSpans", "OTLP JSON", "resourceSpans[].scopeSpans[].spans"),
               ("observations", "a Langfuse trace", "observations with a type (SPAN, GENERATION, RETRIEVER)"),
               ("info", "an MLflow trace", "data.spans"),
               ("run_type", "a LangSmith run", "id and inputs/outputs"),
               ("spans", "an OpenInference span export", "span_kind or context.span_id on each span"),
               ("data", "a Phoenix span export", "span_kind or context.span_id on each span"),
               ("attributes", "an OpenInference span", "span_kind or context.span_id"))
    for key, name, lacks in guesses:
        if key in data:
            return f"not a logged trace: closest format recognised: {name}, which lacks {lacks}"
    return ("not a logged trace: closest format recognised: a ctxcore candidates object, which lacks 'candidates' "
            "(nor does it have span fields: span_kind, context, resourceSpans, observations, run_type, info)")


Enrich = Callable[[Loaded], dict]  # more facts about a logged run from a higher layer (the CLI passes the policy)


def report(loaded: Loaded, source: Optional[str] = None, enrich: Optional[Enrich] = None) -> dict[str, Any]:
    """The facts about an imported file and its chosen run (plain JSON-ready values); ``enrich`` adds what a
    higher layer reads off the run (io does not import the analysis layer)."""
    lg = loaded.logged or (loaded.trace.logged if loaded.trace is not None else None)
    if lg is None:
        return {"source": source or loaded.source, "format": loaded.format, "logged": False,
                "documents": len(loaded.candidates)}
    missing = []
    if not loaded.query:
        missing.append("query: no question in the retriever, reranker or root span input")
    if lg.prompt_text is None:
        missing.append("logged prompt: no LLM call with messages or prompts in this run (or a sibling trace)")
    if lg.answer is None:
        missing.append("answer: no LLM output and no root span output")
    if lg.model is None:
        missing.append("model: the LLM call names none")
    if lg.prompt_tokens is None:
        missing.append("prompt tokens: the log counted none")
    prompt_lines = (lg.prompt_text or "").splitlines()
    docs = [{"id": c.id, "score": c.score, "doc_id": c.doc_id, "text": c.text[:100],
             **({"reranker": c.metadata["reranker"]} if "reranker" in c.metadata else {})}
            for c in loaded.candidates]
    chosen = next((i for i, r in enumerate(lg.runs, 1) if r.get("id") == lg.trace_id), None)
    more = {}
    if enrich is not None and lg.prompt_text:
        try:
            more = enrich(loaded)
        except (InputError, BuildError) as err:
            missing.append(f"policy: not inferred ({err})")
    return {**more, "source": source or loaded.source, "format": lg.format, "conventions": list(lg.conventions),
            "runs": [{"run": i, **r} for i, r in enumerate(lg.runs, 1)], "run": chosen, "trace_id": lg.trace_id,
            "query": loaded.query or None, "query_from": lg.query_from, "model": lg.model,
            "prompt_tokens": lg.prompt_tokens, "llm_span": lg.llm_span,
            "retriever_spans": list(lg.retriever_spans), "reranker": lg.reranker,
            "reranked": list(lg.reranked), "reranker_cut": list(lg.reranker_cut),
            "prompt_head": prompt_lines[:PROMPT_LINES], "prompt_lines": len(prompt_lines),
            "answer": lg.answer, "documents": docs, "spans": [dict(s) for s in lg.spans],
            "not_found": missing, "unmapped": list(lg.unmapped), "warnings": [str(w) for w in loaded.warnings]}


def error_report(message: str, source: str, fmt: Optional[str] = None) -> dict[str, Any]:
    return {"source": source, "format": fmt, "error": message}


def inspect_file(path, run: Optional[int] = None, trace_id: Optional[str] = None, texts: Optional[dict] = None,
                 name: Optional[str] = None, enrich: Optional[Enrich] = None) -> dict[str, Any]:
    """The report for a file: its chosen run, or one line saying why it cannot be read."""
    raw, source = read_bytes(path, name)
    fmt = "phoenix-parquet" if is_parquet(raw) else None
    if fmt is None:
        try:
            data = parse_text(decode(raw, source), source)
        except InputError as err:
            return error_report(str(err), source)
        try:
            family = family_of(data, source)  # a shape may be recognised and refused at once (ids only)
        except InputError as err:
            return error_report(str(err), source)
        if family is None:
            if isinstance(data, dict) and ("candidates" in data or "format" in data) or isinstance(data, list) \
                    and data and all(isinstance(x, dict) and "text" in x for x in data):
                try:
                    return report(load(raw, name=source), source)
                except InputError as err:
                    return error_report(str(err), source)
            return error_report(f"{source}: {closest(data)}", source)
        fmt = family.name
    try:
        return report(load_run(raw, run=run, trace_id=trace_id, texts=texts, name=source), source, enrich)
    except InputError as err:
        return error_report(str(err), source, fmt)


def _cut(text: Optional[str], n: int) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= n else text[: n - 1] + "…"


def report_text(rep: dict[str, Any]) -> str:
    """The report as lines of text (the CLI's table format; the app renders the dict itself)."""
    if rep.get("error"):
        shown = rep.get("format") not in (None, "span-attributes")
        return rep["error"] + (f" (detected format: {rep['format']})" if shown else "")
    if "runs" not in rep:  # a plain candidates file (a logged trace always lists its runs, even none)
        return f"{rep['source']}: {rep['format']} input with {rep.get('documents', 0)} candidates (not a logged trace)"
    out = [f"file: {rep['source']}", f"format: {rep['format']}"
           + (f" (attributes: {', '.join(rep['conventions'])})" if rep.get("conventions") else ""), "",
           f"runs ({len(rep['runs'])}):"]
    out.append("  #    id                                  retrieval  llm  docs  start")
    for r in rep["runs"]:
        mark = "*" if r["run"] == rep["run"] else " "
        out.append(f"{mark} {r['run']:<4} {str(r['id'])[:36]:<36} {'yes' if r['retrieval'] else 'no':<10} "
                   f"{'yes' if r['llm'] else 'no':<4} {r['documents']:<5} {r['start'] or ''}")
    out += ["", f"run {rep['run'] or '?'} ({rep['trace_id']}):",
            f"  query: {_cut(rep['query'], 200) or '(none)'}" + (f"   [from {rep['query_from']}]" if rep['query_from'] else ""),
            f"  model: {rep['model'] or '(none)'}   prompt tokens: {rep['prompt_tokens'] if rep['prompt_tokens'] is not None else '(none)'}"
            f"   LLM span: {rep['llm_span'] or '(none)'}",
            f"  logged prompt ({rep['prompt_lines']} lines):"]
    out += [f"    | {_cut(line, 110)}" for line in rep["prompt_head"]] or ["    (none)"]
    if rep["prompt_lines"] > len(rep["prompt_head"]):
        out.append(f"    | … {rep['prompt_lines'] - len(rep['prompt_head'])} more lines")
    out.append(f"  answer: {_cut(rep['answer'], 300) or '(none)'}")
    out.append(f"  documents ({len(rep['documents'])}):")
    for d in rep["documents"]:
        score = "" if d["score"] is None else f"{d['score']:.3g}"
        note = f"  [reranker: {d['reranker']}]" if d.get("reranker") else ""
        out.append(f"    {d['id'][:24]:<24} {score:<6} {_cut(d['text'], 80)}{note}")
    if rep["reranked"]:
        out.append(f"  reranker kept, in order: {', '.join(rep['reranked'])}"
                   + (f"; cut: {', '.join(rep['reranker_cut'])}" if rep["reranker_cut"] else ""))
    out += [f"  {line}" for line in rep.get("policy_lines", ())]
    if rep["not_found"]:
        out += ["  not found:"] + [f"    - {m}" for m in rep["not_found"]]
    if rep["unmapped"]:
        out += ["  not read:"] + [f"    - {m}" for m in rep["unmapped"]]
    if rep["warnings"]:
        out += ["  warnings:"] + [f"    - {w}" for w in rep["warnings"]]
    return "\n".join(out)
