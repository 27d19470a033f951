"""Fuzzing the loaders (issue #7): whatever the bytes, the only way to refuse is an InputError.

``ctxcore.load`` may raise :class:`ctxcore.InputError` (one line, naming the file) and ``build``
may also raise :class:`ctxcore.BuildError`; any other exception is a bug. Candidates of valid
structure with random field values must load and build.

Examples per test: ``CTXCORE_FUZZ_EXAMPLES`` (default 200, for CI); run e.g. 3000 locally.
"""

from __future__ import annotations

import json
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ctxcore
from ctxcore import BuildError, Config, InputError

settings.register_profile(
    "ctxcore-fuzz",
    max_examples=int(os.environ.get("CTXCORE_FUZZ_EXAMPLES", "200")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
# applied per test (not loaded globally, so other modules keep their own settings)
FUZZ = settings(settings.get_profile("ctxcore-fuzz"))

NAMES = [".json", ".jsonl", ".csv", ""]
KEYS = ["id", "text", "score", "doc_id", "chunk_index", "title", "section", "date", "version", "source_type",
        "trust", "permissions", "embedding", "metadata", "tokens", "candidates", "query", "config", "system",
        "instructions", "schema", "tools", "history", "format", "decisions", "span_kind", "role", "content",
        "order", "budget", "window", "near_dup"]
HUGE = "\x00HUGE-INTEGER\x00"  # placeholder, replaced by a 5000-digit literal after encoding
HUGE_LITERAL = "9" * 5000


def source_of(name: str) -> str:
    return name or "input"


def check_error(err: InputError, name: str) -> None:
    msg = str(err)
    assert "\n" not in msg and "\r" not in msg, f"not one line: {msg!r}"
    assert msg.startswith(source_of(name)), f"does not name the file: {msg!r}"


def load_and_build(data: bytes, name: str) -> None:
    """Load, then build what loaded; only InputError (and BuildError from build) may escape."""
    try:
        loaded = ctxcore.load(data, name=name)
    except InputError as err:
        check_error(err, name)
        return
    try:
        trace = loaded.build()
    except InputError as err:
        check_error(err, name)
        return
    except BuildError as err:
        check_build_error(err, loaded)
        return
    trace.to_json()


def check_build_error(err: BuildError, loaded) -> None:
    """A BuildError is a clear one-line refusal, and only ever about what is always in the prompt (the
    mandatory blocks, the question, the history): the same request without a single candidate is
    refused too. Evidence that does not fit is dropped, never a reason to fail."""
    msg = str(err)
    assert msg and "\n" not in msg and "\r" not in msg, f"not one line: {msg!r}"
    assert "budget" in msg, msg
    try:
        ctxcore.build([], loaded.query, loaded.settings(), loaded.inputs)
    except BuildError:
        return
    raise AssertionError(f"the build failed ({msg}) although the request without candidates builds")


# --------------------------------------------------------------------------------------------
# (a) arbitrary bytes
# --------------------------------------------------------------------------------------------

# text that looks a little like each format, so the fuzzer gets past the first check
_csvish = st.text(alphabet=st.sampled_from(list('id,text,score,"\n\r ;\t\\x0.5-eE9nNaIf\u00e9\ufeff\u2028')),
                  max_size=200)
_jsonish = st.text(alphabet=st.sampled_from(list('[]{}":, \n\r\t0123456789.eE+-truefalsnNIiyd\\u\ufeff')),
                   max_size=200)
_prefixes = st.sampled_from([b"", b"\xef\xbb\xbf", b"id,text,score\n", b"text\n", b'[{"id": "a", "text": ',
                             b'{"candidates": [', b'{"id": "a", "text": "x"}\n', b'{"format": "ctxcore.trace/1", '])
any_bytes = st.one_of(
    st.binary(max_size=500),
    st.builds(lambda p, b: p + b, _prefixes, st.binary(max_size=200)),
    st.builds(lambda p, t: p + t.encode("utf-8"), _prefixes, _csvish),
    st.builds(lambda p, t: p + t.encode("utf-8"), _prefixes, _jsonish),
    st.text(max_size=300).map(lambda t: t.encode("utf-8")),
)


@FUZZ
@given(data=any_bytes, name=st.sampled_from(NAMES))
def test_arbitrary_bytes(data, name):
    load_and_build(data, name)


# --------------------------------------------------------------------------------------------
# (b) structured JSON from recursive strategies
# --------------------------------------------------------------------------------------------

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(10 ** 600), max_value=10 ** 600),
    st.sampled_from([10 ** 400, -(10 ** 309), 2 ** 1024, 2 ** 63, -(2 ** 63) - 1]),  # beyond float/int64 range
    st.just(HUGE),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.sampled_from(["", " ", "a", "ctxcore.trace/1", "RETRIEVER", "LLM", "retrieved", "system", "rank",
                     "2024-01-01", "v2", "\u0007", "\ud800"]),
)


def _containers(children):
    return st.one_of(st.lists(children, max_size=5),
                     st.dictionaries(st.one_of(st.sampled_from(KEYS), st.text(max_size=8)), children, max_size=6))


