"""The traces the golden test holds byte for byte: the sample scenarios under their own settings, and
bench/corpora.py's corpora (and bench/synth.py's set) under the settings whose paths the engine's fast paths
replace (near-dedup by words and by shingles at several thresholds; the app's build and the CLI's one-shot
build). Written with main's code before a speed-up, read by tests/test_trace_golden.py after it:

    git -C /work/main archive HEAD | tar -x -C /tmp/engine-main
    PYTHONPATH=/tmp/engine-main python tests/golden_traces.py tests/fixtures/golden/traces.json
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.append(os.path.join(ROOT, "bench"))

import corpora  # noqa: E402
import synth  # noqa: E402

import ctxcore  # noqa: E402
from ctxcore import Config, build  # noqa: E402
from ctxcore.io.loaders import candidates_from_objects  # noqa: E402
from ctxcore.memo import one_shot  # noqa: E402
from ctxcore.pipeline import clear_caches  # noqa: E402

QUERY = corpora.QUERY
# (name, settings): every one on each corpus, as a rebuild after the one before it (the app) and cold (the CLI)
CHANGES = (("default", {}), ("near 0.9", {"near_dup": 0.9}), ("near 0.5", {"near_dup": 0.5}),
           ("shingles", {"similarity": "shingles"}), ("shingles 0.9", {"similarity": "shingles", "near_dup": 0.9}),
           ("shingles 0.7", {"similarity": "shingles", "near_dup": 0.7}),
           ("shingles 0.5", {"similarity": "shingles", "near_dup": 0.5}),
           ("shingles, caller", {"similarity": "shingles", "caller": "guest"}))
SIZES = {"prose": 1500, "templated": 800, "synth": 1500}


_SEAL = re.compile(r',\n  "seal": "[^"\n]*"(?=\n\}$)')


def _digest(text: str) -> str:
    """The digest of a trace's JSON without its seal: the seal names the engine's source, which changes with every
    commit by design (ctxcore.seal); the decisions the golden holds do not."""
    return hashlib.sha256(_SEAL.sub("", text).encode("utf-8")).hexdigest()


def corpus(name: str):
    if name == "synth":
        return synth.candidates(SIZES[name])
    return candidates_from_objects(corpora.candidates(name, SIZES[name]))


def traces():
    """(case name, sha256 of the trace's JSON) for every case."""
    for path in sorted(glob.glob(os.path.join(ROOT, "sample_data", "*.json"))):
        loaded = ctxcore.load(path)
        for name, change in (("own", {}),) + CHANGES[1:]:
            yield f"{os.path.basename(path)} {name}", _digest(loaded.build(loaded.settings(**change)).to_json())
    for corpus_name in SIZES:
        cands = corpus(corpus_name)
        clear_caches()
        for name, change in CHANGES:  # the app: each a rebuild after the ones before
            yield f"{corpus_name} app {name}", _digest(build(cands, QUERY, Config(budget=3000, **change)).to_json())
        for name, change in CHANGES:  # the CLI: each cold, one-shot
            clear_caches()
            with one_shot():
                yield f"{corpus_name} cli {name}", _digest(build(cands, QUERY, Config(**change)).to_json())


if __name__ == "__main__":
    out = dict(traces())
    with open(sys.argv[1], "w") as fh:
        json.dump(out, fh, indent=1, sort_keys=True)
    print(f"{len(out)} traces written with ctxcore from {os.path.dirname(ctxcore.__file__)}")
