"""Langfuse: a trace from the public API (``GET /api/public/traces/{id}``), with the ``langfuse`` SDK's API client.

Source: ``langfuse:https://cloud.langfuse.com#TRACE_ID``, or the trace's URL as the Langfuse UI shows it:
``https://cloud.langfuse.com/project/PROJECT/traces/TRACE_ID`` (or ``.../traces?peek=TRACE_ID``). The export
is the API's trace with its observations (Langfuse trace JSON). Keys: ``LANGFUSE_PUBLIC_KEY`` and
``LANGFUSE_SECRET_KEY`` (basic auth: the key pair is the user name and password).
"""

from __future__ import annotations

import os
import re
from typing import Optional

from ...errors import InputError
from ..limits import FETCH_TIMEOUT
from ..sources import Reader, Source, register
from .common import Credentials, base_url, client, credential, refused, unreachable

KEYS = ("LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY")
_URL = re.compile(r"^(https?://[^\s?#]+?)/project/[^/\s?#]+/traces"
                  r"(?:/([^/\s?#]+)/?(?:[?#]\S*)?|\?\S*?\bpeek=([^&\s#]+)\S*)$")


def recognise(text: str) -> Optional[Source]:
    """A trace's URL as copied from the Langfuse UI.

    >>> recognise("https://cloud.langfuse.com/project/cm1x/traces/4f2a9c?timestamp=2025-05-14T09%3A21%3A00.000Z")
    Source(scheme='langfuse', location='https://cloud.langfuse.com', trace='4f2a9c')
    >>> recognise("http://127.0.0.1:3000/project/p1/traces?peek=t-77&observation=o1")
    Source(scheme='langfuse', location='http://127.0.0.1:3000', trace='t-77')
    """
    m = _URL.match(text.strip())
    return Source("langfuse", m[1], m[2] or m[3]) if m else None


def fetch(source: Source, credentials: Credentials = None) -> tuple[str, bytes]:
    """The trace with its observations, as the public API returns it (camelCase)."""
    url = base_url(source)
    public, secret = (credential(k, credentials, os.environ) for k in KEYS)
    if not (public and secret):
        raise InputError("Langfuse needs an API key pair: set LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY "
                         "(the project's settings page shows them)", source=str(source))
    httpx = client("httpx", "langfuse", source)
    api = client("langfuse.api", "langfuse", source)
    errors = client("langfuse.api.core.api_error", "langfuse", source)
    answers: list = []  # the server's own bytes: the export is what it sent, not the client's re-encoding of it
    http = httpx.Client(timeout=FETCH_TIMEOUT, event_hooks={"response": [lambda r: answers.append(r.read())]})
    try:
        api.LangfuseAPI(base_url=url, username=public, password=secret, x_langfuse_public_key=public,
                        httpx_client=http).trace.get(source.trace)
    except errors.ApiError as err:
        raise refused(err.status_code, source, " and ".join(KEYS)) from None
    except httpx.TransportError as err:
        raise unreachable(source, err) from None
    except ValueError as err:  # pydantic's ValidationError: a field this client version expects is missing;
        if not answers:        # the format reader, not the client, decides whether the trace can be read
            raise InputError(f"the server's answer could not be read ({_first(err)})", source=str(source)) from None
    finally:
        http.close()
    return f"langfuse-{source.trace}.json", answers[-1]


def _first(err: Exception) -> str:
    """The first line of a client's error, which is all a user needs to report it."""
    return (str(err).splitlines() or [type(err).__name__])[0][:160]


register(Reader("langfuse", fetch, recognise, help="langfuse:https://cloud.langfuse.com#TRACE_ID, or a trace's URL"))
