"""Logged requests read as text (ctxcore/io/formats/messages.py), held by hand-valued tables: the answer in an
output, the question in an input, message contents, which LLM call is the generation, the model's settings, the
system text and earlier turns, and the limits a log states. Each row is an input and the exact value a reader
must make of it; the rows sit on both sides of every choice the readers make (issue #29)."""

import json

import pytest

from ctxcore.io.formats.messages import (content_text, count_docs_in, generation, message_text, query_from,
                                         request_parts, settings_from, stated_limits, text_of)

BLOCKS = [{"block_type": "text", "text": "b1"}, {"block_type": "image", "text": "no"}, {"text": "b2"}, "x",
          {"block_type": "text", "text": 5}]


@pytest.mark.parametrize("value, expected", [
    ("plain answer", "plain answer"),
    ('"twice encoded"', "twice encoded"),
    ('{"answer": "from a JSON string"}', "from a JSON string"),
    ({"content": "c", "answer": "a"}, "c"),
    ({"answer": "a", "output": "o"}, "a"),
    ({"output": "o", "text": "t"}, "o"),
    ({"text": "t", "response": "r"}, "t"),
    ({"response": "r", "result": "x"}, "r"),
    ({"result": "x", "completion": "y"}, "x"),
    ({"completion": "y"}, "y"),
    ({"content": 5, "answer": "a"}, "a"),
    ({"choices": [{"message": {"content": "from choices"}}]}, "from choices"),
    ({"choices": [{"message": {"content": [{"text": "p1"}, "p2"]}}]}, "p1\np2"),
    ({"choices": [{"message": {"content": None}}], "message": {"content": "unread"}}, None),
    ({"message": {"role": "assistant", "content": "m"}}, "m"),
    ({"message": {"role": "assistant", "blocks": BLOCKS}}, "b1\nb2"),
    ({"blocks": BLOCKS}, "b1\nb2"),
    ({"role": "assistant", "blocks": [{"block_type": "image"}]}, None),
    ({"blocks": BLOCKS, "content": "c"}, "c"),
    ({"blocks": [{"text": "b"}], "content": None}, '{"blocks": [{"text": "b"}], "content": null}'),
    ({"blocks": "not a list", "answer": "a"}, "a"),
    ({"other": 1, "é": "ü"}, '{"other": 1, "é": "ü"}'),
    ({"message": "not a dict"}, '{"message": "not a dict"}'),
    ([{"role": "user", "content": "q"}, {"role": "assistant", "content": "a1"}, {"role": "ai", "content": "a2"}],
     "a2"),
    ([{"role": "assistant", "content": "a1"}, {"role": "user", "content": "q"}], "a1"),
    ([{"role": "user", "content": "q"}], '[{"role": "user", "content": "q"}]'),
    (["é", 1], '["é", 1]'),
    (5, None),
    (None, None),
])
def test_the_answer_in_an_output(value, expected):
    assert text_of(value) == expected


@pytest.mark.parametrize("message, expected", [
    ("not a message", None),
    ({"content": "c", "blocks": BLOCKS}, "c"),
    ({"content": "", "blocks": BLOCKS}, ""),
    ({"content": None, "blocks": BLOCKS}, "b1\nb2"),
    ({"blocks": []}, None),
    ({"blocks": [{"block_type": "image", "text": "alt"}]}, None),
    ({"blocks": "b1"}, None),
    ({"role": "user"}, None),
])
def test_a_messages_text(message, expected):
    assert message_text(message) == expected


@pytest.mark.parametrize("content, expected", [
    ("s", "s"),
    (["a", {"text": "b"}, {"message_content": {"text": "c"}}, {"message_content": "d"}, {"text": 5}, 7], "a\nb\nc\nd"),
    ([], None),
    ([{"type": "image_url"}], None),
    ({"text": "t"}, "t"),
    ({"text": 1}, None),
    (5, None),
    (None, None),
])
def test_message_content_as_text(content, expected):
    assert content_text(content) == expected


USERS = [{"role": "system", "content": "s"}, {"role": "user", "content": "u1"}, {"role": "human", "content": "u2"},
         {"role": "assistant", "content": "a"}]


