"""Stage 1: how many tokens the evidence may use.

The answer is reserved first, a safety margin comes off what is left, then the
mandatory blocks; the rest is split between history and documents. The docs
figure is a ceiling, not a target.
"""

from __future__ import annotations

from .assemble import fixed_tokens
from .errors import BuildError
from .records import Budget


def window_budget(window: int, max_output: int, fixed: int, safety: float = 0.05,
                  history_share: float = 0.40, docs: int | None = None) -> Budget:
    """Split a context window.

    >>> b = window_budget(8192, 1024, fixed=65)
    >>> (b.safe_input, b.history, b.docs)
    (6809, 2697, 4047)
    >>> window_budget(8192, 1024, fixed=65, docs=500).docs
    500
    """
    safe_input = int((window - max_output) * (1 - safety))
    remaining = safe_input - fixed
    history = max(0, int(remaining * history_share))
    split_docs = remaining - history
    return Budget(window=window, max_output=max_output, safety=safety, fixed=fixed,
                  safe_input=safe_input, history=history,
                  docs=split_docs if docs is None else docs, docs_direct=docs is not None)


def run(state):
    c = state.config
    fixed = fixed_tokens(state)
    budget = window_budget(c.window, c.max_output, fixed, c.safety, c.history_share, c.budget)
    if fixed > budget.safe_input:
        raise BuildError(
            f"the mandatory blocks (system, instructions, schema, tools, rule, question) need {fixed} "
            f"tokens but the input budget is {budget.safe_input} (window {c.window} - max_output "
            f"{c.max_output}, less {c.safety:.0%} safety); raise the window or shorten those blocks")
    return state.replace(budget=budget)
