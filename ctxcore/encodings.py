"""The encodings ctxcore counts with, and which model uses which.

A table, not a stage: the settings check a model name against it, the tokens stage loads the
vocabularies it names, and the importers map a logged model to its encoding.
"""

from __future__ import annotations

VOCABULARIES = {
    # encoding -> (the URL tiktoken caches under, sha256 tiktoken expects)
    "cl100k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
    "o200k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
}

ENCODINGS = tuple(VOCABULARIES)

_MODEL_PREFIXES = (
    # longest prefix wins; checked in this order
    ("gpt-4o", "o200k_base"),
    ("gpt-4.1", "o200k_base"),
    ("gpt-4.5", "o200k_base"),
    ("gpt-5", "o200k_base"),
    ("chatgpt-4o", "o200k_base"),
    ("o1", "o200k_base"),
    ("o3", "o200k_base"),
    ("o4", "o200k_base"),
    ("gpt-4", "cl100k_base"),
    ("gpt-3.5", "cl100k_base"),
    ("text-embedding-3", "cl100k_base"),
    ("text-embedding-ada-002", "cl100k_base"),
)


def encoding_for_model(model: str) -> str:
    """Map a model name to its tiktoken encoding.

    >>> encoding_for_model("gpt-4o-mini")
    'o200k_base'
    >>> encoding_for_model("gpt-3.5-turbo")
    'cl100k_base'
    """
    name = model.strip().lower()
    if "/" in name:  # provider-prefixed names such as "openai/gpt-4o"
        name = name.rsplit("/", 1)[1]
    for prefix, encoding in _MODEL_PREFIXES:
        if name == prefix or name.startswith(prefix + "-") or name.startswith(prefix + "."):
            return encoding
        if prefix in ("o1", "o3", "o4") and name.startswith(prefix):
            return encoding
    raise KeyError(model)
