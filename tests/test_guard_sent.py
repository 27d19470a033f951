"""The sent-prompt reader held by hand-valued tables (issue #29): what crowd-out and over-window are computed from.

Each test names the bug it was checked against (planted by hand in a scratch copy; see the report of issue #29).
Token counts are cl100k_base's, worked out once and written here.
"""

import dataclasses

import pytest

from ctxcore import Candidate, Config, Logged, build, get_tokenizer
from ctxcore.analysis.sent import (_gap_labelling, _labelling_of, _question_present, _stem, attach, content_words, family_members,
                                   of_build, of_trace, overlap, reconstruct)
from ctxcore.analysis import sent as sent_module
from ctxcore.records import Sent, SentPassage

Q = "How much does return shipping cost?"
# 39 cl100k tokens; its first sentence alone is 17 tokens and 42.8% of its normalised text
LONG = ("Refunds are issued within 14 days of receiving the returned item at our warehouse. Items must be unused "
        "and in their original packaging. Store credit is offered for items returned after 30 days.")
FIRST = LONG[:LONG.index(" Items")]
SHIP = "Return shipping costs a flat fee of 49 EUR, deducted from the refund amount."  # 17 tokens


def _trace(*cands, **cfg):
    return build(list(cands), Q, Config(**{"budget": 2000, **cfg}))


def test_a_partly_sent_passage_counts_its_share_of_tokens_not_its_size():
    """Plant: ``sent_tokens = tok.count(c.text)`` for a cut passage (its full 39 tokens, evidence 56)."""
    trace = _trace(Candidate("a", LONG, 0.9), Candidate("b", SHIP, 0.8))
    sent = reconstruct(trace, f"[1] {FIRST}\n[2] {SHIP}\nQuestion: {Q}")
    assert sent.passages == (SentPassage("a", 1, "[1]", 0.428, 17, 4), SentPassage("b", 2, "[2]", 1.0, 17, 91))
    assert sent.passages[0].cut and not sent.passages[1].cut
    assert sent.evidence_tokens == 34 == round(39 * 0.428) + 17
    assert (sent.prompt_tokens, sent.limit, sent.over_window) == (49, 7168, False)


def test_a_whole_passage_counts_its_full_tokens():
    """The whole count, 39, beside the cut one above (17): the two sides of ``share >= 1``."""
    trace = _trace(Candidate("a", LONG, 0.9), Candidate("b", SHIP, 0.8))
    sent = reconstruct(trace, f"[1] {LONG}\n[2] {SHIP}\nQuestion: {Q}")
    assert [(p.id, p.share, p.tokens) for p in sent.passages] == [("a", 1.0, 39), ("b", 1.0, 17)]
    assert sent.evidence_tokens == 56


@pytest.mark.parametrize("spare, over", [(0, False), (-1, True), (1, False)])
def test_over_window_at_its_edge(spare, over):
    """Over the window is strictly more than window minus max_output. Plant: ``total >= limit``."""
    prompt = f"[1] {SHIP}\nQuestion: {Q}"
    total = get_tokenizer("cl100k_base").count(prompt)
    assert total == 29
    trace = _trace(Candidate("b", SHIP, 0.8))  # the window set after the build: a logged system's own window
    trace = dataclasses.replace(trace, budget=dataclasses.replace(trace.budget, window=total + 100 + spare,
                                                                  max_output=100))
    sent = reconstruct(trace, prompt)
    assert (sent.prompt_tokens, sent.limit, sent.over_window) == (29, 29 + spare, over)


TEN = "alpha bravo charlie delta echo foxtrot golf hotel india juliet"
EIGHT = "india hotel golf foxtrot echo delta charlie bravo"  # 8 of TEN's 10 words, reordered: Jaccard 0.8


