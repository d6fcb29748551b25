"""The adversary's site and program runner, shared by the suites that run a user's program in fresh interpreters.

The target ``synthadv`` comes with a synthetic catalogue of two patches
(tests/engine/catalogues.py ``write_site``): ``synth.compute`` wraps
``compute``, ``synth.refused`` wraps ``refused``.  A site's sitecustomize
installs the catalogue unless WITHOUT_GPUSHIM is set, so that the same
program runs with gpushim and without it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from tests.engine.catalogues import STANDALONE_PATCH, write_site

TARGET = "synthadv"
DISTRIBUTION = "synthadv-dist"
DIST_INFO = "synthadv_dist-1.5.0.dist-info"
WITHOUT_GPUSHIM = "SYNTHADV_WITHOUT_GPUSHIM"

TARGET_SOURCE = """
__version__ = "1.5.0"

def compute(x):
    return x + 1

def refused(x):
    return x

def other(x):
    return x * 10

class Widget:
    def size(self, x):
        return x + 1

    @staticmethod
    def make(x):
        return x + 1

class Refuses:
    def __call__(self, x):
        return x + 1

    def __reduce_ex__(self, protocol):
        raise TypeError("cannot pickle or copy a Refuses")

refuses = Refuses()

class Fused:  # claims the name of the function it stands for, as cupy.fuse does

    def __init__(self, function):
        self.function, self.__module__, self.__qualname__ = function, function.__module__, function.__qualname__

    def __call__(self, x):
        return self.function(x)

def fused(x):
    return x + 1

fused = Fused(fused)

def _make_local():
    def local(x):
        return x + 1

    return local

local = _make_local()

import functools

@functools.lru_cache(maxsize=None)
def cached(x):  # pickled by name through the cache's own __reduce__, as warp.types.vector
    return x + 1
"""

REPORT = """
import gpushim
print("@@" + json.dumps({record["id"]: record["state"] for record in gpushim.status()}))
"""


def adversary_site(root, setup):
    """``write_site``'s target and catalogue, and a sitecustomize that installs the catalogue unless told not to."""
    site = write_site(root, TARGET, DISTRIBUTION, "1.5.0", declared="1.5.0")
    (site / TARGET / "__init__.py").write_text(textwrap.dedent(TARGET_SOURCE))
    folder = site / "synthcatalogue" / "synth"
    (folder / "refused.py").write_text(
        STANDALONE_PATCH.format(id="synth.refused", affected=">=1.0,<2.0", name="refused")
    )
    customize = site / "sitecustomize.py"
    body = textwrap.indent(customize.read_text(), "    ")
    customize.write_text(f"import os\n\nif not os.environ.get({WITHOUT_GPUSHIM!r}):\n{body}")
    if setup is not None:
        setup(site)
    return site


def run_program(site, code, warnings_as_errors=False, env=None):
    """``code`` in a fresh interpreter with ``site`` on its path, and no GPUSHIM_* or PYTHON* variables inherited."""
    variables = {key: value for key, value in os.environ.items() if not key.startswith(("GPUSHIM_", "PYTHON"))}
    variables.update(PYTHONPATH=str(site), PYTHONDONTWRITEBYTECODE="1", **(env or {}))
    flags = ["-W", "error"] if warnings_as_errors else []
    return subprocess.run(
        [sys.executable, *flags, "-c", code], env=variables, capture_output=True, text=True, timeout=60
    )


def program_output(finished):
    """The program's own lines of output, and the states REPORT printed (None where it did not)."""
    lines = finished.stdout.splitlines()
    states = [json.loads(line[2:]) for line in lines if line.startswith("@@")]
    return [line for line in lines if not line.startswith("@@")], (states[0] if states else None)


def assert_same_program(finished, baseline):
    """With gpushim, the program exits and prints as without it, and raises nothing it did not."""
    assert finished.returncode == baseline.returncode, finished.stderr[-3000:]
    assert program_output(finished)[0] == program_output(baseline)[0], finished.stderr[-3000:]
    if "Traceback" not in baseline.stderr:
        assert "Traceback" not in finished.stderr, finished.stderr[-3000:]