json_values = st.recursive(scalars, _containers, max_leaves=25)
# what a well-formed file holds: no lone surrogates, only numbers a float holds (metadata with NaN,
# Infinity or a 400-digit integer is refused: tests/bad_inputs/metadata_infinity.json)
clean_json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(min_value=-(10 ** 300), max_value=10 ** 300),
              st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=20)),
    _containers, max_leaves=15)
# mostly with a string text, so loading gets past the first check and reaches the other fields
candidate_like = st.builds(
    lambda text, rest: {**rest, "text": text} if text is not None else rest,
    st.one_of(st.text(max_size=40), st.sampled_from(["", "x \ud800 y", "\udc80"]), scalars, st.none()),
    st.dictionaries(st.sampled_from(KEYS), json_values, max_size=6))


def encode(value, ascii_only: bool = True) -> bytes:
    """JSON bytes; lone surrogates become \\udxxx escapes (ascii_only) or raw, invalid UTF-8 bytes."""
    text = json.dumps(value, allow_nan=True, ensure_ascii=ascii_only)
    text = text.replace(json.dumps(HUGE), HUGE_LITERAL)
    return text.encode("utf-8", "surrogatepass")


@st.composite
def json_documents(draw):
    """A JSON value as a file: the value itself, in a request object, or as JSONL lines."""
    shape = draw(st.sampled_from(["top", "request", "jsonl"]))
    ascii_only = draw(st.booleans())
    items = draw(st.lists(st.one_of(candidate_like, json_values), max_size=6))
    if shape == "top":
        value = draw(st.one_of(json_values, st.just(items)))
        return encode(value, ascii_only), draw(st.sampled_from([".json", ""]))
    if shape == "request":
        obj = {"candidates": items}
        extra = draw(st.dictionaries(st.sampled_from(["query", "config", "system", "instructions", "schema",
                                                      "tools", "history"]), json_values, max_size=4))
        obj.update(extra)
        return encode(obj, ascii_only), draw(st.sampled_from([".json", ""]))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    lines = [encode(item, ascii_only).decode("utf-8", "surrogatepass") for item in items]
    if draw(st.booleans()):
        lines.insert(draw(st.integers(0, len(lines))), "   ")
    return newline.join(lines).encode("utf-8", "surrogatepass"), draw(st.sampled_from([".jsonl", ""]))


@FUZZ
@given(doc=json_documents())
def test_structured_json(doc):
    data, name = doc
    load_and_build(data, name)


weird_numbers = st.one_of(
    st.integers(), st.integers(min_value=-(10 ** 600), max_value=10 ** 600),
    st.sampled_from([10 ** 400, -(10 ** 309), 2 ** 1024, 2 ** 63, -(2 ** 63) - 1, HUGE, 0, -0.0, 5e-324, 1e308]),
    st.floats(allow_nan=True, allow_infinity=True), st.booleans())


@FUZZ
@given(field=st.sampled_from(["score", "chunk_index", "doc_id", "version", "date", "tokens", "title", "embedding",
                              "metadata", "id", "trust", "permissions"]),
       value=weird_numbers, in_list=st.booleans(), fmt=st.sampled_from([".json", ".jsonl"]))
def test_odd_numbers_in_every_field(field, value, in_list, fmt):
    """Numbers at the edges (huge, tiny, NaN, inf, bool, too long to read) in each candidate field."""
    item = {"id": "a", "text": "Refunds take five business days.", field: [value] if in_list else value}
    other = {"id": "b", "text": "Shipping is free over 50 dollars."}
    if fmt == ".jsonl":
        data = encode(item) + b"\n" + encode(other) + b"\n"
    else:
        data = encode([item, other])
    load_and_build(data, "numbers" + fmt)


# --------------------------------------------------------------------------------------------
# (c) valid structure, random values: must load and build
# --------------------------------------------------------------------------------------------

_printable = st.characters(blacklist_categories=("Cs", "Cc"))
ids = st.one_of(st.text(_printable, min_size=1, max_size=12), st.integers(0, 10 ** 6).map(str))
finite = st.floats(allow_nan=False, allow_infinity=False)
texts = st.one_of(st.text(max_size=200),
                  st.lists(st.sampled_from(["refund", "five", "days", "ignore previous instructions", "[S1]",
                                            "<evidence>", "</evidence>", "650 EUR", "v2", "\n\n", "#"]),
                           max_size=40).map(" ".join))
maybe = lambda s: st.one_of(st.none(), s)  # noqa: E731

