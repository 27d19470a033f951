"""A Langfuse file of several traces read (ctxcore/io/formats/langfuse.py ``_load``), held by hand-valued rows: the
observation limit at its edge, traces without ids keyed by their place, which trace is shown (by id, else the first
with retrieval and a generation, else with retrieval), the note when a file holds more than one, retrievers nested
under retrievers counted once through their parent links, a cycle of parents named, and a span row's start and
duration (issue #29). Field names as Langfuse's API writes them (langfuse/langfuse-python
api/commons/types/observation.py)."""

import pytest

from ctxcore.errors import InputError
from ctxcore.io.formats import langfuse as lf
from ctxcore.io.formats.shapes import NOT_A_TRACE, load_file
from ctxcore.io.limits import MAX_SPANS


def _ret(oid, text, parent=None, name="retrieve"):
    return {"type": "RETRIEVER", "id": oid, "name": name, "parentObservationId": parent, "input": "When?",
            "output": [{"pageContent": text}]}


def _gen(oid="g", kind="GENERATION", says="When?", out="In May.", **more):
    return {"type": kind, "id": oid, "name": "llm", "input": [{"role": "user", "content": says}], "output": out,
            **more}


def _span(oid):
    return {"type": "SPAN", "id": oid, "name": "step"}


def _load(*traces, trace_id=None):
    return lf._load([lf._LfTrace(tid, {"id": tid} if tid else {}, obs) for tid, obs in traces], "lf.json", trace_id)


def _shown(loaded):
    return loaded.logged.trace_id, [c.text for c in loaded.candidates], list(loaded.warnings)


def test_observations_up_to_the_limit_are_read_and_one_more_is_refused_naming_the_field():
    filler = _span("s")
    at_limit = _load(("t-a", [_ret("r", "alpha")]), ("t-b", [filler] * (MAX_SPANS - 1)))
    assert at_limit.logged.trace_id == "t-a"
    with pytest.raises(InputError) as err:
        _load(("t-a", [_ret("r", "alpha")]), ("t-b", [filler] * MAX_SPANS))
    assert (err.value.message, err.value.field, err.value.source) == (
        f"{MAX_SPANS + 1} observations; the limit is {MAX_SPANS}", "observations", "lf.json")


@pytest.mark.parametrize("ids, traces", [
    (("t-a", "t-b"), ("t-a", "t-b")),
    (("t-a", None), ("t-a", "#2")),  # the trace without an id by its place
    (("t-a", "t-a"), ("t-a#1", "t-a#2")),  # a repeated id with each one's place: neither lost nor merged
    ((None,), ()),  # the file's only trace needs no name
    ((None, None), ("#1", "#2")),  # two without: each by its place, from 1
    ((None, "t-b", None), ("#1", "t-b", "#3")),
])
def test_traces_without_ids_or_with_repeated_ids_are_named_by_their_place(ids, traces):
    got = _load(*[(tid, [_ret(f"r{i}", f"text {i}")]) for i, tid in enumerate(ids)])
    assert got.logged.traces == traces


@pytest.mark.parametrize("kinds, shown", [
    ((["SPAN"], ["RETRIEVER"], ["RETRIEVER", "GENERATION"]), "t-3"),  # retrieval and a generation first
    ((["SPAN"], ["RETRIEVER"], ["RETRIEVER", "generation"]), "t-3"),  # the type in any case
    ((["SPAN"], ["RETRIEVER"], ["SPAN", "GENERATION"]), "t-2"),  # else the first with retrieval
    ((["RETRIEVER"], ["RETRIEVER", "GENERATION"]), "t-2"),
])
def test_the_trace_shown_is_the_first_with_retrieval_and_a_generation_else_with_retrieval(kinds, shown):
    def obs(i, k):
        return [_ret(f"r{i}", f"text of t-{i}") if t == "RETRIEVER" else _gen(f"g{i}", t) if t.upper() ==
                "GENERATION" else _span(f"s{i}") for t in k]
    got = _load(*[(f"t-{i}", obs(i, k)) for i, k in enumerate(kinds, 1)])
    assert _shown(got)[:2] == (shown, [f"text of {shown}"])
    assert f"file holds {len(kinds)} traces; showing {shown}" in got.warnings


