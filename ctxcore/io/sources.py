"""Traces that live somewhere other than a file: a tracing server, or the store the live endpoint fills.

A **source** is written ``SCHEME:LOCATION#TRACE`` wherever a file path is accepted (``build``, ``explain``,
``inspect``, ``replay``, ``fetch``):

* ``phoenix:http://127.0.0.1:6006#TRACE_ID``, ``mlflow:http://127.0.0.1:5000#TRACE_ID``,
  ``langfuse:https://cloud.langfuse.com#TRACE_ID``, ``langsmith:https://api.smith.langchain.com#RUN_ID``:
  a trace fetched from a running server with the tool's own client;
* ``store:PATH#TRACE_ID`` or ``store:PATH#latest`` (``store:#latest`` names the default store): a run the
  live OTLP endpoint stored;
* and the trace's URL as the user copies it from the tool's UI, which a registered reader recognises.

A reader turns a source into the bytes of an export the format readers already know (so a fetched trace
and a downloaded file import the same way) and a display name. Readers register themselves here; this
module knows none of them. Credentials come from environment variables, never from the source text.

>>> parse("phoenix:http://127.0.0.1:6006#abc123")
Source(scheme='phoenix', location='http://127.0.0.1:6006', trace='abc123')
>>> parse("store:#latest")
Source(scheme='store', location='', trace='latest')
>>> parse("traces/run.json") is None, parse("C:/logs/run.json") is None
(True, True)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from ..errors import InputError


@dataclass(frozen=True)
class Source:
    scheme: str      # phoenix, mlflow, langfuse, langsmith, store
    location: str    # the server's base URL, or the store's path ('' for the default)
    trace: str       # a trace or run id, or 'latest'

    def __str__(self) -> str:
        return f"{self.scheme}:{self.location}#{self.trace}"


@dataclass(frozen=True)
class Reader:
    scheme: str
    fetch: Callable[[Source], tuple[str, bytes]]              # -> (display name, an export's bytes)
    recognise: Callable[[str], Optional[Source]] = lambda text: None   # a URL copied from the tool's UI
    help: str = ""


READERS: dict[str, Reader] = {}
SCHEMES = ("phoenix", "mlflow", "langfuse", "langsmith", "store")


def register(reader: Reader) -> None:
    READERS[reader.scheme] = reader


def parse(text: str) -> Optional[Source]:
    """The source ``text`` names, or None when it is a plain path (which the file readers take)."""
    text = str(text).strip()
    scheme, colon, rest = text.partition(":")
    if colon and scheme in SCHEMES and "#" in rest:
        location, _, trace = rest.rpartition("#")
        if not trace:
            raise InputError("no trace id after '#': give one, or 'latest'", source=text)
        return Source(scheme, location, trace)
    for reader in READERS.values():
        found = reader.recognise(text)
        if found is not None:
            return found
    return None


def fetch(source: Source) -> tuple[str, bytes]:
    """The export ``source`` names, as (display name, bytes); one line when it cannot be had."""
    reader = READERS.get(source.scheme)
    if reader is None:
        raise InputError(f"no reader for {source.scheme!r} sources in this installation", source=str(source))
    return reader.fetch(source)
