from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctxcore.stages.tokens as tokens
from ctxcore import Candidate, Config, build, encoding_for_model, get_tokenizer
from ctxcore.io.loaders import load
from ctxcore.pipeline import state_before
from ctxcore.stages import assemble


def test_model_names_map_to_encodings():
    for model in ("gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-nano", "o1", "o3-mini", "o4-mini"):
        assert encoding_for_model(model) == "o200k_base", model
    for model in ("gpt-4", "gpt-4-turbo", "gpt-3.5-turbo"):
        assert encoding_for_model(model) == "cl100k_base", model


def test_model_setting_picks_the_encoding():
    assert Config(model="gpt-4o").encoding == "o200k_base"


def test_both_encodings_are_real_and_differ():
    text = "Überweisungen dauern 3–5 Werktage; 退款需要五个工作日。"
    c, o = get_tokenizer("cl100k_base"), get_tokenizer("o200k_base")
    assert c.exact and o.exact
    assert c.count(text) != o.count(text)


def test_special_token_text_is_counted_as_text():
    tok = get_tokenizer("cl100k_base")
    assert tok.count("<|endoftext|>") > 1  # never the single special token


def test_unknown_encoding_falls_back_to_a_labelled_approximation():
    t = build([Candidate("a", "x" * 40, 1.0)], "q", Config(encoding="no_such_encoding", budget=100))
    assert t.tokenizer.exact is False
    assert t.candidates[0].tokens == 10
    assert any("approximate" in w for w in t.warnings)


def test_rebuild_with_other_settings_does_not_retokenize():
    cands = [Candidate(f"c{i}", f"unique rebuild text number {i} about refunds", 0.5) for i in range(50)]
    build(cands, "q", Config(budget=100))
    before = tokens.cache_size("cl100k_base")
    build(cands, "q", Config(budget=200, order="rank", near_dup=0.5))
    assert tokens.cache_size("cl100k_base") == before


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from(list("ab \n.:[]é€😀漢\u0301\ud800") + [" the", "S1"]), max_size=30)
                .map("".join), max_size=8),
       st.sampled_from(["cl100k_base", "o200k_base"]))
def test_piece_token_spans_are_the_character_offset_spans(pieces, encoding):
    """Block boundaries in the trace: the byte-based spans equal bisecting the character offsets."""
    from bisect import bisect_left

    tok = get_tokenizer(encoding)
    text = "".join(pieces)
    offsets = tok.offsets(text)
    expected, at = [], 0
    for p in pieces:
        expected.append((bisect_left(offsets, at), bisect_left(offsets, at + len(p))))
        at += len(p)
    assert tok.piece_tokens(pieces) == (expected, len(tok.encode(text)))


# Texts that meet the separator at the boundaries where cl100k's and o200k's pre-tokenizing patterns look
# past a character: trailing whitespace (``\s++$``), punctuation before newlines (``[\r\n]*``), a letter
# run that takes one leading symbol, digit runs of three, contractions, and special-token look-alikes.
_AWKWARD = ["", " ", "\n", "\n\n", "  trailing  ", "ends with a dot.", "dot then newline.\n", "!!!", "'s",
            "'ll", "123", "1234567", "x", "<", "|>", "<|", "<|endoftext|>", "a<|endoftext|>b", "<|fim_prefix|>",
            "endoftext|>", "tab\t", "\r\n", "Überweisung 3–5 Tage", "退款需要五个工作日。", "😀 emoji", "$5",
            " leading space", "mixed\n  indent\n\tlines  \n"]


@pytest.mark.slow
@given(st.lists(st.one_of(st.sampled_from(_AWKWARD), st.text(alphabet=st.sampled_from(
    list("ab1 .,!'\n\t\r<|>-é中😀")), max_size=12)), max_size=30),
    st.sampled_from(["cl100k_base", "o200k_base"]), st.booleans())
