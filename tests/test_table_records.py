"""Tables for ctxcore.records: warnings that survive pickling, candidate hashing, decisions made the fast way
(quick / each) equal to the dataclass's own, settings read from a dict (and their exact error texts), the
sent context read back from JSON, and a trace's lookups and fate counts."""

import json
import pickle

import pytest

from ctxcore import Budget, Candidate, Config, Decision, InputError, Prompt
from ctxcore.records import Logged, Sent, SentPassage, TokenizerInfo, Trace, TraceWarning


def test_a_warning_keeps_its_message_kind_and_ids_through_pickling():
    w = TraceWarning("a contains a role marker", kind="instruction_text", ids=["a", "b"])
    back = pickle.loads(pickle.dumps(w))
    assert (type(back), str(back), back.kind, back.ids) == (
        TraceWarning, "a contains a role marker", "instruction_text", ("a", "b"))


def test_a_plain_message_becomes_a_note_and_a_warning_stays_itself():
    w = TraceWarning("x", kind="markup", ids=("c",))
    assert TraceWarning.of(w) is w
    note = TraceWarning.of("plain words")
    assert (type(note), str(note), note.kind, note.ids) == (TraceWarning, "plain words", "note", ())
    assert (str(TraceWarning.of(42)), TraceWarning.of(42).kind) == ("42", "note")


def test_candidates_hash_by_id_and_text():
    a = Candidate("a", "refunds", 0.5, metadata={"k": [1]})  # a dict inside: still hashable
    assert hash(a) == hash(Candidate("a", "refunds", 0.9, doc_id="d"))
    assert len({hash(Candidate("a", t)) for t in ("one", "two", "three", "four")}) == 4
    assert len({hash(Candidate(i, "same")) for i in ("a", "b", "c", "d")}) == 4


def test_quick_and_each_make_the_same_decisions_as_the_constructor():
    assert Decision.quick("b", "merged", "merge", "joined", merged_into="a") == Decision(
        "b", "merged", "merge", "joined", merged_into="a")
    assert Decision.quick("c", "kept", "assemble", "fits") == Decision("c", "kept", "assemble", "fits")
    made = Decision.each("over_budget", "select", [("a", "r1"), ("b", "r2")], tokens=[5, 7], cost=[6, 8])
    assert made == [Decision("a", "over_budget", "select", "r1", tokens=5, cost=6),
                    Decision("b", "over_budget", "select", "r2", tokens=7, cost=8)]
    assert Decision.each("stale", "recency", [("x", "older")]) == [Decision("x", "stale", "recency", "older")]
    assert Decision.each("stale", "recency", []) == []


def test_a_column_of_the_wrong_length_is_refused():
    with pytest.raises(ValueError):
        Decision.each("kept", "s", [("a", "r"), ("b", "r")], tokens=[1])


@pytest.mark.parametrize("make", [
    lambda: Decision.quick("a", "kept", "s", "r", zeta=1, alpha=2),
    lambda: Decision.each("kept", "s", [("a", "r")], zeta=[1], alpha=[2]),
])
def test_an_unknown_decision_field_is_named(make):
    with pytest.raises(TypeError) as err:
        make()
    assert str(err.value) == "Decision has no field 'alpha'"  # the first unknown name, alphabetically


DEFAULTS = {"encoding": "cl100k_base", "model": None, "window": 8192, "max_output": 1024, "safety": 0.05,
            "history_share": "auto", "budget": None, "caller": None, "prefer_newest": True, "near_dup": 0.8,
            "similarity": "words", "merge_adjacent": False, "min_score": None, "drop_unscored": False,
            "select": "score", "mmr_lambda": 0.7, "order": "sandwich", "label_overhead": "auto",
            "compress": False, "max_chunk_tokens": None, "max_passages": None}


def test_settings_round_trip_through_a_dict():
    assert Config().to_dict() == DEFAULTS
    c = Config.from_dict({"window": 4096, "order": "rank"}, source="s.json")
    assert c.to_dict() == {**DEFAULTS, "window": 4096, "order": "rank"}
    assert Config.from_dict({}) == Config()
    assert Config().replace(window=2048, near_dup=None).to_dict() == {**DEFAULTS, "window": 2048, "near_dup": None}


