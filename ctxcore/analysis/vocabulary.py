"""The plain names of the diagnosis kinds: one vocabulary of causes for the Diagnose page, the Save form's
root-cause tag and the Saved cases list.

``PLAIN`` names each kind of :data:`ctxcore.analysis.diagnosis.KINDS` in a few words a support engineer would
say; ``TAGS`` are the kinds a case can be tagged with, in the diagnosis' order of preference, plus ``other``.
``OLD_TAGS`` maps the tags cases were saved with before this vocabulary to the kind that now says the same,
so an old case still opens and shows its cause in today's words. (Kept apart from ``diagnosis`` so that the
UI and the case store read the names without loading the analysis, and ``diagnosis`` may import them.)
"""

from __future__ import annotations

PLAIN = {
    "instruction_followed": "instruction in a passage followed",
    "unsupported_answer": "answer not supported",
    "nothing_relevant": "nothing relevant retrieved",
    "outdated_version_sent": "outdated version sent",
    "conflicting_sources": "sources disagree",
    "reranker_cut": "cut by the reranker",
    "history_crowding": "history filled the window",
    "prompt_over_window": "prompt over the window",
    "prompt_cut_off": "prompt cut off",
    "duplicates_crowd_out": "duplicates crowd out",
    "paraphrased_duplicates": "rewordings crowd out",
    "threshold_cut": "just under the score threshold",
    "per_document_cap": "one chunk per document",
    "buried_in_middle": "buried in the middle",
    "fragmented_document": "document sent in pieces",
    "not_sent": "strongest passage not sent",
    "instruction_in_content": "instruction-like text in a passage",
    "other": "other",
}

TAGS = tuple(PLAIN)

OLD_TAGS = {
    "dropped_for_budget": "not_sent",
    "duplicates": "duplicates_crowd_out",
    "stale_version": "outdated_version_sent",
    "not_permitted": "not_sent",
    "below_threshold": "not_sent",
    "not_retrieved": "nothing_relevant",
    "truncated_prompt": "prompt_cut_off",
    "answer_error": "unsupported_answer",
}


def tag_kind(tag: str) -> str:
    """The kind a stored tag stands for today ("" stays "", an unknown word stays itself)."""
    return OLD_TAGS.get(tag, tag)


def plain(tag: str) -> str:
    """A tag or kind in the page's words; an old tag in the words of the kind it maps to."""
    kind = tag_kind(tag)
    return PLAIN.get(kind, kind.replace("_", " "))


def tags_for(kind: str) -> tuple:
    """Every stored tag that means ``kind``: the kind itself and the old tags mapped to it."""
    return (kind,) + tuple(sorted(old for old, new in OLD_TAGS.items() if new == kind))
