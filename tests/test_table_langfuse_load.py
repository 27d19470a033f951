"""One Langfuse trace read as ctxcore input (ctxcore/io/formats/langfuse.py ``_load``), held by hand-valued tables:
the observation limit, traces keyed by id or by position, which trace is shown, observations in time order, parent
links (nested retrievers, cycles), the question, the GENERATION that was sent, what is left unmapped, empty
retrievers, filters and combined retrievers; and the span panel's start and duration (issue #29). Every warning
list is asserted whole: a warning too many or too few is a change a user sees. Field names as the API writes them
(langfuse/langfuse-python api/commons/types/observation.py: parentObservationId, startTime, usageDetails ...)."""

import pytest

from ctxcore.errors import InputError
from ctxcore.io.formats import langfuse as lf

A = {"text": "alpha", "id": "d1", "score": 0.9}
B = {"text": "beta", "id": "d2", "score": 0.8}
C = {"text": "gamma", "id": "d3", "score": 0.7}

NO_GEN = "the prompt and answer (no GENERATION observation)"


def ret(name="search", id="r1", output=None, **kw):
    return {"type": "RETRIEVER", "name": name, "id": id, "output": [A, B] if output is None else output,
            "input": "What is X?", **kw}


def gen(name="llm", id="g1", **kw):
    return {"type": "GENERATION", "name": name, "id": id, **kw}


def span(name, id, **kw):
    return {"type": "SPAN", "name": name, "id": id, **kw}


def T(tid, *obs, **trace):
    return lf._LfTrace(tid, {"id": tid, **trace} if tid is not None else dict(trace), list(obs))


def load(*traces, trace_id=None):
    return lf._load(list(traces), "lf.json", trace_id)


def not_mapped(*notes):
    return f"not mapped from the langfuse trace: {', '.join(notes)}"


def run(tid, retrieval=True, llm=False, documents=2, start=None):
    return {"id": tid, "retrieval": retrieval, "llm": llm, "documents": documents, "start": start}


@pytest.mark.parametrize("count, refused", [
    (lf.MAX_SPANS, None),
    (lf.MAX_SPANS + 1, "200001 observations; the limit is 200000"),
])
def test_the_observation_limit_counts_every_trace(count, refused):
    bulk = {"type": "RETRIEVER", "output": None}
    traces = [T("a", ret()), T("b", *[bulk] * (count - 1), timestamp="2024-05-01T10:00:00Z")]
    if refused:
        with pytest.raises(InputError) as e:
            load(*traces)
        assert (e.value.message, e.value.field, e.value.source) == (refused, "observations", "lf.json")
    else:
        assert load(*traces).logged.runs == (run("a"), run("b", documents=0, start="2024-05-01T10:00:00.000Z"))


@pytest.mark.parametrize("ids, traces, runs, shown, held", [
    (["t"], ("t",), ["t"], "t", None),
    ([None], (), [None], None, None),  # the file's only trace needs no name
    (["a", None], ("a", "#2"), ["a", "#2"], "a", "file holds 2 traces; showing a"),
    ([None, None], ("#1", "#2"), ["#1", "#2"], "#1", "file holds 2 traces; showing #1"),
    (["a", None, None], ("a", "#2", "#3"), ["a", "#2", "#3"], "a", "file holds 3 traces; showing a"),
    (["a", "b"], ("a", "b"), ["a", "b"], "a", "file holds 2 traces; showing a"),
    (["a", "b", "a"], ("a#1", "b", "a#3"), ["a#1", "b", "a#3"], "a#1", "file holds 3 traces; showing a#1"),
])
def test_traces_keyed_by_id_or_by_position_when_ids_are_missing_or_repeat(ids, traces, runs, shown, held):
    got = load(*[T(i, ret()) for i in ids])
    assert got.logged.traces == traces
    assert [r["id"] for r in got.logged.runs] == runs
    assert got.logged.trace_id == shown
    assert got.warnings == (*([held] if held else []), not_mapped(NO_GEN))


