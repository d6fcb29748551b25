"""The probe runner: patches' probes asked in fresh interpreters, of the self-test and of the contract.

A probe (a patch's minimal reproduction) runs in an interpreter of its
own making, never in the caller's: the caller imports no target and creates
no CUDA context.  Importing the library is most of a probe's cost, so one
interpreter asks every probe it is given, in one :class:`Mode`.  When that
interpreter ends before every probe answered (a probe crashed it, say), the
answers it gave are kept, the probe it was asking is asked again in an
interpreter of its own, where dying counts as the bug showing, and the ones
after it in one interpreter again.  One that fails after every probe answered
(a crash at exit) cannot say whose it was: each probe is asked alone.

A probe answers through a file named to its interpreter, one JSON line per
probe, never through standard output: libraries write there (Warp prints a
banner when it finds no CUDA driver).  An answer holds what the probe
returned (``bug``), or the exception it raised (``raised``), or why it
could not run (``cannot_run``), or what went wrong in its interpreter
(``error``), and the patch's ``state`` once it answered; what counts as the
bug showing is for the caller to judge.  A probe, or the import of its
target, that fails because the loader finds no shared library the target
links (CuPy before 13 links the CUDA driver's ``libcuda.so.1`` and the
toolkit's libraries at import) could not run: no patch supplies a library,
so that failure is this machine's, not a bug's.  The interpreter inherits no
``GPUSHIM_*`` switch but those the caller names.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from typing import NamedTuple

import gpushim

from .errors import ProbeCannotRun
from .interpreters import python_command

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable, Optional

TIMEOUT = 600


class NoTemporaryFile(OSError):
    """The probes answer through a temporary file, and none can be made (a read-only file system, say)."""


class Mode(NamedTuple):
    """How an interpreter asks its probes.

    ``activation`` is when gpushim becomes active: ``patch`` (``gpushim.patch()``
    before the probes), ``auto first`` or ``auto after`` (``import gpushim.auto``
    before or after the targets, as a user does), or ``never``.  Where
    ``imports_targets``, the interpreter imports the probed patches' targets
    before the probes and nothing of gpushim before them unless it activates
    first; a target whose import raises shows the bug of each of its patches,
    described by the exception, unless it imports when tried again after
    ``import gpushim.auto``, as its user would.  Where ``each_off``, each probe runs between
    ``gpushim.unpatch(id)`` and ``gpushim.patch(id)`` of its own patch.
    """

    activation: str
    imports_targets: bool
    each_off: bool


# The self-test's two states: only the probed patch off (as with GPUSHIM_DISABLE=id), and every patch on.
EACH_WITHOUT_ITS_PATCH = Mode(activation="patch", imports_targets=False, each_off=True)
WITH_THE_PATCHES = Mode(activation="patch", imports_targets=False, each_off=False)
# The contract's: gpushim imported after the targets and never active, and active before or after them.
WITHOUT_GPUSHIM = Mode(activation="never", imports_targets=True, each_off=False)
GPUSHIM_FIRST = Mode(activation="auto first", imports_targets=True, each_off=False)
TARGET_FIRST = Mode(activation="auto after", imports_targets=True, each_off=False)

# The child's first steps: it imports nothing of gpushim before the targets unless gpushim comes first.
_CHILD = """
import importlib, sys
answers, activation, each_off, targets, ids = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
if activation == "auto first":
    import gpushim.auto
failed = {}
for target in filter(None, targets.split(",")):
    try:
        importlib.import_module(target)
    except Exception as error:
        failed[target] = "import " + target + " raises " + type(error).__name__ + ": " + str(error)
if activation == "auto after":
    import gpushim.auto
    for target in list(failed):
        try:
            importlib.import_module(target)
        except Exception:
            continue
        del failed[target]
