"""Logged documents become candidates (ctxcore/io/formats/documents.py), held by hand-valued tables: one document
read in every logged shape, its id and score taken from its metadata, unique ids, what is promoted into the
candidate, and the refusals with the file and field they name (issue #29)."""

import pytest

from ctxcore.errors import InputError
from ctxcore.io.formats import documents
from ctxcore.io.formats.documents import (document, from_metadata, match_keys, rank_documents, to_candidates,
                                          unique_ids)
from ctxcore.io.limits import MAX_CANDIDATES


@pytest.mark.parametrize("item, expected", [
    ("text", {"content": "text", "id": None, "score": None, "metadata": {}}),
    ({"document": {"content": "c", "id": "d1", "score": 0.5, "metadata": {"title": "T"}}, "content": "outer"},
     {"content": "c", "id": "d1", "score": 0.5, "metadata": {"title": "T"}}),
    ({"document": "not an object", "content": "outer"},
     {"content": "outer", "id": None, "score": None, "metadata": {}}),
    ({"content": "c", "metadata": '{"id": "m1", "score": "0.7"}'},
     {"content": "c", "id": "m1", "score": 0.7, "metadata": {"id": "m1", "score": "0.7"}}),
    ({"content": "c", "metadata": "{'id': 3}"}, {"content": "c", "id": 3, "score": None, "metadata": {"id": 3}}),
    ({"content": "c", "metadata": "plain text"},
     {"content": "c", "id": None, "score": None, "metadata": {"metadata": "plain text"}}),
    ({"content": "c", "metadata": 5}, {"content": "c", "id": None, "score": None, "metadata": {"metadata": 5}}),
    ({"content": "c", "metadata": [1]}, {"content": "c", "id": None, "score": None, "metadata": {"metadata": [1]}}),
    ({"content": "c", "metadata": None}, {"content": "c", "id": None, "score": None, "metadata": {}}),
    ({"id": "only"}, {"content": None, "id": "only", "score": None, "metadata": {}}),
])
def test_one_document_in_every_logged_shape(item, expected):
    assert document(item, "retrieval.documents.0", "run.json") == {**expected, "where": "retrieval.documents.0"}


@pytest.mark.parametrize("item, kind", [(5, "int"), (None, "NoneType"), (["c"], "list")])
def test_a_document_that_is_not_an_object_is_refused_by_file_and_field(item, kind):
    with pytest.raises(InputError) as e:
        document(item, "retrieval.documents.3", "run.json")
    assert str(e.value) == (f"run.json, field 'retrieval.documents.3': a document must be an object, "
                            f"found {kind}")


def _doc(own_id, own_score, **meta):
    return {"content": "c", "id": own_id, "score": own_score, "metadata": meta, "where": "w"}


@pytest.mark.parametrize("doc, id, score", [
    (_doc(None, None, id="m", score=0.4), "m", 0.4),
    (_doc("", None, id="m"), "m", None),
    (_doc("own", 0.1, id="m", score=0.4), "own", 0.1),
    (_doc(0, 0, id="m", score=0.4), 0, 0),
    (_doc(None, None, id=True), None, None),
    (_doc(None, None, id=2.0), None, None),
    (_doc(None, None, id=7), 7, None),
    (_doc(None, None, id=""), None, None),
    (_doc(None, "x", relevance_score="0.3", similarity_score=0.9), None, 0.3),
    (_doc(None, None, score=None, relevance_score=None, similarity_score=0.9), None, 0.9),
    (_doc(None, None, score="nan", relevance_score=0.2), None, 0.2),
    (_doc(None, None, score=True), None, None),
    (_doc(None, None, other_score=0.5), None, None),
])
def test_id_and_score_from_metadata_only_where_the_document_has_none(doc, id, score):
    got = from_metadata(doc)
    assert (got["id"], got["score"]) == (id, score)


@pytest.mark.parametrize("ids, expected", [
    (["a", "b"], ["a", "b"]),
    (["a", "a"], ["a", "a#2"]),
    ([None, "doc-1"], ["doc-1#2", "doc-1"]),
    (["a", "a", "a#2"], ["a", "a#2#2", "a#2"]),
    ([1.0, 1], ["1", "1#2"]),
    (["", None], ["doc-1", "doc-2"]),
    (["x", None, "x"], ["x", "doc-2", "x#2"]),
    ([None, "doc-1", "doc-1#2"], ["doc-1#3", "doc-1", "doc-1#2"]),
    (["a", "a", "a"], ["a", "a#2", "a#3"]),
    ([], []),
])
def test_unique_ids(ids, expected):
    assert unique_ids([{"id": i} for i in ids]) == expected


