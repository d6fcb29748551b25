"""The contract every patch must keep, as tests a patch's own test suite can run.

gpushim's matrix runs it on its own patches; a distribution that adds patches
(see :mod:`gpushim.plugins`) runs it on its own in its own environment::

    from gpushim.testing import Contract

    class TestGpushimContract(Contract):
        distribution = "acme-fixes"  # or: ids = ("warp.acme_stream_leak",)

The state each patch must reach is derived from its declaration and the
installed distributions, never copied: where that state is ``applied`` the
probe must show the bug without gpushim and not with it, whichever comes
first, gpushim or the target; ``GPUSHIM_DISABLE`` brings the bug back
(naming every patch that applies at once, where each probe runs without
the others);
patching twice wraps once; what the patch put in place keeps what it
replaced as ``__wrapped__`` and pickles and copies as it does (a name it
added replaced nothing);
``unpatch()`` restores the identical objects.  An opt-in patch is checked
turned on, as ``GPUSHIM_ENABLE`` turns it on, and besides that found
``opt-in``, with its bug and its target untouched, without the switch.  Where the patch ends in any
other state, the probe finds no bug and the patch touched nothing: every
module of the target and every class in them holds the released objects;
but where it is ``not-backported``, the probe finds the bug, with gpushim
as without: the declaration's claim that the release has it is checked.
A target whose import raises shows the bug of each of its patches,
described by the exception: where the bug is the import failing, that is
what the probe would find.  The probes are asked through the self-test's
runner (:mod:`gpushim.probing`), all of the checked patches' in one fresh
interpreter per question, and a probe that crashes its interpreter is asked
again in one of its own, where the crash counts as the bug showing.  A
subclass may leave a patch's probe unasked in an environment where it
proves nothing new (:meth:`Contract.unprobed_because`): its probe checks
skip there, and the others run.  A
probe that raises shows its bug too, described by the exception: an old
release that cannot even run the probe in a new environment (Warp 1.2.0,
whose arrays NumPy 2 refuses to make) has the bug as far as its users can
tell, and with gpushim the probe must run and find nothing.  A probe that
cannot run here (:class:`gpushim.ProbeCannotRun`: the install lacks what it
needs and the bug does not) skips its checks, saying why, as the self-test
gives it no verdict; one whose interpreter fails otherwise fails them.  With
gpushim imported after a target whose import raised, the target is imported
again, as its user would; where that import raises again (a Cython module
whose initialisation failed stays broken), only gpushim made active before
it can fix it, and that order is not checked.  Where a target cannot be
imported without the patches that act before it, the other patches' probes
cannot run without gpushim: their need is not checked there.  A patch that
acts only before a module executes leaves nothing in place once it has:
only the probes check it.  Only patches whose target is installed are
checked.

Each check leaves the process as it found it, whether gpushim was active
in the session (``pytest --gpushim``, ``gpushim-run pytest``) or not: the
patches active before it are active after it, and no others; a module
imported before it is still the same object.  A target the checks imported
stays imported, as a user's import would leave it (an extension module
cannot be imported twice).
"""

from __future__ import annotations

import copy
import functools
import importlib
import pickle
import sys

import pytest

import gpushim
from gpushim.expectations import expected_state, installed_versions
from gpushim.probing import GPUSHIM_FIRST, TARGET_FIRST, Mode, ask
from gpushim.probing import WITHOUT_GPUSHIM as WITHOUT
from gpushim.states import APPLIED, DISABLED, INACTIVE, NOT_BACKPORTED, NOT_INSTALLED, OPT_IN
from gpushim.switches import ENABLE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from gpushim.journal import Replacement


@functools.lru_cache(maxsize=None)
def expected_states(ids: tuple[str, ...], distribution: str | None = None) -> dict[str, str]:
    """The checked patches (``ids``, else :func:`installed_ids`) and the state each must reach.

    Every check of every patch needs them: they are derived once per process,
    from one read of the installed distributions, as the probes are asked once.
    """
    installed = installed_versions()
    ids = tuple(ids or installed_ids(distribution))
    return {id: expected_state(id, installed, enabled=set(ids)) for id in ids}


