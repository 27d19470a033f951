"""GenAI semantic conventions and OpenLLMetry attributes read as OpenInference ones (ctxcore/io/formats/genai.py),
held by hand-valued tables: message parts, messages, documents in every logged shape, LangChain filter steps, and the
OpenInference keys each convention's span gains, written out whole (issue #29). Attribute names as the module's
docstring cites them (open-telemetry/semantic-conventions gen-ai, traceloop/openllmetry span_utils.py)."""

import pytest

from ctxcore.io.formats.genai import (_documents, _messages, _nodes, _parts_text, convention, step_documents,
                                      to_openinference)


@pytest.mark.parametrize("attrs, name", [
    ({"traceloop": {}, "gen_ai": {}}, "traceloop"),
    ({"gen_ai": {}}, "gen_ai"),
    ({"traceloop": "x", "gen_ai": "y"}, None),
    ({}, None),
])
def test_which_convention(attrs, name):
    assert convention(attrs) == name


@pytest.mark.parametrize("parts, text", [
    (None, None),
    ("s", "s"),
    ('[{"type": "text", "content": "a"}]', "a"),
    (["x", {"type": "text", "content": "a"}, {"content": "b"}, {"type": "image", "content": "no"}, {"text": "t"},
      {"type": "image", "text": "alt"}, {"type": "tool_call", "id": "1", "name": "f"},
      {"type": "tool_call_response", "response": "é"}, 5, {"type": "text", "content": 5}],
     'x\na\nb\nt\nalt\n{"type": "tool_call", "id": "1", "name": "f"}\n{"type": "tool_call_response", "response": "é"}'),
    ([], ""),
    ({"a": 1}, None),
    (7, None),
])
def test_message_parts_as_text(parts, text):
    assert _parts_text(parts) == text


def _m(role, content):
    return {"message": {"role": role, "content": content}}


@pytest.mark.parametrize("value, messages", [
    ([{"role": "user", "parts": [{"type": "text", "content": "q"}]}, {"role": "assistant", "content": "a"},
      {"content": [{"type": "text", "content": "c"}]}, 5, {"role": "", "parts": 7}],
     [_m("user", "q"), _m("assistant", "a"), _m("user", "c"), _m("user", "")]),
    ({"0": {"role": "system", "content": "s"}, "10": {"role": "user", "content": "ten"},
      "2": {"role": "user", "content": "two"}, "1": {"role": "assistant", "content": "one"}},
     [_m("system", "s"), _m("assistant", "one"), _m("user", "two"), _m("user", "ten")]),
    ({"0": {"role": "user", "content": "q"}, "x": {"role": "user", "content": "r"}}, []),
    ('[{"role": "user", "content": "j"}]', [_m("user", "j")]),
    ([{"role": "user", "parts": "plain"}], [_m("user", "plain")]),
    ([{"role": "user", "content": '"quoted"'}], [_m("user", "quoted")]),
    ([{"role": "tool", "content": {"k": 1}}], [_m("tool", "")]),
    ([{"role": "user", "parts": [], "content": "c"}], [_m("user", "")]),
    ([{"role": 3, "content": "c"}], [_m("3", "c")]),
    ("not messages", []),
    (None, []),
])
def test_genai_messages(value, messages):
    assert _messages(value) == messages


def _d(**doc):
    return {"document": doc}


LC_DOC = {"lc": 1, "id": ["langchain", "schema", "document", "Document"],
          "kwargs": {"page_content": "p", "metadata": {"score": 0.3}, "id": "k"}}