@pytest.mark.parametrize("near, dup", [(0.8, ("t", 0.8)), (0.81, (None, None)), (0.79, ("t", 0.8))])
def test_a_near_copy_at_the_threshold_is_a_duplicate(near, dup):
    """Jaccard at or above the config's near-dup threshold is a copy. Plant: ``s > threshold``."""
    trace = _trace(Candidate("t", TEN, 0.9), Candidate("e", EIGHT, 0.8), near_dup=near)
    sent = reconstruct(trace, f"{TEN}\n\n{EIGHT}\n\nQuestion: {Q}")
    assert [p.id for p in sent.passages] == ["t", "e"]
    assert (sent.passages[1].duplicate_of, sent.passages[1].similarity) == dup
    assert sent.passages[0].duplicate_of is None


def test_near_dup_off_falls_back_to_the_default_threshold():
    """near_dup=None reads copies at DEFAULT_NEAR 0.8. Plant: DEFAULT_NEAR 0.9 (the 0.8 copy not seen)."""
    trace = _trace(Candidate("t", TEN, 0.9), Candidate("e", EIGHT, 0.8), near_dup=None)
    sent = reconstruct(trace, f"{TEN}\n\n{EIGHT}\n\nQuestion: {Q}")
    assert (sent.passages[1].duplicate_of, sent.passages[1].similarity) == ("t", 0.8)


def test_an_identical_copy_sent_twice_is_two_passages_the_second_a_duplicate():
    """Identical texts claim successive occurrences. Plant: the ``pos in taken`` loop removed (one passage)."""
    trace = _trace(Candidate("a", SHIP, 0.9), Candidate("a2", SHIP, 0.8))
    sent = reconstruct(trace, f"[1] {SHIP}\n[2] {SHIP}\nQuestion: {Q}")
    assert [(p.id, p.position, p.label, p.duplicate_of, p.similarity) for p in sent.passages] == [
        ("a", 1, "[1]", None, None), ("a2", 2, "[2]", "a", 1.0)]
    assert sent.evidence_tokens == 34 and sent.not_sent == ()


def test_a_copy_retrieved_twice_but_sent_once_is_one_passage():
    """Plant: the already-claimed occurrence counted again (two passages from one)."""
    trace = _trace(Candidate("a", SHIP, 0.9), Candidate("a2", SHIP, 0.8))
    sent = reconstruct(trace, f"[1] {SHIP}\nQuestion: {Q}")
    assert [p.id for p in sent.passages] == ["a"] and sent.not_sent == ("a2",)
    assert sent.evidence_tokens == 17


@pytest.mark.parametrize("word, stem", [
    ("refunds", "refund"), ("eggs", "eggs"), ("items", "item"), ("singing", "sing"), ("string", "string"),
    ("damaged", "damag"), ("damage", "damag"), ("boxes", "boxe"), ("axes", "axes"), ("code", "code"),
    ("coded", "coded"), ("refunded", "refund"), ("shipping", "shipp")])
def test_stem_strips_a_suffix_only_from_a_long_enough_word(word, stem):
    """A suffix goes only when more than three letters stay. Plant: ``>=`` for ``>`` ("eggs" -> "egg")."""
    assert _stem(word) == stem


def test_content_words_leave_out_function_words_and_short_words_but_keep_digits():
    """Plant: the digit exemption dropped (a '7' would not count as a question word)."""
    assert content_words("How do I return 7 of the items to a UK shop?") == frozenset(
        {"return", "7", "item", "shop"})


@pytest.mark.parametrize("text, share", [
    ("Return shipping costs a flat fee.", 0.75), ("shipping", 0.25), ("nothing relevant here", 0.0)])
def test_overlap_is_the_share_of_the_questions_content_words(text, share):
    """Q's content words: much, return, shipp, cost. Plant: dividing by the text's words instead."""
    assert content_words(Q) == frozenset({"much", "return", "shipp", "cost"})
    assert overlap(text, content_words(Q)) == share
    assert overlap(text, frozenset()) == 0.0


@pytest.mark.parametrize("gap, labelling", [
    ("\n\n", "blank-line"), ("\n  \n", "blank-line"), ("\n", "line"), (" ", "space"), ("  ", "space"),
    ("\n---\n", "unlabelled")])
