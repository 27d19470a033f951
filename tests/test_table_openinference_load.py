"""One OpenInference run read as ctxcore input (ctxcore/io/formats/openinference.py ``_load`` and ``_producers``),
held by hand-valued tables (issue #29): documents that are not a list, runs grouped by trace id or by time when the
export lost its links, which run is shown, the refusal naming the span kinds, empty and combined retrievers,
retrievers nested in one another (by parent links and by time) read once or as filter steps, the reranker, the
question, the LLM call that was sent (model, settings, system, history, tools) or one recorded apart, what is left
unmapped, the stated limits and the span panel. Every warning list and unmapped note is asserted whole: a note too
many or too few is a change a user sees. Attribute names are the OpenInference semantic conventions as the module
reads them (Arize-ai/openinference, openinference-semantic-conventions: ``openinference.span.kind``,
``retrieval.documents.N.document.content``, ``reranker.output_documents``, ``llm.input_messages.N.message.content``,
``llm.invocation_parameters``, ``input.value`` ...)."""

import pytest

from ctxcore.errors import InputError
from ctxcore.io.formats import openinference as oi
from ctxcore.io.formats.spans import Span
from ctxcore.io.formats.values import unflatten
from ctxcore.records import Inputs

A, B, C = ("alpha", "d1", 0.9), ("beta", "d2", 0.8), ("gamma", "d3", 0.7)
T0 = 1714557600  # 2024-05-01T10:00:00Z
NO_LLM = "the prompt and answer (no LLM span in the trace)"
COMBINED = "2 retriever spans: their documents are combined in time order"


def sp(name, kind="", attrs=None, trace="t", id=None, parent=None, start=None, end=None, conv=None):
    return dict(name=name, kind=kind, trace_id=trace, span_id=id, parent_id=parent, start=start, end=end,
                attrs=unflatten(attrs or {}), convention=conv)


def docs(*items, at="retrieval.documents"):
    out = {}
    for i, (text, did, score) in enumerate(items):
        out.update({f"{at}.{i}.document.content": text, f"{at}.{i}.document.id": did,
                    f"{at}.{i}.document.score": score})
    return out


def ret(name="search", items=(A, B), q="What is X?", kind="RETRIEVER", **kw):
    return sp(name, kind, {**docs(*items), **({"input.value": q} if q else {})}, **kw)


def llm(name="gen", says="alpha beta", answer="The answer.", extra=None, **kw):
    attrs = {"llm.input_messages.0.message.role": "user", "llm.input_messages.0.message.content": says} if says else {}
    return sp(name, "LLM", {**attrs, **({"llm.output_messages.0.message.content": answer} if answer else {}),
                            **(extra or {})}, **kw)


def spans_of(*specs):
    return [Span(index=i, **s) for i, s in enumerate(specs)]


def load(*specs, trace_id=None, fmt="openinference", texts=None):
    return oi._load(spans_of(*specs), "oi.json", trace_id, fmt, texts)


def not_mapped(*notes):
    return f"not mapped from the openinference trace: {', '.join(notes)}"


def refused(*specs, trace_id=None, fmt="openinference"):
    with pytest.raises(InputError) as e:
        load(*specs, trace_id=trace_id, fmt=fmt)
    return str(e.value)


@pytest.mark.parametrize("path", ["retrieval.documents", "reranker.input_documents", "reranker.output_documents"])
@pytest.mark.parametrize("value", ["x", {"a": 1}, 5])
def test_documents_that_are_not_a_list_are_refused_in_any_run(path, value):
    bad = sp("odd", "CHAIN", {path: value}, trace="other")
    assert refused(ret(), bad) == \
        f"oi.json, field '{path}': CHAIN 'odd': the documents must be a list (indexed 0, 1, 2, ...)"


@pytest.mark.parametrize("fmt", ["openinference", "langsmith"])
def test_an_export_without_spans_is_refused(fmt):
    assert refused(fmt=fmt) == f"oi.json: the {fmt} export holds no spans"


def _three(b_start, c_start, c_trace="c", b_parent=None):
    return (ret("r1", trace="a", id="s1", start=T0, end=T0 + 1),
            llm(trace="b", id="s2", parent=b_parent, start=b_start, end=b_start and b_start + 1),
            ret("r2", (C,), trace=c_trace, id="s3", start=c_start, end=c_start and c_start + 1))


def _by_time(spans, runs):
    return (f"every span is its own trace (the export lost the trace links): grouped the {spans} spans into {runs} "
            f"runs by time (spans less than 2 s apart are one run)")


SIBLING = ("the run has no LLM call with a prompt; took the LLM 'gen' span of trace b, which ran in the same time "
           "window (recorded apart, e.g. by another instrumentor)")


@pytest.mark.parametrize("specs, groups, llm_span, warnings", [
    (_three(T0 + 3, T0 + 6.001), {"a": ["r1", "gen"], "c": ["r2"]}, "gen",
     (_by_time(3, 2), "file holds 2 traces; showing a")),
    (_three(T0 + 3, T0 + 6), {"a": ["r1", "gen", "r2"]}, "gen", (_by_time(3, 1), COMBINED)),
    (_three(T0 + 3.001, T0 + 6.002), {"a": ["r1"], "b": ["gen"], "c": ["r2"]}, None,
     ("file holds 3 traces; showing a", not_mapped(NO_LLM))),
    (_three(T0 + 3, None), {"a": ["r1"], "b": ["gen"], "c": ["r2"]}, "gen",
     ("file holds 3 traces; showing a", SIBLING)),
    (_three(T0 + 3, T0 + 6, c_trace="a"), {"a": ["r1", "r2"], "b": ["gen"]}, "gen",
     ("file holds 2 traces; showing a", COMBINED, SIBLING)),
    (_three(T0 + 3, T0 + 6, b_parent="s1"), {"a": ["r1"], "b": ["gen"], "c": ["r2"]}, "gen",
     ("file holds 3 traces; showing a", SIBLING)),
    (_three(T0 + 3, T0 + 6, b_parent="s9"), {"a": ["r1", "gen", "r2"]}, "gen", (_by_time(3, 1), COMBINED)),
])
def test_runs_by_trace_id_or_by_time_when_the_links_are_lost(specs, groups, llm_span, warnings):
    spans = spans_of(*specs)
    assert {k: [s.name for s in v] for k, v in oi.run_groups(spans).items()} == groups
    got = oi._load(spans, "oi.json", None)
    assert (got.logged.traces, got.logged.trace_id, got.logged.llm_span) == (tuple(groups), "a", llm_span)
    assert [r["id"] for r in got.logged.runs] == list(groups)
    assert got.warnings == warnings