def test_one_trace_is_shown_without_a_note_and_a_trace_asked_for_by_id_is_shown():
    assert not any(w.startswith("file holds") for w in _load(("t-a", [_ret("r", "alpha")])).warnings)
    got = _load(("t-a", [_ret("r1", "alpha")]), ("t-b", [_ret("r2", "beta")]), trace_id="t-b")
    assert _shown(got)[:2] == ("t-b", ["beta"])


def test_a_trace_id_not_in_the_file_is_refused_listing_those_it_holds():
    with pytest.raises(InputError) as err:
        _load(("t-a", [_ret("r1", "alpha")]), ("t-b", [_ret("r2", "beta")]), trace_id="t-x")
    assert (err.value.message, err.value.field, err.value.source) == (
        "trace 't-x' is not in the file; it holds: t-a, t-b", "trace_id", "lf.json")


def test_a_retriever_under_another_is_counted_once_through_its_parent_link():
    got = _load(("t", [_ret("outer", "alpha", name="outer"), _ret("inner", "alpha", parent="outer", name="inner")]))
    assert (got.logged.retriever_spans, [c.text for c in got.candidates]) == (("outer",), ["alpha"])


def test_two_retrievers_side_by_side_are_both_read():
    got = _load(("t", [_ret("one", "alpha", name="one"), _ret("two", "beta", name="two")]))
    assert (got.logged.retriever_spans, sorted(c.text for c in got.candidates)) == (("one", "two"), ["alpha", "beta"])


def test_a_cycle_of_parents_is_cut_and_named():
    a, b = _ret("a", "alpha", parent="b", name="first"), _ret("b", "beta", parent="a", name="second")
    got = _load(("t", [a, b]))
    assert [w for w in got.warnings if "cycle" in w] == [
        "RETRIEVER 'second': its parent a closes a cycle of parents; read as a root"]
    assert got.logged.retriever_spans == ("second",)  # the cut one is the root, the other under it


@pytest.mark.parametrize("o, start, duration", [
    ({"type": "SPAN", "name": "s"}, None, None),
    ({"type": "SPAN", "name": "s", "startTime": 100.0, "endTime": 100.0012345}, "1970-01-01T00:01:40.000Z", 1.234),
    ({"type": "SPAN", "name": "s", "startTime": "2024-05-14T10:00:00Z"}, "2024-05-14T10:00:00.000Z", None),
])
def test_a_span_rows_start_and_duration_in_milliseconds_to_three_places(o, start, duration):
    row = lf._lf_span(o)
    assert (row["start"], row["duration_ms"]) == (start, duration)


def test_trace_ids_refuse_a_file_of_observation_ids_as_input():
    with pytest.raises(InputError) as err:
        lf.trace_ids({"id": "t", "observations": ["o1", "o2"]})
    assert (err.value.source, err.value.field) == ("input", "observations")


@pytest.mark.parametrize("data", [
    {"id": "t", "observations": ["o1", "o2"]},
    {"data": [{"id": "t", "observations": ["o1", "o2"]}]},  # inside the API's {"data": [...]} page: the file still named
])
def test_a_file_of_observation_ids_is_refused_naming_the_file_and_the_field(data):
    with pytest.raises(InputError) as err:
        lf._langfuse_traces(data, "page.json")
    assert (err.value.source, err.value.field) == ("page.json", "observations")


@pytest.mark.parametrize("raw", [b"5", b"true", b'"abc"', b"{}", b"[]"])
def test_a_file_of_one_json_value_that_is_not_a_trace_is_refused_as_not_a_logged_trace(raw):
    with pytest.raises(InputError) as err:
        load_file(raw, name="x.json")
    assert (err.value.source, err.value.message) == ("x.json", NOT_A_TRACE)


def _one(obs, trace=None):
    return lf._load([lf._LfTrace("t", trace or {"id": "t"}, obs)], "lf.json", None)


