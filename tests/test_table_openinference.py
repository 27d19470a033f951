"""OpenInference spans mapped to ctxcore input (ctxcore/io/formats/openinference.py), its small readers held by
hand-valued tables: which spans retrieve or rerank and hold documents, the messages, prompt and answer an LLM span
logged, tools, where a run states its limits, and which retrievers sit inside which, by parent links and by time
(issue #29)."""

import pytest

from ctxcore.errors import InputError
from ctxcore.io.formats import openinference as oi
from ctxcore.io.formats.spans import Span


def _s(kind="", attrs=None, name="s", span_id=None, parent_id=None, start=None, end=None, trace_id=None):
    return Span(index=0, trace_id=trace_id, span_id=span_id, parent_id=parent_id, name=name, kind=kind, start=start,
                attrs=attrs or {}, end=end)


RET_EMPTY = _s("RETRIEVER")
CHAIN_DOCS = _s("CHAIN", {"retrieval": {"documents": [1, 2]}})
RERANKED = _s("RERANKER", {"reranker": {"output_documents": [1]}})
RERANK_IN = _s("", {"reranker": {"input_documents": [1]}})
RERANK_BAD = _s("", {"reranker": {"input_documents": "x"}})
LLM = _s("LLM")
CHAIN_BAD = _s("CHAIN", {"retrieval": {"documents": "x"}})


@pytest.mark.parametrize("span, retrieved, out, inp, retriever, reranker, has_docs", [
    (RET_EMPTY, [], None, None, True, False, False),
    (CHAIN_DOCS, [1, 2], None, None, True, False, True),
    (RERANKED, [], [1], None, False, True, True),
    (RERANK_IN, [], None, [1], False, True, True),
    (RERANK_BAD, [], None, None, False, True, False),
    (LLM, [], None, None, False, False, False),
    (CHAIN_BAD, [], None, None, False, False, False),
])
def test_which_spans_retrieve_rerank_and_hold_documents(span, retrieved, out, inp, retriever, reranker, has_docs):
    assert (oi._retrieved(span), oi._reranked(span, "output_documents"), oi._reranked(span, "input_documents"),
            oi._is_retriever(span), oi._is_reranker(span), oi._has_documents(span)) == \
        (retrieved, out, inp, retriever, reranker, has_docs)


@pytest.mark.parametrize("spans, count, with_docs, llm", [
    ([RET_EMPTY, CHAIN_DOCS, RERANKED, CHAIN_BAD], 2, True, False),
    ([RET_EMPTY, RERANK_BAD], 0, False, False),
    ([RET_EMPTY, RERANKED], 0, True, False),
    ([RERANK_IN, LLM], 0, True, True),
    ([CHAIN_DOCS, CHAIN_DOCS], 4, True, False),
    ([LLM], 0, False, True),
    ([], 0, False, False),
])
def test_what_a_run_holds(spans, count, with_docs, llm):
    assert (oi._doc_count(spans), oi._with_docs(spans), oi._has_llm(spans)) == (count, with_docs, llm)


@pytest.mark.parametrize("value, said", [
    ("  assistant: hi ", "hi"),
    ("AI: yes", "yes"),
    ("Model:  ok", "ok"),
    ("plain", "plain"),
    ("hello assistant: x", "hello assistant: x"),
    ("   ", None),
    ("", None),
    ([{"role": "user", "content": "q"}, {"role": "assistant", "content": "a1"}, {"content": "a2"}, "x"], "a2"),
    ([{"role": "assistant", "content": "a1"}, {"role": "ai", "content": ""}], "a1"),
    ([{"role": "user", "content": "q"}], None),
    ({"message": {"content": "m"}, "response": {"content": "r"}}, "m"),
    ({"message": "x", "response": {"content": "r"}}, "r"),
    ({"choices": [{"message": {"content": "c"}}], "content": "own"}, "c"),
    ({"content": [{"text": "p"}], "contents": "x"}, "p"),
    ({"contents": [{"message_content": {"text": "q"}}]}, "q"),
    ({"blocks": [{"text": "b1"}, {"text": 5}, "x", {"text": "b2"}]}, "b1\nb2"),
    ({"blocks": []}, None),
    ({"content": ""}, None),
    ({"answer": "ans"}, "ans"),
    ({"x": "é"}, '{"x": "é"}'),
    (5, None),
])
def test_the_text_of_one_logged_output(value, said):
    assert oi._said(value) == said


