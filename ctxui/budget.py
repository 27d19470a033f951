"""The budget calculator's numbers from the store: the window split, and a pasted block's token count."""

from __future__ import annotations

import ctxcore
from ctxcore import Config, InputError

from .settings import config_from_controls
from .state import store


def store_budget():
    """The window split for the controls' window, output, fixed blocks, safety and history share (auto: no
    history is known here, so none is held and the documents get everything the fixed blocks leave).

    Raises InputError (naming the setting) when the controls make no valid Config."""
    s = store()
    cfg = Config.from_dict(config_from_controls(s), source="settings")
    return ctxcore.window_budget(s["window"], s["max_output"], s["fixed"], s["safety"], cfg.history_share)


def count_block_tokens(text: str) -> tuple[str, int, bool]:
    """(encoding, tokens, exact) of ``text`` with the controls' tokenizer (cl100k_base while they are invalid)."""
    try:
        encoding = Config.from_dict(config_from_controls(store())).encoding
    except InputError:
        encoding = "cl100k_base"
    tok = ctxcore.get_tokenizer(encoding)
    return encoding, tok.count(text), tok.exact