def _docs(oid, texts, name="retrieve", kind="RETRIEVER", **more):
    return {"type": kind, "id": oid, "name": name, "input": "When?",
            "output": [{"pageContent": t} for t in texts], **more}


@pytest.mark.parametrize("second, reranker, spans, texts", [
    (_docs("f", ["alpha"], "retrieve-filter", "SPAN"),  # a span's documents all seen before: a filter step
     {"span": "retrieve-filter", "model": None, "top_k": None, "step": "filter",
      "filters": [{"span": "retrieve-filter", "kept": ["doc-1"]}]}, ("retrieve",), ["alpha", "beta"]),
    (_docs("f", ["alpha"], "retrieve-again"), None, ("retrieve", "retrieve-again"), ["alpha", "beta", "alpha"]),
    (_docs("f", ["alpha", "gamma"], "retrieve-more", "SPAN"), None, ("retrieve", "retrieve-more"),
     ["alpha", "beta", "alpha", "gamma"]),
])
def test_a_span_that_only_narrows_earlier_documents_is_a_filter_step(second, reranker, spans, texts):
    got = _one([_docs("r", ["alpha", "beta"]), second])
    assert (got.logged.reranker, got.logged.retriever_spans, [c.text for c in got.candidates]) == (
        reranker, spans, texts)


def test_what_a_trace_holds_that_is_not_mapped_is_named():
    gen = {"type": "GENERATION", "id": "g", "name": "llm", "input": [{"role": "user", "content": "When?"}],
           "output": "In May.", "promptName": "qa", "promptVersion": 3,
           "modelParameters": {"max_tokens": 256, "temperature": 0}}
    trace = {"id": "t", "output": "trace said", "metadata": {"env": "prod"}, "tags": ["a", "b"],
             "scores": [{"name": "faith", "value": 0.5}, {"name": "label", "stringValue": "bad"}, 5]}
    got = _one([_docs("r", ["alpha"], metadata={"top_k": 2}), gen], trace)
    assert got.logged.unmapped == ("model parameters temperature", "the managed prompt 'qa' (version 3)",
                                   "trace metadata (env)", "scores (faith=0.5, label=bad)", "tags (a, b)")
    assert (got.logged.stated, got.logged.answer, got.logged.llm_span) == ({"max_output": 256, "top_k": 2},
                                                                          "In May.", "llm")


def test_without_a_generation_the_answer_is_the_traces_output_and_each_document_names_its_retriever():
    got = _one([_docs("r1", ["alpha"], "one"), _docs("r2", ["beta"], "two"), _docs("r3", [], "three")],
               {"id": "t", "output": "trace said"})
    assert (got.logged.answer, got.logged.unmapped) == ("trace said",
                                                        ("the prompt and answer (no GENERATION observation)",))
    assert got.warnings[:2] == ("RETRIEVER 'three' returned no documents",
                                "2 retriever observations: their documents are combined in time order")
    assert [(c.text, c.metadata["span"]) for c in got.candidates] == [("alpha", "one"), ("beta", "two")]


@pytest.mark.parametrize("obs, message, field", [
    ([{"type": "SPAN", "name": "a"}, {"type": "EVENT", "name": "b"}],
     "no RETRIEVER observation (or span named like 'retrieve…') with documents; found: SPAN 'a', EVENT 'b'",
     "observations"),
    ([], "no RETRIEVER observation (or span named like 'retrieve…') with documents; found: no observations",
     "observations"),
    ([{"type": "SPAN", "name": "a"}, {**_docs("r", ["x"]), "output": 5}],
     "the output of RETRIEVER 'retrieve' is not a list of documents (expected strings, LangChain documents or "
     "objects with content/text)", "observations[1].output"),
])
def test_a_trace_without_readable_documents_is_refused_naming_the_field(obs, message, field):
    with pytest.raises(InputError) as err:
        _one(obs)
    assert (err.value.message, err.value.field, err.value.source) == (message, field, "lf.json")


# Rows written against the survivors of the whole-load run (issue #29).