@pytest.mark.parametrize("traces, shown, runs", [
    ([T("a", span("prep", "s1")), T("b", ret())], "b", (run("a", retrieval=False, documents=0), run("b"))),
    ([T("a", span("prep", "s1"), gen()), T("b", ret())], "b",
     (run("a", retrieval=False, llm=True, documents=0), run("b"))),
    ([T("a", ret()), T("b", ret(), gen())], "b", (run("a"), run("b", llm=True))),
    ([T("a", ret()), T("b", ret(), gen(type="generation"))], "b", (run("a"), run("b", llm=True))),
    ([T("a", ret()), T("b", ret(output=[C])), T("c", ret(), gen())], "c",
     (run("a"), run("b", documents=1), run("c", llm=True))),
    ([T("a", ret(), gen(), timestamp="2024-05-01T09:00:00Z"),
      T("b", ret(startTime="2024-05-01T10:00:05Z"), gen(startTime="2024-05-01T10:00:01Z"))], "a",
     (run("a", llm=True, start="2024-05-01T09:00:00.000Z"), run("b", llm=True, start="2024-05-01T10:00:01.000Z"))),
])
def test_the_trace_shown_retrieves_and_calls_an_llm_else_retrieves(traces, shown, runs):
    got = load(*traces)
    assert got.logged.trace_id == shown
    assert got.warnings[0] == f"file holds {len(traces)} traces; showing {shown}"
    assert got.logged.runs == runs


@pytest.mark.parametrize("ids, asked", [(["a", "b"], "b"), ([None, None], "#2")])
def test_a_trace_asked_for_by_id_is_shown(ids, asked):
    got = load(*[T(i, ret(name=f"search-{n}")) for n, i in enumerate(ids, 1)], trace_id=asked)
    assert got.logged.retriever_spans == ("search-2",)
    assert got.warnings == (f"file holds 2 traces; showing {asked}", not_mapped(NO_GEN))


@pytest.mark.parametrize("ids, asked, refused", [
    (["a", "b"], "zz", "lf.json, field 'trace_id': trace 'zz' is not in the file; it holds: a, b"),
    ([None, None], "#3", "lf.json, field 'trace_id': trace '#3' is not in the file; it holds: #1, #2"),
])
def test_an_unknown_trace_id_is_refused_naming_the_traces_held(ids, asked, refused):
    with pytest.raises(InputError) as e:
        load(*[T(i, ret()) for i in ids], trace_id=asked)
    assert str(e.value) == refused


@pytest.mark.parametrize("obs, order", [
    ([ret("late", "r2", [C], startTime="2024-05-01T10:00:02Z"),
      span("tie-1", "s1", startTime="2024-05-01T10:00:01Z"), span("tie-2", "s2", startTime="2024-05-01T10:00:01Z"),
      ret("early", "r1", startTime="2024-05-01T10:00:00Z")], ["early", "tie-1", "tie-2", "late"]),
    ([ret("late", "r2", [C], startTime="2024-05-01T10:00:02Z"), span("tie-1", "s1"),
      span("tie-2", "s2", startTime="2024-05-01T10:00:01Z"), ret("early", "r1", startTime="2024-05-01T10:00:00Z")],
     ["late", "tie-1", "tie-2", "early"]),
])
def test_observations_in_start_time_order_else_in_file_order(obs, order):
    got = load(T("t", *obs))
    assert [s["name"] for s in got.logged.spans] == order
    retrievers = [n for n in order if n in ("early", "late")]
    assert got.logged.retriever_spans == tuple(retrievers)
    texts = {"early": ["alpha", "beta"], "late": ["gamma"]}
    assert [c.text for c in got.candidates] == [t for n in retrievers for t in texts[n]]
    assert [c.metadata["span"] for c in got.candidates] == [n for n in retrievers for _ in texts[n]]
    assert got.warnings == ("2 retriever observations: their documents are combined in time order",
                            not_mapped(NO_GEN, "observations not used: SPAN 'tie-1', SPAN 'tie-2'"))