def opt_in_switch(ids: tuple[str, ...]) -> dict[str, str]:
    """``GPUSHIM_ENABLE`` naming the opt-in patches among ``ids``: the contract checks each turned on, as its
    users run it, and apart from that, that it is off without the switch."""
    registry = gpushim.registry()
    named = [id for id in ids if registry[id].opt_in]
    return {ENABLE: ",".join(named)} if named else {}


def probes(ids: tuple[str, ...], mode: Mode, disabled: str = "") -> dict[str, tuple[object, str]]:
    """What each probe returned and its patch's state, asked in ``mode`` (see :func:`judged`).

    The interpreters inherit no ``GPUSHIM_*`` switch but ``GPUSHIM_DISABLE=disabled``.
    """
    switches = {"GPUSHIM_DISABLE": disabled} if disabled else {}
    return {id: judged(answer) for id, answer in ask(mode, list(ids), switches).items()}


@functools.lru_cache(maxsize=None)
def answers(ids: tuple[str, ...], mode: Mode, disabled: tuple[str, ...] = ()) -> dict[str, dict]:
    """The runner's answers for the probes of ``ids``, asked once per process in each mode and ``GPUSHIM_DISABLE``,
    with the opt-in patches among them enabled."""
    switches = {**opt_in_switch(ids), **({"GPUSHIM_DISABLE": ",".join(disabled)} if disabled else {})}
    return ask(mode, list(ids), switches)


def judged(answer: dict) -> tuple[object, str]:
    """What the probe returned or raised (the bug shows unless that is ``None``) and its patch's state.

    A probe that cannot run here skips the check with its reason; one whose
    interpreter failed otherwise than by dying fails it.
    """
    if "cannot_run" in answer:
        pytest.skip(f"the probe of {answer['id']} cannot run here: {answer['cannot_run']}")
    assert "error" not in answer, f"the probe of {answer['id']} did not answer: {answer}"
    if "raised" in answer:
        return f"the probe raises {answer['raised']}", answer["state"]
    return answer["bug"], answer["state"]


def installed_ids(distribution: str | None = None) -> list[str]:
    """The patches whose target is installed, of ``distribution`` only if given."""
    registry = gpushim.registry()
    return [
        id
        for id in registry.ids
        if (distribution is None or registry.library(id).origin == distribution)
        and gpushim.record(id)["state"] != NOT_INSTALLED
    ]


