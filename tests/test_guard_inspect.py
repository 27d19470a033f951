"""``inspect``'s words held by hand-valued tables (issue #29). Each test names the bug it was checked against."""

from pathlib import Path

import pytest

from ctxcore.errors import InputError
from ctxcore.io.inspect import PROMPT_LINES, _cut, closest, error_report, inspect_file


@pytest.mark.parametrize("text, n, cut", [
    ("abcde", 5, "abcde"), ("abcdef", 5, "abcd\u2026"), ("a  b\n c", 5, "a b c"), (None, 3, ""), ("", 3, "")])
def test_cut_folds_whitespace_and_cuts_with_an_ellipsis_at_n(text, n, cut):
    """Plant: ``len(text) < n`` (a text of exactly n characters cut)."""
    assert _cut(text, n) == cut


@pytest.mark.parametrize("data, said", [
    ({"resourceSpans": []}, "OTLP JSON, which lacks resourceSpans[].scopeSpans[].spans"),
    ({"observations": []}, "a Langfuse trace, which lacks observations with a type (SPAN, GENERATION, RETRIEVER)"),
    ({"info": {}}, "an MLflow trace, which lacks data.spans"),
    ({"run_type": "llm"}, "a LangSmith run, which lacks id and inputs/outputs"),
    ({"spans": []}, "an OpenInference span export, which lacks span_kind or context.span_id on each span"),
    ({"data": []}, "a Phoenix span export, which lacks span_kind or context.span_id on each span"),
    ({"attributes": {}}, "an OpenInference span, which lacks span_kind or context.span_id"),
    ([1, {"run_type": "llm"}], "a LangSmith run, which lacks id and inputs/outputs"),
])
def test_closest_format_names_what_the_file_lacks(data, said):
    assert closest(data) == f"not a logged trace: closest format recognised: {said}"


def test_closest_for_no_object_and_for_an_unknown_object():
    assert closest([1, 2]) == ("not a logged trace: no format recognised (expected a JSON object, a list of spans "
                               "or JSONL)")
    assert closest({"x": 1}).startswith("not a logged trace: closest format recognised: a ctxcore candidates "
                                        "object, which lacks 'candidates'")


def test_prompt_lines_and_error_report():
    assert PROMPT_LINES == 8
    rep = error_report("bad.json: not JSON", "bad.json", "otlp")
    assert rep == {"source": "bad.json", "format": "otlp", "error": "bad.json: not JSON"}


# --------------------------------------------------------------------------- report_text, line by line (issue #29)

from ctxcore.io.inspect import report_text  # noqa: E402


def _rep(**over):
    rep = {"source": "t.json", "format": "openinference", "conventions": ["openinference"],
           "runs": [{"run": 1, "id": "r" * 40, "retrieval": True, "llm": True, "documents": 2, "start": "2026-01-01"},
                    {"run": 2, "id": 7, "retrieval": False, "llm": False, "documents": 0, "start": None}],
           "run": 1, "trace_id": "tr1", "query": "how  long\ndo refunds take", "query_from": "retriever",
           "model": "gpt-x", "prompt_tokens": 0, "llm_span": "llm-1", "reranked": ["b", "a"],
           "reranker_cut": ["c", "d"], "prompt_head": ["line one", "x" * 120], "prompt_lines": 3, "answer": "five days",
           "documents": [{"id": "a" * 30, "score": 0.123456, "text": "refunds   take five days", "reranker": 0.5},
                         {"id": "b", "score": None, "text": "y" * 90}],
           "not_found": ["model: none"], "unmapped": ["attr x"], "warnings": ["w1"], "policy_lines": ["policy: p"]}
    rep.update(over)
    return rep


def test_report_text_every_line_of_a_full_report():
    assert report_text(_rep()).split("\n") == [
        "file: t.json",
        "format: openinference (attributes: openinference)",
        "",
        "runs (2):",
        "  #    id                                  retrieval  llm  docs  start",
        "* 1    " + "r" * 36 + " yes        yes  2     2026-01-01",
        "  2    7                                    no         no   0     ",
        "",
        "run 1 (tr1):",
        "  query: how long do refunds take   [from retriever]",
        "  model: gpt-x   prompt tokens: 0   LLM span: llm-1",
        "  logged prompt (3 lines):",
        "    | line one",
        "    | " + "x" * 109 + "…",
        "    | … 1 more lines",
        "  answer: five days",
        "  documents (2):",
        "    " + "a" * 24 + " 0.123  refunds take five days  [reranker: 0.5]",
        "    b                               " + "y" * 79 + "…",
        "  reranker kept, in order: b, a; cut: c, d",
        "  policy: p",
        "  not found:",
        "    - model: none",
        "  not read:",
        "    - attr x",
        "  warnings:",
        "    - w1",
    ]