@pytest.mark.parametrize("obs, counted, spare", [
    ([ret("outer", "r1"), ret("inner", "r2", [A], parentObservationId="r1")], ("outer",), "RETRIEVER 'inner'"),
    ([ret("inner", "r2", [A], parentObservationId="r1"), ret("outer", "r1")], ("outer",), "RETRIEVER 'inner'"),
    ([ret("outer", "r1"), span("step", "s1", parentObservationId="r1"),
      ret("inner", "r2", [A], parentObservationId="s1")], ("outer",), "SPAN 'step', RETRIEVER 'inner'"),
    ([span("chain", "c1"), ret("outer", "r1", parentObservationId="c1"),
      ret("inner", "r2", [A], parentObservationId="r1")], ("outer",), "SPAN 'chain', RETRIEVER 'inner'"),
])
def test_a_retriever_nested_under_another_is_read_once(obs, counted, spare):
    got = load(T("t", *obs))
    assert got.logged.retriever_spans == counted
    assert [c.id for c in got.candidates] == ["d1", "d2"]
    assert got.logged.unmapped == (NO_GEN, f"observations not used: {spare}")
    assert got.warnings == (not_mapped(NO_GEN, f"observations not used: {spare}"),)


def test_observations_without_an_id_are_nobodys_parent():
    got = load(T("t", ret("first", None, [A]), ret("second", "r2", [B]), span("loose", None)))
    assert got.logged.retriever_spans == ("first", "second")
    assert [c.id for c in got.candidates] == ["d1", "d2"]
    assert [(s["name"], s["id"], s["parent"]) for s in got.logged.spans] == [
        ("first", None, None), ("second", "r2", None), ("loose", None, None)]
    assert got.warnings == ("2 retriever observations: their documents are combined in time order",
                            not_mapped(NO_GEN, "observations not used: SPAN 'loose'"))


@pytest.mark.parametrize("obs, cut, counted, spare", [
    ([span("a", "s1", parentObservationId="s2"), span("b", "s2", parentObservationId="s1"),
      ret(parentObservationId="s1")], "SPAN 'b': its parent s1 closes a cycle of parents; read as a root",
     ("search",), "SPAN 'a', SPAN 'b'"),
    ([span("self", "s3", parentObservationId="s3"), ret()],
     "SPAN 'self': its parent s3 closes a cycle of parents; read as a root", ("search",), "SPAN 'self'"),
    ([ret("one", "r1", parentObservationId="r2"), ret("two", "r2", [C], parentObservationId="r1")],
     "RETRIEVER 'two': its parent r1 closes a cycle of parents; read as a root", ("two",), "RETRIEVER 'one'"),
])
def test_a_cycle_of_parents_is_cut_and_named(obs, cut, counted, spare):
    got = load(T("t", *obs))
    assert got.logged.retriever_spans == counted
    assert got.warnings == (cut, not_mapped(NO_GEN, f"observations not used: {spare}"))


@pytest.mark.parametrize("obs, trace_input, query, source", [
    ([ret()], "ignored", "What is X?", "search: input"),
    ([ret(input={"query": "  Why Y?  "})], "ignored", "Why Y?", "search: input"),
    ([ret(input=None)], {"question": "From the trace?"}, "From the trace?", "trace input"),
    ([ret(input="")], "  Trace text?  ", "Trace text?", "trace input"),
])
def test_the_question_from_the_retriever_input_then_the_trace_input(obs, trace_input, query, source):
    got = load(T("t", *obs, input=trace_input))
    assert (got.query, got.logged.query_from) == (query, source)
    assert got.warnings == (not_mapped(NO_GEN),)


def test_the_question_from_the_first_retriever_that_has_one():
    got = load(T("t", ret("one", "r1", [A], input=""), ret("two", "r2", [B], input="Second?"), input="Trace?"))
    assert (got.query, got.logged.query_from) == ("Second?", "two: input")
    assert got.warnings == ("2 retriever observations: their documents are combined in time order",
                            not_mapped(NO_GEN))


def test_no_question_anywhere_is_a_warning():
    got = load(T("t", ret(input=None)))
    assert (got.query, got.logged.query_from) == ("", None)
    assert got.warnings == ("the trace holds no question: give one before building", not_mapped(NO_GEN))


ASKED = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "alpha\nbeta\n\nWhat is X?"}]