class Contract:
    """The contract's checks for the patches ``ids`` (by default those of ``distribution``; by default, all).

    Subclass it as a test class; each check runs once per patch whose target is installed.
    """

    ids: tuple[str, ...] = ()
    distribution: str | None = None

    def checked(self) -> dict[str, str]:
        """The checked patches, each with the state it must reach (see :func:`expected_states`)."""
        return expected_states(tuple(self.ids), self.distribution)

    def checked_ids(self) -> tuple[str, ...]:
        return tuple(self.checked())

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        if "id" in metafunc.fixturenames:
            metafunc.parametrize("id", self.checked_ids())

    @pytest.fixture(autouse=True)
    def leaves_gpushim_as_found(self):
        """Each check patches and undoes as it needs: after it, what was active is active again, and nothing else."""
        found = set(gpushim.registry().active)
        yield
        now = set(gpushim.registry().active)
        if now - found:
            gpushim.unpatch(*sorted(now - found))
        if found - now:
            gpushim.patch(*sorted(found - now))

    @pytest.fixture(autouse=True)
    def opt_in_patches_enabled(self, monkeypatch):
        """In this process too, the opt-in patches checked are on, as ``GPUSHIM_ENABLE`` turns them on."""
        for name, value in opt_in_switch(self.checked_ids()).items():
            monkeypatch.setenv(name, value)

    def unprobed_because(self, id: str) -> str:
        """Why this environment leaves ``id``'s probe unasked, or ``""``: every probe is asked unless overridden.

        A matrix of releases may ask each probe only where it tells something:
        every probe starts an interpreter that imports its target and runs its
        reproduction, in each of four ways, and most of a cell's cost is there.
        """
        return ""

    def probed_ids(self) -> tuple[str, ...]:
        return tuple(id for id in self.checked_ids() if not self.unprobed_because(id))

    def skip_if_unprobed(self, id: str) -> None:
        why = self.unprobed_because(id)
        if why:
            pytest.skip(why)

    def probe(self, id: str, mode: Mode) -> tuple[object, str]:
        self.skip_if_unprobed(id)
        return judged(answers(self.probed_ids(), mode)[id])

    @pytest.fixture
    def expected(self, id: str) -> str:
        return self.checked()[id]

    @pytest.fixture
    def target(self, id: str, expected: str):
        """The module the patch changes, imported as a user would: its library first.

        A library that cannot be imported here without gpushim (an environment that
        moved on) is imported with the patches applied, and undone after.  Where
        the patch does not apply, the library stands for that module: the release
        may lack it (``warp.codegen`` is gone from Warp 1.13).
        """
        library = gpushim.registry().library(id).target
        try:
            importlib.import_module(library)
        except Exception:
            gpushim.patch()
            try:
                importlib.import_module(library)
            finally:
                gpushim.unpatch()
        from .engine import module_of

        changed = module_of(gpushim.registry()[id]) if expected == APPLIED else None
        return importlib.import_module(changed or library)

    @staticmethod
    def skip_if_only_before(id: str) -> None:
        patch = gpushim.registry()[id]
        if patch.before is not None and patch.apply is None:
            pytest.skip(f"{id} acts only before {patch.before} executes, and leaves nothing in place: see the probes")

    def test_the_state_is_the_one_derived_from_the_declaration_and_the_install(self, id, expected):
        _, state = self.probe(id, GPUSHIM_FIRST)
        assert state == expected

    def test_needed_the_probe_shows_the_bug_without_gpushim_exactly_where_it_applies(self, id, expected):
        bug, _ = self.probe(id, WITHOUT)
        fixes_the_import = expected == APPLIED and gpushim.registry()[id].before is not None
        if _is_import_failure(id, bug) and not fixes_the_import:
            pytest.skip(
                f"{bug}: that is the bug of the patches that act before it; {id}'s probe cannot run without them"
            )
        assert (bug is not None) == (expected in (APPLIED, NOT_BACKPORTED)), bug

    @pytest.mark.parametrize("order", [GPUSHIM_FIRST, TARGET_FIRST], ids=["gpushim first", "target first"])
    def test_effective_with_gpushim_before_or_after_the_target(self, id, expected, order):
        bug, state = self.probe(id, order)
        if order == TARGET_FIRST and _is_import_failure(id, bug):
            pytest.skip(f"{bug}, again after import gpushim.auto: only gpushim active before that import can fix it")
        before = gpushim.registry()[id].before
        if order == TARGET_FIRST and before is not None and state == INACTIVE:
            pytest.skip(f"{before} executed before import gpushim.auto: only gpushim active before it can prepare it")
        if expected == NOT_BACKPORTED:  # the bug stays, and the state says so
            assert bug is not None and state == expected
        else:
            assert (bug, state) == (None, expected)

    def test_disabling_the_patch_brings_the_bug_back(self, id, expected):
        if expected != APPLIED:
            pytest.skip(f"{id} is {expected} here")
        self.skip_if_unprobed(id)
        switched_off = self.switched_off_with(id)
        bug, state = judged(answers(switched_off, GPUSHIM_FIRST, switched_off)[id])
        assert bug is not None and state == DISABLED

    def switched_off_with(self, id: str) -> tuple[str, ...]:
        """The patches ``GPUSHIM_DISABLE`` names when it is checked for ``id``'s: every one that applies, at once.

        A probe that cannot run without gpushim (its target's import or the
        probe itself raises: it needs a patch the others would switch off) is
        checked with its own patch switched off alone, and leaves the others out.
        """
        without = answers(self.probed_ids(), WITHOUT)

        def runs_without_gpushim(other: str) -> bool:
            return "raised" not in without[other] and not _is_import_failure(other, without[other].get("bug"))

        if not runs_without_gpushim(id):
            return (id,)
        checked = self.checked()
        return tuple(other for other in without if checked[other] == APPLIED and runs_without_gpushim(other))

    def test_an_opt_in_patch_stays_off_and_touches_nothing_unless_enabled(self, id, expected, target, monkeypatch):
        if not (expected == APPLIED and gpushim.registry()[id].opt_in):
            pytest.skip(f"{id} is not an opt-in patch that applies here")
        if not self.unprobed_because(id):
            bug, state = judged(ask(GPUSHIM_FIRST, [id])[id])
            assert bug is not None and state == OPT_IN
        monkeypatch.delenv(ENABLE)
        _assert_patching_touches_nothing(id)

    def test_patching_twice_wraps_once_and_each_replacement_keeps_its_original(self, id, expected, target):
        _patch_alone(id)
        try:
            journal = gpushim.registry().journal(id)
            if expected != APPLIED:
                assert journal is None, f"{id} is {expected} here but replaced {journal.entries}"
                return
            self.skip_if_only_before(id)
            entries = _replaced_by(id)
            gpushim.patch(id)
            assert _replaced_by(id) == entries
            for entry in entries:
                assert entry.bound() is entry.new
                assert entry.added or entry.new.__wrapped__ is entry.original
        finally:
            gpushim.unpatch(id)

    def test_unpatch_restores_the_identical_objects_everywhere(self, id, expected, target):
        if expected != APPLIED:
            pytest.skip(f"{id} is {expected} here")
        self.skip_if_only_before(id)
        _patch_alone(id)
        try:
            entries = _replaced_by(id)
        finally:
            gpushim.unpatch(id)
        for entry in entries:
            assert entry.bound() is (None if entry.inherited or entry.added else entry.original)

    def instances(self, id: str) -> dict[type, object]:
        """Instances through which to read the methods patch ``id`` replaces, by class; override to give some."""
        return {}

    def test_what_the_patch_replaces_pickles_and_copies_as_the_original_does(self, id, expected, target):
        if expected != APPLIED:
            pytest.skip(f"{id} is {expected} here")
        self.skip_if_only_before(id)
        assert pickling_differences(id, self.instances(id)) == {}

    def test_harmless_where_the_patch_does_not_apply_the_target_keeps_every_released_object(self, id, expected, target):
        if expected == APPLIED:
            pytest.skip(f"{id} applies here")
        _assert_patching_touches_nothing(id)