@pytest.mark.parametrize("spans, warned", [
    ([], []),
    ([Span(0, "a", None, None, "x", "", T0)], []),
    ([Span(0, "a", None, None, "x", "", T0), Span(1, "b", None, None, "y", "", T0 + 1)], [_by_time(2, 1)]),
])
def test_grouping_warns_only_when_it_grouped_by_time(spans, warned):
    warnings = []
    oi._groups(spans, warnings)
    assert warnings == warned


def test_a_sibling_call_joins_the_span_panel_last():
    got = load(*_three(T0 + 3, None))
    assert [s["name"] for s in got.logged.spans] == ["r1", "gen"]
    assert (got.logged.prompt_text, got.logged.answer) == ("user: alpha beta", "The answer.")


def test_a_run_with_its_own_prompt_takes_no_sibling():
    own = llm("own", says="only the question", trace="a", start=T0 + 0.5)
    got = load(*_three(T0 + 3, None), own)
    assert (got.logged.llm_span, got.warnings) == ("own", ("file holds 3 traces; showing a",))


def _apart(name, start, says="alpha beta", kind="LLM"):
    if kind == "LLM":
        return llm(name, says=says, trace="b", start=start)
    return sp(name, kind, {"input.value": says}, trace="b", start=start)


@pytest.mark.parametrize("others, picked", [
    ([_apart("far", T0 + 2.5), _apart("near", T0 + 0.5)], "near"),
    ([_apart("far-with", T0 + 2.5), _apart("near-without", T0 + 0.5, says="nothing")], "far-with"),
    ([_apart("edge-low", T0 - 0.001)], "edge-low"),
    ([_apart("too-early", T0 - 0.0015)], None),
    ([_apart("edge-high", T0 + 3)], "edge-high"),
    ([_apart("too-late", T0 + 3.001)], None),
    ([_apart("before", T0 - 0.0005), _apart("after", T0 + 0.0002)], "after"),
    ([_apart("a", T0 + 1), _apart("b", T0 + 1)], "a"),
    ([_apart("chain", T0 + 0.5, kind="CHAIN"), _apart("call", T0 + 2)], "call"),
    ([_apart("untimed", None), _apart("call", T0 + 2)], "call"),
    ([_apart("quiet", T0 + 1, says=None)], None),
    ([], None),
])
def test_an_llm_call_recorded_apart_in_the_runs_time_window(others, picked):
    got = load(ret("r1", trace="a", start=T0, end=T0 + 1), sp("b-root", "CHAIN", trace="b"), *others)
    assert (got.logged.llm_span, got.logged.trace_id) == (picked, "a")
    apart = (f"the run has no LLM call with a prompt; took the LLM '{picked}' span of trace b, which ran in the same "
             f"time window (recorded apart, e.g. by another instrumentor)")
    assert got.warnings == ("file holds 2 traces; showing a", apart if picked else not_mapped(NO_LLM))


def run(tid, retrieval=True, llm=False, documents=2):
    return {"id": tid, "retrieval": retrieval, "llm": llm, "documents": documents, "start": None}


@pytest.mark.parametrize("specs, asked, shown, traces, runs", [
    ([sp("prep", "CHAIN", trace="a"), ret(trace="b")], None, "b", ("a", "b"),
     (run("a", False, documents=0), run("b"))),
    ([ret(trace="a"), ret(trace="b"), llm(trace="b")], None, "b", ("a", "b"), (run("a"), run("b", llm=True))),
    ([llm(trace="a"), ret(trace="b"), ret(trace="c")], None, "b", ("a", "b", "c"),
     (run("a", False, True, 0), run("b"), run("c"))),
    ([ret(trace=None), ret(trace="b")], None, None, ("b",), (run(None), run("b"))),
    ([ret(trace="a"), ret(trace="b"), llm(trace="b")], "a", "a", ("a", "b"), (run("a"), run("b", llm=True))),
    ([ret(trace="a")], "a", "a", ("a",), (run("a"),)),
])
def test_the_run_shown_retrieves_and_calls_an_llm_else_retrieves(specs, asked, shown, traces, runs):
    got = load(*specs, trace_id=asked)
    assert (got.logged.trace_id, got.logged.traces, got.logged.runs) == (shown, traces, runs)
    held = (f"file holds {len(runs)} traces; showing {shown}",) if len(runs) > 1 else ()
    sent = next(r["llm"] for r in runs if r["id"] == shown)
    assert got.warnings == held + (() if sent else (not_mapped(NO_LLM),))


def test_a_run_asked_for_that_is_not_in_the_file():
    assert refused(ret(trace="a"), ret(trace="b"), trace_id="zz") == \
        "oi.json, field 'trace_id': trace 'zz' is not in the file; it holds: a, b"


