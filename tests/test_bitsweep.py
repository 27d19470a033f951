"""Near-dedup by shingles on hashed bit rows (ctxcore.stages.bitsweep) gives what the definition gives:
the sets of dedup.shingles, and each text's first earlier survivor at or above the threshold."""

import os
import sys

import pytest
from hypothesis import given, settings, strategies as st

from conftest import ROOT
from ctxcore import Config, build
from ctxcore.memo import one_shot
from ctxcore.pipeline import clear_caches
from ctxcore.stages import bitsweep, dedup, wordsets
from ctxcore.stages.dedup import join_texts, near_duplicates_naive, near_matches, shingles

sys.path.insert(0, os.path.join(ROOT, "bench"))
import corpora  # noqa: E402
import synth  # noqa: E402

SPACES = [" ", "  ", "\t", "\n", "\xa0", "\u2028", "\x85"]
# short pieces over few characters, so that texts share shingles, meet the k-character edge, and repeat
piece = st.sampled_from(["ab", "abc", "abcd", "abcde", "AbCdE", "bcdea", "x", "refund", "days", "İ", "ß", "\ud800",
                         "退款", "\U0001f600"] + SPACES)
text = st.lists(piece, max_size=12).map("".join)


def _definition(texts, threshold):
    return near_duplicates_naive([shingles(t) for t in texts], threshold)


@settings(max_examples=300, deadline=None)
@given(st.lists(text, max_size=40), st.sampled_from([0.3, 0.5, 0.8, 0.9, 1.0]))
def test_the_bit_sweep_is_the_definition(texts, threshold):
    sb = bitsweep.shingle_bits(texts)
    assert sb.sizes.tolist() == [len(shingles(t)) for t in texts]
    assert bitsweep.sweep(sb, threshold) == _definition(texts, threshold)


@settings(max_examples=100, deadline=None)
@given(st.lists(text, min_size=1, max_size=30), st.data())
def test_the_bit_sweep_of_some_rows_is_the_definition_on_them(texts, data):
    rows = sorted(data.draw(st.sets(st.integers(0, len(texts) - 1))))
    got = bitsweep.sweep(bitsweep.shingle_bits(texts).subset(rows), 0.8)
    assert got == _definition([texts[r] for r in rows], 0.8)


