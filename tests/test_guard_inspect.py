"""``inspect``'s words held by hand-valued tables (issue #29). Each test names the bug it was checked against."""

import pytest

from ctxcore.io.inspect import PROMPT_LINES, _cut, closest, error_report


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
