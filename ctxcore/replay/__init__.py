"""Replay a whole trace log under new settings: a map over its runs, on a local pool or Dask.

read (the log, lazily, one run at a time), run (each run built and compared with its baseline),
engines (where the runs are built) and report (the summary, the rows, report.md). Replay stands on
analysis, io and the pipeline; only the CLI and the UI stand on it.
"""

from .run import BASELINES, compare, replay, replay_batch, replay_one

__all__ = ["BASELINES", "compare", "replay", "replay_batch", "replay_one"]