@pytest.mark.parametrize("value, expected", [
    ("  q  ", "q"),
    ("   ", None),
    ('"  twice  "', "twice"),
    ('{"question": "from JSON"}', "from JSON"),
    ({"query": "a", "question": "b"}, "a"),
    ({"question": "b", "input": "i"}, "b"),
    ({"input": "i", "query_str": "s"}, "i"),
    ({"query_str": "s", "user_input": "u"}, "s"),
    ({"user_input": "u", "q": "q"}, "u"),
    ({"q": "q", "text": "t"}, "q"),
    ({"text": "t", "message": "m"}, "t"),
    ({"message": "m"}, "m"),
    ({"query": {"question": "nested"}, "question": "b"}, "b"),
    ({"query": {"question": "nested"}}, None),
    ({"str_or_query_bundle": {"query_str": "bundle"}}, "bundle"),
    ({"query": "", "question": "b"}, "b"),
    ({"query": 5, "question": "b"}, "b"),
    ({"messages": USERS}, "u2"),
    ({"messages": USERS[:2]}, "u1"),
    ({"messages": USERS, "inputs": {"question": "i"}}, "u2"),
    ({"messages": [{"role": "assistant", "content": "x"}], "inputs": {"question": "i"}}, None),
    ({"inputs": {"question": "chain"}}, "chain"),
    ({"inputs": "not a dict", "kwargs": {"query": "kw"}}, "kw"),
    ({"args": [1, "  ", " arg "], "kwargs": {"query": "kw"}}, "arg"),
    ({"args": [], "kwargs": {"query": "kw"}}, "kw"),
    ({"args": "a string", "kwargs": {"query": "kw"}}, "kw"),
    ({"args": [2], "kwargs": "not a dict"}, None),
    ({"other": 1}, None),
    ([{"role": "assistant", "content": "a"}], None),
    ([{"role": "user", "content": "first"}, {"role": "human", "content": "last"}], "last"),
    (["user"], None),
    (5, None),
])
def test_the_question_in_an_input(value, expected):
    assert query_from(value) == expected


DOCS = [{"content": "beta  gamma"}, {"content": "zeta"}, {"content": ""}, {"content": 5}, {},
        {"content": "x" * 80 + " tail not in the text"}]


@pytest.mark.parametrize("text, expected", [
    (None, 0),
    ("", 0),
    ("alpha beta\n gamma delta", 1),
    ("zeta and beta gamma", 2),
    ("x" * 80, 1),
    ("x" * 79, 0),
    ("beta", 0),
])
def test_retrieved_documents_found_in_a_text(text, expected):
    assert count_docs_in(text, DOCS) == expected


CALLS = [  # (name, prompt, answer, place)
    ("rewrite", "rewrite the question", "a better question", 0),
    ("answer", "context: beta gamma\n zeta", "The answer.", 1),
    ("judge", "judge: beta gamma zeta", "correct", 2),
    ("retry", "context: zeta", "The answer.", 3),
]


@pytest.mark.parametrize("calls, output, expected", [
    (CALLS, "The  answer.\n", "answer"),     # most documents, then the run's own output (squashed), then last
    (CALLS, "correct", "judge"),
    (CALLS, None, "judge"),                  # no output: the last of those holding the most documents
    (CALLS, "   ", "judge"),
    (CALLS, "something else", "judge"),
    (CALLS[2:], "The answer.", "judge"),     # documents count before the answer does
    (CALLS[3:] + CALLS[:1], "unrelated", "retry"),
    (CALLS[:1], "The answer.", "rewrite"),
    ([], "The answer.", None),
    ([("silent", "beta gamma zeta", None, 0), ("spoke", "beta gamma zeta", "other", 1)], "XXXX", "spoke"),
    ([("spoke", "beta gamma zeta", "XXXX", 0), ("silent", "beta gamma zeta", None, 1)], "XXXX", "spoke"),
])
def test_which_call_is_the_generation(calls, output, expected):
    docs = [{"content": "beta gamma"}, {"content": "zeta"}]
    got = generation(calls, docs, lambda c: c[1], lambda c: c[2], output, lambda c: c[3])
    assert (got[0] if got else None) == expected