@pytest.mark.parametrize("value, docs", [
    ('[{"id": "a", "score": 0.5}]', [_d(id="a", score=0.5)]),
    ({"documents": [{"content": "d"}], "nodes": [{"content": "n"}]}, [_d(content="d")]),
    ({"source_documents": [{"content": "s"}]}, [_d(content="s")]),
    ({"context": [{"content": "c"}]}, [_d(content="c")]),
    ({"documents": "x", "nodes": [{"content": "n"}]}, [_d(content="n")]),
    ({"other": 1}, None),
    (5, None),
    ("text", None),
    (["plain"], [_d(content="plain")]),
    (["plain", 5], None),
    ([LC_DOC], [_d(id="k", score=0.3, content="p", metadata={"score": 0.3})]),
    ([{**LC_DOC, "kwargs": {"page_content": "p"}}], [_d(content="p")]),
    ([{"lc": 1, "kwargs": "x", "content": "c", "id": "top"}], [_d(id="top", content="c")]),
    ([{"node": {"id_": "n1", "text": "t", "metadata": '{"relevance_score": 0.2}'}, "score": 0.9}],
     [_d(id="n1", score=0.9, content="t", metadata={"relevance_score": 0.2})]),
    ([{"node": {"id": "n0", "id_": "n1", "text": "t", "score": 0.4}, "id": "outer", "relevance_score": 0.1}],
     [_d(id="n0", score=0.4, content="t")]),
    ([{"node": "not an object", "id": "outer", "text": "t"}], [_d(id="outer", content="t")]),
    ([{"text": "a", "page_content": "b", "content": "c"}], [_d(content="c")]),
    ([{"page_content": "b", "text": "a", "document": "d"}], [_d(content="b")]),
    ([{"document": "d"}], [_d(content="d")]),
    ([{"content": 5, "text": "t"}], [_d(content="t")]),
    ([{"relevance_score": 0.1, "metadata": {"relevance_score": 0.2, "score": 0.3}}],
     [_d(score=0.1, metadata={"relevance_score": 0.2, "score": 0.3})]),
    ([{"metadata": {"relevance_score": 0.2, "score": 0.3}}], [_d(score=0.2, metadata={"relevance_score": 0.2,
                                                                                       "score": 0.3})]),
    ([{"metadata": "plain", "content": "c"}], [_d(content="c")]),
    ([], []),
])
def test_documents_in_every_logged_shape(value, docs):
    assert _documents(value) == docs


@pytest.mark.parametrize("value, nodes", [
    ([], False),
    ("x", False),
    (['{"node": {"text": "a"}}'], True),
    ([{"node": {}}, {"node": {"text": "b"}}], True),
    ([{"node": {}}, {"text": "b"}], False),
    ([{"node": 5}], False),
])
def test_llamaindex_nodes(value, nodes):
    assert _nodes(value) is nodes


def _chain(output, **more):
    return {"openinference": {"span": {"kind": "CHAIN"}}, "output": {"value": output}, **more}


@pytest.mark.parametrize("attrs, docs", [
    (_chain('[{"page_content": "a"}, {"page_content": "b"}]'), [_d(content="a"), _d(content="b")]),
    (_chain('{"outputs": [{"page_content": "a"}], "documents": [{"content": "x"}]}'), [_d(content="a")]),
    (_chain('{"documents": [{"content": "a"}]}'), [_d(content="a")]),
    (_chain({"outputs": '[{"content": "a"}]'}), [_d(content="a")]),
    (_chain({"outputs": "x"}), None),
    (_chain([]), None),
    (_chain(["str"]), None),
    (_chain([{"id": "a"}]), None),
    (_chain([{"content": "a"}, {"id": "b"}]), None),
    ({**_chain('[{"content": "a"}]'), "openinference": {"span": {"kind": "RETRIEVER"}}}, None),
    (_chain('[{"content": "a"}]', retrieval={"documents": [_d(content="own")]}), None),
])
def test_a_chain_step_that_outputs_documents(attrs, docs):
    got = step_documents(attrs)
    if docs is None:
        assert got is attrs
    else:
        assert got == {**attrs, "retrieval": {"documents": docs}}


def test_a_chain_steps_documents_join_what_its_retrieval_already_holds():
    attrs = _chain('[{"content": "a"}]', retrieval={"query": "q"})
    assert step_documents(attrs)["retrieval"] == {"query": "q", "documents": [_d(content="a")]}


def _kind(kind):
    return {"openinference": {"span": {"kind": kind}}}