def test_gap_labelling(gap, labelling):
    """Plant: ``>= 1`` newlines for a blank line (a line break read as a blank line)."""
    assert _gap_labelling(gap) == labelling


@pytest.mark.parametrize("after, present", [
    # Q's content words: much, return, shipp, cost -- 4; 0.8 of them is 3.2, so all 4 are needed reworded
    ("what is the cost of return shipping, how much", True),
    ("what is the cost of return shipping", False),
    ("", False)])
def test_a_reworded_question_needs_most_of_its_words_after_the_evidence(after, present):
    """Plant: 0.8 lowered to 0.7 (three of four words would do)."""
    assert _question_present(Q, "refunds are issued " + after, 19) is present


def test_a_verbatim_question_anywhere_is_present():
    assert _question_present(Q, "how much does return shipping cost? [1] refunds are issued", 59) is True


# -- versions, answer rules, the build's own prompt -----------------------------------------------------------------
V1 = "Refunds above 150 dollars need a team lead's approval recorded in the ticket before payout."  # 19 tokens
V2 = "Refunds above 200 dollars need a team lead's approval recorded in the ticket before payout."  # 19 tokens
WHO = "Who approves a large refund?"
RULED = (f"Answer only from the sources. If they do not cover it, say you don't know.\n[1] {V1}\n[2] {V2}\n"
         f"Question: {WHO}")


def _versions():
    cands = [Candidate("v1", V1, 0.9, doc_id="approval", version="1"),
             Candidate("v2", V2, 0.8, doc_id="approval", version="2"), Candidate("b", SHIP, 0.5)]
    return build(cands, WHO, Config(budget=2000))


def test_two_versions_of_one_passage_are_a_version_question_not_a_duplicate():
    """v1 and v2 differ in one number (Jaccard 0.93): the older is superseded, neither is a copy.
    Plants: ``_versions_of_one`` always False (v2 a duplicate of v1); ``_superseded`` with ``>`` (v2 its own
    successor)."""
    sent = reconstruct(_versions(), RULED)
    assert sent.passages == (SentPassage("v1", 1, "[1]", 1.0, 19, 79, None, None, "v2"),
                             SentPassage("v2", 2, "[2]", 1.0, 19, 175, None, None, None))
    assert (sent.not_sent, sent.evidence_tokens, sent.prompt_tokens) == (("b",), 38, 71)
    assert (sent.question_present, sent.rule_present, sent.abstain_asked, sent.source, sent.labelling) == (
        True, True, True, "logged", "bracket-number")


@pytest.mark.parametrize("head, rule, abstain", [
    ("Answer only from the sources.", True, False),
    ("Use the documents below.", True, False),
    ("If they do not cover it, say you don't know.", True, True),
    ("Cite the passage you use.", True, False),
    ("Be brief.", False, False),
    ("Reply exactly 'no answer' when unsure.", False, True),
])
def test_answer_rule_and_abstain_instruction_are_read_on_the_prompt(head, rule, abstain):
    """Plant: the abstain pattern read with the rule's (an abstain line without a rule)."""
    sent = reconstruct(_versions(), f"{head}\n[1] {V2}\nQuestion: {WHO}")
    assert (sent.rule_present, sent.abstain_asked) == (rule, abstain)


def test_the_builds_own_prompt_is_the_sent_context_without_a_logged_one():
    """of_build: the kept passages as [S1].., their tokens, where each block starts, the stale version not sent.
    Plant: of_build's not-sent list taken from the kept ids (``in`` for ``not in``)."""
    trace = _versions()
    want = (SentPassage("v2", 1, "[S1]", 1.0, 19, 28), SentPassage("b", 2, "[S2]", 1.0, 17, 65))
    for sent in (of_build(trace), of_trace(trace)):
        assert sent.passages == want
        assert (sent.not_sent, sent.evidence_tokens, sent.prompt_tokens, sent.source, sent.labelling) == (
            ("v1",), 36, 160, "replay", "bracket-s")
    assert [c.id for c in family_members(trace, "v1")] == ["v2", "v1"] and family_members(trace, "b") == []


