"""The diagnosis held through its public functions (``diagnose``, ``findings``) by hand-valued tables and relations
(issue #29). diagnosis.py is being reworked (new causes): these tests read only the finding kinds, roles, ids and
fixes a user sees. Each test names the bug it was checked against (planted by hand in a scratch copy)."""

import pytest

from ctxcore import Candidate, Config, build
from ctxcore.analysis.diagnosis import diagnose

Q = "How long does a refund take?"
TEXTS = {"r": "Refunds take five business days to reach your original payment method after approval.",
         "s": "Standard shipping is free for orders over fifty dollars and arrives within a week.",
         "w": "Electronics carry a twelve month warranty that covers manufacturing defects only.",
         "t": "You can track your parcel with the number printed in your confirmation email."}
SCORES = {"r": 0.9, "s": 0.5, "w": 0.4, "t": 0.3}


def _trace():
    return build([Candidate(k, v, SCORES[k]) for k, v in TEXTS.items()], Q, Config(budget=2000))


def _prompt(order):
    return "\n\n".join(f"[{i}] {TEXTS[k]}" for i, k in enumerate(order, 1)) + f"\n\nQuestion: {Q}"


@pytest.mark.parametrize("order, buried", [
    (["r", "s", "w", "t"], False),   # 1 of 4: an edge
    (["s", "r", "w", "t"], True),    # 2 of 4
    (["s", "w", "r", "t"], True),    # 3 of 4
    (["s", "w", "t", "r"], False),   # 4 of 4: an edge
])
def test_buried_only_in_the_middle_slots(order, buried):
    """The strongest passage (r, score 0.9) at 1 or 4 of 4 is not buried; at 2 or 3 it is. Plants: ``edge <=
    best.position`` (1 of 4 buried), ``best.position < n - edge`` (3 of 4 not buried), ``edge = ceil(n / 4) + 1``."""
    d = diagnose(_trace(), logged_prompt=_prompt(order))
    kinds = [(f.kind, f.role, f.ids) for f in d.findings]
    if buried:
        assert kinds == [("buried_in_middle", "cause", ("r",))]
        root = d.findings[0]
        assert root.title == (f"the strongest passage, r, was sent at position {order.index('r') + 1} of 4, in the "
                              "weak middle")
        assert (root.fix, root.fix_verified, root.after) == (
            {"order": "sandwich"}, True, {"id": "r", "fate": "kept", "label": "S1", "position": 1, "of": 4})
    else:
        assert kinds == []
