"""A package that installs (issue #31): the wheel holds the engine and the app's files, its ``ctxcore`` command
does what ``python -m ctxcore`` does, and ``ctxcore app`` serves the installed app.

The wheel is built from a copy of the files the package is made of (the build writes nothing into the
checkout) and installed with ``--no-deps`` into a fresh venv whose ``.pth`` file points at this venv's
site-packages, so the dependencies are the ones already installed and nothing is fetched but the build
backend (from PyPI, only when this venv lacks setuptools' ``wheel``)."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
import sysconfig
import time
import tomllib
import urllib.request
from pathlib import Path

import pytest

from ctxcore.cli import _app_config
from conftest import ROOT, free_port

SHIPPED = ("pyproject.toml", "README.md", "app.py", "ctxcore", "ctxui", "pages", ".streamlit", "sample_data")
COMMANDS = ("build", "explain", "check-answer", "inspect", "fetch", "schema", "replay", "serve", "app")
SAMPLE = str(Path(ROOT) / "sample_data" / "04_stale_policy.json")


def _bin(venv: Path, name: str) -> str:
    return str(venv / "bin" / name)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("src")
    for name in SHIPPED:
        copy = shutil.copytree if (Path(ROOT) / name).is_dir() else shutil.copy2
        copy(Path(ROOT) / name, src / name, **({"ignore": shutil.ignore_patterns("__pycache__")}
                                              if copy is shutil.copytree else {}))
    dist = tmp_path_factory.mktemp("dist")
    offline = importlib.util.find_spec("setuptools") and importlib.util.find_spec("wheel")
    cmd = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist), str(src)]
    done = subprocess.run(cmd + (["--no-build-isolation"] if offline else []), capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 0, done.stderr
    (found,) = dist.glob("ctxcore-*.whl")
    return found


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    """A fresh venv that sees this one's packages (a .pth file) and has the wheel installed, without deps."""
    root = tmp_path_factory.mktemp("venv") / "v"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120)
    site = Path(subprocess.run([_bin(root, "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "outer.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    done = subprocess.run([_bin(root, "python"), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
                          capture_output=True, text=True, timeout=120, cwd=root)
    assert done.returncode == 0, done.stderr
    return root


@pytest.mark.slow
def test_the_wheel_holds_every_module_and_the_apps_files(wheel):
    import zipfile

    names = set(zipfile.ZipFile(wheel).namelist())
    want = {p.relative_to(ROOT).as_posix() for p in Path(ROOT, "ctxcore").rglob("*.py")}
    want |= {"ctxcore_app/" + p.relative_to(ROOT).as_posix() for d in ("ctxui", "pages", "sample_data")
             for p in Path(ROOT, d).rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    want |= {"ctxcore_app/app.py", "ctxcore_app/.streamlit/config.toml", "ctxcore_app/ctxui/paint/index.html"}
    assert want - names == set()
    assert not any(n.startswith(("tests/", "bench/", "ctxui/", "pages/")) for n in names)


@pytest.mark.slow
def test_the_installed_command_lists_every_command_and_builds_like_python_m_ctxcore(venv, tmp_path):
    where = subprocess.run([_bin(venv, "python"), "-c", "import ctxcore; print(ctxcore.__file__)"], cwd=tmp_path,
                           capture_output=True, text=True, check=True).stdout.strip()
    assert where.startswith(str(venv)) and where.endswith("site-packages/ctxcore/__init__.py")
    helped = subprocess.run([_bin(venv, "ctxcore"), "--help"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert helped.returncode == 0, helped.stderr
    listed = re.search(r"\{([a-z,-]+)\}", helped.stdout).group(1).split(",")
    assert listed == list(COMMANDS)
    installed = subprocess.run([_bin(venv, "ctxcore"), "build", SAMPLE], cwd=tmp_path, capture_output=True,
                               text=True, timeout=60)
    here = subprocess.run([sys.executable, "-m", "ctxcore", "build", SAMPLE], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert installed.returncode == here.returncode == 0, installed.stderr
    assert installed.stdout == here.stdout and "stale" in here.stdout


@pytest.mark.slow
def test_ctxcore_app_serves_the_installed_app(venv, tmp_path):
    port = free_port()
    proc = subprocess.Popen([_bin(venv, "ctxcore"), "app", "--server.headless", "true", "--server.port", str(port)],
                            cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        health = ""
        deadline = time.monotonic() + 90  # a hang guard, not a speed claim
        while health != "ok" and time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
                    health = r.read().decode()
            except OSError:
                time.sleep(0.3)
        assert health == "ok", f"exit {proc.poll()}"
        cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0")
        assert str(next(venv.glob("lib/python*/site-packages/ctxcore_app/app.py"))).encode() in cmdline
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def test_ctxcore_app_without_streamlit_says_what_to_install():
    """Streamlit marked unimportable the way Python itself marks a module (``sys.modules[name] = None``)."""
    code = "import sys; sys.modules['streamlit'] = None; from ctxcore.cli import main; sys.exit(main(['app']))"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "error: app: the app needs Streamlit: install ctxcore[app] (pip install 'ctxcore[app]')\n"


def test_the_apps_own_config_becomes_streamlit_options(tmp_path):
    (tmp_path / ".streamlit").mkdir()
    (tmp_path / ".streamlit" / "config.toml").write_text(
        '[server]\nheadless = true\nmaxUploadSize = 64\n[theme]\nprimaryColor = "#1565c0"\n', encoding="utf-8")
    assert _app_config(tmp_path) == ["--server.headless", "true", "--server.maxUploadSize", "64",
                                     "--theme.primaryColor", "#1565c0"]
    assert _app_config(tmp_path / "nowhere") == []


def test_unknown_options_of_other_commands_are_still_refused():
    done = subprocess.run([sys.executable, "-m", "ctxcore", "build", SAMPLE, "--server.port", "1"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "error: python -m ctxcore: unrecognized arguments: --server.port 1\n"


def test_the_packages_dependency_ranges_are_requirements_txts():
    """One range per package: the extras say the same as requirements.txt (and requirements-dask.txt)."""
    project = tomllib.loads((Path(ROOT) / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = project["dependencies"] + [r for extra in project["optional-dependencies"].values() for r in extra]
    required = set()
    for name in ("requirements.txt", "requirements-dask.txt", "requirements-live.txt"):
        for line in (Path(ROOT) / name).read_text(encoding="utf-8").splitlines():
            line = line.split("#")[0].strip()
            if line and not line.startswith("-r"):
                required.add(line)
    assert set(declared) == required
    assert project["scripts"] == {"ctxcore": "ctxcore.cli:main"} and project["requires-python"] == ">=3.11"
