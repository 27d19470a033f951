"""Reached the sent prompt: whole, partly or absent, with the share, the offset and the order, each value
worked out by hand from the prompt written here (offsets are lengths of the normalised text before it)."""

from ctxcore import Candidate, Config, build
from ctxcore.analysis.reach import Difference, Reach, logged_vs_replay, reached

OPENING = "refund policy: items can be returned within thirty days of delivery."
SHIPPING = "shipping is free on orders over fifty euros."
# 40 characters of a 69-character chunk, then the prompt moves on: a tail cut off
GIFT = "gift cards never expire and may be spent at any shop we run worldwide"
CUT = GIFT[:40]
RECEIPT = "keep the receipt ok."  # exactly 20 characters: the shortest sentence that counts
RETURNS = "returns need the original receipt."
PROMPT = (
    "Refund policy:  Items can be returned\nwithin thirty days of delivery.\n"
    f"[S2] Shipping is free on orders over fifty euros. {RECEIPT}\n"
    f"[S3] Shipping is free on orders over fifty euros.\n[S4] {CUT}.\n[S5] {RECEIPT} {RETURNS}\n"
)
HAY = " ".join(PROMPT.casefold().split())


def at(piece: str, nth: int = 1) -> int:
    """Offset of the nth occurrence of piece in the normalised prompt, found by hand-written slicing."""
    pos = -1
    for _ in range(nth):
        pos = HAY.index(piece, pos + 1)
    return pos


def test_the_hand_offsets_are_what_the_prompt_says():
    assert HAY.startswith(OPENING)
    assert at(SHIPPING) == len(OPENING) + len(" [s2] ")
    assert len(GIFT) == 69 and len(CUT) == 40 and len(RECEIPT) == 20


def test_whole_partly_and_absent_with_share_offset_and_order():
    cands = [
        Candidate("opening", "Refund policy: items can be returned within thirty days of delivery."),
        Candidate("blank", "  \n "),
        Candidate("shipping", "Shipping is free on orders over fifty euros."),  # twice in the prompt: the first
        Candidate("gift", GIFT.capitalize()),
        Candidate("returns", f"Our shop opens at nine. {RECEIPT.capitalize()} {RETURNS.capitalize()}"),
        Candidate("missing", "Nothing in this chunk is anywhere in that prompt, not one sentence."),
    ]
    got = {r.id: r for r in reached(cands, PROMPT)}
    # 40 characters is the shortest prefix that counts; the two sentences (20 + 34 of 79) beat the prefix
    assert got == {
        "opening": Reach("opening", "whole", 1.0, 0, 1),
        "blank": Reach("blank", "absent", 0.0, None, None),
        "shipping": Reach("shipping", "whole", 1.0, at(SHIPPING), 2),
        "gift": Reach("gift", "partly", 0.58, at(CUT), 4),  # 40 / 69 = 0.5797
        "returns": Reach("returns", "partly", 0.684, at(RECEIPT), 3),  # 54 / 79 = 0.6835, first occurrence
        "missing": Reach("missing", "absent", 0.0, None, None),
    }
    assert at(RECEIPT) < at(CUT) < at(RECEIPT, 2)  # so the order above is by where each starts


def test_a_prefix_one_character_short_of_forty_is_not_there():
    short = Candidate("gift", GIFT)
    assert reached([short], CUT[:39] + "\n")[0] == Reach("gift", "absent", 0.0, None, None)
    assert reached([short], CUT, min_chars=41)[0] == Reach("gift", "absent", 0.0, None, None)


def test_a_sentence_under_twenty_characters_does_not_count():
    c = Candidate("c", "The shop opens at nine every day. Keep the receipt.")  # 'keep the receipt.' is 17
    assert reached([c], "keep the receipt.")[0] == Reach("c", "absent", 0.0, None, None)


def test_logged_versus_replay_names_all_four_changes():
    cands = [Candidate(x, f"Passage {x} says something different about refunds, number {n}.", score=s)
             for x, n, s in (("a", 1, 0.9), ("b", 2, 0.8), ("c", 3, 0.7), ("d", 4, 0.6))]
    # keeps a and b, by score; c and d are past the passage limit
    replay = build(cands, "refunds?", Config(max_passages=2))
    logged = f"[1] {cands[0].text}\n[2] {cands[2].text}"  # the logged system sent a and c
    assert logged_vs_replay(replay, logged) == [
        Difference("a", "whole", 1, "kept", replay.decision("a").position, "both"),
        Difference("b", "absent", None, "kept", replay.decision("b").position, "only replay"),
        Difference("c", "whole", 2, "over_limit", None, "only logged"),
        Difference("d", "absent", None, "over_limit", None, "neither"),
    ]
    assert {replay.decision("a").position, replay.decision("b").position} == {1, 2}


def test_a_one_character_chunk_missing_from_the_prompt_is_absent():
    assert reached([Candidate("q", "Q")], "nothing with that letter")[0] == Reach("q", "absent", 0.0, None, None)
    assert reached([Candidate("e", "E")], "one letter")[0] == Reach("e", "whole", 1.0, 2, 1)


def test_a_cut_prefix_is_found_where_it_first_starts_even_at_the_very_start():
    cut = GIFT[:51]  # '... at any sho': 51 of the 69 characters, found twice
    assert reached([Candidate("gift", GIFT)], f"{cut}. Again: {cut}!")[0] == Reach("gift", "partly", 0.739, 0, 1)
