"""bench/planted.py (break, run, restore) stays runnable: every planted bug's line is still in its module
exactly once, and planting one really makes its tests fail while the restored tree passes."""

import os
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "bench"))
import planted  # noqa: E402


@pytest.mark.parametrize("plant", planted.PLANTS, ids=lambda p: p.path + ":" + p.line.strip()[:30])
def test_each_planted_line_stands_once_in_its_module_and_its_tests_exist(plant):
    with open(os.path.join(ROOT, plant.path), encoding="utf-8") as f:
        assert f.read().count(plant.line) == 1
    assert plant.wrong != plant.line
    assert all(os.path.isfile(os.path.join(ROOT, t)) for t in plant.tests)


def test_ten_behaviours_are_planted():
    assert len(planted.PLANTS) == 10


def test_the_csv_row_bug_planted_is_caught_and_the_restored_tree_passes(capsys):
    assert planted.main(["--only", "3"]) == 0
    out = capsys.readouterr().out
    assert "caught by test_csv_error_names_the_line_the_bad_record_starts_on" in out
    assert "1 of 1 planted bugs caught" in out