def test_a_span_repeating_every_document_read_is_not_read_again_and_a_later_retriever_is():
    got = _one([_docs("r", ["alpha", "beta"]), _docs("s", ["alpha", "beta"], name="retrieve-again", kind="SPAN"),
                _docs("r2", ["gamma"], name="more"), _gen(says="When? alpha")])
    assert [c.text for c in got.candidates] == ["alpha", "beta", "gamma"]


def test_a_document_without_text_is_refused_naming_its_observation_and_place():
    with pytest.raises(InputError) as err:
        _one([{"type": "RETRIEVER", "id": "r", "name": "retrieve", "input": "When?",
               "output": [{"pageContent": "alpha"}, {"id": "d2"}]}, _gen(says="When? alpha")])
    assert (err.value.source, err.value.field) == ("lf.json", "observations[0].output[1]")


@pytest.mark.parametrize("gens, prompt, answer", [
    ([_gen("g1", says="Question: When? Context: alpha"), _gen("g2", says="Rate this answer", out="5/5")],
     "user: Question: When? Context: alpha", "In May."),  # a judge call after the answer is not the generation
    ([_gen("g1", says="Rewrite: When?", out="When exactly?"), _gen("g2", says="Context: alpha. When?")],
     "user: Context: alpha. When?", "In May."),  # nor a query rewrite before it
    ([_gen("g1", says="Context: alpha. When?", out="Timed out."), _gen("g2", says="Context: alpha. When?")],
     "user: Context: alpha. When?", "In May."),  # of two calls alike, the last: a retry
])
def test_the_generation_is_the_call_whose_prompt_holds_the_documents(gens, prompt, answer):
    got = _one([_docs("r", ["alpha"]), *gens])
    assert (got.logged.prompt_text, got.logged.answer) == (prompt, answer)


def test_a_model_without_a_known_tokenizer_is_warned_of_and_named():
    got = _one([_docs("r", ["alpha"]), _gen(says="When? alpha", model="my-own-llm")])
    assert got.warnings[0] == "model 'my-own-llm' has no known tokenizer: token counts use the default cl100k_base encoding"
    assert got.logged.unmapped == ("model 'my-own-llm' (no known tokenizer)",)


def test_a_system_message_carrying_the_passages_is_named_as_not_mapped():
    got = _one([_docs("r", ["alpha passage text here"]),
                {"type": "GENERATION", "id": "g", "name": "llm", "output": "x",
                 "input": [{"role": "system", "content": "Use: alpha passage text here"}, {"role": "user", "content": "When?"}]}])
    assert got.logged.unmapped == ("the system message (it carries the retrieved passages; ctxcore builds its own evidence "
                                   "block)",)


def test_limit_like_keys_a_retrievers_metadata_states_are_named_those_of_model_parameters_are_not():
    got = _one([_docs("r", ["alpha"], metadata={"max_chunks": 4}), _gen(says="When? alpha", modelParameters={"max_chunks": 4, "top_k": 3})])
    assert got.logged.unmapped == ("model parameters max_chunks, top_k",
                                   "stated limits of the RETRIEVER 'retrieve' metadata not read: max_chunks=4")
    assert got.logged.stated == {"top_k": 3}


def test_documents_logged_by_id_take_their_text_from_the_candidates_given():
    data = {"id": "t", "observations": [{"type": "RETRIEVER", "id": "r", "name": "retrieve", "input": "When?",
                                         "startTime": "2024-05-01T10:00:00Z", "output": [{"id": "d1"}, {"id": "d2"}]}]}
    got = lf._read(data, "lf.json", None, {"d1": "alpha", "d2": "beta"})
    assert [(c.id, c.text) for c in got.candidates] == [("d1", "alpha"), ("d2", "beta")]


def test_reading_a_file_of_observation_ids_names_the_file():
    with pytest.raises(InputError) as err:
        lf._read({"id": "t", "observations": ["o1"]}, "lf.json", None)
    assert (err.value.source, err.value.field) == ("lf.json", "observations")