@pytest.mark.parametrize("data, source, message", [
    ([1], "config", "config: settings must be a JSON object"),
    ("window", "s.json", "s.json: settings must be a JSON object"),
    ({"zz": 1, "aa": 2}, "s.json", "s.json, field 'aa': unknown setting; known settings are budget, caller, "
     "compress, drop_unscored, encoding, history_share, label_overhead, max_chunk_tokens, max_output, "
     "max_passages, merge_adjacent, min_score, mmr_lambda, model, near_dup, order, prefer_newest, safety, select, "
     "similarity, window"),
    ({"window": -1}, "s.json", "s.json, field 'window': must be a whole number of tokens, 1 or more (got -1)"),
])
def test_bad_settings_are_refused_naming_the_source(data, source, message):
    kwargs = {} if source == "config" else {"source": source}
    with pytest.raises(InputError) as err:
        Config.from_dict(data, **kwargs)
    assert (str(err.value), err.value.source) == (message, source)


def test_settings_are_checked_when_made():
    with pytest.raises(InputError) as err:
        Config(window=-1)
    assert str(err.value) == "config, field 'window': must be a whole number of tokens, 1 or more (got -1)"


def test_the_sent_context_is_read_back_from_json_objects():
    sent = Sent(passages=({"id": "a", "position": 1, "share": 0.5, "not_a_field": 1}, SentPassage("b", 2)))
    assert sent.passages == (SentPassage("a", 1, share=0.5), SentPassage("b", 2))
    assert (sent.passage("b"), sent.passage("zz")) == (SentPassage("b", 2), None)
    logged = Logged(format="langfuse", sent={"passages": [{"id": "a", "position": 1, "tokens": 9}],
                                             "not_sent": ["b", "c"], "limit": 100, "junk": True})
    assert logged.sent == Sent(passages=(SentPassage("a", 1, tokens=9),), not_sent=("b", "c"), limit=100)
    already = Sent(not_sent=("x",))
    assert Logged(format="f", sent=already).sent is already
    assert Logged(format="f").sent is None


def _trace(decisions):
    budget = Budget(window=8192, max_output=1024, safety=0.05, fixed=65, safe_input=6809, history=0, docs=6744)
    return Trace(query="q", config=Config(), tokenizer=TokenizerInfo("cl100k_base", True), budget=budget,
                 candidates=(), decisions=tuple(decisions), blocks=(), prompt=Prompt("p", 1))


def test_a_trace_finds_decisions_orders_the_kept_and_counts_fates():
    ds = [Decision("a", "kept", "assemble", "r", position=2), Decision("b", "near_duplicate", "near_dedup", "r"),
          Decision("c", "kept", "assemble", "r", position=1), Decision("d", "near_duplicate", "near_dedup", "r"),
          Decision("e", "over_budget", "select", "r"), Decision("f", "kept", "assemble", "r", position=3)]
    t = _trace(ds)
    assert t.decision("d") is ds[3]
    with pytest.raises(KeyError) as err:
        t.decision("zz")
    assert err.value.args == ("zz",)
    assert [d.id for d in t.kept()] == ["c", "a", "f"]
    assert t.fate_counts() == {"kept": 3, "exact_duplicate": 0, "near_duplicate": 2, "merged": 0,
                               "below_threshold": 0, "stale": 0, "not_permitted": 0, "over_budget": 1,
                               "over_limit": 0}
    assert _trace([]).fate_counts() == dict.fromkeys(["kept", "exact_duplicate", "near_duplicate", "merged",
                                                      "below_threshold", "stale", "not_permitted",
                                                      "over_budget", "over_limit"], 0)


def test_a_trace_serialises_with_its_format_and_query():
    t = _trace([Decision("a", "kept", "assemble", "fits", position=1)])
    d = t.to_dict()
    assert (d["format"], d["query"], d["prompt"]) == ("ctxcore.trace/1", "q", {"text": "p", "tokens": 1})
    assert json.loads(t.to_json()) == json.loads(json.dumps(d))


def test_a_fate_outside_the_list_is_counted_once():
    counts = _trace([Decision("a", "kept", "s", "r"), Decision("b", "vanished", "s", "r")]).fate_counts()
    assert (counts["kept"], counts["vanished"], sum(counts.values())) == (1, 1, 2)