@pytest.mark.parametrize("model, params, config, unmapped, warned", [
    ("gpt-4o", {"max_tokens": 300, "temperature": 0.2, "model": "x", "model_name": "y", "top_p": None},
     {"model": "gpt-4o", "max_output": 300}, ["model parameters temperature"], []),
    ("nosuch-model", None, {}, ["model 'nosuch-model' (no known tokenizer)"],
     ["model 'nosuch-model' has no known tokenizer: token counts use the default cl100k_base encoding"]),
    (None, {"max_tokens": 8192}, {}, ["model parameters max_tokens"], []),
    (None, {"max_tokens": 8191}, {"max_output": 8191}, [], []),
    ("", {"max_tokens": 0}, {}, ["model parameters max_tokens"], []),
    (None, {"max_tokens": 100, "max_completion_tokens": 200}, {"max_output": 100},
     ["model parameters max_completion_tokens"], []),
    (None, {"max_completion_tokens": 1}, {"max_output": 1}, [], []),
    (None, {"max_output_tokens": 7}, {"max_output": 7}, [], []),
    (None, {"maxTokens": "250"}, {"max_output": 250}, [], []),
    (None, {"max_new_tokens": 2.5, "seed": 1}, {}, ["model parameters max_new_tokens, seed"], []),
    (None, '{"max_tokens": 10}', {"max_output": 10}, [], []),
    (None, "not JSON", {}, [], []),
    (None, {}, {}, [], []),
])
def test_the_models_settings(model, params, config, unmapped, warned):
    got_unmapped, got_warned = [], []
    assert settings_from(model, params, got_unmapped, got_warned) == config
    assert (got_unmapped, got_warned) == (unmapped, warned)


DOC = [{"content": "the refund window is 30 days"}]


@pytest.mark.parametrize("messages, system, history, unmapped", [
    ([("system", "S1"), ("developer", "S2"), ("user", "q1"), ("ai", "a1"), ("human", "q2"), ("assistant", "late")],
     "S1\n\nS2", ({"role": "user", "content": "q1"}, {"role": "assistant", "content": "a1"}), []),
    ([("user", "q"), ("assistant", "late")], "", (), []),
    ([("system", "S"), ("tool", "t"), ("user", "q")], "S", ({"role": "user", "content": "t"},), []),
    ([("system", "rules; the refund window is 30 days"), ("user", "q")], "", (),
     ["the system message (it carries the retrieved passages; ctxcore builds its own evidence block)"]),
    ([("user", "q1"), ("assistant", "the refund window is 30 days"), ("user", "q2")], "", (),
     ["2 earlier chat turns (they carry retrieved passages)"]),
    ([("system", "S"), ("assistant", "hello")], "S", (), []),
    ([], "", (), []),
])
def test_system_text_and_earlier_turns(messages, system, history, unmapped):
    got = []
    assert request_parts(messages, DOC, got) == (system, history)
    assert got == unmapped


@pytest.mark.parametrize("sources, stated, unmapped", [
    ([("retriever", {"top_k": 5, "score_threshold": "0.7", "max_tokens": 2.0, "fetch_limit": 20, "temperature": 1},
       True)], {"top_k": 5, "min_score": 0.7, "max_output": 2},
     ["stated limits of the retriever not read: fetch_limit=20"]),
    ([("a", {"k": 3}, False), ("b", {"top_k": 9, "top_n": 2, "limit_x": "abc"}, False)], {"top_k": 3, "top_n": 2}, []),
    ([("r", {"search_kwargs": {"k": 4, "score_threshold": 0.5}}, True)], {"top_k": 4, "min_score": 0.5}, []),
    ([("r", {"search_kwargs": '{"k": 4}', "similarity_top_k": 6}, True)], {"top_k": 6}, []),
    ([("r", {"top_k": "many", "k": True}, True)], None, []),
    ([("r", {"Max_Retries": "x" * 50, "WINDOW_size": None, "MaxRetries": 3, 5: 1}, True)], None,
     ["stated limits of the r not read: Max_Retries=" + json.dumps("x" * 50)[:40] + ", WINDOW_size=null"]),
    ([("r", "not JSON", True), ("s", None, True)], None, []),
    ([("r", "not JSON", True), ("s", {"top_k": 2}, True)], {"top_k": 2}, []),
    ([("llm", {"context_window": 4096, "max_model_len": 2048, "ls_max_tokens": 256, "similarity_cutoff": 0.25,
               "min_relevance_score": 0.1, "max_context_tokens": 1}, True)],
     {"context_window": 4096, "max_output": 256, "min_score": 0.25}, []),
    ([("r", {"cutoff_é": "ü"}, True)], None, ['stated limits of the r not read: cutoff_é="ü"']),
])
def test_the_limits_a_log_states(sources, stated, unmapped):
    got = []
    assert stated_limits(sources, got) == stated
    assert got == unmapped
