"""Stage 1: how many tokens the evidence may use.

The answer is reserved first, a safety margin comes off what is left, then the
mandatory blocks; the rest is split between history and documents. The docs
figure is a ceiling, not a target.

The split is a fixed share (``history_share`` a number: that fraction of what is left
is held for history, used or not) or ``auto`` (the default): the history gets the
tokens its kept turns actually use, at most 0.4 of what is left, and the documents
get the rest. Which turns are kept is decided the same way in both cases (newest
first, whole turns, under the share: ``assemble.history_fit``); auto changes only
what is *held* for them, so assembly keeps exactly the turns it would keep with
``history_share=0.4``.
"""

from __future__ import annotations

from typing import Optional, Union

from .assemble import fixed_tokens, history_tokens
from ..errors import BuildError
from ..records import Budget
from ..settings import AUTO_HISTORY_SHARE


def window_budget(window: int, max_output: int, fixed: int, safety: float = 0.05,
                  history_share: Union[float, str] = "auto", docs: Optional[int] = None,
                  history_used: Optional[int] = None) -> Budget:
    """Split a context window.

    ``history_used`` is what the history's kept turns use (tokens; 0 or None: no history). With
    ``history_share="auto"`` the history gets that, at most 0.4 of what is left; with a number, it gets
    that share of what is left whether it uses it or not.

    >>> b = window_budget(8192, 1024, fixed=65, history_share=0.40)   # the seed's numbers
    >>> (b.safe_input, b.history, b.docs)
    (6809, 2697, 4047)
    >>> b = window_budget(8192, 1024, fixed=65)                        # auto, no history
    >>> (b.safe_input, b.history, b.docs, b.history_cap)
    (6809, 0, 6744, 2697)
    >>> window_budget(8192, 1024, fixed=65, history_used=500).docs     # auto: a 500-token history
    6244
    >>> window_budget(8192, 1024, fixed=65, docs=500).docs
    500
    """
    safe_input = int((window - max_output) * (1 - safety))
    remaining = safe_input - fixed
    auto = history_share == "auto"
    share = AUTO_HISTORY_SHARE if auto else history_share
    cap = max(0, int(remaining * share))
    history = min(cap, history_used or 0) if auto else cap
    split_docs = remaining - history
    return Budget(window=window, max_output=max_output, safety=safety, fixed=fixed,
                  safe_input=safe_input, history=history,
                  docs=split_docs if docs is None else docs, docs_direct=docs is not None,
                  history_auto=auto, history_cap=cap, history_used=history_used)


def run(state):
    c = state.config
    fixed = fixed_tokens(state)
    cap = window_budget(c.window, c.max_output, fixed, c.safety, c.history_share).history_cap
    # what the history block will cost: the turns that fit under the share (assembly keeps the same ones)
    used = history_tokens(state, cap)[1] if state.inputs.history else 0
    budget = window_budget(c.window, c.max_output, fixed, c.safety, c.history_share, c.budget, used)
    if fixed > budget.safe_input:
        raise BuildError(
            f"the mandatory blocks (system, instructions, schema, tools, rule, question) need {fixed} "
            f"tokens but the input budget is {budget.safe_input} (window {c.window} - max_output "
            f"{c.max_output}, less {c.safety:.0%} safety); raise the window or shorten those blocks")
    return state.replace(budget=budget)


def describe(b: Budget) -> str:
    """The budget in one line, as the CLI prints it and the app shows it.

    >>> describe(window_budget(3900, 256, fixed=96))
    'safe input 3461, fixed 96, history 0 (auto: the history uses 0 of up to 1346), docs 3365'
    >>> describe(window_budget(8192, 1024, fixed=65, history_share=0.4))
    'safe input 6809, fixed 65, history 2697 (a fixed share), docs 4047'
    """
    if b.history_auto:
        hist = f"history {b.history} (auto: the history uses {b.history} of up to {b.history_cap})"
    else:
        used = "" if b.history_used is None else f"; the history uses {b.history_used}"
        hist = f"history {b.history} (a fixed share{used})"
    return (f"safe input {b.safe_input}, fixed {b.fixed}, {hist}, docs {b.docs}"
            + (" (given directly)" if b.docs_direct else ""))
