"""What ctxui.pagesmode relies on in Streamlit's internals: these fail when an upgrade changes them.

The patch (``_leave_pages_directory_mode``) assumes: the mode is the class attribute
``PagesManager.uses_pages_directory``, decided once per process from the ``pages/`` folder and kept once set;
the script runner reads that class attribute to run a page file alone; only ``st.navigation`` switches it off;
and AppTest is recognised by ``config.get_option("global.appTest")``. (The browser test of deep links on a fresh
server checks the whole effect.)
"""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
import streamlit as st
from streamlit import config
from streamlit.commands import navigation
from streamlit.runtime.pages_manager import PagesManager
from streamlit.runtime.scriptrunner import script_runner
from streamlit.testing.v1.util import patch_config_options

from ctxui import pagesmode

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def mode():
    """Restore the process-wide flag after each test."""
    saved = PagesManager.uses_pages_directory
    yield
    PagesManager.uses_pages_directory = saved


def test_the_mode_is_a_class_attribute_decided_once_from_the_pages_folder(mode):
    assert "uses_pages_directory" in vars(PagesManager)
    PagesManager.uses_pages_directory = None
    PagesManager(str(ROOT / "app.py"))
    assert PagesManager.uses_pages_directory is True  # this app has a pages/ folder
    PagesManager.uses_pages_directory = False
    PagesManager(str(ROOT / "app.py"))  # a later session's manager keeps what the patch set
    assert PagesManager.uses_pages_directory is False


def test_the_runner_reads_the_class_flag_and_only_navigation_clears_it():
    runner = inspect.getsource(script_runner.ScriptRunner)
    assert "if PagesManager.uses_pages_directory:" in runner
    assert "_mpa_v1(" in runner and callable(script_runner._mpa_v1)  # the path that runs a page file alone
    assert "PagesManager.uses_pages_directory = False" in inspect.getsource(navigation.navigation)


def test_apptest_is_recognised_through_config_get_option():
    assert config.get_option("global.appTest") is False
    with patch_config_options({"global.appTest": True}):
        assert config.get_option("global.appTest") is True


class _Rerun(Exception):
    pass


def _no_rerun():
    raise _Rerun


def test_the_patch_switches_the_mode_off_and_reruns(mode, monkeypatch):
    monkeypatch.setattr(st, "rerun", _no_rerun)
    PagesManager.uses_pages_directory = True
    with pytest.raises(_Rerun):
        pagesmode._leave_pages_directory_mode()
    assert PagesManager.uses_pages_directory is False
    pagesmode._leave_pages_directory_mode()  # off already: no rerun


def test_the_patch_leaves_apptest_alone(mode, monkeypatch):
    monkeypatch.setattr(st, "rerun", _no_rerun)
    PagesManager.uses_pages_directory = True
    with patch_config_options({"global.appTest": True}):
        pagesmode._leave_pages_directory_mode()
    assert PagesManager.uses_pages_directory is True
