"""The two ways a build can refuse: bad input, or settings that cannot be met."""

from __future__ import annotations

import re


class InputError(ValueError):
    """Input that cannot be read; says where (file, line or row, field) and what."""

    def __init__(self, message: str, *, source: str | None = None, line: int | None = None,
                 row: int | None = None, field: str | None = None):
        self.message = message
        self.source = source
        self.line = line
        self.row = row
        self.field = field
        super().__init__(str(self))

    def __str__(self) -> str:
        where = [self.source or "input"]
        if self.line is not None:
            where.append(f"line {self.line}")
        if self.row is not None:
            where.append(f"row {self.row}")
        if self.field is not None:
            where.append(f"field '{self.field}'")
        return _one_line(f"{', '.join(where)}: {self.message}")


_CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029\x85]")


def _one_line(text: str) -> str:
    """Control characters (newlines included) from input shown escaped, so a message stays one line."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


class BuildError(ValueError):
    """Settings that cannot be honoured, e.g. mandatory blocks larger than the budget."""