@settings(max_examples=300, deadline=None)
def test_counting_texts_joined_equals_counting_each_alone(texts, encoding, array):
    enc = get_tokenizer(encoding)._encoding
    assert tokens.count_joined(enc, texts, array) == [len(enc.encode_ordinary(t)) for t in texts]


def test_background_counting_in_slices_gives_every_text_its_own_count():
    tok = get_tokenizer("cl100k_base")
    texts = [f"{w} slice {i % 300}" * (i % 7) for i, w in enumerate(_AWKWARD * 40)]  # repeats and empties

    class Small(tokens.Counting):
        _SLICE_CHARS = 64  # dozens of slices, taken by both threads

    assert len(tokens._slices(texts, Small._SLICE_CHARS)) > 50
    counting = Small(tok, texts)
    assert counting._array  # many slices: read as arrays (a few are read as lists: the property above)
    assert counting.result() == [len(tok._encoding.encode_ordinary(t)) for t in texts]


# Piece ends and starts that meet where the pre-tokenizers look across a line end: runs of line breaks and
# spaces, punctuation before a break (which o200k carries into a following "/"), and every kind of start.
_ENDS = ["", "x", "x\n", "x.\n", "x\n\n", "x \n", "x\n ", "x.\n\n", "\n", "é\n", "x\r\n", "1\n"]
_STARTS = ["", "a", "Z", "[S1]", "<evidence>", "</evidence>", "/path", " a", "\na", "\n[", "1", "é", "'s", ".", "\t"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_STARTS), st.text(alphabet=st.sampled_from(list("ab .\n/[<")),
                                                            max_size=6), st.sampled_from(_ENDS))
                .map("".join), max_size=10),
       st.sampled_from(["cl100k_base", "o200k_base"]))
def test_counting_pieces_apart_gives_the_whole_prompts_spans(pieces, encoding):
    """The fast path (runs of pieces counted alone, counts remembered) against the plain definition."""
    tok = get_tokenizer(encoding)
    assert tok.piece_tokens(pieces) == tok.piece_tokens_whole(pieces)
    assert tok.piece_tokens(pieces) == tok.piece_tokens_whole(pieces)  # and again, from remembered counts


def test_o200k_carries_a_line_end_into_a_slash_so_that_is_no_boundary():
    """Why "/" is not a start that tokenises alone: o200k makes ".\\n/" one token."""
    o200k = get_tokenizer("o200k_base")
    assert [o200k._encoding.decode([t]) for t in o200k.encode("x.\n/y")] == ["x", ".\n/", "y"]
    assert tokens._runs(["x.\n", "/y", "[S1] z\n", "<q>"]) == [(0, 3), (3, 4)]
    assert o200k.piece_tokens(["x.\n", "/y"]) == o200k.piece_tokens_whole(["x.\n", "/y"]) == ([(0, 2), (2, 3)], 3)


def test_every_sample_prompts_blocks_are_the_whole_prompts_spans():
    """The blocks of every sample scenario's prompt, on both encodings, as the plain definition spans them."""
    checked = 0
    for path in sorted((Path(__file__).resolve().parent.parent / "sample_data").glob("0*.json")):
        loaded = load(str(path))
        for encoding in ("cl100k_base", "o200k_base"):
            trace = loaded.build(loaded.settings(encoding=encoding))
            state = state_before(assemble.run, trace.candidates, trace.query, trace.config, trace.inputs)
            history, _ = assemble._fit_history(state)
            by_id = {c.id: c for c in state.alive}  # merged passages are new records
            passages = [(by_id[d.id], d.label, d.text if d.text is not None else by_id[d.id].text) for d in trace.kept()]
            pieces = [p[4] for p in assemble._pieces(state, passages, history)]
            assert "".join(pieces) == trace.prompt.text, path.name
            spans, count = get_tokenizer(encoding).piece_tokens_whole(pieces)
            assert [(b.start_token, b.end_token) for b in trace.blocks] == spans, (path.name, encoding)
            assert trace.prompt.tokens == count == len(get_tokenizer(encoding).encode(trace.prompt.text))
            checked += 1
    assert checked == 16