@pytest.mark.parametrize("specs, asked, message", [
    ([llm(), sp("x"), llm("again")], None, "; found span kinds: LLM, unknown"),
    ([sp("c1", "CHAIN", trace="a"), llm(trace="a"), sp("c2", "CHAIN", trace="b")], None,
     "; found span kinds: CHAIN, LLM"),
    ([ret(trace="a"), sp("c", "CHAIN", trace="b"), llm(trace="b")], "b", " in trace b; found span kinds: CHAIN, LLM"),
    ([sp("c", "CHAIN", trace="a"), llm(trace="a")], "a", "; found span kinds: CHAIN, LLM"),
])
def test_no_retriever_or_reranker_is_refused_naming_the_kinds(specs, asked, message):
    assert refused(*specs, trace_id=asked) == (f"oi.json: no RETRIEVER or RERANKER span with documents{message} "
                                               f"(without a retriever step there are no candidates to replay)")


@pytest.mark.parametrize("specs, ids, spans, producers, query, warnings", [
    ([ret("empty", ())], [], [], (), ("What is X?", "empty: input.value"),
     ("the RETRIEVER 'empty' span holds no documents", not_mapped(NO_LLM))),
    ([ret("empty", (), q="Empty?"), ret("one", (A,), q="One?")], ["d1"], [None], ("one",), ("One?", "one: input.value"),
     ("the RETRIEVER 'empty' span holds no documents", not_mapped(NO_LLM))),
    ([ret("one", (A, B))], ["d1", "d2"], [None, None], ("one",), ("What is X?", "one: input.value"),
     (not_mapped(NO_LLM),)),
    ([ret("one", (A, B), q=None), ret("two", (C,), q="Two?")], ["d1", "d2", "d3"], ["one", "one", "two"],
     ("one", "two"), ("Two?", "two: input.value"), (COMBINED, not_mapped(NO_LLM))),
    ([ret("one", (A,)),
      sp("two", "RETRIEVER", {**docs(C), "retrieval.documents.0.document.metadata": {"span": "own"}})],
     ["d1", "d3"], ["one", "own"], ("one", "two"), ("What is X?", "one: input.value"), (COMBINED, not_mapped(NO_LLM))),
])
def test_retrievers_empty_single_and_combined(specs, ids, spans, producers, query, warnings):
    got = load(*specs)
    assert [c.id for c in got.candidates] == ids
    assert [c.metadata.get("span") for c in got.candidates] == spans
    assert [c.metadata["retrieval_rank"] for c in got.candidates] == list(range(1, len(ids) + 1))
    assert [c.score for c in got.candidates] == [{"d1": 0.9, "d2": 0.8, "d3": 0.7}[i] for i in ids]
    assert got.logged.retriever_spans == producers
    assert ((got.query, got.logged.query_from), got.warnings) == (query, warnings)


def _repeats(outer, n, inner):
    return f"the RETRIEVER '{outer}' span repeats the {n} documents of the RETRIEVER '{inner}' span nested in it: " \
           f"read once, from the inner span"


def _filter(*steps):
    return {"span": steps[-1][0], "model": None, "top_k": None, "step": "filter",
            "filters": [{"span": s, "kept": kept} for s, kept in steps]}


O, M = dict(id="o"), dict(id="m", parent="o")


@pytest.mark.parametrize("specs, producers, ids, filters, unmapped", [
    ([ret("outer", (A, B), **O), ret("inner", (A, B), q="Inner?", id="i", parent="o")], ("inner",), ["d1", "d2"],
     None, [_repeats("outer", 2, "inner"), NO_LLM]),
    ([ret("inner", (A, B), id="i", parent="o"), ret("outer", (A, B), **O)], ("inner",), ["d1", "d2"], None,
     [_repeats("outer", 2, "inner"), NO_LLM]),
    ([ret("outer", (A,), **O), ret("inner", (A, B), id="i", parent="o")], ("inner",), ["d1", "d2"],
     _filter(("outer", ["d1"])), [NO_LLM]),
    ([ret("outer", (B, A), **O), ret("inner", (A, B), id="i", parent="o")], ("inner",), ["d1", "d2"],
     _filter(("outer", ["d2", "d1"])), [NO_LLM]),
    ([ret("outer", (A, B, C), **O), ret("inner", (A, B), id="i", parent="o")], ("outer",), ["d1", "d2", "d3"], None,
     [NO_LLM, "spans not used: RETRIEVER 'inner'"]),
    ([ret("outer", (A,), **O), ret("inner", (), id="i", parent="o")], ("outer",), ["d1"], None,
     [NO_LLM, "spans not used: RETRIEVER 'inner'"]),
    ([ret("outer", (A,), **O), ret("middle", (A, B), **M), ret("inner", (A, B, C), id="i", parent="m")], ("inner",),
     ["d1", "d2", "d3"], _filter(("middle", ["d1", "d2"]), ("outer", ["d1"])),
     [NO_LLM, "spans not used: RETRIEVER 'middle'"]),
    ([ret("outer", (A, B), **O), ret("middle", (A, B), **M), ret("inner", (A, B), id="i", parent="m")], ("inner",),
     ["d1", "d2"], None, [_repeats("outer", 2, "inner"), NO_LLM, "spans not used: RETRIEVER 'middle'"]),
    ([ret("outer", (A,), **O), sp("step", "CHAIN", id="m", parent="o"), ret("inner", (A, B), id="i", parent="m")],
     ("inner",), ["d1", "d2"], _filter(("outer", ["d1"])), [NO_LLM, "spans not used: CHAIN 'step'"]),
    ([ret("outer", (A,), **O), ret("i1", (A, B), id="i1", parent="o"), ret("i2", (A, C), id="i2", parent="o")],
     ("i1",), ["d1", "d2"], _filter(("i2", ["d1"]), ("outer", ["d1"])), [NO_LLM, "spans not used: RETRIEVER 'i2'"]),
    ([ret("outer", (A,), **O, start=T0 - 1), ret("i2", (A, C), id="i2", parent="o", start=T0 + 1),
      ret("i1", (A, B), id="i1", parent="o", start=T0)], ("i1",), ["d1", "d2"],
     _filter(("i2", ["d1"]), ("outer", ["d1"])), [NO_LLM, "spans not used: RETRIEVER 'i2'"]),
])
def test_a_retriever_nested_by_parent_links_is_read_from_the_innermost(specs, producers, ids, filters, unmapped):
    got = load(*specs)
    assert (got.logged.retriever_spans, [c.id for c in got.candidates]) == (producers, ids)
    assert (got.logged.reranker, list(got.logged.unmapped)) == (filters, unmapped)
    assert got.warnings == (not_mapped(*unmapped),)