def test_a_logged_prompt_is_read_once_and_kept_on_the_trace():
    """attach fills logged.sent; of_trace then returns that very record for the same prompt, and reads another
    prompt afresh. Plant: attach skipping a trace whose prompt is set (sent stays None)."""
    trace = dataclasses.replace(_versions(), logged=Logged(format="openinference", prompt_text=RULED))
    attached = attach(trace)
    assert attached.logged.sent == reconstruct(trace, RULED)
    assert of_trace(attached) is attached.logged.sent
    assert [p.id for p in of_trace(attached, f"[1] {V2}\nQuestion: {WHO}").passages] == ["v2"]
    assert attach(attached) is attached
    untouched = _versions()
    assert attach(untouched) is untouched


@pytest.mark.parametrize("label, labelling", [
    ("[S1]", "bracket-s"), ("[1]", "bracket-number"), ("(2)", "paren-number"), ("2.", "numbered-list"),
    ("3)", "numbered-list"), ("Document 3", "document-number"), ("Source #4", "source-number")])
def test_labelling_named_from_a_label(label, labelling):
    """Survivors of the first mutation run (``_labelling_of``): the paren and numbered-list names."""
    assert _labelling_of(label) == labelling


@pytest.mark.parametrize("mark, label, labelling", [("({n})", "({n})", "paren-number"), ("{n}.", "{n}.", "numbered-list")])
def test_paren_and_numbered_prompts_are_read_with_their_labels(mark, label, labelling):
    trace = _trace(Candidate("a", LONG, 0.9), Candidate("b", SHIP, 0.8))
    prompt = f"{mark.format(n=1)} {LONG}\n{mark.format(n=2)} {SHIP}\nQuestion: {Q}"
    sent = reconstruct(trace, prompt)
    assert [(p.id, p.label) for p in sent.passages] == [("a", label.format(n=1)), ("b", label.format(n=2))]
    assert sent.labelling == labelling


def test_xml_documents_without_an_index_are_labelled_by_the_tag_alone():
    """Survivors of the first mutation run (``_read_label``): a <document> with no index or id attribute."""
    trace = _trace(Candidate("a", LONG, 0.9), Candidate("b", SHIP, 0.8))
    prompt = (f"<documents>\n<document>\n<document_content>\n{LONG}\n</document_content>\n</document>\n"
              f'<document id="kb-7">\n{SHIP}\n</document>\n</documents>\n\n{Q}')
    sent = reconstruct(trace, prompt)
    assert [(p.id, p.label) for p in sent.passages] == [("a", "<document>"), ("b", '<document id="kb-7">')]
    assert sent.labelling == "xml-doc"


@pytest.mark.parametrize("score, key", [(None, (False, 0.0, 2 / 3)), (0.0, (True, 0.0, 2 / 3)),
                                        (0.7, (True, 0.7, 2 / 3))])
def test_relevance_puts_scored_before_unscored_then_score_then_overlap(score, key):
    """An unscored passage is weaker than any scored one, even one scored 0; unscored counts as 0, not 1."""
    from ctxcore.analysis.sent import relevance
    q = content_words("how long do refunds take")
    assert q == frozenset({"long", "take", "refund"})
    assert relevance(Candidate(id="a", text="refunds take five days", score=score), q) == key


# --- a build's own prompt as the sent context (sent.of_build) ------------------------------------------------

_A = "Card refunds take five business days after approval by the bank."
_B = "Card refunds take five business days after approval by the issuer."  # 10 of 12 words shared: 0.833
_OWN = (Candidate("a", _A, 0.9), Candidate("b", _B, 0.8),
        Candidate("v1", "Policy v1: refunds within 30 days of purchase.", 0.7, doc_id="policy", version="1"),
        Candidate("v2", "Policy v2: refunds within 14 days of purchase.", 0.6, doc_id="policy", version="2"),
        Candidate("d", "Refunds are quick. The office is closed on public holidays and on weekends in most regions of "
                       "the country.", 0.5),  # 106 characters, cut to its first sentence (18)
        Candidate("u", "My receipt says order 7781.", 0.4, trust="user"),
        Candidate("e", "", 0.3))