def _cand(**d):
    doc = {"content": "text", "id": None, "metadata": {}, "where": "documents.0", **d}
    (c,) = to_candidates([doc], "run.json")
    return c


@pytest.mark.parametrize("doc, fields", [
    ({"id": "d", "rank_score": 0.5}, {"id": "d", "text": "text", "score": 0.5, "doc_id": "d"}),
    ({"content": {"a": "é"}}, {"text": '{"a": "é"}', "id": "doc-1", "doc_id": None}),
    ({"content": 0}, {"text": "0"}),
    ({"id": "d", "metadata": {"doc_id": "A", "document_id": "B", "ref_doc_id": "C"}}, {"doc_id": "A"}),
    ({"id": "d", "metadata": {"document_id": "B", "ref_doc_id": "C"}}, {"doc_id": "B"}),
    ({"id": "d", "metadata": {"doc_id": "", "ref_doc_id": "C"}}, {"doc_id": "C"}),
    ({"id": 4.0, "metadata": {}}, {"doc_id": "4", "id": "4"}),
    ({"metadata": {"title": "T", "section": "S", "date": "2024-01-02", "version": "v2", "source_type": "wiki"}},
     {"title": "T", "section": "S", "date": "2024-01-02", "version": "v2", "source_type": "wiki"}),
    ({"metadata": {"title": "  ", "section": 5, "date": 20240102, "version": 2.0, "source_type": 1}},
     {"title": None, "section": None, "date": "20240102", "version": "2", "source_type": None}),
    ({"metadata": {"date": True, "version": "nan"}}, {"date": None, "version": "nan"}),
    ({"metadata": {"chunk_index": 3}}, {"chunk_index": 3}),
    ({"metadata": {"chunk_index": 0}}, {"chunk_index": 0}),
    ({"metadata": {"chunk_index": -1}}, {"chunk_index": None}),
    ({"metadata": {"chunk_index": True}}, {"chunk_index": None}),
    ({"metadata": {"chunk_index": "3"}}, {"chunk_index": None}),
    ({"metadata": {"k": 1, "retrieval_rank": 9}, "extra": {"retrieval_rank": 2}},
     {"metadata": {"k": 1, "retrieval_rank": 2}}),
])
def test_what_a_document_gives_its_candidate(doc, fields):
    c = _cand(**doc)
    assert {name: getattr(c, name) for name in fields} == fields


@pytest.mark.parametrize("content", [None, "", "  \n "])
def test_a_document_without_text_is_refused_by_file_and_field(content):
    with pytest.raises(InputError) as e:
        to_candidates([{"content": "ok", "metadata": {}, "where": "documents.0"},
                       {"content": content, "metadata": {}, "where": "documents.1"}], "run.json")
    assert str(e.value) == ("run.json, field 'documents.1': the document has no text (document.content is empty "
                            "or missing; the export may hide retrieval text)")


def test_documents_past_the_candidate_limit_are_refused_and_up_to_it_read():
    one = {"content": "x", "metadata": {}, "where": "w"}
    with pytest.raises(InputError) as e:
        to_candidates([one] * (MAX_CANDIDATES + 1), "run.json")
    assert str(e.value) == f"run.json, field 'documents': {MAX_CANDIDATES + 1} documents; the limit is {MAX_CANDIDATES} candidates"
    assert len(to_candidates([one] * 3, "run.json")) == 3


def test_documents_are_matched_by_id_else_by_their_squashed_text():
    docs = [{"id": "a", "content": "x"}, {"id": 2.0}, {"content": " two  words "}, {"content": 5}]
    keys = match_keys(docs)
    assert keys[:3] == [("id", "a"), ("id", "2"), ("text", "two words")]
    assert keys[3] == ("none", id(docs[3]))


def test_an_id_made_for_a_document_is_not_made_again():
    assert unique_ids([{"id": None}, {"id": "doc-1"}, {"id": "doc-1"}]) == ["doc-1", "doc-1#2", "doc-1#2#2"]


def test_the_candidate_limit_is_inclusive(monkeypatch):
    monkeypatch.setattr(documents, "MAX_CANDIDATES", 3)
    one = {"content": "x", "metadata": {}, "where": "w"}
    assert len(to_candidates([one] * 3, "run.json")) == 3
    with pytest.raises(InputError) as e:
        to_candidates([one] * 4, "run.json")
    assert str(e.value) == "run.json, field 'documents': 4 documents; the limit is 3 candidates"


