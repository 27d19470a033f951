"""The two ways a build can refuse: bad input, or settings that cannot be met."""

from __future__ import annotations


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
        return f"{', '.join(where)}: {self.message}"


class BuildError(ValueError):
    """Settings that cannot be honoured, e.g. mandatory blocks larger than the budget."""