def _own(near_dup):
    return build(_OWN, "How long do card refunds take?", Config(near_dup=near_dup, prefer_newest=False, compress=True,
                                                                  max_chunk_tokens=16, order="rank"))


@pytest.mark.parametrize("near_dup, b_copy", [(None, ("a", 0.833)), (0.9, (None, None))])
def test_a_builds_own_prompt_read_as_the_sent_context(near_dup, b_copy):
    """Copies are judged at the build's own near-dup threshold (0.8 when it has none): b is 0.833 like a."""
    trace = _own(near_dup)
    starts = {b.id: b.start_token for b in trace.blocks if b.kind == "evidence" and b.id}
    assert [d.fate for d in trace.decisions] == ["kept"] * 7
    expected = (
        SentPassage("a", 1, "[S1]", 1.0, 12, starts["a"]),
        SentPassage("b", 2, "[S2]", 1.0, 12, starts["b"], *b_copy),
        SentPassage("v1", 3, "[S3]", 1.0, 12, starts["v1"], superseded_by="v2"),
        SentPassage("v2", 4, "[S4]", 1.0, 12, starts["v2"]),
        SentPassage("d", 5, "[S5]", 0.17, 5, starts["d"]),   # 18 / 106 = 0.1698
        SentPassage("e", 6, "[S6]", 1.0, 0, starts["e"]),    # an empty text counts nothing
        SentPassage("u", 7, "[S7]", 1.0, 8, 0),              # a user document is not an evidence block
    )
    assert (starts["a"], starts["b"], starts["d"]) == (28, 51, 134)
    assert of_build(trace) == Sent(expected, (), 61, 272, 7168, False, True, True, True, "replay", "bracket-s")
    assert trace.prompt.tokens == 272 and 8192 - 1024 == 7168


def test_a_near_copy_at_exactly_the_threshold_is_a_copy():
    """9 words each, 8 shared: 8 / 10 = 0.8, the default threshold, which a copy reaches (>=)."""
    one = Candidate("one", "alpha bravo charlie delta echo foxtrot golf hotel india", 0.9)
    two = Candidate("two", "alpha bravo charlie delta echo foxtrot golf hotel juliet", 0.8)
    trace = build((one, two), "alpha", Config(near_dup=None))
    assert [(p.id, p.duplicate_of, p.similarity) for p in of_build(trace).passages] == [
        ("one", None, None), ("two", "one", 0.8)]


def test_other_versions_are_no_copies_of_each_other():
    """v1 and v2 share 7 of 9 words (0.78): no copy at 0.7 either, being versions of one document."""
    trace = build(_OWN[2:4], "refunds", Config(near_dup=None, prefer_newest=False))
    assert [(p.id, p.duplicate_of, p.superseded_by) for p in of_build(
        dataclasses.replace(trace, config=trace.config.replace(near_dup=0.7))).passages] == [
        ("v1", None, "v2"), ("v2", None, None)]


def test_a_builds_prompt_that_fills_the_window_exactly_is_not_over_it():
    """With no safety margin and a window that leaves exactly the prompt's tokens, the prompt is not over (a
    build never sends more: one token less and the final count drops a passage)."""
    first = _own(None)
    window = first.prompt.tokens + 1024
    trace = build(_OWN, "How long do card refunds take?", first.config.replace(window=window, safety=0.0,
                                                                               budget=first.budget.docs))
    sent = of_build(trace)
    assert sent.limit == sent.prompt_tokens == trace.prompt.tokens == first.prompt.tokens
    assert sent.over_window is False


# --- which candidates a sent prompt holds, at the edges of the word-share shortcuts (sent._matches) ----------

def _read(cands, prompt):
    return [(p.id, p.share, p.offset) for p in reconstruct(build(cands, "what?"), prompt).passages]


