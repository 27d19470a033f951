"""The mutation run's settings (issue #29): derandomised property tests, and the scope it must cover."""

import os
import tomllib

from hypothesis import settings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
with open(os.path.join(ROOT, "pyproject.toml"), "rb") as fh:
    MUTMUT = tomllib.load(fh)["tool"]["mutmut"]


def test_the_mutation_profile_is_derandomised_without_a_database_or_deadline():
    """A kill resting on a lucky Hypothesis example would flip between runs. Fails without the profile."""
    profile = settings.get_profile("mutation")
    assert (profile.derandomize, profile.database, profile.deadline) == (True, None, None)


def test_mutmut_selects_the_profile_and_ci_keeps_the_default(pytestconfig):
    assert "--hypothesis-profile=mutation" in MUTMUT["pytest_add_cli_args"]
    # this run's profile is not the mutation one (under CI=true Hypothesis derandomises by itself: its own "ci")
    assert pytestconfig.getoption("hypothesis_profile") != "mutation"


def test_the_scope_takes_in_the_readers_replay_inspect_and_the_case_store():
    assert MUTMUT["source_paths"] == ["ctxcore/", "ctxui/"] and "ctxui/" not in MUTMUT["also_copy"]
    for path in ("ctxcore/analysis/sent.py", "ctxcore/io/formats/*.py", "ctxcore/replay/*.py", "ctxcore/io/inspect.py",
                 "ctxui/casestore.py", "ctxcore/analysis/diagnosis.py", "ctxcore/analysis/findings.py",
                 "ctxcore/analysis/causes.py", "ctxcore/analysis/notes.py", "ctxcore/analysis/policy.py"):
        assert path in MUTMUT["only_mutate"]
    selected = MUTMUT["pytest_add_cli_args_test_selection"]
    assert all(os.path.exists(os.path.join(ROOT, t)) for t in selected)
    for name in ("sent", "formats", "replay", "inspect", "casestore", "diagnosis"):
        assert f"tests/test_guard_{name}.py" in selected
