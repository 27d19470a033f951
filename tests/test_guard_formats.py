"""The format readers held by hand-valued tables (issue #29): runs grouped by time when an export lost its links,
and which LLM call is the generation. Each test names the bug it was checked against (planted by hand)."""

import pytest

from ctxcore.io.formats.runs import GAP_SECONDS, by_time, links_lost, pick, window
from ctxcore.io.formats.spans import Span


def _span(i, start, end, trace=None, span_id=None, parent=None, name="s"):
    return Span(index=i, trace_id=trace, span_id=span_id, parent_id=parent, name=name, kind="", start=start, end=end)


def _runs(spans, **kw):
    groups = by_time(spans, **kw)
    return None if groups is None else {k: [s.index for s in v] for k, v in groups.items()}


def test_gap_is_two_seconds():
    assert GAP_SECONDS == 2.0


def test_a_short_nested_span_does_not_split_one_request():
    """A request from 0 to 10 s; a short child 0.1-0.2 s; the generation starts at 5 s, 4.8 s after the short child
    ended but inside the request. Plant: ``reach = end`` (the last span's end, not the furthest): two runs."""
    spans = [_span(0, 0.0, 10.0, "r"), _span(1, 0.1, 0.2, "c1"), _span(2, 5.0, 9.0, "c2")]
    assert _runs(spans) == {"r": [0, 1, 2]}


@pytest.mark.parametrize("start, runs", [
    (12.0, {"a": [0, 1]}),               # exactly GAP_SECONDS after the first request ended: still one run
    (12.001, {"a": [0], "b": [1]}),      # just past it: the next request
    (11.0, {"a": [0, 1]}),
    (30.0, {"a": [0], "b": [1]}),
])
def test_two_requests_a_gap_apart_are_two_runs(start, runs):
    """Plant: ``start >= reach + gap`` (a request starting exactly 2 s later split off) and GAP 2.0 -> 20."""
    spans = [_span(0, 0.0, 10.0, "a"), _span(1, start, start + 1.0, "b")]
    assert _runs(spans) == runs


def test_runs_without_trace_ids_are_numbered_and_times_in_milliseconds_are_read():
    """Epoch milliseconds (1.7e12) are read as seconds; ids 'run-1', 'run-2'. Plant: ``len(groups)`` unnumbered."""
    t = 1_700_000_000_000
    spans = [_span(0, t, t + 1000), _span(1, t + 500, t + 900), _span(2, t + 3001, t + 4000), _span(3, t + 4100, None)]
    assert _runs(spans) == {"run-1": [0, 1], "run-2": [2, 3]}


def test_a_span_without_a_time_means_no_grouping_by_time():
    assert _runs([_span(0, 0.0, 1.0, "a"), _span(1, None, None, "b")]) is None


def test_spans_are_grouped_in_time_order_not_file_order():
    """Plant: the sort removed (the late span in file order would open a run of its own)."""
    spans = [_span(0, 20.0, 21.0, "late"), _span(1, 0.0, 1.0, "early"), _span(2, 0.5, 0.6, "mid")]
    assert _runs(spans) == {"early": [1, 2], "late": [0]}


@pytest.mark.parametrize("spans, lost", [
    ([_span(0, 0, 1, "a", "1"), _span(1, 0, 1, "b", "2")], True),
    ([_span(0, 0, 1, "a", "1"), _span(1, 0, 1, "b", "2", parent="1")], False),   # a parent in the file
    ([_span(0, 0, 1, "a", "1"), _span(1, 0, 1, "a", "2")], False),               # one trace id shared
    ([_span(0, 0, 1, "a", "1")], False),                                          # one span: nothing lost
    ([_span(0, 0, 1, "a", "1"), _span(1, 0, 1, "b", "2", parent="9")], True),    # a parent not in the file
])
def test_links_lost(spans, lost):
    """Plant: ``len(spans) < 1`` (a single span read as an export that lost its links)."""
    assert links_lost(spans) is lost


def test_pick_prefers_retrieval_and_llm_then_retrieval_then_the_first():
    groups = {"x": ["llm"], "y": ["docs"], "z": ["docs", "llm"]}
    has_docs, has_llm = (lambda m: "docs" in m), (lambda m: "llm" in m)
    assert pick(groups, has_docs, has_llm) == "z"
    assert pick({"x": ["llm"], "y": ["docs"]}, has_docs, has_llm) == "y"
    assert pick({"x": ["llm"], "y": []}, has_docs, has_llm) == "x"


def test_window_is_first_start_to_last_end_or_start():
    assert window([_span(0, 5.0, 6.0), _span(1, 1.0, 2.0), _span(2, 7.0, None)]) == (1.0, 7.0)
    assert window([_span(0, None, None)]) is None