@pytest.mark.parametrize("tail, found", [
    ("kilo lima mike november oscar papa quebec", [("cut", 0.523, 4)]),        # 3 of 10 words sent: 30%, read
    ("kilo lima mike november oscar papa quebec romeo", []),                    # 3 of 11: under 30%, skipped
])
def test_a_passage_cut_after_its_opening_is_read_from_three_tenths_of_its_words(tail, found):
    """The opening (44 characters, more than the 40 looked for) was sent, then the prompt breaks off."""
    c = Candidate("cut", f"abcdefghijklmn opqrstuvwxyzab cdefghijklmnop {tail}", 0.9)
    assert _read((c,), "[1] abcdefghijklmn opqrstuvwxyzab cdefghijklmnop\n\nQuestion: what?") == found


@pytest.mark.parametrize("opening, found", [
    ("Alpha bravo charlie delta.", [("s", 0.534, 9)]),        # 6 of 10 words sent: 60%, its sentence read
    ("Alpha bravo charlie delta echo.", []),                  # 6 of 11: under 60% and no opening: skipped
])
def test_a_passage_whose_opening_was_not_sent_is_read_by_its_sentences_from_six_tenths_of_its_words(opening, found):
    c = Candidate("s", f"{opening} The refund is paid within days.", 0.9)
    assert _read((c,), "Context: The refund is paid within days.\n\nQuestion?") == found


def test_a_passage_whose_opening_starts_the_prompt_is_read_though_most_of_its_words_are_missing():
    """The opening at offset 0 counts as found (8 of 15 words: under 60%)."""
    c = Candidate("head", "Refunds are paid within five working days after the approval of the bank office manager "
                          "today", 0.9)
    assert _read((c,), "Refunds are paid within five working days after") == [("head", 0.505, 0)]


def test_two_identical_candidates_sent_once_at_the_very_start_are_one_passage():
    text = "Refunds are paid within five working days of approval."
    cands = (Candidate("x1", text, 0.9), Candidate("x2", text, 0.8))
    sent = reconstruct(build(cands, "how long?"), f"{text}\n\nQuestion: how long?")
    assert [(p.id, p.offset) for p in sent.passages] == [("x1", 0)] and sent.not_sent == ("x2",)


def test_a_label_is_read_only_between_the_passage_before_and_this_one():
    """b follows a short labelled passage with no label of its own: [1] (within 40 characters) is a's, not b's."""
    a = Candidate("a", "Refunds: five days.", 0.9)
    b = Candidate("b", "Exchanges are possible within thirty days of purchase at any store.", 0.8)
    sent = reconstruct(build((a, b), "q"), f"[1] {a.text} {b.text}\n\nQuestion: q")
    assert [(p.id, p.label) for p in sent.passages] == [("a", "[1]"), ("b", None)]
    assert sent.labelling == "bracket-number"


def test_a_prompt_that_holds_no_passage_has_no_labelling():
    a = Candidate("a", "Refunds: five days.", 0.9)
    sent = reconstruct(build((a,), "q"), "Nothing relevant here at all.\n\nQuestion: q")
    assert (sent.passages, sent.not_sent, sent.labelling) == ((), ("a",), "")


def test_a_version_of_an_earlier_passage_is_still_checked_against_the_passages_after_it():
    """v2 is a version of v1 (not a copy of it) and word for word x: a copy of x."""
    cands = (Candidate("v1", "Policy v1: refunds within 30 days of purchase.", 0.9, doc_id="policy", version="1"),
             Candidate("x", "Policy v2: refunds within 14 days of purchase for all card payments!", 0.8,
                       doc_id="copy"),
             Candidate("v2", "Policy v2: refunds within 14 days of purchase for all card payments.", 0.7,
                       doc_id="policy", version="2"))
    trace = build(cands, "refunds", Config(near_dup=None, prefer_newest=False, order="rank"))
    assert [(p.id, p.duplicate_of, p.similarity, p.superseded_by) for p in of_build(trace).passages] == [
        ("v1", None, None, "v2"), ("x", None, None, None), ("v2", "x", 1.0, None)]