def test_report_text_of_a_run_where_nothing_was_found():
    rep = _rep(conventions=[], run=None, query=None, query_from=None, model=None, prompt_tokens=None, llm_span=None,
               reranked=[], reranker_cut=["c"], prompt_head=[], prompt_lines=0, answer=None,
               documents=[{"id": "d", "score": 2.0, "text": "q" * 80, "reranker": 0}], not_found=[], unmapped=[],
               warnings=[])
    del rep["policy_lines"]
    assert report_text(rep).split("\n")[1:2] == ["format: openinference"]
    assert report_text(rep).split("\n")[5:] == [
        "  1    " + "r" * 36 + " yes        yes  2     2026-01-01",
        "  2    7                                    no         no   0     ",
        "",
        "run ? (tr1):",
        "  query: (none)",
        "  model: (none)   prompt tokens: (none)   LLM span: (none)",
        "  logged prompt (0 lines):",
        "    (none)",
        "  answer: (none)",
        "  documents (1):",
        "    d                        2      " + "q" * 80,
    ]


def test_report_text_prompt_all_shown_and_reranked_without_a_cut():
    rep = _rep(prompt_head=["a", "b"], prompt_lines=2, reranked=["a"], reranker_cut=[], query="q" * 201,
               answer="z" * 301)
    lines = report_text(rep).split("\n")
    assert "    | … 0 more lines" not in lines and lines[lines.index("    | b") + 1] == "  answer: " + "z" * 299 + "…"
    assert "  reranker kept, in order: a" in lines
    assert "  query: " + "q" * 199 + "…   [from retriever]" in lines
    rep = _rep(query="q" * 200, answer="z" * 300)
    lines = report_text(rep).split("\n")
    assert "  query: " + "q" * 200 + "   [from retriever]" in lines and "  answer: " + "z" * 300 in lines


def test_report_text_of_an_error_and_of_a_plain_candidates_file():
    assert report_text({"error": "bad: why", "format": None}) == "bad: why"
    assert report_text({"error": "bad: why", "format": "span-attributes"}) == "bad: why"
    assert report_text({"error": "bad: why", "format": "langfuse"}) == "bad: why (detected format: langfuse)"
    assert report_text({"source": "c.json", "format": "json", "logged": False, "documents": 3}) == \
        "c.json: json input with 3 candidates (not a logged trace)"
    assert report_text({"source": "c.json", "format": "json"}) == \
        "c.json: json input with 0 candidates (not a logged trace)"
    # a logged file whose run list came back empty is still reported as a logged file
    assert report_text(_rep(runs=[])).split("\n")[:5] == [
        "file: t.json", "format: openinference (attributes: openinference)", "", "runs (0):",
        "  #    id                                  retrieval  llm  docs  start"]


def test_closest_for_an_object_with_none_of_the_span_fields():
    assert closest({"x": 1}) == ("not a logged trace: closest format recognised: a ctxcore candidates object, which "
                                 "lacks 'candidates' (nor does it have span fields: span_kind, context, resourceSpans, "
                                 "observations, run_type, info)")


def test_report_text_names_every_attribute_convention_comma_separated():
    assert report_text(_rep(conventions=["openinference", "gen_ai"])).split("\n")[1] == \
        "format: openinference (attributes: openinference, gen_ai)"


# --- inspect_file: each way a file is read, as the whole report or its deciding fields ------------------------

_TRACES = Path(__file__).resolve().parent / "fixtures" / "traces"
_CLOSEST = ("f.json: not a logged trace: closest format recognised: a ctxcore candidates object, which lacks "
            "'candidates' (nor does it have span fields: span_kind, context, resourceSpans, observations, run_type, "
            "info)")


