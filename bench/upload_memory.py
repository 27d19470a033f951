"""Server memory across distinct uploads: each "session" is a fresh AppTest that uploads a new candidates
file (about --mb megabytes); the process RSS (VmRSS) is printed after each, with what the caches by text are
charged. tests/test_memory.py holds the bound (ten 5 MB uploads); this runs it at other sizes.

    python bench/upload_memory.py [--uploads 10] [--mb 5]
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from test_memory import candidates_file, rss_mb, session  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--uploads", type=int, default=10)
    ap.add_argument("--mb", type=float, default=5.0)
    args = ap.parse_args()
    from ctxcore import memo
    gc.collect()
    print(f"baseline {rss_mb():.0f} MB", flush=True)
    for i in range(1, args.uploads + 1):
        data = candidates_file(i, args.mb)
        t0 = time.perf_counter()
        n = session(data, f"upload{i}.json")
        del data
        gc.collect()
        print(f"after upload {i} ({n:,} candidates): {rss_mb():.0f} MB  ({time.perf_counter() - t0:.1f} s; "
              f"caches by text charged {memo.held_bytes() / 1e6:.0f} MB)", flush=True)


if __name__ == "__main__":
    main()
