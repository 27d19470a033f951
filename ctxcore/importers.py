"""Logged traces from other tools, read as candidates (filled in by the importer work)."""

from __future__ import annotations


def detect(data, source):
    return None


def detect_lines(items, source):
    return None