def _assert_patching_touches_nothing(id: str) -> None:
    """``gpushim.patch(id)`` here replaces nothing: every module of the target and its classes keep their objects."""
    released = bindings(gpushim.registry().library(id).target)
    gpushim.patch(id)
    try:
        assert gpushim.registry().journal(id) is None
        assert bindings(gpushim.registry().library(id).target) == released
    finally:
        gpushim.unpatch(id)


def _patch_alone(id: str) -> None:
    """Apply patch ``id`` with no other patch layered on a binding it replaces, so that each holds its own.

    Under ``pytest --gpushim`` every patch is active, and two that wrap one
    function (Warp's codegen patches, ``ModuleHasher.hash_adjoint``) are layered:
    those are taken off first, and the check's fixture puts them back after it.
    """
    registry = gpushim.registry()
    gpushim.patch(id)
    journal = registry.journal(id)
    if journal is None:
        return
    mine = {_binding(entry) for entry in journal.entries}
    layered = [
        other
        for other in registry.active
        if other != id and mine & {_binding(entry) for entry in getattr(registry.journal(other), "entries", ())}
    ]
    if layered:
        gpushim.unpatch(id, *layered)
        gpushim.patch(id)


def _binding(entry: Replacement) -> tuple[int, object]:
    return id(entry.owner), entry.name


def _replaced_by(id: str) -> list[Replacement]:
    """What patch ``id``, applied, replaced in this process."""
    journal = gpushim.registry().journal(id)
    assert journal is not None, f"{id} is not applied"
    return list(journal.entries)


def _is_import_failure(id: str, bug: object) -> bool:
    """Whether ``bug`` is the failed import of the target of patch ``id``, which its probe never ran past."""
    return isinstance(bug, str) and bug.startswith(f"import {gpushim.registry().library(id).target} raises ")