@pytest.mark.parametrize("obs, trace, logged, unmapped", [
    ([ret(), gen(input=ASKED, output="X is alpha.", model="gpt-4o", usageDetails={"input": 42, "output": 7},
                 modelParameters={"max_tokens": 256}, promptName="rag", promptVersion=3)], {},
     {"prompt_text": "system: Be brief.\n\nuser: alpha\nbeta\n\nWhat is X?", "answer": "X is alpha.",
      "model": "gpt-4o", "prompt_tokens": 42, "llm_span": "llm"}, ("the managed prompt 'rag' (version 3)",)),
    ([ret(), gen(type="generation", input="plain prompt", output={"content": "Lower."})], {},
     {"prompt_text": "plain prompt", "answer": "Lower.", "model": None, "prompt_tokens": None, "llm_span": "llm"},
     ()),
    ([ret(), gen("rewrite", "g1", input="What is X?", output="X?"),
      gen("answer", "g2", input=ASKED, output="X is alpha.")], {"output": "ignored"},
     {"prompt_text": "system: Be brief.\n\nuser: alpha\nbeta\n\nWhat is X?", "answer": "X is alpha.",
      "model": None, "prompt_tokens": None, "llm_span": "answer"}, ("observations not used: GENERATION 'rewrite'",)),
    ([ret()], {"output": "From the trace."},
     {"prompt_text": None, "answer": "From the trace.", "model": None, "prompt_tokens": None, "llm_span": None},
     (NO_GEN,)),
])
def test_the_generation_that_was_sent(obs, trace, logged, unmapped):
    got = load(T("t", *obs, **trace))
    assert {k: getattr(got.logged, k) for k in logged} == logged
    assert got.logged.unmapped == unmapped
    assert got.warnings == ((not_mapped(*unmapped),) if unmapped else ())


def test_the_generations_model_settings_and_system_message():
    got = load(T("t", ret(), gen(input=ASKED, model="gpt-4o", modelParameters={"max_tokens": 256})))
    assert got.config == {"model": "gpt-4o", "max_output": 256}
    assert got.inputs.system == "Be brief."
    assert got.logged.stated == {"max_output": 256}
    assert got.warnings == ()


@pytest.mark.parametrize("trace, notes", [
    ({"metadata": {"env": "prod", "user": "u1"}}, ["trace metadata (env, user)"]),
    ({"metadata": '{"env": "prod"}'}, ["trace metadata (env)"]),
    ({"metadata": {}}, []),
    ({"metadata": "plain"}, []),
    ({"scores": [{"name": "faith", "value": 0.9}, {"name": "label", "stringValue": "good"}, "junk"]},
     ["scores (faith=0.9, label=good)"]),
    ({"scores": []}, []),
    ({"tags": ["rag", 2]}, ["tags (rag, 2)"]),
    ({"tags": []}, []),
    ({"tags": "rag"}, []),
    ({"metadata": {"env": "prod"}, "scores": [{"name": "faith", "value": 1}], "tags": ["rag"]},
     ["trace metadata (env)", "scores (faith=1)", "tags (rag)"]),
])
def test_trace_metadata_scores_and_tags_are_named_unmapped(trace, notes):
    got = load(T("t", ret(), **trace))
    assert got.logged.unmapped == (NO_GEN, *notes)
    assert got.warnings == (not_mapped(NO_GEN, *notes),)


def test_observations_not_used_are_named_in_time_order():
    got = load(T("t", {"type": "EVENT", "name": "log", "id": "e1", "startTime": 3},
                 span("prep", "s1", startTime=1), ret(startTime=2)))
    assert got.logged.unmapped == (NO_GEN, "observations not used: SPAN 'prep', EVENT 'log'")
    assert got.warnings == (not_mapped(NO_GEN, "observations not used: SPAN 'prep', EVENT 'log'"),)


@pytest.mark.parametrize("obs, counted, texts, said", [
    ([ret("empty", "r0", []), ret()], ("search",), ["alpha", "beta"],
     ("RETRIEVER 'empty' returned no documents",)),
    ([ret("empty", "r0", [])], (), [], ("RETRIEVER 'empty' returned no documents",)),
    ([ret("empty", "r0", []), span("retrieve-more", "s1", output=[C])], ("retrieve-more",),
     ["gamma"], ("RETRIEVER 'empty' returned no documents",)),
])
def test_a_retriever_that_returned_no_documents_is_a_warning(obs, counted, texts, said):
    got = load(T("t", *obs))
    assert got.logged.retriever_spans == counted
    assert [c.text for c in got.candidates] == texts
    assert got.warnings == (*said, not_mapped(NO_GEN))


