import pytest

from ctxcore import BuildError, Candidate, Config, Inputs, build, window_budget
from ctxcore.stages.budget import describe


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


# window_budget by hand. 8192 window, 1024 output, 5% safety: int(7168 * 0.95) = int(6809.6) = 6809 safe input;
# less 65 fixed leaves 6744; a 0.4 share of that is int(2697.6) = 2697 (the seed's worked example).
@pytest.mark.parametrize("kwargs, want", [
    # fixed 0.4 share, used or not: docs 6744 - 2697
    (dict(history_share=0.4), dict(history=2697, docs=4047, history_cap=2697, history_auto=False)),
    (dict(history_share=0.4, history_used=300), dict(history=2697, docs=4047, history_used=300)),
    # auto: the history holds what its turns use, at most the 0.4 cap
    (dict(), dict(history=0, docs=6744, history_cap=2697, history_auto=True)),
    (dict(history_used=500), dict(history=500, docs=6244)),
    (dict(history_used=5000), dict(history=2697, docs=4047)),
    # 10% safety: int(7168 * 0.9) = int(6451.2) = 6451; 6451 - 65 = 6386; cap int(2554.4) = 2554
    (dict(safety=0.1, history_used=3000), dict(safe_input=6451, history=2554, docs=3832)),
    (dict(safety=0.0), dict(safe_input=7168, docs=7103)),
    # a share of 0 gives the documents everything; a direct docs figure replaces the split only
    (dict(history_share=0.0), dict(history=0, docs=6744, history_cap=0)),
    (dict(docs=500, history_used=100), dict(safe_input=6809, history=100, docs=500, docs_direct=True)),
])
def test_window_budget_splits_as_worked_by_hand(kwargs, want):
    b = window_budget(8192, 1024, fixed=65, **kwargs)
    got = {k: getattr(b, k) for k in want}
    assert got == want
    assert (b.window, b.max_output, b.fixed) == (8192, 1024, 65)
    assert b.safety == kwargs.get("safety", 0.05)
    assert b.docs_direct is ("docs" in kwargs)


def test_fixed_blocks_past_what_is_left_leave_no_history():
    b = window_budget(1000, 200, fixed=900)  # int(800 * 0.95) = 760 safe input, 760 - 900 = -140 left
    assert (b.safe_input, b.history_cap, b.history, b.docs) == (760, 0, 0, -140)


@pytest.mark.parametrize("kwargs, line", [
    (dict(history_used=500),
     "safe input 6809, fixed 65, history 500 (auto: the history uses 500 of up to 2697), docs 6244"),
    (dict(history_share=0.4),
     "safe input 6809, fixed 65, history 2697 (a fixed share), docs 4047"),
    (dict(history_share=0.4, history_used=300),
     "safe input 6809, fixed 65, history 2697 (a fixed share; the history uses 300), docs 4047"),
    (dict(docs=500),
     "safe input 6809, fixed 65, history 0 (auto: the history uses 0 of up to 2697), docs 500 (given directly)"),
])
def test_the_budget_line_the_cli_prints(kwargs, line):
    assert describe(window_budget(8192, 1024, fixed=65, **kwargs)) == line


def test_the_budget_error_names_the_numbers_it_compared():
    # int((200 - 100) * 0.95) = 95 tokens of input; the system block alone needs more
    with pytest.raises(BuildError) as err:
        build([Candidate("a", "x", 1.0)], "q", Config(window=200, max_output=100, safety=0.05),
              Inputs(system="policy " * 200))
    assert "but the input budget is 95 (window 200 - max_output 100, less 5% safety)" in str(err.value)
    assert "raise the window or shorten those blocks" in str(err.value)


def test_the_history_is_held_at_what_its_kept_turns_cost(cl100k):
    turns = ({"role": "user", "content": "Where is my refund for order 1234?"},
             {"role": "assistant", "content": "It was issued on Monday."})
    none = build([], "q", Config())
    some = build([], "q", Config(), Inputs(history=turns))
    assert none.budget.history == 0
    # the history block costs what assembly writes for these turns; auto holds exactly that, and the
    # documents get the rest of what the mandatory blocks leave
    assert some.budget.history > 0 and some.budget.history_used == some.budget.history
    assert some.budget.docs == some.budget.safe_input - some.budget.fixed - some.budget.history
    assert none.budget.docs - some.budget.docs == some.budget.history