def bindings(target: str) -> dict[tuple[str, str], int]:
    """The identity of every name bound in each imported module of ``target`` and in each class those define."""
    found = {}
    for name, module in list(sys.modules.items()):
        if name != target and not name.startswith(target + "."):
            continue
        for attribute, value in list(vars(module).items()):
            found[name, attribute] = id(value)
            if isinstance(value, type) and value.__module__ == name:
                for member, inner in list(vars(value).items()):
                    found[f"{name}.{attribute}", member] = id(inner)
    return found


_WAYS = {"pickle": lambda value: pickle.loads(pickle.dumps(value)), "copy": copy.copy, "deepcopy": copy.deepcopy}


def pickling_differences(id: str, instances: dict[type, object]) -> dict[str, tuple[dict, dict]]:
    """Every read of what patch ``id`` replaces whose outcomes disagree patched: ``{read: (unpatched, patched)}``.

    Each binding is read as a user reads it, through its owner (and through
    ``instances[owner]`` where given: a method read through an instance is a
    bound method), then pickled, copied and deep-copied, once with the patch
    undone and once applied.  Where the original loads back as itself, the
    patched read must load back as the patched object; where the original
    fails, the patched one must fail with the same exception type; where the
    original gives another object, the patched one may give itself.  A name
    the patch added (:meth:`~gpushim.Journal.add`) has no original, and no read.
    """
    gpushim.patch(id)
    try:
        entries = _replaced_by(id)
        assert entries, f"{id} replaced nothing"
        replaced = [(entry.owner, entry.name, entry.item) for entry in entries if not entry.added]
    finally:
        gpushim.unpatch(id)
    reads = {}
    for owner, name, item in replaced:
        if item:
            reads[f"{type(owner).__name__}[{name!r}]"] = lambda owner=owner, name=name: owner[name]
            continue
        reads[_label(owner, name)] = lambda owner=owner, name=name: getattr(owner, name)
        instance = instances.get(owner)
        if instance is not None:
            reads[f"an instance's {_label(owner, name)}"] = lambda instance=instance, name=name: getattr(instance, name)
    unpatched = {label: _outcomes(read) for label, read in reads.items()}
    gpushim.patch(id)
    try:
        patched = {label: _outcomes(read) for label, read in reads.items()}
    finally:
        gpushim.unpatch(id)
    return {
        label: (unpatched[label], patched[label])
        for label in reads
        if not all(_agrees(unpatched[label][way], patched[label][way]) for way in _WAYS)
    }


def _outcomes(read) -> dict[str, str]:
    """What pickling, copying and deep-copying ``read()`` gives: itself, something else, or an exception type."""
    answers = {}
    for way, act in _WAYS.items():
        value = read()
        try:
            result = act(value)
        except Exception as error:
            answers[way] = f"raises {type(error).__name__}"
        else:
            answers[way] = _kind(result, value)
    return answers


def _identity(value: Any) -> object:
    """What makes two reads the same: the object, or for a bound method (wrapt's too) its function and instance."""
    parent = getattr(value, "_self_parent", None)  # a wrapt bound wrapper: a new one per read
    if parent is not None:
        return parent, value._self_instance
    function = getattr(value, "__func__", None)
    if function is not None and hasattr(value, "__self__"):
        return function, value.__self__
    return value


def _kind(result: object, value: object) -> str:
    same, other = _identity(result), _identity(value)
    if type(same) is tuple and type(other) is tuple:
        same = all(mine is theirs for mine, theirs in zip(same, other))
    else:
        same = same is other
    if not same:
        return "an equal one" if result == value else "another"
    if hasattr(result, "__wrapped__") != hasattr(value, "__wrapped__"):
        return "itself, unpatched"
    return "itself"


def _label(owner: object, name: str) -> str:
    if isinstance(owner, type):
        return f"{owner.__module__}.{owner.__qualname__}.{name}"
    return f"{getattr(owner, '__name__', repr(owner))}.{name}"


def _agrees(unpatched: str, patched: str) -> bool:
    """Whether a patched read's outcome is the original's (see :func:`pickling_differences`)."""
    if unpatched.startswith("raises") or patched.startswith("raises") or unpatched == "itself":
        return unpatched == patched
    return True
