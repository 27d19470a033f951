"""The final prompt as exact text, and its blocks cut into tokens."""

from __future__ import annotations

import streamlit as st

import ctxcore
from ctxcore import Trace


@st.cache_data(show_spinner=False, max_entries=8)  # a prompt near the 10M-token limit has that many pieces
def _pieces(encoding: str, text: str) -> list[str]:
    return ctxcore.get_tokenizer(encoding).pieces(text)


def _block_name(trace: Trace, i: int) -> str:
    b = trace.blocks[i]
    extra = " · ".join(x for x in (b.label, b.id) if x)
    return f"{i + 1} · {b.kind}" + (f" · {extra}" if extra else "") + f" ({b.tokens} tokens)"


def token_boundaries(trace: Trace) -> None:
    if not trace.blocks:
        return
    show = st.toggle("Show token boundaries of a block", key="dbg.show_pieces")
    if not show:
        return
    idx = st.selectbox("Block", list(range(len(trace.blocks))), key="dbg.piece_block",
                       format_func=lambda i: _block_name(trace, i))
    b = trace.blocks[idx]
    pieces = _pieces(trace.tokenizer.encoding, trace.prompt.text)[b.start_token:b.end_token]
    st.caption(f"{len(pieces)} tokens; each boundary is marked with │ and line breaks with ↵")
    st.code("│".join(p.replace("\n", "↵\n") for p in pieces), language=None, wrap_lines=True)


def prompt_view(trace: Trace) -> None:
    st.code(trace.prompt.text, language=None, wrap_lines=True, height=420)


def block_pieces(trace: Trace, block_index: int) -> list[str]:
    """The tokens of one block of the prompt, as text pieces."""
    b = trace.blocks[block_index]
    return _pieces(trace.tokenizer.encoding, trace.prompt.text)[b.start_token:b.end_token]


def block_text(trace: Trace, block_index: int) -> str:
    """The exact prompt text of one block (from its token range)."""
    return "".join(block_pieces(trace, block_index))
