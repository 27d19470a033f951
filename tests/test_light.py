"""The command-line build path pays for tokenizing, not for importing a UI or dataframe stack."""

import subprocess
import sys

from conftest import ROOT

CODE = """
import sys
from ctxcore import cli
cli.run(["build", "sample_data/01_duplicates_crowd_out.json", "--format", "json"], out=open("/dev/null", "w"))
heavy = sorted(m for m in ("streamlit", "pandas", "numpy", "plotly", "pyarrow") if m in sys.modules)
print(",".join(heavy))
"""


def test_cli_build_imports_no_ui_or_dataframe_library():
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""
