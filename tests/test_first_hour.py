"""A new user's first hour: the README's install (no extras) and a fresh home directory.

scikit-learn, pandas and Dask are in the ``dev`` extra, so they are installed where the tests
run; here they are made unimportable (a package of that name that raises ImportError, first on
the path), which is what a plain ``pip install .`` gives. ``test_fresh_virtual_environment``
(slow) does the real thing: a new virtual environment and ``pip install .``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OPTIONAL = ("sklearn", "pandas", "dask", "distributed", "vowpalwabbit")


@pytest.fixture
def bare_env(tmp_path):
    """Environment of a subprocess without the optional extras and with an empty HOME."""
    blocked = tmp_path / "blocked"
    for name in OPTIONAL:
        (blocked / name).mkdir(parents=True)
        (blocked / name / "__init__.py").write_text(
            f"raise ImportError('{name} is not installed (blocked by the test)')\n")
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OKOCO_", "XDG_"))}
    env.update(HOME=str(home), PYTHONPATH=os.pathsep.join(
        [str(blocked), str(ROOT), env.get("PYTHONPATH", "")]), MPLBACKEND="Agg")
    return env


def run(args, env, cwd, timeout=600):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=timeout)


def test_every_listed_dataset_replays_without_the_extras(bare_env, tmp_path):
    script = f"OPTIONAL = {OPTIONAL!r}\n" + textwrap.dedent("""
        import importlib, json, sys
        for name in OPTIONAL:
            try:
                importlib.import_module(name)
            except ImportError:
                pass
            else:
                sys.exit(f"{name} should be blocked")
        from typer.testing import CliRunner
        from okoco.cli import app
        from okoco.datasets import REMOTE
        runner = CliRunner()
        rows = json.loads(runner.invoke(app, ["datasets", "--json"]).output)
        codes = {}
        for row in rows:
            if row["name"] in REMOTE:  # downloaded on first use: not part of the install
                continue
            result = runner.invoke(app, ["replay", row["name"], "-n", "40", "--json"])
            codes[row["name"]] = [result.exit_code, (result.stderr or "").strip()]
        print(json.dumps(codes))
    """)
    proc = run(["-c", script], bare_env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    codes = json.loads(proc.stdout.strip().splitlines()[-1])
    assert {"diabetes", "breast-cancer", "bananas", "shuttle", "sinc",
            "image-segments"} <= set(codes)
    for name, (code, err) in codes.items():
        assert code == 0, (name, err)


def test_the_command_and_an_example_in_a_fresh_home(bare_env, tmp_path):
    out = tmp_path / "run.json"
    proc = run(["-m", "okoco.cli", "replay", "breast-cancer", "-o", str(out), "--plot",
                str(tmp_path / "run.png")], bare_env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "breast-cancer (569 samples, d=30, binary)" in proc.stdout and proc.stderr == ""
    assert json.loads(out.read_text())["final"]["t"] == 569
    example = run([str(ROOT / "examples" / "bananas.py"), "--small", "--out", str(tmp_path)],
                  bare_env, tmp_path)
    assert example.returncode == 0, example.stderr
    assert "bananas: n=400, online accuracy KONS" in example.stdout


@pytest.mark.slow
def test_fresh_virtual_environment(tmp_path):
    """The README's command in a new virtual environment (downloads the dependencies)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    py = venv / "bin" / "python"
    install = subprocess.run([str(py), "-m", "pip", "install", "-q", str(ROOT)],
                             capture_output=True, text=True, timeout=1800)
    assert install.returncode == 0, install.stderr[-2000:]
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}", "HOME": str(home),
           "MPLBACKEND": "Agg"}
    missing = subprocess.run([str(py), "-c", "import sklearn"], capture_output=True, env=env)
    assert missing.returncode != 0  # the README's install has no scikit-learn
    for name in ("diabetes", "breast-cancer", "trump-approval"):
        proc = subprocess.run([str(venv / "bin" / "okoco"), "replay", name, "-n", "50"],
                              capture_output=True, text=True, env=env, cwd=tmp_path,
                              timeout=600)
        assert proc.returncode == 0, (name, proc.stderr)
    version = subprocess.run([str(venv / "bin" / "okoco"), "--version"], capture_output=True,
                             text=True, env=env)
    assert version.stdout.startswith("okoco ")