def test_a_cut_by_a_filter_step_is_what_it_kept():
    got = load(ret("outer", (A,), **O), ret("middle", (A, B), **M), ret("inner", (A, B, C), id="i", parent="m"))
    assert (got.logged.reranked, got.logged.reranker_cut) == (("d1",), ("d2", "d3"))


@pytest.mark.parametrize("specs, producers, ids, repeats, filters", [
    ([ret("outer", (A, B), start=T0, end=T0 + 10), ret("inner", (A, B), q="Inner?", start=T0 + 1, end=T0 + 2)],
     ("inner",), ["d1", "d2"], [_repeats("outer", 2, "inner")], None),
    ([ret("x", (A, B), start=T0, end=T0 + 1), ret("t1", (A, B), start=T0, end=T0 + 10)], ("x",), ["d1", "d2"],
     [_repeats("t1", 2, "x")], None),
    ([ret("outer", (A, B), start=T0, end=None), ret("inner", (A, B), q="Inner?", start=T0 + 1, end=T0 + 2)],
     ("outer", "inner"), ["d1", "d2", "d1#2", "d2#2"], [], None),
    ([ret("outer", (A, B), start=T0, end=T0 + 2), ret("after", (A, B), q="Inner?", start=T0 + 1, end=T0 + 3)],
     ("outer", "after"), ["d1", "d2", "d1#2", "d2#2"], [], None),
    ([ret("p", (A,), start=T0, end=T0 + 10), ret("q", (A, B), start=T0 + 1, end=T0 + 9),
      ret("r", (A, B, C), start=T0 + 2, end=T0 + 3)], ("r",), ["d1", "d2", "d3"], [],
     _filter(("q", ["d1", "d2"]), ("p", ["d1"]))),
])
def test_retrievers_that_lost_their_parents_nest_by_time(specs, producers, ids, repeats, filters):
    got = load(*specs)
    assert (got.logged.retriever_spans, [c.id for c in got.candidates]) == (producers, ids)
    assert got.logged.reranker == filters
    assert got.warnings == ((COMBINED,) if len(producers) > 1 else ()) + (not_mapped(*repeats, NO_LLM),)


@pytest.mark.parametrize("specs, producers, ids, filters", [
    ([ret("search", (A, B)), ret("post", (B,), kind="CHAIN")], ("search",), ["d1", "d2"], _filter(("post", ["d2"]))),
    ([ret("search", (A, B)), ret("post", (B, C), kind="CHAIN")], ("search", "post"), ["d1", "d2", "d2#2", "d3"], None),
    ([ret("pre", (A, B), kind="CHAIN"), ret("search", (A,))], ("pre", "search"), ["d1", "d2", "d1#2"], None),
    ([ret("search", (A, B)), ret("again", (B,))], ("search", "again"), ["d1", "d2", "d2#2"], None),
])
def test_a_span_not_of_retriever_kind_repeating_documents_is_a_filter_step(specs, producers, ids, filters):
    got = load(*specs)
    assert (got.logged.retriever_spans, [c.id for c in got.candidates]) == (producers, ids)
    assert got.logged.reranker == filters
    assert got.warnings == ((COMBINED,) if len(producers) > 1 else ()) + (not_mapped(NO_LLM),)


def rr(name="rr", inp=(A, B, C), out=((C[0], C[1], 0.95), (A[0], A[1], 0.5)), q=None, extra=None, **kw):
    attrs = {**(docs(*inp, at="reranker.input_documents") if inp is not None else {}),
             **(docs(*out, at="reranker.output_documents") if out is not None else {}),
             **({"reranker.query": q} if q else {}), **(extra or {})}
    return sp(name, "RERANKER", attrs, **kw)


DROPPED = "the reranker dropped 1 of 3 documents: they follow the reranked ones, unscored (metadata reranker = " \
          "'not in output')"


def test_reranked_documents_come_first_then_what_the_reranker_dropped():
    got = load(ret("search", (A, B, C)), rr(q="Reranked?", extra={"reranker.model_name": "bge", "reranker.top_k": 2}))
    assert [(c.id, c.score, c.metadata) for c in got.candidates] == [
        ("d3", 0.95, {"reranker_rank": 1, "retrieval_rank": 3, "retrieval_score": 0.7}),
        ("d1", 0.5, {"reranker_rank": 2, "retrieval_rank": 1, "retrieval_score": 0.9}),
        ("d2", None, {"reranker": "not in output", "retrieval_rank": 2, "retrieval_score": 0.8})]
    assert got.logged.reranker == {"span": "rr", "model": "bge", "top_k": 2}
    assert (got.logged.reranked, got.logged.reranker_cut, got.logged.stated) == (("d3", "d1"), ("d2",), {"top_n": 2})
    assert (got.query, got.logged.query_from) == ("Reranked?", "rr: reranker.query")
    assert got.warnings == (DROPPED, not_mapped(NO_LLM))


