"""Traces received live: the span store (SQLite) and the OTLP request decoding the endpoint uses.

store needs only the standard library; otlp needs ``opentelemetry-proto`` (requirements-live.txt) and says so
when it is missing. Importing this package registers the ``store:`` source reader.
"""

from . import store  # noqa: F401  (registers the store: reader)