@pytest.mark.parametrize("raw, rep", [
    (b"\xff\xfe bad", {"source": "f.json", "format": None,
                       "error": "f.json, line 1: not UTF-8 text (byte 0xff at offset 0); save the file as UTF-8"}),
    (b'{"candidates": [{"id": "a", "text": "x"}], "query": "q"}',
     {"source": "f.json", "format": "json", "logged": False, "documents": 1}),
    (b'[{"id": "a", "text": "x"}, {"id": "b", "text": "y"}]',
     {"source": "f.json", "format": "json", "logged": False, "documents": 2}),
    (b'{"candidates": "no"}',
     {"source": "f.json", "format": None, "error": "f.json, field 'candidates': must be a list of candidate objects"}),
    (b'{"format": "ctxcore/0"}', {"source": "f.json", "format": None, "error": (
        "f.json, field 'format': unsupported trace format 'ctxcore/0'; this version reads 'ctxcore.trace/1'")}),
    (b'[{"id": "a"}]', {"source": "f.json", "format": None, "error": _CLOSEST}),   # not every item has a text
    (b'{"foo": 1}', {"source": "f.json", "format": None, "error": _CLOSEST}),
    (b"[]", {"source": "f.json", "format": None, "error": (
        "f.json: not a logged trace: no format recognised (expected a JSON object, a list of spans or JSONL)")}),
])
def test_a_file_that_is_not_a_logged_trace_is_read_as_candidates_or_said_in_one_line(raw, rep):
    assert inspect_file(raw, name="f.json") == rep


def test_a_parquet_file_that_cannot_be_read_names_its_format():
    rep = inspect_file(b"PAR1xxxxPAR1", name="spans.parquet")
    assert (rep["source"], rep["format"]) == ("spans.parquet", "phoenix-parquet")
    assert rep["error"].startswith("spans.parquet: not a readable parquet file (")


def test_a_logged_trace_is_reported_for_the_run_asked_for_under_the_name_given():
    path = _TRACES / "phoenix_multi.jsonl"
    rep = inspect_file(str(path), run=2)
    assert (rep["source"], rep["format"], rep["run"], rep["trace_id"]) == (
        str(path), "openinference", 2, "e3f2a1b0c9d8e7f6a5b4c3d2e1f00112")
    assert rep["query"] == "Can the customer keep a cracked $30 vase if we refund it?"
    named = inspect_file(path.read_bytes(), trace_id="7d0c6f1e2a3b4c5d6e7f8091a2b3c4d5", name="mine.jsonl")
    assert (named["source"], named["run"], named["trace_id"]) == ("mine.jsonl", 1, "7d0c6f1e2a3b4c5d6e7f8091a2b3c4d5")


@pytest.mark.parametrize("options, error", [
    ({"run": 99}, "mine.jsonl, field 'run': run 99 is not in the file; it holds 2 runs (python -m ctxcore inspect "
                  "lists them)"),
    ({"trace_id": "nope"}, "mine.jsonl, field 'trace_id': trace 'nope' is not in the file; it holds: "
                           "7d0c6f1e2a3b4c5d6e7f8091a2b3c4d5, e3f2a1b0c9d8e7f6a5b4c3d2e1f00112"),
])
def test_a_run_that_is_not_in_the_file_is_one_line_with_the_detected_format(options, error):
    raw = (_TRACES / "phoenix_multi.jsonl").read_bytes()
    assert inspect_file(raw, name="mine.jsonl", **options) == {"source": "mine.jsonl", "format": "openinference",
                                                                "error": error}


def test_documents_logged_by_id_only_are_read_with_the_texts_given():
    raw = (_TRACES / "otlp_genai.json").read_bytes()
    without = inspect_file(raw, name="g.json")
    assert without["format"] == "otlp" and "give their text in a candidates file" in without["error"]
    texts = {"kb-101": "Refunds take five days.", "kb-102": "Exchanges within 30 days.", "kb-103": "Keep the receipt."}
    rep = inspect_file(raw, name="g.json", texts=texts)
    assert "error" not in rep and rep["source"] == "g.json"
    assert [d["id"] for d in rep["documents"]] == ["kb-101", "kb-102", "kb-103"]


def test_text_that_is_not_json_is_named_with_the_file():
    assert inspect_file(b'{"candidates": [', name="f.json") == {
        "source": "f.json", "format": None, "error": "f.json, line 1: not valid JSON: Expecting value (column 17)"}


def test_what_a_higher_layer_adds_to_a_logged_run_and_why_it_could_not():
    path = str(_TRACES / "phoenix_multi.jsonl")
    rep = inspect_file(path, enrich=lambda loaded: {"policy": {"rules": len(loaded.candidates)}})
    assert rep["policy"] == {"rules": len(rep["documents"])} and rep["run"] == 1

    def refuse(loaded):
        raise InputError("no prompt to read", source="x")

    rep = inspect_file(path, enrich=refuse)
    assert "policy" not in rep and rep["not_found"][-1] == "policy: not inferred (x: no prompt to read)"


