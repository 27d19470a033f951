"""Shared fixtures: the worked example from the reference material, as candidates."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import tempfile

import pytest
from hypothesis import settings

from browserkit import browser, cases_dir, server  # noqa: F401 - the browser tests' fixtures, for every module
from ctxcore import Candidate, Config, InputError, Inputs, build, get_tokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Saved cases go to a throwaway folder in every test (and every app server a test starts), never the repository.
os.environ.setdefault("CTXCORE_DATA_DIR", tempfile.mkdtemp(prefix="ctxcore-test-data-"))

# The mutation run (pyproject.toml [tool.mutmut]: --hypothesis-profile=mutation) must give a mutant the same
# examples every time, or a kill resting on a lucky example flips between runs; no deadline, since mutmut's
# trampolines slow every call and a deadline miss would count as a kill. CI keeps the default profile.
settings.register_profile("mutation", derandomize=True, database=None, deadline=None)

SEED_TEXTS = {
    "policy-returns": "Refunds are processed within five business days to the original payment method.",
    "policy-returns-copy": "Refunds are processed within five business days to the original payment method.",
    "policy-returns-near": "Refunds are processed within 5 business days to the original payment method.",
    "policy-shipping": "Standard shipping is free for orders over 50 dollars and arrives in three to five days.",
    "blog-holiday": "During the holiday season our warehouse team works around the clock to pack every order "
                    "with care and joy.",
    "faq-tracking": "You can track your order with the tracking number in your confirmation email.",
    "policy-warranty": "Electronics carry a twelve month warranty covering manufacturing defects only.",
}
SEED_SCORES = {"policy-returns": 0.91, "policy-returns-copy": 0.91, "policy-returns-near": 0.91,
               "policy-shipping": 0.55, "blog-holiday": 0.50, "faq-tracking": 0.65, "policy-warranty": 0.71}


@pytest.fixture
def seed_candidates():
    return [Candidate(cid, text, SEED_SCORES[cid]) for cid, text in SEED_TEXTS.items()]


@pytest.fixture
def seed_file(tmp_path):
    path = tmp_path / "seed.json"
    path.write_text(json.dumps({
        "query": "how long do refunds take",
        "system": "You are a support agent. Answer only from the documents.",
        "candidates": [{"id": k, "text": v, "score": SEED_SCORES[k]} for k, v in SEED_TEXTS.items()],
    }))
    return path


@pytest.fixture(scope="session")
def cl100k():
    tok = get_tokenizer("cl100k_base")
    assert tok.exact, "the real cl100k_base vocabulary must be available offline"
    return tok


def text_of_tokens(n: int, word: str = "word") -> str:
    """A text of exactly n cl100k tokens (' word' is one token)."""
    return word + f" {word}" * (n - 1)


def crowded_by_history():
    """A trace whose 20 turns of history crowd out two of its three 300-token passages (history_share 0.8)."""
    history = tuple({"role": "user", "content": "We talked about the 500 EUR limit before. " * 8} for _ in range(20))
    cands = [Candidate(f"c{i}", text_of_tokens(300, w), 0.9 - i / 10) for i, w in enumerate(["a", "b", "c"])]
    return build(cands, "q", Config(window=2400, max_output=200, history_share=0.8), Inputs(history=history))


def cli(*args, env=None):
    """Run the real CLI in a subprocess; returns (exit code, stdout, stderr)."""
    proc = subprocess.run([sys.executable, "-m", "ctxcore", *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, **(env or {})}, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


def app(**params):
    """The app under AppTest, with these query parameters (a link); not yet run."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(os.path.join(ROOT, "app.py"), default_timeout=60)
    for key, value in params.items():
        at.query_params[key] = value
    return at


def rerun(at):
    """Run the app; no exception and no error line on the page."""
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not [e.value for e in at.error], [e.value for e in at.error]
    return at


def input_error(call, *args, **kwargs) -> str:
    """The one-line message of the InputError that ``call(*args, **kwargs)`` raises."""
    with pytest.raises(InputError) as err:
        call(*args, **kwargs)
    return str(err.value)


def same(got, expected):
    """Equal, and equal in repr too: ``1`` where ``1.0`` belongs is a difference."""
    assert got == expected
    assert repr(got) == repr(expected)


def cand(id, text="a", **kw):
    """A candidate whose text does not matter to the case."""
    return Candidate(id=id, text=text, **kw)


def warnings_of(trace, kind):
    """(message, ids) of the trace's warnings of one kind, in order."""
    return [(str(w), w.ids) for w in trace.warnings if w.kind == kind]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
