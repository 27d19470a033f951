"""``python -m ctxcore``: build, replay and inspect context from the command line.

Exit status: 0 success, 2 bad input or settings (one line on stderr), 1 unexpected failure.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tomllib
from contextlib import nullcontext
from pathlib import Path
from typing import Optional

from .analysis.answer import check_answer
from .stages.budget import describe as describe_budget
from .analysis.diagnosis import diagnose
from .errors import BuildError, InputError
from .analysis.explain import FIND_LIMIT, explain_text, find
from .io import remote, sources  # noqa: F401 - remote registers the Phoenix, MLflow, Langfuse, LangSmith readers
from .io.live import otlp as live_otlp, store as live_store  # registers the store: reader
from .io.formats import load_run
from .io.inspect import inspect_file, report_text
from .io.loaders import load
from .memo import one_shot
from .pipeline import evidence_cost
from .io.reading import decode, parse_json
from .records import PRESETS, Config, Logged, Trace
from .replay.run import BATCH, replay
from .replay.engines import CONNECT_TIMEOUT, ENGINES
from .replay.report import Summary, interrupted_line
from .io.schema import trace_schema
from .analysis import policy
from .analysis.sent import attach, of_trace
from .serialize import dumps
from . import serve as endpoint
from .settings import SETTINGS


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2, like every other bad-input path
        raise InputError(message, source=self.prog)


def _float(text):
    if text.lower() in ("off", "none", "null"):
        return None
    return float(text)


def _overhead(text):
    return text if text == "auto" else int(text)


def _share(text):
    return text if text == "auto" else float(text)


def _add_flag(g, st) -> None:
    """The CLI flag of one declared setting (and its off switch)."""
    if st.flag_value is not None:
        said = st.help if st.flag_value is True else f"switch {st.name} off (on: {st.help})"
        g.add_argument(st.cli, action="store_const", const=st.flag_value, dest=st.name, help=said)
        return
    kw = {"dest": st.name, "help": st.help}
    if st.kind == "choice":
        kw["choices"] = st.choices
    elif st.kind == "overhead":
        kw.update(type=_overhead, metavar="N|auto")
    elif st.kind == "share":
        kw.update(type=_share, metavar="FRACTION|auto")
    elif st.kind == "int":
        kw["type"] = int
    elif st.kind == "float":
        kw["type"] = _float if st.nullable and not st.off_flag else float
    if st.off_flag:
        both = g.add_mutually_exclusive_group()
        both.add_argument(st.cli, **kw)
        both.add_argument(st.off_flag, action="store_const", const=True, dest="no_" + st.name,
                          help=f"switch {st.name} off")
    else:
        g.add_argument(st.cli, **kw)


def _run_options(b: argparse.ArgumentParser) -> None:
    """Which run of a logged file, and the text of documents it logged by id only."""
    b.add_argument("--trace-id", dest="trace_id", help="which trace of a file that logged several")
    b.add_argument("--run", type=int, metavar="N", help="the N-th run of a logged file, as inspect lists them "
                   "(default: the first with both retrieval and an LLM call)")
    b.add_argument("--candidates", metavar="FILE", help="candidates (id, text) giving the text of documents a "
                   "log recorded by id only (e.g. gen_ai.retrieval.documents)")


def _settings_options(b: argparse.ArgumentParser) -> None:
    b.add_argument("--query")
    _run_options(b)
    b.add_argument("--config", metavar="FILE", help="JSON file of settings")
    g = b.add_argument_group("settings (each overrides the file's own)")
    tokenizer = g.add_mutually_exclusive_group()
    for st in SETTINGS:
        _add_flag(tokenizer if st.kind in ("encoding", "model") else g, st)
    g.add_argument("--preset", choices=("naive", "recommended"), help="apply a preset before the other flags")


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m ctxcore", description="Context construction debugger: see which candidates "
                "reach the prompt, and why the others did not.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    b = sub.add_parser("build", help="build the prompt and trace for a candidates file or a trace (replay)")
    b.add_argument("input", metavar="INPUT", help="JSON, JSONL, CSV, a ctxcore trace (replayed), or a logged "
                   "trace (Phoenix JSON/parquet, OTLP JSON, Langfuse, LangSmith, MLflow; see inspect)")
    _settings_options(b)
    b.add_argument("--format", choices=("table", "json", "prompt"), default="table")
    e = sub.add_parser("explain", help="findings for a trace, or why text (--find) did or did not reach the prompt")
    e.add_argument("input", metavar="TRACE")
    e.add_argument("--find", metavar="TEXT", help="a phrase or number, e.g. '650 EUR'")
    _settings_options(e)
    e.add_argument("--format", choices=("table", "json"), default="table")
    c = sub.add_parser("check-answer", help="check an answer's citations, quotes and numbers against the prompt")
    c.add_argument("input", metavar="TRACE")
    c.add_argument("--answer", metavar="FILE", help="the model's answer (default: the answer logged in TRACE)")
    _settings_options(c)
    c.add_argument("--format", choices=("table", "json"), default="table")
    i = sub.add_parser("inspect", help="what a logged trace file holds: its format, runs, and the chosen run's query, "
                       "model, prompt, answer and documents")
    i.add_argument("input", metavar="FILE")
    _run_options(i)
    i.add_argument("--format", choices=("table", "json"), default="table")
    f = sub.add_parser("fetch", help="fetch a trace from where it lives (Phoenix, MLflow, Langfuse, LangSmith, the "
                       "live store) and write its export, which imports like a downloaded file")
    f.add_argument("source", metavar="SOURCE", help="SCHEME:URL#TRACE_ID (phoenix, mlflow, langfuse, langsmith, "
                   "store), or the trace's URL as copied from the tool; credentials come from environment variables")
    f.add_argument("--out", metavar="FILE", help="write the export here (default: stdout)")
    s = sub.add_parser("schema", help="print the JSON Schema of the trace format")
    s.set_defaults(format="json")
    _replay_parser(sub)
    _serve_parser(sub)
    sub.add_parser("app", help="start the Streamlit app (--otlp[=PORT]: with the OTLP endpoint beside it, see serve); any further options go to streamlit run "
                   "(e.g. --server.port 8502)", usage="%(prog)s [streamlit options]")
    return p


def _replay_parser(sub) -> None:
    r = sub.add_parser("replay", help="replay every run of a trace log under new settings; report what changes")
    r.add_argument("logs", nargs="+", metavar="LOG", help="trace files, JSONL logs (one trace a line), span exports "
                   "of many runs, directories or globs of them, in any mix; store:PATH is every run a live store "
                   "holds, oldest first (store: the default one), store:PATH#TRACE_ID or store:#latest one run")
    r.add_argument("--config", metavar="NEW.json", help="the new settings (the setting flags go on top)")
    r.add_argument("--baseline", metavar="OLD.json", help="compare with a build under these settings instead of "
                   "each run's logged prompt or own trace")
    r.add_argument("--out", metavar="DIR", help="write runs.parquet, runs.jsonl, report.json and report.md here")
    r.add_argument("--engine", choices=ENGINES, default="local",
                   help="local: a process pool (default); inprocess; dask: Dask distributed")
    r.add_argument("--workers", type=int, help="worker processes (default: one per core)")
    r.add_argument("--scheduler", metavar="tcp://HOST:PORT", help="a running Dask scheduler (with --engine dask)")
    r.add_argument("--connect-timeout", dest="connect_timeout", type=float, default=CONNECT_TIMEOUT, metavar="SECONDS",
                   help=f"how long to wait for the Dask scheduler and a first worker (default {CONNECT_TIMEOUT:g})")
    r.add_argument("--batch", type=int, default=BATCH, help=f"runs per task (default {BATCH})")
    r.add_argument("--no-findings", dest="findings", action="store_false",
                   help="skip comparing findings (they re-build every changed run many times)")
    r.add_argument("--format", choices=("table", "json"), default="table", help="the report on stdout")
    g = r.add_argument_group("new settings (each on top of --config)")
    tokenizer = g.add_mutually_exclusive_group()
    for st in SETTINGS:
        _add_flag(tokenizer if st.kind in ("encoding", "model") else g, st)
    g.add_argument("--preset", choices=("naive", "recommended"), help="apply a preset before the other flags")


def _serve_parser(sub) -> None:
    v = sub.add_parser("serve", help="receive traces live: an OTLP/HTTP endpoint (POST /v1/traces) that stores runs "
                       "for store:#latest and the app's Live page")
    v.add_argument("--port", type=int, default=endpoint.DEFAULT_PORT, help="default %(default)s (OTLP/HTTP's)")
    v.add_argument("--host", default="127.0.0.1", help="default %(default)s; 0.0.0.0 to accept other machines")
    v.add_argument("--store", metavar="PATH", help="the store file or folder (default: $CTXCORE_DATA_DIR/live.db, "
                   "else .ctxcore-data/live.db)")
    v.add_argument("--max-runs", type=int, default=live_store.MAX_RUNS, help="runs kept, the oldest dropped first "
                   "(default %(default)s)")
    v.add_argument("--max-mb", type=int, default=live_store.MAX_BYTES // 2**20, help="megabytes of spans kept, the "
                   "oldest runs dropped first (default %(default)s)")


def _serve(args, out) -> int:
    """``serve``: the endpoint in the foreground until interrupted; one line when it cannot start."""
    if not live_otlp.available():
        raise InputError("the endpoint needs opentelemetry-proto: pip install -r requirements-live.txt",
                         source="serve")
    try:
        if args.max_runs < 1 or args.max_mb < 1:
            raise InputError("--max-runs and --max-mb must be at least 1", source="serve")
        store = live_store.Store(live_store.path_of(args.store or ""), args.max_runs, args.max_mb * 2**20)
        server = endpoint.Endpoint((args.host, args.port), store)
    except (OSError, live_store.sqlite3.Error) as err:
        raise InputError(f"cannot start the endpoint on {args.host}:{args.port} ({err})", source="serve") from None
    out.write(f"receiving OTLP/HTTP traces at {endpoint.url(server)} (protobuf or JSON); storing in {store.path}\n")
    out.flush()
    try:
        server.serve_forever()
    finally:
        server.server_close()
    return 0


def _replay(args, out) -> int:
    """``replay LOG…``: the report on ``out``, progress on stderr."""
    new = {**_settings_file(args.config), **overrides(args)}
    if not new:
        raise InputError("give the new settings: --config NEW.json and/or setting flags", source="replay")
    Config.from_dict(new, source=args.config or "settings")
    baseline = _settings_file(args.baseline) if args.baseline else None
    if baseline is not None:
        Config.from_dict(baseline, source=args.baseline)
    if args.workers is not None and args.workers < 1:
        raise InputError("--workers must be at least 1", source="replay")
    if args.batch < 1:
        raise InputError("--batch must be at least 1", source="replay")
    if not args.connect_timeout > 0:
        raise InputError("--connect-timeout must be a positive number of seconds", source="replay")
    report = replay(args.logs, new, baseline, out=args.out, engine=args.engine, workers=args.workers,
                    scheduler=args.scheduler, batch=args.batch, with_findings=args.findings, progress=sys.stderr,
                    connect_timeout=args.connect_timeout)
    out.write((dumps(report) if args.format == "json" else Summary.markdown(report)) + "\n")
    out.flush()
    for line in report.get("unwritten", ()):
        print(f"error: {line} (the report is on stdout)", file=sys.stderr)
    if report.get("interrupted"):
        print(f"replay: {interrupted_line(report['interrupted'])}"
              + (f"; the partial report is in {args.out}" if args.out and not report.get("unwritten") else ""),
              file=sys.stderr)
        return 130
    return 2 if report.get("unwritten") else 0


def overrides(args) -> dict:
    out = dict(PRESETS[args.preset]) if getattr(args, "preset", None) else {}
    out.update({st.name: getattr(args, st.name) for st in SETTINGS if getattr(args, st.name, None) is not None})
    for st in SETTINGS:
        if st.off_flag and getattr(args, "no_" + st.name, None):
            out[st.name] = None
    if "model" in out:
        out.pop("encoding", None)
    return out


def table(trace: Trace) -> str:
    b = trace.budget
    counts = {k: v for k, v in trace.fate_counts().items() if v}
    lines = [
        f"query: {trace.query}",
        f"tokenizer: {trace.tokenizer.encoding}{'' if trace.tokenizer.exact else ' (approximate)'}  "
        f"window {b.window}, max output {b.max_output}, safety {b.safety:g}",
        f"budget: {describe_budget(b)}",
        f"evidence: {evidence_cost(trace)} of {b.docs} tokens; prompt: {trace.prompt.tokens} of {b.safe_input} tokens",
        "fates: " + ", ".join(f"{k} {v}" for k, v in counts.items()),
        "",
    ]
    rows = [("id", "fate", "stage", "tokens", "label", "reason")]
    for d in trace.decisions:
        rows.append((d.id, d.fate, d.stage, "" if d.tokens is None else str(d.tokens), d.label or "", d.reason))
    widths = [min(max(len(r[i]) for r in rows), 32) for i in range(5)]
    for r in rows:
        lines.append("  ".join(r[i][:32].ljust(widths[i]) for i in range(5)) + "  " + r[5])
    if trace.warnings:
        lines += ["", "warnings:"] + [f"- {w}" for w in trace.warnings]
    return "\n".join(lines)


def _settings_file(path: Optional[str]) -> dict:
    if not path:
        return {}
    try:
        with open(path, "rb") as f:
            data = parse_json(f.read(), path)
    except OSError as err:
        raise InputError(f"cannot read the file ({err.strerror})", source=path) from None
    if isinstance(data, dict) and isinstance(data.get("config"), dict):
        data = data["config"]
    if not isinstance(data, dict):
        raise InputError("settings must be a JSON object", source=path)
    return data


def _companion(path: Optional[str]) -> Optional[dict]:
    """Document texts by id (and by doc_id) from a candidates file, for logs that kept ids only."""
    if not path:
        return None
    texts: dict = {}
    for c in load(path).candidates:
        texts.setdefault(c.id, c.text)
        if c.doc_id:
            texts.setdefault(c.doc_id, c.text)
    return texts


def _fetched(args) -> tuple[object, Optional[str], Optional[str]]:
    """(the input, its display name, the trace id to pick): a source (``phoenix:URL#ID``, ``store:#latest``, a
    trace's URL) is fetched into an export's bytes first, so it imports as a downloaded file would."""
    src = sources.parse(args.input)
    if src is None:
        return args.input, None, args.trace_id
    name, data = sources.fetch(src)
    # a tool's reader fetches just the trace named (a LangSmith run id names the trace around it, whose id
    # differs), so only a store's run is picked from the export by its id
    picked = src.trace if src.scheme == "store" and src.trace != "latest" else None
    return data, name, args.trace_id or picked


def _input(args):
    """The file (or fetched source) as ctxcore input; a logged trace's chosen run when --trace-id, --run or
    --candidates is given."""
    texts = _companion(args.candidates)
    data, name, trace_id = _fetched(args)
    if trace_id or args.run is not None or texts:
        return load_run(data, run=args.run, trace_id=trace_id, texts=texts, name=name)
    return load(data, name=name)


def _fetch(args, out) -> int:
    """``fetch SOURCE``: the export, checked to import (a trace without retrieval is refused), on stdout or --out."""
    src = sources.parse(args.source)
    if src is None:
        raise InputError("not a source: give SCHEME:URL#TRACE_ID (phoenix, mlflow, langfuse, langsmith, store) "
                         "or a trace's URL copied from the tool", source=args.source)
    name, data = sources.fetch(src)
    load(data, name=name)  # one line now (no retrieval in it, ...) rather than when the file is opened
    if not args.out:
        out.write(data.decode("utf-8") + "\n")
        return 0
    try:
        Path(args.out).write_bytes(data)
    except OSError as err:
        raise InputError(f"cannot write the file ({err.strerror})", source=args.out) from None
    print(f"fetch: wrote {name} to {args.out} ({len(data):,} bytes)", file=sys.stderr)
    return 0


def _inspect(args, out) -> int:
    data, name, trace_id = _fetched(args)
    rep = inspect_file(data, run=args.run, trace_id=trace_id, texts=_companion(args.candidates), name=name,
                       enrich=policy.report)
    out.write((dumps(rep) if args.format == "json" else report_text(rep)) + "\n")
    return 2 if rep.get("error") else 0


def _trace(args):
    """The trace to look at: a saved trace (rebuilt and checked on loading), else a build under the file's settings
    and the flags."""
    loaded = _input(args)
    settings = {**loaded.config, **_settings_file(args.config), **overrides(args)}
    if loaded.trace is not None and settings == loaded.config and args.query is None:
        return loaded, loaded.trace
    return loaded, loaded.build(loaded.settings(**settings), query=args.query)


def _rows(rows: list[tuple], header: tuple) -> str:
    rows = [header] + [tuple("" if v is None else str(v) for v in r) for r in rows]
    widths = [min(max(len(r[i]) for r in rows), 40) for i in range(len(header) - 1)]
    return "\n".join("  ".join(r[i][:40].ljust(widths[i]) for i in range(len(header) - 1)) + "  " + r[-1]
                     for r in rows)


def _logged(loaded):
    """The logged request of an imported trace (or of a saved trace that kept it); an empty one otherwise."""
    return loaded.logged or (loaded.trace.logged if loaded.trace is not None else None) or Logged(loaded.format)


def run(argv=None, out=sys.stdout) -> int:
    args, rest = parser().parse_known_args(argv)
    if args.command == "app":
        return launch_app(_otlp_option(rest))
    if rest:
        parser().error(f"unrecognized arguments: {' '.join(rest)}")
    if args.command == "schema":
        out.write(dumps(trace_schema()) + "\n")
        return 0
    if args.command == "replay":
        return _replay(args, out)
    if args.command == "serve":
        return _serve(args, out)
    if args.command == "inspect":
        return _inspect(args, out)
    if args.command == "fetch":
        return _fetch(args, out)
    with one_shot() if args.command == "build" else nullcontext():  # no rebuild follows a build's output
        loaded, trace = _trace(args)
    trace = policy.attach(attach(trace))  # a logged trace carries its sent context and policy (logged.sent, .policy)
    if args.command == "build":
        text = {"json": trace.to_json, "prompt": lambda: trace.prompt.text}.get(args.format, lambda: table(trace))()
        out.write(text + "\n")
        return 0
    if args.command == "check-answer":
        answer = _read_answer(args.answer) if args.answer else _logged(loaded).answer
        if not answer:
            raise InputError("no answer given (--answer FILE) and none logged in the trace", source=args.input)
        prompt = _logged(loaded).prompt_text
        checks = check_answer(trace, answer, prompt, sent=of_trace(trace, prompt))
        if args.format == "json":
            out.write(dumps([c.to_dict() for c in checks]) + "\n")
        else:
            out.write(_rows([(c.kind, c.verdict, c.claim[:60], c.detail) for c in checks],
                            ("kind", "verdict", "claim", "detail")) + "\n")
        return 0
    said = policy.lines(policy.of(trace)) if args.format == "table" else []
    out.write("".join(line + "\n" for line in said) + ("\n" if said else ""))  # the pipeline's own rules first
    if args.find is not None:
        return _find(trace, args.find, args.format, out)
    logged = _logged(loaded)
    result = diagnose(trace, logged_prompt=logged.prompt_text, answer=logged.answer).findings
    if args.format == "json":
        out.write(dumps([f.to_dict() for f in result]) + "\n")
    elif not result:
        out.write("no findings: nothing in this context looks like a cause of a wrong answer\n")
    else:
        out.write(_rows([("root cause" if i == 0 and f.role == "cause" else f.role, f.kind,
                          json.dumps(f.fix) if f.fix else "", "yes" if f.fix_verified else "",
                          f"{f.title.rstrip('.')}: {f.evidence}" + (f" ({f.proof})" if f.proof else "")
                          + (f". What to change: {f.fix_said}" if f.fix_said else "")) for i, f in enumerate(result)],
                        ("role", "finding", "fix", "verified", "what")) + "\n")
    return 0


def _find(trace: Trace, text: str, fmt: str, out) -> int:
    """``explain --find``: the :data:`FIND_LIMIT` strongest candidates containing ``text``, explained (each
    explanation re-builds to verify its fix), and how many more contain it (json: that line on stderr)."""
    found = explain_text(trace, text, limit=FIND_LIMIT)
    more = len(find(trace, text)) - len(found)
    said = f"and {more:,} more containing {text!r} (the {FIND_LIMIT} strongest are listed; narrow the phrase " \
           "to see others)"
    if fmt == "json":
        out.write(dumps([e.to_dict() for e in found]) + "\n")
        if more:
            print(f"explain: {said}", file=sys.stderr)
    elif not found:
        out.write(f"no candidate contains {text!r}\n")
    else:
        out.write(_rows([(e.id, e.fate, e.stage, json.dumps(e.fix) if e.fix else "",
                          "yes" if e.fix_verified else "no", f"{e.note}. {e.reason}") for e in found],
                        ("id", "fate", "stage", "fix", "verified", "why")) + "\n" + (f"{said}\n" if more else ""))
    return 0


def _read_answer(path: str) -> str:
    try:
        with open(path, "rb") as f:
            return decode(f.read(), path)
    except OSError as err:
        raise InputError(f"cannot read the file ({err.strerror})", source=path) from None


def main(argv=None) -> int:
    try:
        return run(argv)
    except (InputError, BuildError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as err:  # noqa: BLE001 - last line of defence: no traceback for users
        print(f"error: unexpected {type(err).__name__}: {err} (please report this with the input file)",
              file=sys.stderr)
        return 1


def launch_app(options: list[str]) -> int:
    """``app [streamlit options]``: ``python -m streamlit run`` on this installation's app.py, replacing this
    process (so a signal that stops it stops the server, and no orphan is left)."""
    if importlib.util.find_spec("streamlit") is None:
        raise InputError("the app needs Streamlit: install ctxcore[app] (pip install 'ctxcore[app]')", source="app")
    root = app_root()
    cmd = [sys.executable, "-m", "streamlit", "run", *_app_config(root), str(root / "app.py"), *options]
    sys.stdout.flush()
    if os.name != "posix":
        return subprocess.call(cmd)
    os.execv(sys.executable, cmd)
    return 1  # not reached: execv returns only by raising


def _otlp_option(options: list[str]) -> list[str]:
    """``app --otlp[=PORT]``: the app starts the OTLP endpoint beside itself (the Live page reads the variable);
    the other options go to streamlit."""
    rest = []
    for opt in options:
        name, _, port = opt.partition("=")
        if name == "--otlp":
            if port and not port.isdigit():
                raise InputError(f"--otlp={port}: give a port number", source="app")
            os.environ["CTXCORE_OTLP_PORT"] = port or str(endpoint.DEFAULT_PORT)
        else:
            rest.append(opt)
    return rest


def app_root() -> Path:
    """Where app.py, pages/, ctxui/ and sample_data/ are: the checkout around this package, else the copy the
    wheel installed as the ``ctxcore_app`` folder."""
    checkout = Path(__file__).resolve().parents[1]
    spec = importlib.util.find_spec("ctxcore_app")
    for root in [checkout, *(map(Path, spec.submodule_search_locations or ()) if spec else ())]:
        if (root / "app.py").is_file() and (root / "pages").is_dir():
            return root
    raise InputError("the app's files are not installed: install ctxcore[app] (pip install 'ctxcore[app]')",
                     source="app")


def _app_config(root: Path) -> list[str]:
    """The app's own ``.streamlit/config.toml`` as ``--section.key value`` options: Streamlit reads that file
    from the working directory only, and the app should behave the same wherever it is started from (the
    user's options come after these and win)."""
    try:
        with open(root / ".streamlit" / "config.toml", "rb") as f:
            config = tomllib.load(f)
    except FileNotFoundError:
        return []
    return [arg for section, keys in config.items() for key, value in keys.items()
            for arg in (f"--{section}.{key}", str(value).lower() if isinstance(value, bool) else str(value))]