TL_OUT = '{"documents": [{"page_content": "p", "metadata": {}}], "count": 1}'
NODES = ['{"node": {"text": "t", "id_": "n"}, "score": 0.7}']
CHAT = {"operation": {"name": "chat"},
        "input": {"messages": '[{"role": "user", "parts": [{"type": "text", "content": "q"}]}]'},
        "output": {"messages": '[{"role": "assistant", "parts": [{"type": "text", "content": "a"}]}]'},
        "system_instructions": '[{"type": "text", "content": "be brief"}]',
        "request": {"model": "unknown", "max_tokens": 100}, "response": {"model": "gpt-4o-2024"},
        "usage": {"input_tokens": 10, "output_tokens": "5"}}
OLD = {"prompt": {"0": {"role": "user", "content": "q"}}, "completion": {"0": {"role": "assistant", "content": "a"}},
       "request": {"model": "unknown"}, "usage": {"prompt_tokens": 3, "completion_tokens": 2}}


@pytest.mark.parametrize("attrs, added", [
    ({"gen_ai": {"operation": {"name": "retrieval"},
                 "retrieval": {"query": {"text": "q"}, "documents": '[{"id": "a", "score": 0.5}]'}}},
     {**_kind("RETRIEVER"), "retrieval": {"documents": [_d(id="a", score=0.5)]}, "input": {"value": "q"}}),
    ({"gen_ai": {"operation": {"name": "vector_db_retrieve"}},
      "traceloop": {"entity": {"input": '{"query": "q"}', "output": TL_OUT}, "span": {"kind": "task"}}},
     {**_kind("RETRIEVER"), "retrieval": {"documents": [_d(content="p", metadata={})]},
      "input": {"value": '{"query": "q"}'}, "output": {"value": TL_OUT}}),
    ({"traceloop": {"entity": {"output": TL_OUT}, "span": {"kind": "task"}}},
     {**_kind("RETRIEVER"), "retrieval": {"documents": [_d(content="p", metadata={})]}, "output": {"value": TL_OUT}}),
    ({"traceloop": {"entity": {"output": NODES}}},
     {**_kind("RETRIEVER"), "retrieval": {"documents": [_d(id="n", score=0.7, content="t")]},
      "output": {"value": NODES}}),
    ({"traceloop": {"span": {"kind": "workflow"}}}, _kind("CHAIN")),
    ({"traceloop": {"span": {"kind": "agent"}, "entity": {"input": "in"}}}, {**_kind("AGENT"), "input": {"value": "in"}}),
    ({"traceloop": {"span": {"kind": "unknown"}}}, {}),
    ({"gen_ai": {"operation": {"name": "embeddings"}}}, _kind("EMBEDDING")),
    ({"gen_ai": {"operation": {"name": "execute_tool"}}}, _kind("TOOL")),
    ({"gen_ai": {"operation": {"name": 5}, "system": "openai"}}, {}),
    ({"gen_ai": {"operation": {"name": "generate_content"}}}, _kind("LLM")),
    ({"gen_ai": CHAT},
     {**_kind("LLM"), "llm": {"input_messages": [_m("system", "be brief"), _m("user", "q")],
                             "output_messages": [_m("assistant", "a")], "model_name": "gpt-4o-2024",
                             "token_count": {"prompt": 10, "completion": 5},
                             "invocation_parameters": {"max_tokens": 100}}}),
    ({"gen_ai": OLD, "traceloop": {"association": {"properties": {"ls_model_name": "lsm"}}},
      "llm": {"request": {"type": "chat"}}},
     {**_kind("LLM"), "llm": {"request": {"type": "chat"}, "input_messages": [_m("user", "q")],
                             "output_messages": [_m("assistant", "a")], "model_name": "lsm",
                             "token_count": {"prompt": 3, "completion": 2}}}),
    ({"gen_ai": {"prompt": [{"role": "user", "content": "q"}], "request": {"model": "m"}}},
     {**_kind("LLM"), "llm": {"input_messages": [_m("user", "q")], "model_name": "m"}}),
    ({"gen_ai": {"input": {"messages": []}, "system_instructions": "sys"}},
     {**_kind("LLM"), "llm": {"input_messages": [_m("system", "sys")]}}),
    ({"gen_ai": {"operation": {"name": "chat"}, "request": {"model": "m"}, "usage": {"input_tokens": 4}},
      **_kind("CHAIN"), "llm": {"model_name": "own", "token_count": {"prompt": 9}}, "input": {"value": "own in"}},
     {"llm": {"model_name": "own", "token_count": {"prompt": 9}}}),
    ({"gen_ai": {"operation": {"name": "chat"}, "input": {"messages": '[{"role": "user", "content": "new"}]'},
                 "request": {"max_tokens": 7}},
      "llm": {"input_messages": [_m("user", "own")], "invocation_parameters": {"temperature": 0}}},
     {**_kind("LLM"), "llm": {"input_messages": [_m("user", "own")], "invocation_parameters": {"temperature": 0}}}),
    ({"gen_ai": {"request": {"model": "m"}}, "llm": {"request": {"type": "completion"}}},
     {**_kind("LLM"), "llm": {"request": {"type": "completion"}, "model_name": "m"}}),
    ({"gen_ai": {"request": {"model": "m"}}, "llm": {"request": {"type": "chat"}}},
     {**_kind("LLM"), "llm": {"request": {"type": "chat"}, "model_name": "m"}}),
    ({"gen_ai": {"request": {"model": "m"}}, "llm": {"request": {"type": "embedding"}}},
     {"llm": {"request": {"type": "embedding"}, "model_name": "m"}}),
    ({"gen_ai": {"operation": {"name": {"x": 1}}}}, {}),
    ({"gen_ai": {"operation": {"name": ["chat"]}}}, {}),
    ({"gen_ai": {"input": {"other": 1}}}, {}),
    ({"gen_ai": {"operation": {"name": "chat"}}, "openinference": {"span": {"other": 1}}}, _kind("LLM")),
    ({"gen_ai": {"operation": {"name": "retrieval"}, "retrieval": {"documents": [{"id": "a"}]}},
      "retrieval": {"documents": [_d(id="own")]}}, _kind("RETRIEVER")),
    ({"gen_ai": {"operation": {"name": "retrieval"}, "retrieval": {"documents": [{"id": "a"}]}},
      "retrieval": {"query": "q"}}, {**_kind("RETRIEVER"), "retrieval": {"query": "q", "documents": [_d(id="a")]}}),
    ({"gen_ai": {"retrieval": {"query": {"text": "q"}}}, "input": {"value": "own"}}, {}),
    ({"gen_ai": {"retrieval": {"query": {"text": "q"}}}, "input": {"mime_type": "text/plain"}},
     {"input": {"mime_type": "text/plain", "value": "q"}}),
    ({"traceloop": {"entity": {"output": "done"}}, "output": {"value": "own"}}, {}),
    ({"traceloop": {"entity": {"output": "done"}}, "output": {"mime_type": "text/plain"}},
     {"output": {"mime_type": "text/plain", "value": "done"}}),
    ({"gen_ai": {"request": {"model": "m"}}, "llm": "not an object"}, {"llm": {"model_name": "m"}}),
    ({"gen_ai": {"usage": {"input_tokens": 4}}, "llm": {"token_count": "x"}}, {"llm": {"token_count": {"prompt": 4}}}),
    ({"gen_ai": {"output": {"messages": '[{"role": "assistant", "content": "new"}]'}},
      "llm": {"output_messages": [_m("assistant", "own")]}}, {}),
    ({"gen_ai": {"operation": {"name": "rerank"}, "retrieval": {"documents": [{"id": "a", "score": 0.9}]}}},
     {**_kind("RERANKER"), "reranker": {"output_documents": [_d(id="a", score=0.9)]}}),
    ({"gen_ai": {"operation": {"name": "rerank"}, "retrieval": {"documents": [{"id": "a"}]}},
      "reranker": {"output_documents": []}},
     {**_kind("RERANKER"), "retrieval": {"documents": [_d(id="a")]}}),
])
def test_the_openinference_keys_each_convention_gains(attrs, added):
    assert to_openinference(attrs) == {**attrs, **added}


def test_a_span_of_no_other_convention_is_returned_as_it_is():
    attrs = {"openinference": {"span": {"kind": "LLM"}}}
    assert to_openinference(attrs) is attrs