@pytest.mark.parametrize("doc, message", [
    ({"content": "bad \ud800", "id": "d"},
     "run.json, field 'documents.1.text': contains a lone surrogate (an escaped \\ud800-\\udfff), which is not valid "
     "Unicode"),
    ({"content": "ok", "id": "a\nb"}, "run.json, field 'documents.1.id': contains control characters"),
])
def test_a_document_its_candidate_refuses_is_named_by_file_and_field(doc, message):
    with pytest.raises(InputError) as e:
        to_candidates([{"content": "fine", "metadata": {}, "where": "documents.0"},
                       {**doc, "metadata": {}, "where": "documents.1"}], "run.json")
    assert str(e.value) == message


@pytest.mark.parametrize("scores, ranked, warning", [
    ([0.9, "0.5"], [0.9, 0.5], None),
    ([None, None], [None, None], "documents carry no scores: ranked by retrieval order"),
    ([0.1, 0.2, 0.3], [0.1, 0.2, 0.3], "document scores rise along the retrieval order: they may be distances (lower "
                                       "is closer), in which case ranking by score reverses the retriever's order"),
    ([0.1, 0.2], [0.1, 0.2], None),
    ([0.1, 0.2, None], [0.1, 0.2, None], None),
    ([0.1, 0.1, 0.2], [0.1, 0.1, 0.2], None),
    ([0.3, "x", 0.1], [0.3, None, 0.1], None),
    ([], [], None),
])
def test_retrieved_documents_ranked_without_a_reranker(scores, ranked, warning):
    docs = [{"score": s, "metadata": {}, "where": f"d{i}"} for i, s in enumerate(scores)]
    warnings = []
    out = rank_documents(docs, [], None, warnings)
    assert [d["rank_score"] for d in out] == ranked
    assert [d["extra"] for d in out] == [{"retrieval_rank": i} for i in range(1, len(scores) + 1)]
    assert warnings == ([warning] if warning else [])


def _ranked(i, content, score=None, meta=None):
    return {"id": i, "content": content, "score": score, "metadata": meta or {}, "where": f"w-{i}"}


def test_a_rerankers_output_first_then_what_it_dropped_then_what_it_never_saw():
    retrieved = [_ranked("a", "alpha", 0.1, {"src": "x"}), _ranked("b", "beta", 0.2),
                 _ranked("c", "gamma", 0.3, {"src": "z"}), _ranked("d", "delta", 0.4)]
    rer_in = [_ranked("a", "alpha", 0.1, {"src": "x"}), _ranked("b", "beta", 0.2),
              _ranked("c", "gamma", 0.3, {"src": "z"})]
    rer_out = [_ranked("c", None), _ranked("a", "alpha", None, {"own": "y"})]  # unscored; c by id only
    warnings = []
    out = rank_documents(retrieved, rer_in, rer_out, warnings)
    assert [(d["id"], d["content"], d["metadata"], d["rank_score"], d["extra"]) for d in out] == [
        ("c", "gamma", {"src": "z"}, None, {"reranker_rank": 1, "retrieval_rank": 3, "retrieval_score": 0.3}),
        ("a", "alpha", {"own": "y"}, None, {"reranker_rank": 2, "retrieval_rank": 1, "retrieval_score": 0.1}),
        ("b", "beta", {}, None, {"reranker": "not in output", "retrieval_rank": 2, "retrieval_score": 0.2}),
        ("d", "delta", {}, None, {"reranker": "not in input", "retrieval_rank": 4})]
    assert warnings == ["the reranker output carries no scores: ranked by reranker order",
                        "the reranker dropped 1 of 3 documents: they follow the reranked ones, unscored (metadata "
                        "reranker = 'not in output')"]


def test_a_scored_reranker_over_the_retrieved_documents_counts_each_it_dropped():
    retrieved = [_ranked("a", "alpha", 0.1), _ranked("b", "beta", 0.2), _ranked("c", "gamma", 0.3)]
    warnings = []
    out = rank_documents(retrieved, [], [_ranked("b", "beta", 0.9)], warnings)
    assert [(d["id"], d["rank_score"], d["extra"]) for d in out] == [
        ("b", 0.9, {"reranker_rank": 1, "retrieval_rank": 2, "retrieval_score": 0.2}),
        ("a", None, {"reranker": "not in output", "retrieval_rank": 1, "retrieval_score": 0.1}),
        ("c", None, {"reranker": "not in output", "retrieval_rank": 3, "retrieval_score": 0.3})]
    assert warnings == ["the reranker dropped 2 of 3 documents: they follow the reranked ones, unscored (metadata "
                        "reranker = 'not in output')"]