@pytest.mark.parametrize("specs, shown, ids, warnings", [
    ([rr(inp=(A, B), out=None, q="Q?")], "rr", ["d1", "d2"],
     ("the RERANKER 'rr' span records no output documents: its input is ranked as retrieved",)),
    ([ret("search", (A, B, C)), rr(inp=(A,), out=None)], "rr", ["d1", "d2", "d3"],
     ("the RERANKER 'rr' span records no output documents: its input is ranked as retrieved",)),
    ([ret("search", (A, B, C)), rr("first"), rr("second", inp=(A,), out=None)], "first", ["d3", "d1", "d2"],
     (DROPPED,)),
    ([ret("search", (A, B, C)), rr("first", inp=None, out=(B,)), rr("second")], "second", ["d3", "d1", "d2"],
     (DROPPED,)),
    ([ret("search", (A, B, C)), rr("first"), rr("second", inp=None, out=None)], "first", ["d3", "d1", "d2"],
     (DROPPED,)),
    ([ret("search", (A, B, C)), rr("first", inp=(A,), out=None), rr("second", inp=(B,), out=None)], "second",
     ["d1", "d2", "d3"], ("the RERANKER 'second' span records no output documents: its input is ranked as retrieved",)),
    ([ret("search", (A, B, C), start=T0), rr("late", start=T0 + 2), rr("early", start=T0 + 1)], "late",
     ["d3", "d1", "d2"], (DROPPED,)),
    ([ret("search", (A, B)), rr(inp=None, out=None)], None, ["d1", "d2"], ()),
    ([ret("search", (A, B)), sp("rr", "", {"reranker.model_name": "m"})], None, ["d1", "d2"], ()),
])
def test_the_reranker_is_the_last_with_output_else_the_last_with_input(specs, shown, ids, warnings):
    got = load(*specs)
    assert ((got.logged.reranker or {}).get("span"), [c.id for c in got.candidates]) == (shown, ids)
    assert got.warnings == (*warnings, not_mapped(NO_LLM))


@pytest.mark.parametrize("calls, chosen", [
    ([llm("says-alpha", says="alpha"), llm("says-beta", says="beta")], "says-alpha"),
    ([llm("says-beta", says="beta"), llm("says-alpha", says="alpha")], "says-alpha"),
])
def test_the_input_of_a_reranker_without_output_is_not_among_the_documents_sent(calls, chosen):
    got = load(ret("search", (A,)), rr(inp=(B,), out=None), *calls)
    assert ([c.id for c in got.candidates], got.logged.llm_span) == (["d1"], chosen)


def test_an_input_only_reranker_keeps_its_model_and_top_k():
    got = load(rr(inp=(A, B), out=None, extra={"reranker.model_name": "bge", "reranker.top_k": "2"}))
    assert (got.logged.reranker, got.logged.stated, got.logged.retriever_spans) == (
        {"span": "rr", "model": "bge", "top_k": "2"}, {"top_n": 2}, ())
    assert [c.metadata for c in got.candidates] == [{"retrieval_rank": 1}, {"retrieval_rank": 2}]


@pytest.mark.parametrize("spec, where", [
    (sp("search", "RETRIEVER", {"retrieval.documents.0.document.content": "a",
                                "retrieval.documents.1.document.score": 1}), "search.retrieval.documents[1]"),
    (rr(inp=None, out=None, extra={"reranker.output_documents.0.document.score": 1}),
     "rr.reranker.output_documents[0]"),
    (rr(inp=(A,), out=None, extra={"reranker.input_documents.1.document.score": 1}), "rr.reranker.input_documents[1]"),
])
def test_a_document_without_text_is_refused_where_it_was_logged(spec, where):
    assert refused(spec) == (f"oi.json, field '{where}': the document has no text (document.content is empty or "
                             f"missing; the export may hide retrieval text)")


NO_QUESTION = "the trace holds no question: give one before building"


@pytest.mark.parametrize("specs, query, source, warnings", [
    ([ret(), rr(q="  ")], "What is X?", "search: input.value", (DROPPED, not_mapped(NO_LLM))),
    ([ret(q=None), rr(extra={"input.value": '{"query": "From rr?"}'})], "From rr?", "rr: input.value",
     (DROPPED, not_mapped(NO_LLM))),
    ([sp("app", "CHAIN", {"input.value": "Root?"}, id="p"), ret(q="Ret?", parent="p")], "Ret?", "search: input.value",
     (not_mapped(NO_LLM),)),
    ([sp("app", "CHAIN", {"input.value": "Root?"}, id="p"), ret(q=None, parent="p")], "Root?", "app: input.value",
     (not_mapped(NO_LLM),)),
    ([sp("app", "CHAIN", {"input.value": "Root?"}, parent="zzz"), ret(q=None)], "Root?", "app: input.value",
     (not_mapped(NO_LLM),)),
    ([ret(q=None, start=T0 + 1), sp("app", "CHAIN", {"input.value": "Root?"}, start=T0)], "Root?", "app: input.value",
     (not_mapped(NO_LLM),)),
    ([ret(q=None), sp("app", "CHAIN", {"input.value": "Root?"})], "", None,
     (NO_QUESTION, not_mapped(NO_LLM, "spans not used: CHAIN 'app'"))),
    ([sp("app", "CHAIN", {"input.value": "  "}), ret(q=None)], "", None, (NO_QUESTION, not_mapped(NO_LLM))),
])
def test_the_question_from_the_reranker_the_retrievers_then_the_root(specs, query, source, warnings):
    got = load(*specs)
    assert (got.query, got.logged.query_from, got.warnings) == (query, source, warnings)


def test_a_cycle_of_parents_is_cut_and_its_cut_span_is_the_root():
    got = load(sp("c1", "CHAIN", {"input.value": "One?"}, id="c1", parent="c2"),
               sp("c2", "CHAIN", {"input.value": "Two?"}, id="c2", parent="c1"), ret(q=None, parent="c1"))
    assert (got.query, got.logged.query_from) == ("Two?", "c2: input.value")
    assert got.warnings == ("the CHAIN 'c2' span: its parent c1 closes a cycle of parents; read as a root",
                            not_mapped(NO_LLM, "spans not used: CHAIN 'c1'"))