def test_a_label_is_read_after_the_previous_passage_only():
    """The second passage is unlabelled: the first passage's "Document 1:", 100 characters before it, is not its
    label, though it lies within the 400 characters read before a passage."""
    a = "Alpha passage about the refund window of thirty days for all orders."
    b = "Beta passage about shipping times to the northern regions in winter."
    sent = reconstruct(_trace(Candidate("a", a, 0.9), Candidate("b", b, 0.8)),
                       f"Document 1:\n{a}\n\n{b}\n\nQuestion: q?")
    assert [(p.id, p.label) for p in sent.passages] == [("a", "Document 1"), ("b", None)]
    assert sent.labelling == "document-number"


OTHER = "Orders ship within two business days from our warehouse in Lyon, France."


def test_a_copy_sent_once_does_not_stop_the_reading_of_the_passages_after_it():
    sent = reconstruct(_trace(Candidate("a", SHIP, 0.9), Candidate("a2", SHIP, 0.8), Candidate("o", OTHER, 0.7)),
                       f"[1] {SHIP}\n[2] {OTHER}\nQuestion: {Q}")
    assert [p.id for p in sent.passages] == ["a", "o"] and sent.not_sent == ("a2",)


def test_a_candidate_with_no_words_absent_from_the_prompt_is_not_a_passage():
    sent = reconstruct(_trace(Candidate("a", SHIP, 0.9), Candidate("z", "!", 0.8)), f"[1] {SHIP}\nQuestion: {Q}")
    assert [(p.id, p.offset) for p in sent.passages] == [("a", 4)] and sent.not_sent == ("z",)


TWENTY = "Fees are 49 EUR now."  # 20 characters normalised: the shortest sentence read as a part sent


@pytest.mark.parametrize("again", [False, True])
def test_a_sentence_of_twenty_characters_is_a_part_sent_at_its_first_occurrence(again):
    """The candidate's opening was reworded; only its last sentence (exactly 20 characters) was sent as written,
    once or twice: the part is 20 of its 81 characters, read where the sentence first occurs."""
    cand = "The opening sentence was rewritten entirely by someone else. " + TWENTY
    prompt = (f"[1] {SHIP}\n[2] {TWENTY} the opening sentence was rewritten by someone entirely else\n"
              + (f"[3] {TWENTY}\n" if again else "") + f"Question: {Q}")
    sent = reconstruct(_trace(Candidate("a", SHIP, 0.9), Candidate("p", cand, 0.8)), prompt)
    assert [(p.id, p.share, p.offset, p.tokens) for p in sent.passages] == [("a", 1.0, 4, 17), ("p", 0.247, 85, 4)]


def test_a_near_copy_reports_its_similarity_to_three_places():
    six, five = "alpha bravo charlie delta echo foxtrot", "alpha bravo charlie delta echo"  # Jaccard 5/6
    sent = reconstruct(_trace(Candidate("t", six, 0.9), Candidate("e", five, 0.8)), f"{six}\n\n{five}\n\nQuestion: {Q}")
    assert [(p.id, p.duplicate_of, p.similarity) for p in sent.passages] == [("t", None, None), ("e", "t", 0.833)]


def test_a_version_of_an_earlier_passage_is_still_a_copy_of_a_later_one():
    """v2 is a newer version of v1 (no duplicate of it), and word for word the passage w sent before it."""
    old = "Return shipping cost 30 EUR in the 2023 policy, deducted from the refund amount."
    trace = _trace(Candidate("v1", old, 0.9, doc_id="d", version="1"), Candidate("w", SHIP, 0.8, doc_id="e"),
                   Candidate("v2", SHIP, 0.7, doc_id="d", version="2"))
    sent = reconstruct(trace, f"[1] {old}\n[2] {SHIP}\n[3] {SHIP}\nQuestion: {Q}")
    assert [(p.id, p.duplicate_of, p.similarity, p.superseded_by) for p in sent.passages] == [
        ("v1", None, None, "v2"), ("w", None, None, None), ("v2", "w", 1.0, None)]


