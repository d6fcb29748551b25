"""A framework iterator with ``LastBatchPolicy.DROP`` loses the next epoch when stopped at ``len()`` (DALI up to 1.26).

What breaks.  With the DROP policy, ``len(it)`` of a DALI framework iterator
(``DALIGenericIterator``, ``DALIClassificationIterator`` of the PyTorch,
PaddlePaddle and MXNet plugins) counts only full batches (NVIDIA/DALI#2611,
January 2021, before 1.0).  Training loops and PyTorch Lightning take that
many batches and then call ``reset()`` (directly or through ``iter()``),
never asking for the one more batch that would have raised StopIteration.
The incomplete batch the iterator should drop is still in the pipeline, the
iterator's counter has not reached the epoch's size, and ``reset()`` only
warns "DALI iterator does not support resetting while epoch is not finished.
Ignoring...".  The next epoch then starts from that leftover batch and ends
at once, with a bare StopIteration, or after a fraction of the data: with a
reader of 5 samples in batches of 2 (``reader_name`` given), epoch 2 is empty.

Fixed upstream.  NVIDIA/DALI#4881 (1.27.0, requested for
Lightning-AI/lightning#12956) makes ``_DaliBaseIterator.reset`` first check,
without moving the counter, whether one more batch would overflow the epoch;
if it would and the epoch has not ended, it takes that batch out of the
pipeline, schedules the next run and advances the counter, and only then
resets.  Checked on the wheels: the ``plugin/base_iterator.py`` of 1.26.0 and
1.27.0 differ in exactly that change (and docstrings); 1.23.0 (the oldest
``nvidia-dali-cuda120`` on PyPI) and 1.26.0 lose the epoch, 1.27.0 does not.

How the fix works.  The backport wraps ``_DaliBaseIterator.reset`` with that
step, computed as 1.27.0 computes it: one step is a batch for an iterator
following a reader, a batch per pipeline otherwise; with a reader the step
overflows when any pipeline's shard would, otherwise when it passes the
iterator's size (so, as in 1.27.0, an iterator without size, -1, also takes
one batch).  The batch is taken with the iterator's own ``_get_outputs`` and
``_schedule_runs``; then the release's ``reset`` runs unchanged.  Every
plugin built on ``_DaliBaseIterator`` is covered, because each calls that
``reset``: PyTorch, PaddlePaddle and MXNet (whose ``reset`` calls the base
class's).  ``nvidia.dali.plugin.tf`` does not use it: ``DALIDataset`` has no
last batch policy and is neither affected nor changed.  The JAX plugin first
ships in 1.27.0, with the fix.

The patch waits for ``nvidia.dali.plugin.base_iterator``, which ``import
nvidia.dali`` does not load, and checks that the iterator has the methods
and ``reset`` calls none of the fix's own (``dry_run``); anything else is a
TargetMismatch.

Not backported.  1.27.0's docstring corrections.

The probe.  Five small files read with ``fn.readers.file`` on the CPU in
batches of two through a minimal iterator on ``_DaliBaseIterator`` (the
plugins' ``__next__`` without a framework): after ``len(it)`` batches and a
reset, the next epoch must have two batches.
"""

from __future__ import annotations

from gpushim import Patch, TargetMismatch, expect

patch = Patch(
    id="dali.iterator_drop_reset",
    affected="<1.27.0",
    fixed_in="1.27.0",
    issue="NVIDIA/DALI#4881 (for Lightning-AI/lightning#12956)",
    fix="NVIDIA/DALI#4881",
    summary="With LastBatchPolicy.DROP, an iterator stopped after len(it) batches loses the next epoch after reset().",
    module="nvidia.dali.plugin.base_iterator",
)

_ITERATOR_METHODS = ("reset", "_get_outputs", "_schedule_runs", "_advance_and_check_drop_last")


def _drop_the_batch_left_behind(iterator, drop) -> None:
    """Take out of the pipeline the incomplete batch that ``len(iterator)`` stopped short of, as 1.27.0 does.

    An object without the release's bookkeeping (a subclass that skipped
    ``_DaliBaseIterator.__init__``) is left to the release's ``reset``.
    """
    try:
        if iterator._last_batch_policy != drop:
            return
        if iterator._reader_name:
            counter = iterator._counter + iterator.batch_size
            overflows = bool((iterator._counter_per_gpu + counter > iterator._shard_sizes_per_gpu).any())
        else:
            counter = iterator._counter + iterator._num_gpus * iterator.batch_size
            overflows = counter > iterator._size
        ended = iterator._size > 0 and iterator._counter >= iterator._size
    except AttributeError:
        return
    if overflows and not ended:
        iterator._get_outputs()
        iterator._schedule_runs()
        iterator._counter = counter


@patch.applier
def _apply(base_iterator, journal):
    import inspect

    iterator = expect(base_iterator, "_DaliBaseIterator", type)
    drop = expect(base_iterator, "LastBatchPolicy.DROP")
    for name in _ITERATOR_METHODS:
        expect(iterator, name, callable, own=True)
    if "dry_run" in inspect.signature(iterator._advance_and_check_drop_last).parameters:
        raise TargetMismatch("_DaliBaseIterator._advance_and_check_drop_last already has 1.27.0's dry_run")

    def reset(wrapped, instance, args, kwargs):
        if instance is not None and not args and not kwargs:
            _drop_the_batch_left_behind(instance, drop)
        return wrapped(*args, **kwargs)

    journal.wrap(iterator, "reset", reset)


@patch.prober
def _probe():
    """Five files in batches of two with DROP: after ``len(it)`` batches and ``reset()``, two more batches."""
    import pathlib
    import tempfile

    from nvidia.dali import fn, pipeline_def
    from nvidia.dali.plugin.base_iterator import LastBatchPolicy, _DaliBaseIterator

    class Iterator(_DaliBaseIterator):
        def __next__(self):
            outputs = self._get_outputs()
            self._schedule_runs()
            self._advance_and_check_drop_last()
            return outputs

    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def files(root):
        data, label = fn.readers.file(file_root=root, name="Reader")
        return data, label

    with tempfile.TemporaryDirectory() as root:
        folder = pathlib.Path(root, "class")
        folder.mkdir()
        for index in range(5):
            (folder / f"{index}.jpg").write_bytes(bytes([index]))  # the reader lists *.jpg, and never decodes
        pipe = files(root)
        pipe.build()
        iterator = Iterator([pipe], reader_name="Reader", last_batch_policy=LastBatchPolicy.DROP)
        for _ in range(len(iterator)):
            next(iterator)
        iterator.reset()
        batches = sum(1 for _ in iterator)
    if batches != 2:
        return f"after len(it) = 2 batches of 5 files and reset(), the next epoch has {batches} batches, not 2"
    return None