from gpushim.probing import answer
answer(answers, ids, activation == "patch", each_off == "each off", failed)
"""

# How the dynamic loader (glibc's) says a library is not there; CuPy repeats it in its own ImportError.
_MISSING_LIBRARY = re.compile(r"([\w.+-]+\.so[.\d]*): cannot open shared object file")


def answer(answers: str, ids: list[str], activate: bool, each_off: bool, failed: dict[str, str]) -> None:
    """The child's side: ask the probes of ``ids``, appending one answer each to ``answers``.

    ``failed`` describes, by target, the imports that raised.
    """
    if activate:
        gpushim.patch()
    registry = gpushim.registry()
    with open(answers, "a") as channel:
        for id in ids:
            if each_off:
                gpushim.unpatch(id)
            target = registry.library(id).target
            try:
                # An invalid declaration's probe is None: calling it raises, and that is said below.
                said: dict = {"bug": failed.get(target) or registry[id].probe()}  # pyright: ignore[reportOptionalCall]
            except ProbeCannotRun as why:
                said = {"cannot_run": str(why)}
            except Exception as error:
                said = {"raised": f"{type(error).__name__}: {error}"}
            missing = _MISSING_LIBRARY.search(failed.get(target) or said.get("raised") or "")
            if missing:
                said = {"cannot_run": f"the loader finds no {missing.group(1)} here, which {target} needs"}
            said["state"] = gpushim.record(id)["state"]
            if each_off:
                gpushim.patch(id)
            channel.write(json.dumps({"id": id, **said}, default=str) + "\n")
            channel.flush()


def ask(
    mode: Mode,
    ids: list[str],
    switches: Optional[dict[str, str]] = None,
    say: Optional[Callable[[str], None]] = None,
) -> dict[str, dict]:
    """The answers of the probes of ``ids`` in ``mode``: one interpreter for them all, unless one of them kills it.

    ``switches`` are the ``GPUSHIM_*`` variables the interpreters get;
    ``say`` hears why probes are asked again.
    """
    switches = switches or {}
    found: dict[str, dict] = {}
    unanswered = list(ids)
    while len(unanswered) > 1:
        answered, trouble, _, _ = _interpreter(mode, unanswered, switches)
        if not trouble:
            found.update(answered)
            break
        if len(answered) == len(unanswered):
            if say:
                say(f"{trouble} after every probe answered; asking each in an interpreter of its own")
            break
        found.update(answered)
        unanswered = [id for id in unanswered if id not in answered]
        if say:
            say(f"{trouble} at {unanswered[0]}; asking it in an interpreter of its own, and the probes after it again")
        found[unanswered[0]] = _in_an_interpreter_of_its_own(mode, unanswered[0], switches)
        unanswered = unanswered[1:]
    for id in ids:
        if id not in found:
            found[id] = _in_an_interpreter_of_its_own(mode, id, switches)
    return {id: found[id] for id in ids}


def _in_an_interpreter_of_its_own(mode: Mode, id: str, switches: dict[str, str]) -> dict:
    """The answer of ``id``'s probe in an interpreter of its own.

    An interpreter that dies of a signal says that the bug shows, as a
    double free does; one that fails otherwise, that the probe could not run.
    """
    found, trouble, died, stderr = _interpreter(mode, [id], switches)
    if died:
        answered = found.get(id, {})
        return {"id": id, "bug": answered.get("bug") or trouble, "state": answered.get("state", "-")}
    if trouble:
        return {"id": id, "error": trouble, "state": "-", "stderr": stderr[-3000:]}
    return found[id]


def _interpreter(mode: Mode, ids: list[str], switches: dict[str, str]) -> tuple[dict[str, dict], str, bool, str]:
    """The answers of one interpreter asking the probes of ``ids`` in ``mode``.

    Also what went wrong ("" if nothing), whether the interpreter died of a signal, and its standard error.
    """
    env = {key: value for key, value in os.environ.items() if not key.startswith("GPUSHIM_")}
    env.update(switches)
    registry = gpushim.registry()
    targets = sorted({registry.library(id).target for id in ids}) if mode.imports_targets else []
    each_off = "each off" if mode.each_off else "-"
    try:
        descriptor, answers = tempfile.mkstemp(prefix="gpushim-probes-", suffix=".jsonl")
    except OSError as error:
        raise NoTemporaryFile(
            f"no temporary file can be made for the probes' answers ({error}); set TMPDIR to a writable folder"
        ) from None
    os.close(descriptor)
    try:
        try:
            child = subprocess.run(
                python_command(_CHILD, answers, mode.activation, each_off, ",".join(targets), *ids),
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=TIMEOUT,
            )
        except subprocess.TimeoutExpired:
            trouble, died, stderr = f"the interpreter did not finish within {TIMEOUT} s", False, ""
        else:
            stderr = child.stderr
            died = child.returncode < 0
            if died:
                trouble = f"the interpreter died of signal {-child.returncode}"
            elif child.returncode:
                said = stderr.strip().splitlines()
                trouble = f"the interpreter exited with status {child.returncode}: {' '.join(said[-3:])}"
            else:
                trouble = ""
        with open(answers) as channel:
            found = {answer["id"]: answer for answer in map(json.loads, channel.read().splitlines())}
    finally:
        os.unlink(answers)
    if not trouble and set(found) != set(ids):
        trouble = "the interpreter ended before every probe answered"
    return found, trouble, died, stderr
