"""What the tool readers share: the client import, one-line errors for the ways a fetch fails, and the
export's bytes. A server that cannot be reached, refuses the credentials or has no such trace is one line
naming the source, never a client's traceback."""

from __future__ import annotations

import importlib
import json
import re
from types import ModuleType
from typing import Mapping, Optional

from ...errors import InputError
from ..limits import FETCH_TIMEOUT
from ..sources import READERS, Source

Credentials = Optional[Mapping[str, str]]  # env-variable name -> value, typed into a form; never saved

_SCHEME_HOST = re.compile(r"^(https?://[^/\s?#]+)")
_ERRNO = re.compile(r"\[Errno -?\d+\] ([^'\")\]]+)")


def client(module: str, package: str, source: Source) -> ModuleType:
    """The tool's client module, imported only when a fetch runs; one line when it is not installed."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise InputError(f"fetching from {source.scheme} needs its client: pip install {package} "
                         "(or pip install -r requirements-servers.txt)", source=str(source)) from None


def credential(name: str, given: Credentials, environ: Mapping[str, str]) -> Optional[str]:
    """A credential from the form when typed there, else from the environment; None when neither has it."""
    value = (given or {}).get(name) or environ.get(name)
    return value.strip() if isinstance(value, str) and value.strip() else None


def refused(status: Optional[int], source: Source, keys: str) -> InputError:
    """The one line for an HTTP error status of the server."""
    if status in (401, 403):
        return InputError(f"the server refused the credentials (HTTP {status}): check {keys}", source=str(source))
    if status == 404:
        return InputError(f"no trace {source.trace!r} on this server (HTTP 404): check the trace id and the URL",
                          source=str(source))
    return InputError(f"the server answered HTTP {status}", source=str(source))


def unreachable(source: Source, reason: object) -> InputError:
    """The one line for a server that does not answer (refused, no such host, timed out)."""
    said = _why(str(reason))
    return InputError(f"cannot reach the server at {source.location or '(no URL)'} within {FETCH_TIMEOUT:g} s "
                      f"({said}): is it running, and is the URL right?", source=str(source))


def _why(text: str) -> str:
    """The reason a connection failed, without the client's wrapping.

    >>> _why("HTTPConnectionPool(host='h', port=1): Max retries exceeded (Caused by NewConnectionError('<x>: "
    ...      "Failed to establish a new connection: [Errno 111] Connection refused'))")
    'Connection refused'
    >>> _why("Read timed out. (read timeout=10)"), _why("")
    ('timed out', 'no answer')
    """
    errno = _ERRNO.search(text)
    if errno:
        return errno[1].strip()
    if "timed out" in text.lower() or "timeout" in text.lower():
        return "timed out"
    return re.sub(r"\s+", " ", text).strip()[:120] or "no answer"


def base_url(source: Source) -> str:
    """The server's base URL, checked: an http(s) URL without a trailing slash."""
    url = source.location.strip().rstrip("/")
    if not _SCHEME_HOST.match(url):
        raise InputError("the server's URL must start with http:// or https://", source=str(source))
    return url


def export(name: str, data: object) -> tuple[str, bytes]:
    """(display name, the export's bytes): JSON as a downloaded file would hold it, in the order received."""
    return name, json.dumps(data, ensure_ascii=False, indent=1, default=str).encode("utf-8")


def fetch_with(source: Source, credentials: Credentials = None) -> tuple[str, bytes]:
    """:func:`ctxcore.io.sources.fetch` with credentials typed into a form (the app's "Open from...")."""
    reader = READERS.get(source.scheme)
    if reader is None:
        raise InputError(f"no reader for {source.scheme!r} sources in this installation", source=str(source))
    return reader.fetch(source, credentials) if credentials else reader.fetch(source)  # the tools' fetch takes them