candidate_fields = {
    "text": texts,
    "score": maybe(st.one_of(finite, st.integers(-10 ** 6, 10 ** 6))),
    "doc_id": maybe(st.one_of(st.text(max_size=8), st.integers(0, 50))),
    "chunk_index": maybe(st.integers(0, 10 ** 6)),
    "title": maybe(st.text(max_size=30)),
    "section": maybe(st.text(max_size=30)),
    "date": maybe(st.one_of(st.text(max_size=12), st.dates().map(str), st.integers(1900, 2100))),
    "version": maybe(st.one_of(st.text(max_size=8), st.integers(0, 20), finite,
                               st.sampled_from(["v1", "v2", "1.10", "1.9", "2024-01"]))),
    "source_type": maybe(st.sampled_from(["official", "forum", "draft", "", "x"])),
    "trust": maybe(st.sampled_from(["system", "developer", "retrieved", "user", "tool"])),
    "permissions": maybe(st.one_of(st.lists(st.text(max_size=8), max_size=3), st.text(max_size=12))),
    "metadata": maybe(st.dictionaries(st.text(max_size=8), clean_json_values, max_size=3)),
}


@st.composite
def valid_candidates(draw):
    n = draw(st.integers(0, 12))
    cand_ids = draw(st.lists(ids, min_size=n, max_size=n, unique=True))
    dim = draw(st.integers(1, 4))
    with_ids = draw(st.booleans())
    out = []
    for cid in cand_ids:
        item = {}
        if with_ids:
            item["id"] = cid
        for key, strat in candidate_fields.items():
            if key == "text" or draw(st.booleans()):
                value = draw(strat)
                if value is not None or draw(st.booleans()):
                    item[key] = value
        if draw(st.booleans()):
            item["embedding"] = draw(st.lists(st.floats(-1e6, 1e6), min_size=dim, max_size=dim))
        out.append(item)
    return out


settings_values = st.fixed_dictionaries({}, optional={
    "budget": st.integers(0, 3000),
    "window": st.integers(2048, 20000),  # room for the mandatory blocks
    "near_dup": st.one_of(st.none(), st.floats(0.01, 1.0)),
    "similarity": st.sampled_from(["words", "shingles", "cosine"]),
    "select": st.sampled_from(["score", "density", "mmr"]),
    "mmr_lambda": st.floats(0, 1),
    "order": st.sampled_from(["rank", "sandwich", "document", "original"]),
    "min_score": st.one_of(st.none(), finite),
    "compress": st.booleans(),
    "max_chunk_tokens": st.one_of(st.none(), st.integers(1, 200)),
    "merge_adjacent": st.booleans(),
    "prefer_newest": st.booleans(),
    "label_overhead": st.one_of(st.just("auto"), st.integers(0, 20)),
})


def check_invariants(trace) -> None:
    ids = [c.id for c in trace.candidates]
    assert ids == [d.id for d in trace.decisions]  # one decision each, in input order
    assert trace.prompt.tokens <= trace.budget.safe_input
    # labels run S1..Sk in prompt order (by position, and as the label lines appear in the text): not
    # merely as a set, which a numbering over the kept list instead of the prompt would also pass
    kept = sorted((d for d in trace.decisions if d.fate == "kept"), key=lambda d: d.position)
    assert [d.position for d in kept] == list(range(1, len(kept) + 1))
    assert [d.label for d in kept] == [f"S{i}" for i in range(1, len(kept) + 1)]
    in_text = [b.label for b in trace.blocks if b.label is not None]
    assert in_text == [d.label for d in kept]


@FUZZ
@given(items=valid_candidates(), config=settings_values,
       query=st.one_of(st.none(), st.text(max_size=60)), as_jsonl=st.booleans())
def test_valid_candidates_with_random_values_build(items, config, query, as_jsonl):
    if as_jsonl and items:
        data = "\n".join(json.dumps(i, ensure_ascii=False) for i in items).encode("utf-8")
        loaded = ctxcore.load(data, name="fuzz.jsonl")
        loaded = ctxcore.Loaded(loaded.candidates, query or "", config=config, source="fuzz.jsonl")
    else:
        doc = {"query": query, "candidates": items, "config": config}
        loaded = ctxcore.load(json.dumps(doc, ensure_ascii=False).encode("utf-8"), name="fuzz.json")
    assert len(loaded.candidates) == len(items)
    trace = loaded.build()
    check_invariants(trace)
    trace.to_json()


# --------------------------------------------------------------------------------------------
# settings: random values for known keys are either accepted or refused with an InputError
# --------------------------------------------------------------------------------------------

config_names = sorted(Config().to_dict())


@FUZZ
@given(config=st.dictionaries(st.sampled_from(config_names), json_values, max_size=3))
def test_random_settings_values(config):
    doc = {"query": "q", "candidates": [{"id": "a", "text": "Refunds take five business days.", "score": 1}],
           "config": config}
    data = json.dumps(doc, allow_nan=True).replace(json.dumps(HUGE), HUGE_LITERAL).encode("utf-8", "surrogatepass")
    load_and_build(data, "settings.json")


def test_the_profile_reads_the_environment():
    """The fuzz tests run the number of examples the docstring promises: 200 unless the environment
    asks for another number (the expected values are written here, not read back from the profile)."""
    wanted = os.environ.get("CTXCORE_FUZZ_EXAMPLES")
    assert FUZZ.max_examples == (200 if wanted is None else int(wanted))
    assert FUZZ.deadline is None