def test_output_that_is_not_documents_is_refused_at_its_file_position():
    with pytest.raises(InputError) as e:
        load(T("t", ret(output="plain text", startTime=2), span("prep", "s1", startTime=1)))
    assert (e.value.field, e.value.message) == (
        "observations[0].output", "the output of RETRIEVER 'search' is not a list of documents (expected strings, "
        "LangChain documents or objects with content/text)")


@pytest.mark.parametrize("obs, found", [
    ([span("prep", "s1"), gen(), span("prep", "s2")], "SPAN 'prep', GENERATION 'llm'"),
    ([span("retrieve", "s1", output="not documents"), {"type": "event"}], "SPAN 'retrieve', EVENT '?'"),
])
def test_no_retriever_is_refused_naming_what_was_found(obs, found):
    with pytest.raises(InputError) as e:
        load(T("t", *obs))
    assert str(e.value) == ("lf.json, field 'observations': no RETRIEVER observation (or span named like "
                            f"'retrieve…') with documents; found: {found}")


def test_a_step_that_keeps_some_earlier_documents_is_a_filter():
    got = load(T("t", ret(output=[A, B, C]), span("retrieve-rerank", "f1", output=[C, A])))
    assert got.logged.retriever_spans == ("search",)
    assert [c.id for c in got.candidates] == ["d1", "d2", "d3"]
    assert got.logged.reranker == {"span": "retrieve-rerank", "model": None, "top_k": None, "step": "filter",
                                   "filters": [{"span": "retrieve-rerank", "kept": ["d3", "d1"]}]}
    assert (got.logged.reranked, got.logged.reranker_cut) == (("d3", "d1"), ("d2",))
    assert got.warnings == (not_mapped(NO_GEN),)


@pytest.mark.parametrize("obs, ids, spans", [
    ([ret(output=[A]), span("retrieve-more", "s1", output=[A, B])], ["d1", "d1#2", "d2"],
     ["search", "retrieve-more", "retrieve-more"]),
    ([ret(output=[A, B]), ret("again", "r2", [B])], ["d1", "d2", "d2#2"], ["search", "search", "again"]),
    ([ret(output=[{**A, "metadata": {"span": "own"}}]), ret("web", "r2", [C])], ["d1", "d3"],
     ["own", "web"]),
])
def test_several_retrievers_are_combined_and_each_document_names_its_span(obs, ids, spans):
    got = load(T("t", *obs))
    assert [c.id for c in got.candidates] == ids
    assert [c.metadata["span"] for c in got.candidates] == spans
    assert got.logged.retriever_spans == tuple(dict.fromkeys(o["name"] for o in obs))
    assert got.logged.reranker is None
    assert got.warnings == ("2 retriever observations: their documents are combined in time order",
                            not_mapped(NO_GEN))


def test_one_retriever_leaves_the_document_metadata_alone():
    got = load(T("t", ret()))
    assert [c.metadata for c in got.candidates] == [{"retrieval_rank": 1}, {"retrieval_rank": 2}]
    assert got.warnings == (not_mapped(NO_GEN),)


@pytest.mark.parametrize("start, end, row", [
    (1.0, 1.0012345, ("1970-01-01T00:00:01.000Z", 1.235)),
    (0, 0.0004567, ("1970-01-01T00:00:00.000Z", 0.457)),
])
def test_a_spans_duration_in_milliseconds_to_three_places(start, end, row):
    got = lf._lf_span({"startTime": start, "endTime": end})
    assert (got["start"], got["duration_ms"]) == row


def test_trace_ids_refuses_a_file_of_observation_ids_as_input():
    with pytest.raises(InputError) as e:
        lf.trace_ids({"id": "t", "observations": ["o1"]})
    assert (e.value.source, e.value.field) == ("input", "observations")
