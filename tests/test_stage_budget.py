import pytest

from ctxcore import BuildError, Candidate, Config, Inputs, build, window_budget


def test_direct_budget_overrides_the_split_but_not_safe_input():
    b = window_budget(8192, 1024, fixed=65, history_share=0.40, docs=500)
    assert (b.safe_input, b.history, b.docs, b.docs_direct) == (6809, 2697, 500, True)


def test_fixed_is_measured_from_the_mandatory_blocks(cl100k):
    small = build([], "q", Config())
    big = build([], "q", Config(), Inputs(system="You are a careful support agent. " * 20))
    assert big.budget.fixed - small.budget.fixed == cl100k.count("You are a careful support agent. " * 20 + "\n\n")
    assert small.budget.docs == small.budget.safe_input - small.budget.fixed - small.budget.history


def test_mandatory_blocks_larger_than_the_budget_is_a_clear_error():
    with pytest.raises(BuildError, match="mandatory blocks .* need \\d+ tokens but the input budget is 95"):
        build([Candidate("a", "x", 1.0)], "q", Config(window=200, max_output=100), Inputs(system="policy " * 200))


def test_zero_history_share_gives_all_to_docs():
    t = build([], "q", Config(history_share=0.0))
    assert t.budget.history == 0 and t.budget.docs == t.budget.safe_input - t.budget.fixed