def test_a_prompt_is_read_once_per_candidate_set_while_several_sets_alternate(monkeypatch):
    """A replay reads one run's prompt against the policy's, the baseline's and the new settings' traces: the
    reading (where each passage is, its label) is remembered by candidate set and prompt, for each set."""
    calls = []
    real = sent_module._found
    monkeypatch.setattr(sent_module, "_found", lambda cands, prompt: calls.append(len(cands)) or real(cands, prompt))
    one = _trace(Candidate("a", SHIP, 0.9), Candidate("o", OTHER, 0.8))
    two = _trace(Candidate("a", SHIP, 0.9))
    prompt = f"[1] {SHIP}\n[2] {OTHER}\nQuestion: {Q}"
    first = reconstruct(one, prompt)
    assert [p.id for p in reconstruct(two, prompt).passages] == ["a"]
    assert reconstruct(one, prompt) == first and calls == [2, 1]


def test_a_sliver_sent_counts_one_token_at_least():
    """Only the 20-character sentence of a passage that is otherwise a 640-character rule line was sent: 3% of its
    text, 19 tokens × 0.031 rounds to 1 token."""
    sent = reconstruct(_trace(Candidate("a", SHIP, 0.9), Candidate("p", TWENTY + " " + "=" * 640, 0.8)),
                       f"[1] {SHIP}\n[2] {TWENTY}\nQuestion: {Q}")
    assert [(p.id, p.share, p.tokens) for p in sent.passages] == [("a", 1.0, 17), ("p", 0.03, 1)]


def test_identical_texts_claim_successive_occurrences_even_overlapping_ones():
    """Two copies of a 45-character run of one mark, sent as a 46-character run: they are read at offsets 0 and
    1, as the definition says (the second occurrence starts one character after the first)."""
    marks = "!" * 45
    sent = reconstruct(_trace(Candidate("x", marks, 0.9), Candidate("x2", marks, 0.8)), "!" * 46 + f"\nQuestion: {Q}")
    assert [(p.id, p.offset, p.duplicate_of) for p in sent.passages] == [("x", 0, None), ("x2", 1, "x")]


def test_a_passage_that_reads_like_metadata_does_not_label_the_next_one():
    """A passage of "key: value" lines followed by an unlabelled one: read after the previous passage's end, the
    second has no label (read from the prompt's start, the first passage's lines would look like LlamaIndex's
    metadata header of the second)."""
    a = "Region: northern warehouses\nCarrier: DHL express, two days"
    b = "Beta passage about shipping times to the northern regions in winter."
    sent = reconstruct(_trace(Candidate("a", a, 0.9), Candidate("b", b, 0.8)), f"{a}\n\n{b}\n\nQuestion: {Q}")
    assert [(p.id, p.label) for p in sent.passages] == [("a", None), ("b", None)]
    assert sent.labelling == "blank-line"


QN = "Which carrier ships returns from the northern warehouse?"  # 5 content words: carrier ship return northern warehous


@pytest.mark.parametrize("asked, present", [("carrier for northern warehouse returns?", True),   # 4 of 5: 80%
                                            ("carrier for northern returns?", False)])            # 3 of 5
def test_a_reworded_question_after_the_evidence_at_the_edge_of_four_fifths(asked, present):
    trace = build([Candidate("a", SHIP, 0.9)], QN, Config(budget=2000))
    assert reconstruct(trace, f"[1] {SHIP}\nQuestion: {asked}").question_present is present


def test_a_reworded_question_at_the_very_start_of_a_prompt_without_passages_is_present():
    trace = build([Candidate("a", SHIP, 0.9)], QN, Config(budget=2000))
    sent = reconstruct(trace, "Carrier for northern warehouse returns?")
    assert sent.passages == () and sent.question_present is True


def test_a_reworded_question_right_after_a_part_sent_is_read_after_that_part():
    trace = build([Candidate("l", LONG, 0.9)], QN, Config(budget=2000))
    sent = reconstruct(trace, f"[1] {FIRST}\ncarrier for northern warehouse returns?")
    assert [(p.id, p.share) for p in sent.passages] == [("l", 0.428)] and sent.question_present is True