@pytest.mark.parametrize("extra, model, config", [
    ({"llm.model_name": "gpt-4o", "llm.response.model_name": "gpt-4", "llm.request.model_name": "gpt-4-turbo",
      "llm.invocation_parameters": '{"model": "gpt-3.5-turbo"}'}, "gpt-4o", {"model": "gpt-4o"}),
    ({"llm.response.model_name": "gpt-4", "llm.request.model_name": "gpt-4-turbo"}, "gpt-4", {"model": "gpt-4"}),
    ({"llm.request.model_name": "gpt-4-turbo", "llm.invocation_parameters": {"model": "gpt-4"}}, "gpt-4-turbo",
     {"model": "gpt-4-turbo"}),
    ({"llm.invocation_parameters": '{"model": "gpt-4", "model_name": "gpt-4o"}'}, "gpt-4", {"model": "gpt-4"}),
    ({"llm.invocation_parameters": {"model_name": "gpt-4o", "max_tokens": 256}}, "gpt-4o",
     {"model": "gpt-4o", "max_output": 256}),
    ({"llm.invocation_parameters": "not json"}, None, {}),
    ({}, None, {}),
])
def test_the_model_from_the_llm_span_then_its_parameters(extra, model, config):
    got = load(ret(), llm(extra=extra))
    assert (got.logged.model, got.config, got.warnings) == (model, config, ())


def test_an_unknown_model_and_unread_parameters_are_named():
    got = load(ret(), llm(extra={"llm.model_name": "my-llm", "llm.token_count.prompt": "12",
                                 "llm.invocation_parameters": {"temperature": 0, "max_tokens": 99999}}))
    assert (got.logged.model, got.logged.prompt_tokens, got.config) == ("my-llm", 12, {})
    notes = ["model 'my-llm' (no known tokenizer)", "model parameters temperature, max_tokens"]
    assert got.logged.unmapped == tuple(notes)
    assert got.warnings == ("model 'my-llm' has no known tokenizer: token counts use the default cl100k_base encoding",
                            not_mapped(*notes))
    assert got.logged.stated == {"max_output": 99999}


def _chat(*messages):
    out = {}
    for i, (role, text) in enumerate(messages):
        out.update({f"llm.input_messages.{i}.message.role": role, f"llm.input_messages.{i}.message.content": text})
    return out


def test_the_system_message_history_and_tools_the_llm_was_sent():
    chat = _chat(("system", "Be brief."), ("user", "hi"), ("assistant", "hello"), ("user", "alpha beta Q?"))
    tools = {"llm.tools.0.tool.json_schema": '{"name": "f"}', "llm.tools.1.tool": 5, "llm.tools.2.tool": "g"}
    got = load(ret(), llm(says=None, extra={**chat, **tools}))
    assert got.inputs == Inputs(system="Be brief.", history=({"role": "user", "content": "hi"},
                                                             {"role": "assistant", "content": "hello"}),
                                tools=('{"name": "f"}', "g"))
    assert got.logged.prompt_text == "system: Be brief.\n\nuser: hi\n\nassistant: hello\n\nuser: alpha beta Q?"
    assert got.warnings == ()