@pytest.mark.parametrize("attrs, answer", [
    ({"llm": {"output_messages": [{"message": {"role": "assistant", "content": "a"}}, {"message": {"content": "b"}},
                                  {"message": {"content": ""}}], "choices": [{"completion": {"text": "c"}}]}},
     "a\n\nb"),
    ({"llm": {"output_messages": ["assistant: s"]}}, "s"),
    ({"llm": {"output_messages": [{"message": {"content": ""}}],
              "choices": [{"completion": {"text": "c1"}}, {"completion": {}}, {"completion": {"text": "c2"}}]}},
     "c1\n\nc2"),
    ({"llm": {"choices": [{"completion": {"text": 5}}]}, "output": {"value": '"assistant: done"'}}, "done"),
    ({"llm": {"output_messages": "x", "choices": "y"}, "output": {"value": '{"response": "r"}'}}, "r"),
    ({}, None),
])
def test_the_answer_an_llm_span_logged(attrs, answer):
    assert oi._oi_answer(_s("LLM", attrs)) == answer


@pytest.mark.parametrize("items, messages", [
    ([{"message": {"role": "system", "content": "s"}}, {"role": "user", "content": "q"},
      {"message": {"role": "assistant", "contents": [{"message_content": {"text": "c"}}]}},
      {"message": {"role": "assistant", "tool_calls": [{"id": "é"}]}}, {"message": {}}, 5],
     [("system", "s"), ("user", "q"), ("assistant", "c"), ("assistant", '[{"id": "é"}]'), ("user", "")]),
    ([{"message": "str", "role": "tool"}], [("tool", "")]),
    ([{"message": {"role": "user", "blocks": [{"block_type": "text", "text": "b"}]}}], [("user", "b")]),
    ("x", []),
])
def test_an_llm_spans_messages(items, messages):
    assert oi._oi_messages(items) == messages


@pytest.mark.parametrize("attrs, prompt", [
    ({"llm": {"input_messages": [{"message": {"role": "system", "content": "s"}},
                                 {"message": {"role": "user", "content": "q"}}], "prompts": ["p"]}},
     ("system: s\n\nuser: q", [("system", "s"), ("user", "q")])),
    ({"llm": {"prompts": ["p1", {"prompt": {"text": "p2"}}, 5]}, "input": {"value": "v"}}, ("p1\n\np2", [])),
    ({"llm": {"prompts": [5]}, "input": {"value": "v"}}, ("v", [])),
    ({"llm": {"prompts": []}, "input": {"value": "v"}}, ("v", [])),
    ({"input": {"value": '{"messages": [{"role": "user", "content": "q"}, {"content": "c"}, 5]}'}},
     ("user: q\n\nuser: c", [("user", "q"), ("user", "c")])),
    ({"input": {"value": '{"messages": [5]}'}}, (None, [])),
    ({"input": {"value": '{"query": "q"}'}}, (None, [])),
    ({"input": {"value": "plain prompt"}}, ("plain prompt", [])),
    ({"input": {"value": '"quoted"'}}, ('"quoted"', [])),
    ({"input": {"value": 5}}, (None, [])),
    ({}, (None, [])),
])
def test_the_prompt_an_llm_span_shows(attrs, prompt):
    assert oi._oi_prompt(_s("LLM", attrs)) == prompt


@pytest.mark.parametrize("item, text", [
    ({"tool": {"json_schema": '{"name": "f"}'}}, '{"name": "f"}'),
    ({"tool": {"json_schema": {"name": "f"}}}, '{\n  "name": "f"\n}'),
    ({"tool": {"name": "é"}}, '{\n  "name": "é"\n}'),
    ({"json_schema": "s"}, "s"),
    ({"tool": "t"}, "t"),
    ({"tool": 5}, None),
    ("raw", "raw"),
    (5, None),
])
def test_a_tool_as_text(item, text):
    assert oi._oi_tool(item) == text


def test_where_a_run_states_its_limits_first_wins():
    llm = _s("LLM", {"llm": {"invocation_parameters": {"max_tokens": 5}}}, name="gen")
    reranker = _s("RERANKER", {"reranker": {"top_k": 3}}, name="rr")
    other = _s("", {"metadata": {"k": 1}}, name="x")
    assert oi._limit_sources([llm, reranker, other], llm, reranker) == [
        ("LLM 'gen'", {"max_tokens": 5}, False), ("RERANKER 'rr'", {"top_n": 3}, False),
        ("LLM 'gen' metadata", None, True), ("RERANKER 'rr' metadata", None, True), ("span 'x' metadata", {"k": 1}, True)]
    assert oi._limit_sources([other], None, None) == [("span 'x' metadata", {"k": 1}, True)]
    assert oi._limit_sources([], None, None) == []