# --- what report() says of one run, field by field --------------------------------------------------------------

from dataclasses import replace  # noqa: E402

from ctxcore import Candidate  # noqa: E402
from ctxcore.io.formats import load_run  # noqa: E402
from ctxcore.io.inspect import report  # noqa: E402
from ctxcore.io.loaded import Loaded  # noqa: E402

_PROMPT_MISSING = "logged prompt: no LLM call with messages or prompts in this run (or a sibling trace)"


def _run_one():
    loaded = load_run((_TRACES / "phoenix_multi.jsonl").read_bytes(), run=1, name="m.jsonl")
    return loaded, loaded.logged


def test_a_run_with_everything_logged_misses_nothing_and_names_its_source():
    loaded, lg = _run_one()
    rep = report(loaded)
    assert (rep["source"], rep["not_found"], rep["model"], rep["prompt_tokens"]) == ("m.jsonl", [], "gpt-4o-mini", 300)
    assert report(loaded, "other.jsonl")["source"] == "other.jsonl"


def test_every_field_a_run_lacks_is_named_in_order():
    """No question, no answer, no model, no count of prompt tokens: each one line, in this order."""
    loaded, lg = _run_one()
    bare = replace(loaded, query="", logged=replace(lg, answer=None, model=None, prompt_tokens=None))
    rep = report(bare)
    assert rep["not_found"] == ["query: no question in the retriever, reranker or root span input",
                                "answer: no LLM output and no root span output",
                                "model: the LLM call names none",
                                "prompt tokens: the log counted none"]
    assert (rep["query"], rep["answer"], rep["model"], rep["prompt_tokens"]) == (None, None, None, None)
    # an empty answer or a zero count was logged: not missing
    said = report(replace(loaded, logged=replace(lg, answer="", prompt_tokens=0)))
    assert said["not_found"] == [] and (said["answer"], said["prompt_tokens"]) == ("", 0)


def test_a_run_without_a_prompt_has_no_prompt_lines():
    loaded, lg = _run_one()
    rep = report(replace(loaded, logged=replace(lg, prompt_text=None)))
    assert rep["not_found"] == [_PROMPT_MISSING]
    assert (rep["prompt_head"], rep["prompt_lines"]) == ([], 0)


def test_each_document_is_its_id_score_document_and_first_hundred_characters_and_its_reranker_score():
    loaded, lg = _run_one()
    cands = (Candidate("a", "x" * 101, 0.5, doc_id="d1", metadata={"reranker": 0.91}),
             Candidate("b", "short", None))
    rep = report(replace(loaded, candidates=cands))
    assert rep["documents"] == [{"id": "a", "score": 0.5, "doc_id": "d1", "text": "x" * 100, "reranker": 0.91},
                                {"id": "b", "score": None, "doc_id": None, "text": "short"}]


def test_a_file_that_is_not_a_logged_trace_is_its_source_format_and_count():
    plain = Loaded((Candidate("a", "text"),), "q", source="cands.json")
    assert report(plain) == {"source": "cands.json", "format": "json", "logged": False, "documents": 1}
    assert report(plain, "given.json")["source"] == "given.json"


def test_a_shape_refused_as_soon_as_it_is_recognised_is_one_line_naming_the_file():
    """A Langfuse trace that lists its observations by id is refused while its shape is read: inspect says so in
    a line, as for every other file it cannot read (it raised before)."""
    raw = b'{"id": "t1", "observations": ["o1", "o2"], "input": "q"}'
    assert inspect_file(raw, name="lf.json") == {
        "source": "lf.json", "format": None,
        "error": "lf.json, field 'observations': this Langfuse trace lists observation ids only; export it with its "
                 "observations (GET /api/public/traces/{traceId})"}


def test_a_run_not_among_the_files_runs_is_no_run_and_every_reranker_field_is_reported():
    loaded, lg = _run_one()
    odd = replace(lg, runs=(), retriever_spans=("s1", "s2"), reranker={"span": "s3", "model": "rr", "top_k": 2},
                  reranked=("b", "a"), reranker_cut=("c",))
    rep = report(replace(loaded, logged=odd, warnings=("first", "second")))
    assert (rep["runs"], rep["run"]) == ([], None)
    assert (rep["retriever_spans"], rep["reranker"], rep["reranked"], rep["reranker_cut"]) == (
        ["s1", "s2"], {"span": "s3", "model": "rr", "top_k": 2}, ["b", "a"], ["c"])
    assert rep["warnings"] == ["first", "second"]