@pytest.mark.parametrize("chat, system, history, unmapped", [
    ([("system", "Context: alpha"), ("user", "Q?")], "", (),
     "the system message (it carries the retrieved passages; ctxcore builds its own evidence block)"),
    ([("user", "beta?"), ("ai", "ok"), ("human", "Q?")], "", (),
     "2 earlier chat turns (they carry retrieved passages)"),
    ([("developer", "Rules."), ("user", "hi"), ("ai", "ok"), ("human", "Q?")], "Rules.",
     ({"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}), None),
])
def test_system_and_history_that_carry_retrieved_passages_are_not_kept(chat, system, history, unmapped):
    got = load(ret(), llm(says=None, extra=_chat(*chat)))
    assert (got.inputs.system, got.inputs.history) == (system, history)
    assert got.logged.unmapped == ((unmapped,) if unmapped else ())


@pytest.mark.parametrize("llm_spec, unmapped, answer", [
    (llm(extra={"llm.prompt_template.template": "{q}"}), ["the prompt template of the LLM 'gen' span"], "The answer."),
    (llm(says=None), ["the prompt of the LLM 'gen' span (no llm.input_messages or llm.prompts)"], "The answer."),
    (llm(says=None, answer=None), ["the prompt of the LLM 'gen' span (no llm.input_messages or llm.prompts)"],
     "Done."),
    (llm(answer=None), [], "Done."),
    (llm(extra={"llm.prompt_template.variables": {"q": "Q?"}}), [], "The answer."),
    (sp("gen", "LLM", {"llm.prompts.0": "", "output.value": "Said."}), [], "Said."),
    (None, [NO_LLM], "Done."),
])
def test_the_prompt_and_answer_and_what_is_missing(llm_spec, unmapped, answer):
    root = sp("app", "CHAIN", {"input.value": "Q?", "output.value": "assistant: Done."}, id="p")
    got = load(root, ret(parent="p"), *([llm_spec] if llm_spec else []))
    assert (got.logged.answer, got.logged.unmapped) == (answer, tuple(unmapped))
    assert (got.logged.llm_span, got.inputs) == ("gen" if llm_spec else None, Inputs())


def test_without_a_root_output_a_missing_answer_stays_missing():
    got = load(ret(), llm(answer=None))
    assert (got.logged.answer, got.logged.prompt_text) == (None, "user: alpha beta")


@pytest.mark.parametrize("calls, output, chosen", [
    ([llm("rewrite", says="rewrite it", answer="X?"), llm("answer", answer="A1")], None, "answer"),
    ([llm("answer", answer="A1"), llm("rewrite", says="rewrite it", answer="X?")], None, "answer"),
    ([llm("answer", answer="A1"), llm("judge", answer="fine")], None, "judge"),
    ([llm("answer", answer="A1"), llm("judge", answer="fine")], "A1", "answer"),
    ([llm("answer", answer="A1"), llm("judge", answer="fine")], "  fine ", "judge"),
])
def test_the_llm_call_that_wrote_the_answer(calls, output, chosen):
    root = sp("app", "CHAIN", {"output.value": output} if output else {}, id="p")
    got = load(root, ret(parent="p"), *calls)
    spare = [f"LLM '{c['name']}'" for c in calls if c["name"] != chosen]
    assert (got.logged.llm_span, got.logged.unmapped) == (chosen, (f"spans not used: {spare[0]}",))


def test_a_run_with_many_unused_spans_names_eight():
    got = load(ret(), *[sp(f"c{n}", "CHAIN") for n in range(1, 11)])
    names = ", ".join(f"CHAIN 'c{n}'" for n in range(1, 9))
    assert got.logged.unmapped == (NO_LLM, f"spans not used: {names} and 2 more")


def test_limits_stated_by_the_llm_the_reranker_then_span_metadata():
    search = sp("search", "RETRIEVER", {**docs(A, B, C), "input.value": "Q?",
                                         "metadata": {"similarity_top_k": 4, "top_n": 9, "max_depth": 3}})
    got = load(search, rr(extra={"reranker.top_k": 2}), llm(extra={"llm.invocation_parameters": {"max_tokens": 64}}))
    assert got.logged.stated == {"max_output": 64, "top_n": 2, "top_k": 4}
    assert got.logged.unmapped == ("stated limits of the RETRIEVER 'search' metadata not read: max_depth=3",)


def test_documents_logged_by_id_take_their_text_from_the_candidates_file():
    bare = sp("search", "RETRIEVER", {"retrieval.documents.0.document.id": "d1", "retrieval.documents.1.document.id": 7,
                                      "input.value": "Q?"})
    got = load(bare, texts={"d1": "alpha", "7": "seven"})
    assert [(c.id, c.text) for c in got.candidates] == [("d1", "alpha"), ("7", "seven")]
    assert got.warnings == ("documents carry no scores: ranked by retrieval order",
                            "the log recorded 2 documents by id only: took the text of 2 from the candidates file",
                            not_mapped(NO_LLM))


def test_the_span_panel_and_the_conventions_of_the_run():
    got = load(ret(id="r", start=T0, end=T0 + 1.5, conv="openinference"),
               llm(id="g", parent="r", start=f"{T0 + 2}", conv="gen_ai",
                   extra={"llm.model_name": "gpt-4o", "llm.token_count.prompt": 10, "llm.token_count.completion": 3}),
               sp("c", "CHAIN", start=T0 + 3, end=T0 + 3, conv="openinference"), ret("other", trace="u", conv="x"))
    assert got.logged.spans == (
        {"name": "search", "kind": "RETRIEVER", "id": "r", "parent": None, "start": "2024-05-01T10:00:00.000Z",
         "duration_ms": 1500.0, "model": None, "prompt_tokens": None, "completion_tokens": None},
        {"name": "gen", "kind": "LLM", "id": "g", "parent": "r", "start": "2024-05-01T10:00:02.000Z",
         "duration_ms": None, "model": "gpt-4o", "prompt_tokens": 10, "completion_tokens": 3},
        {"name": "c", "kind": "CHAIN", "id": None, "parent": None, "start": "2024-05-01T10:00:03.000Z",
         "duration_ms": 0.0, "model": None, "prompt_tokens": None, "completion_tokens": None})
    assert got.logged.conventions == ("openinference", "gen_ai")
    assert (got.logged.prompt_tokens, got.logged.format, got.source) == (10, "openinference", "oi.json")


def test_trace_ids_group_by_time_when_the_links_are_lost():
    data = [{"context.trace_id": t, "span_kind": "CHAIN", "start_time": s} for t, s in (("a", T0), ("b", T0 + 1))]
    assert oi.trace_ids(data + [{"context.trace_id": "c", "span_kind": "LLM", "start_time": T0 + 9}]) == ["a", "c"]
    with pytest.raises(InputError) as e:
        oi.trace_ids([{"span_kind": "LLM"}, 5])
    assert (e.value.source, e.value.field) == ("input", "spans[1]")


# Rows written against the survivors of the whole-load run (issue #29).

@pytest.mark.parametrize("specs, field", [
    ((sp("search", "RETRIEVER", {"retrieval.documents": [5]}), llm()), "search.retrieval.documents[0]"),
    ((ret("outer", id="o"), sp("inner", "RETRIEVER", {"retrieval.documents": [5]}, id="i", parent="o"), llm()),
     "inner.retrieval.documents[0]"),  # a span nested in another is read with the file's name too
])
def test_a_document_that_is_not_an_object_is_refused_naming_the_file_and_the_span(specs, field):
    with pytest.raises(InputError) as e:
        load(*specs)
    assert (e.value.message, e.value.source, e.value.field) == ("a document must be an object, found int", "oi.json",
                                                               field)


def test_a_table_export_over_the_column_limit_is_refused_naming_the_file():
    with pytest.raises(InputError) as e:
        oi._read({"columns": [f"c{i}" for i in range(10_001)], "data": []}, "big.json", None)
    assert (e.value.message, e.value.source, e.value.field) == ("a table of 10001 columns; the limit is 10000",
                                                               "big.json", "columns")


def test_a_span_repeating_every_document_read_is_a_filter_step_and_a_later_retriever_is_still_read():
    got = load(ret("first", items=(A, B), start=T0), ret("again", kind="CHAIN", items=(A, B), start=T0 + 1),
               ret("third", items=(C,), start=T0 + 2), llm(start=T0 + 3))
    assert [c.id for c in got.candidates] == ["d1", "d2", "d3"]
    assert got.logged.reranker["filters"] == [{"span": "again", "kept": ["d1", "d2"]}]
    assert got.warnings == (COMBINED,)


def test_filter_steps_of_a_nested_retriever_come_after_those_read_before_it():
    x = ("xi", "d9", 0.5)
    got = load(ret("first", items=(A, B, C), start=T0, id="f"), ret("narrow", kind="CHAIN", items=(A, B), start=T0 + 1),
               ret("outer", items=(x,), start=T0 + 2, id="x"), ret("mid", items=(x, A), start=T0 + 3, id="m", parent="x"),
               ret("deep", items=(x, A, B), start=T0 + 4, id="d", parent="m"), llm(start=T0 + 5))
    assert got.logged.reranker["filters"] == [{"span": "narrow", "kept": ["d1", "d2"]},
                                              {"span": "mid", "kept": ["d9", "d1"]}, {"span": "outer", "kept": ["d9"]}]
    assert [c.id for c in got.candidates] == ["d1", "d2", "d3", "d9", "d1#2", "d2#2"]


def _sent(attrs):
    logged = load(ret(), sp("gen", "LLM", attrs)).logged
    return logged.prompt_text, logged.answer


@pytest.mark.parametrize("attrs, prompt, answer", [
    # a message that is not an object is passed over, not the end of the list
    ({"llm.input_messages": ["stray", {"message": {"role": "user", "content": "alpha beta"}}], "output.value": "ok"},
     "user: alpha beta", "ok"),
    # llm.prompts that is not a list is not the prompt: input.value is
    ({"llm.prompts": "stray text", "input.value": "the prompt alpha", "output.value": "ok"}, "the prompt alpha", "ok"),
    # messages in a JSON input.value keep their roles; one without content is an empty turn
    ({"input.value": '{"messages": [{"role": "system", "content": "Be brief."}, {"role": "user"}, '
                     '{"role": "user", "content": "alpha beta"}]}', "output.value": "ok"},
     "system: Be brief.\n\nuser: \n\nuser: alpha beta", "ok"),
    # output messages: a message given as text, a message without the "message" wrapper, LlamaIndex blocks
    ({"llm.input_messages.0.message.content": "alpha", "llm.output_messages": [{"message": "In May."}]},
     "user: alpha", "In May."),
    ({"llm.input_messages.0.message.content": "alpha", "llm.output_messages": [{"role": "assistant", "content": "In May."}]},
     "user: alpha", "In May."),
    ({"llm.input_messages.0.message.content": "alpha", "llm.output_messages": [
        {"message": {"role": "assistant", "blocks": [{"block_type": "text", "text": "In May."}, {"block_type": "image"}]}}]},
     "user: alpha", "In May."),
    ({"llm.input_messages.0.message.content": "alpha",  # a ChatMessage in output.value, its content written as null
      "output.value": '{"role": "assistant", "content": null, "blocks": [{"block_type": "text", "text": "In May."}]}'},
     "user: alpha", "In May."),
    # an output.value list of LangChain messages: the last said by the "ai"
    ({"llm.input_messages.0.message.content": "alpha",
      "output.value": '[{"role": "human", "content": "When?"}, {"role": "ai", "content": "In May."}]'},
     "user: alpha", "In May."),
])
def test_the_prompt_and_answer_of_an_llm_span_in_each_shape_it_is_logged(attrs, prompt, answer):
    assert _sent(attrs) == (prompt, answer)


def test_retrievers_whose_parents_form_a_cycle_are_cut_at_one_and_read_from_the_other_nested_in_it():
    got = load(ret("a", items=(A, B), id="a", parent="b", start=T0), ret("b", items=(A,), id="b", parent="a", start=T0 + 1),
               llm(start=T0 + 2))
    assert [c.id for c in got.candidates] == ["d1", "d2"]
    assert got.warnings == ("the RETRIEVER 'b' span: its parent a closes a cycle of parents; read as a root",)
    assert got.logged.reranker["filters"] == [{"span": "b", "kept": ["d1"]}]


def test_without_a_retriever_the_refusal_lists_the_span_kinds_of_every_trace():
    assert refused(sp("prep", "CHAIN", trace="t"), sp("gen", "LLM", trace="u")) == (
        "oi.json: no RETRIEVER or RERANKER span with documents; found span kinds: CHAIN, LLM (without a retriever "
        "step there are no candidates to replay)")


@pytest.mark.parametrize("attrs, field", [
    ({"reranker.input_documents": [5]}, "rr.reranker.input_documents[0]"),
    ({**docs(A, at="reranker.input_documents"), "reranker.output_documents": [5]}, "rr.reranker.output_documents[0]"),
])
def test_a_reranker_document_that_is_not_an_object_is_refused_naming_the_file_and_the_field(attrs, field):
    with pytest.raises(InputError) as e:
        load(ret(), sp("rr", "RERANKER", attrs), llm())
    assert (e.value.message, e.value.source, e.value.field) == ("a document must be an object, found int", "oi.json",
                                                               field)


def test_a_reranker_query_logged_as_a_query_bundle_is_the_question():
    got = load(ret(q=None), sp("rr", "RERANKER", {**docs(A, B, at="reranker.input_documents"),
                                                  **docs(B, at="reranker.output_documents"),
                                                  "reranker.query": {"query_str": "When?"}}), llm())
    assert (got.query, got.logged.query_from) == ("When?", "rr: reranker.query")


def test_an_llm_call_whose_prompt_is_its_input_text_is_the_runs_own_not_one_recorded_apart():
    got = load(ret(trace="t", start=T0), sp("gen", "LLM", {"input.value": "alpha beta sent", "output.value": "Mine."},
                                            trace="t", start=T0 + 1),
               llm("other", says="alpha beta", answer="Theirs.", trace="u", start=T0 + 1))
    assert (got.logged.prompt_text, got.logged.answer, got.warnings) == ("alpha beta sent", "Mine.",
                                                                         ("file holds 2 traces; showing t",))