def test_retrievers_nested_by_parent_links_up_to_the_depth_limit():
    top = _s("RETRIEVER", span_id="t", name="top")
    a, b = _s(span_id="a", parent_id="t", name="a"), _s(span_id="b", parent_id="a", name="b")
    lost = _s(span_id="c", parent_id="zzz", name="c")
    x, y = _s(span_id="x", parent_id="y"), _s(span_id="y", parent_id="x")  # a cycle ends at the depth limit
    chain = [_s(span_id="k1", parent_id="t", name="k1")]
    for k in range(2, 102):
        chain.append(_s(span_id=f"k{k}", parent_id=f"k{k - 1}", name=f"k{k}"))
    spans = [top, a, b, lost, x, y] + chain
    by_id = {s.span_id: s for s in spans}
    got = oi._nested_under([a, b, lost, top, x, y, chain[99], chain[100]], [top], by_id)
    assert list(got) == [id(top)]
    assert [(s.name, depth) for s, depth in got[id(top)]] == [("a", 1), ("b", 2), ("k100", 100)]


def test_retrievers_inside_one_another_by_time():
    def t(name, start, end, parent=None):
        return _s("RETRIEVER", name=name, start=start, end=end, parent_id=parent, span_id=name)

    p, q, r, s, u = t("P", 0, 10), t("Q", 1, 5), t("R", 2, 3), t("S", 6, 9), t("U", 11, 12)
    linked, open_ended = t("L", 1, 2, parent="P"), t("V", 3, None)
    same_start, same_end = t("W", 11, 11.5), t("Z", 11.5, 12)
    by_id = {x.span_id: x for x in (p, q, r, s, u, linked, open_ended, same_start, same_end)}
    got = oi._inside([s, u, r, q, p, linked, open_ended, same_start, same_end], by_id)
    assert {k: [(x.name, d) for x, d in v] for k, v in got.items()} == {
        id(p): [("Q", 1), ("R", 2), ("S", 1)], id(u): [("W", 1), ("Z", 1)]}


def test_trace_ids_in_order_of_first_appearance():
    data = [{"context.trace_id": "b", "span_kind": "LLM"}, {"context.trace_id": "a", "span_kind": "LLM"},
            {"context.trace_id": "b", "span_kind": "CHAIN"}, {"span_kind": "LLM"}]
    assert oi.trace_ids(data) == ["b", "a"]
    assert oi.trace_ids({"not": "spans"}) == []


DOC = [{"content": "the refund window is 30 days"}]


def _llm(name, start, says_doc=True, kind="LLM"):
    text = "context: the refund window is 30 days" if says_doc else "context: nothing"
    attrs = ({"llm": {"input_messages": [{"message": {"role": "user", "content": text}}]}} if kind == "LLM"
             else {"input": {"value": text}})
    return _s(kind, attrs, name=name, start=start, trace_id="other")


@pytest.mark.parametrize("others, picked", [
    ([_llm("far", 108), _llm("near", 104), _llm("none", 101, says_doc=False)], "near"),
    ([_llm("far-with", 108), _llm("near-without", 101, says_doc=False)], "far-with"),
    ([_llm("edge-low", 100 - 0.001)], "edge-low"),
    ([_llm("just-before", 99.9985)], None),
    ([_llm("long-before", 99.5)], None),
    ([_llm("in-slack", 99.9995)], "in-slack"),
    ([_llm("edge-high", 110 + 2.0)], "edge-high"),
    ([_llm("just-after", 112.001)], None),
    ([_llm("before-start", 100 - 0.0005), _llm("after-start", 100 + 0.0002)], "after-start"),
    ([_llm("a", 105), _llm("b", 105)], "a"),
    ([_llm("chain", 105, kind="CHAIN")], None),
    ([_llm("no-time", None)], None),
    ([_s("LLM", {}, name="no-prompt", start=105)], None),
    ([], None),
])
def test_an_llm_call_recorded_apart_is_found_by_its_time_and_documents(others, picked):
    trace = [_s("RETRIEVER", name="r", start=100, end=110, trace_id="run")]
    got = oi._sibling_llm(trace, {"run": trace, "other": others}, "run", DOC)
    assert (got.name if got is not None else None) == picked
    assert oi._sibling_llm(trace, {"run": trace + others}, "run", DOC) is None  # the run's own spans are not apart


def test_a_run_without_times_has_no_sibling_call():
    trace = [_s("RETRIEVER", name="r")]
    assert oi._sibling_llm(trace, {"run": trace, "other": [_llm("x", 105)]}, "run", DOC) is None


def test_trace_ids_of_spans_one_cannot_read_are_refused_as_input():
    with pytest.raises(InputError) as e:
        oi.trace_ids([{"span_kind": "LLM"}, [1]])
    assert str(e.value) == "input, field 'spans[1]': span 2 is a list, not an object"
