"""The fast trace writer (``serialize.dumps_records``, one line per record) says exactly what the plain one
(``serialize.dumps``, ``json.dumps`` with an indent) says: same value once parsed, on every sample's trace and
on generated objects with awkward text (quotes, newlines, non-ASCII, label look-alikes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hypothesis import given, settings, strategies as st

import ctxcore
from ctxcore.serialize import dumps, dumps_records

SAMPLES = sorted((Path(__file__).resolve().parents[1] / "sample_data").glob("*.json"))

text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)
scalar = st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12),
                   st.floats(allow_nan=False, allow_infinity=False), text)
value = st.recursive(scalar, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                    st.dictionaries(text, inner, max_size=4)), max_leaves=12)
record = st.dictionaries(text, value, max_size=5)
top = st.dictionaries(text, st.one_of(value, st.lists(record, min_size=1, max_size=5)), max_size=6)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(top)
def test_the_fast_writer_parses_back_to_what_the_plain_writer_says(obj):
    fast = dumps_records(obj)
    assert json.loads(fast) == json.loads(dumps(obj)) == obj
    assert dumps_records(obj) == fast  # the same bytes every time


def test_every_sample_trace_is_written_one_record_per_line():
    for path in SAMPLES:
        trace = ctxcore.load(path).build()
        written = trace.to_json()
        assert json.loads(written) == json.loads(dumps(trace.to_dict()))
        lines = written.splitlines()
        decisions = [ln for ln in lines if ln.startswith('    {"id": ') and '"fate": ' in ln]
        assert len(decisions) == len(trace.decisions)  # each decision on a line of its own
        assert ctxcore.trace_from_json(written).to_json() == written  # read back, written again: same bytes