@settings(max_examples=200, deadline=None)
@given(st.lists(text, max_size=40), st.sampled_from([1, 3, 8, 64]))
def test_sets_made_a_few_characters_at_a_time_are_the_definitions(texts, chunk):
    """Texts taken in runs of any length (a text longer than a run alone; ASCII or not) give every text its own
    distinct ids, ascending, and the definition's matches."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(bitsweep, "_CHUNK", chunk)
        sb = bitsweep.shingle_bits(texts)
        key, holder, _ = bitsweep.shingle_keys(texts)
        assert sb.sizes.tolist() == [len(shingles(t)) for t in texts]
        for i in range(len(texts)):
            assert sb.keys[sb.starts[i]:sb.starts[i] + sb.sizes[i]].tolist() == sorted(set(key[holder == i].tolist()))
        assert bitsweep.sweep(sb, 0.8) == _definition(texts, 0.8)


def test_short_texts_and_repeats_are_numbered_as_the_definition_numbers_them():
    texts = ["", "ab", "abcd", "abcde", "  A  b ", "abcde abcde abcde", "ab", "ab ", "Ab"]
    assert bitsweep.shingle_bits(texts).sizes.tolist() == [len(shingles(t)) for t in texts]
    assert bitsweep.sweep(bitsweep.shingle_bits(texts), 0.9) == _definition(texts, 0.9)


@pytest.mark.slow
@pytest.mark.parametrize("corpus", ["synth", "prose", "templated"])
@pytest.mark.parametrize("threshold", [0.8, 0.9])
def test_the_bit_sweep_on_the_corpora_is_the_definition(corpus, threshold):
    texts = ([c.text for c in synth.candidates(1500)] if corpus == "synth"
             else corpora.texts(corpus, 1500 if corpus == "prose" else 500))
    expected = _definition(texts, threshold)
    assert bitsweep.sweep(bitsweep.shingle_bits(texts), threshold) == expected
    assert near_matches(texts, "shingles", threshold) == expected  # the stage's way there
    assert sum(m is not None for m in expected) > 20


@pytest.mark.slow
@pytest.mark.parametrize("head", [1, 5, 16, 32])
def test_the_pairs_that_pass_do_not_depend_on_how_many_words_are_compared_first(monkeypatch, head):
    texts = corpora.texts("prose", 800) + corpora.texts("templated", 300)
    expected = _definition(texts, 0.8)
    monkeypatch.setattr(bitsweep, "choose_head", lambda bits, sizes, threshold: head)
    assert bitsweep.sweep(bitsweep.shingle_bits(texts), 0.8) == expected
    assert sum(m is not None for m in expected) == 119  # the corpora's copies, found by the definition


def test_the_head_is_chosen_from_what_the_pairs_differ_in():
    """Templated text shares most shingles between unrelated rows, so settling a pair takes more words; a higher
    threshold leaves a match less room, so fewer words settle it (measured: synth 11 of 32 words at 0.8, prose 15,
    templated 22)."""
    import numpy as np

    def head(texts, threshold):
        sb = bitsweep.shingle_bits(texts)
        return bitsweep.choose_head(np.ascontiguousarray(sb.bits.T), sb.sizes, threshold)

    synth_texts, templated = [c.text for c in synth.candidates(1500)], corpora.texts("templated", 500)
    assert (head(synth_texts, 0.8), head(synth_texts, 0.9), head(synth_texts, 0.95)) == (11, 5, 3)
    assert (head(templated, 0.8), head(templated, 0.9)) == (22, 12)
    assert head(["ab", "abc"], 0.8) == 1  # one word a row: nothing to choose
    assert head(["", ""], 0.8) == 1


def test_the_stage_sweeps_bits_from_its_threshold_and_joins_below():
    texts = [c.text for c in synth.candidates(600)]
    assert isinstance(join_texts(texts, "shingles", 0.8)[1], bitsweep.ShingleBits)
    assert isinstance(join_texts(texts, "shingles", 0.7)[1], wordsets.WordSets)
    assert not isinstance(join_texts(texts, "words", 0.8)[1], bitsweep.ShingleBits)


@pytest.mark.slow
def test_rebuilds_with_shingles_across_thresholds_give_the_cold_builds_fates():
    cands = synth.candidates(800)
    steps = [Config(), Config(similarity="shingles"), Config(similarity="shingles", near_dup=0.9),
             Config(similarity="shingles", near_dup=0.7), Config(similarity="shingles", near_dup=0.85),
             Config(similarity="shingles", near_dup=0.85, prefer_newest=False)]
    clear_caches()
    warm = [build(cands, "q", c).to_json() for c in steps]
    cold = []
    for c in steps:
        clear_caches()
        with one_shot():
            cold.append(build(cands, "q", c).to_json())
    assert warm == cold
    clear_caches()
    assert dedup._JOINS == {} and dedup._SWEPT == {}


def _exits_zero(pid: int, what: str) -> None:
    """The forked child ``pid`` ends with exit code 0 within 60 s (it is killed if not)."""
    import signal
    import time
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    pytest.fail(f"the forked child's {what} did not finish in 60 s")


def test_a_forked_child_sweeps_on_threads_of_its_own():
    """A process forked after the parent swept inherits the pool's records but none of its threads: with one
    pool for both, the child's work would wait forever for threads that do not exist."""
    texts = ["refund in five days", "Refund in  five days!", "ship it", "ship it"]
    expected = bitsweep.sweep(bitsweep.shingle_bits(texts), 0.8)  # the parent's threads are running now
    pid = os.fork()
    if pid == 0:  # the child: exit 0 only when it found what the parent found
        os._exit(0 if bitsweep.sweep(bitsweep.shingle_bits(texts), 0.8) == expected else 1)
    _exits_zero(pid, "sweep")


def test_a_forked_child_counts_tokens_on_a_thread_of_its_own():
    """The same for the counting thread of every build (a build in a ``multiprocessing`` worker forked after the
    parent built hung before each process made its own pool)."""
    from ctxcore import Candidate
    build([Candidate(id=str(i), text=f"text {i} about refunds " * 40) for i in range(300)], "q", Config())
    pid = os.fork()
    if pid == 0:
        trace = build([Candidate(id=str(i), text=f"other {i} on shipping " * 40) for i in range(300)], "q", Config())
        os._exit(0 if trace.candidates else 1)
    _exits_zero(pid, "build")
