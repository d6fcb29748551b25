"""Whole epochs of the PyTorch plugin's iterators over small files, for dali.iterator_drop_reset.

The corpus runs whole epochs through ``DALIGenericIterator`` and
``DALIClassificationIterator`` over CPU pipelines whose ``fn.readers.file``
reads small files written by the caller (each file's one byte is its number,
the folder its label, read in order).  It varies the data set and batch size
(a remainder of one and two, none), one pipeline or two shards,
``reader_name`` or an explicit ``size``, the last batch policy (DROP, and
PARTIAL and FILL, which the fix leaves alone), how epochs end (``len(it)``
batches then ``reset()``, ``len(it)`` batches then ``iter()`` as PyTorch
Lightning does, until StopIteration, ``auto_reset``) and
``prepare_first_batch``; each case records four epochs, batch by batch, as
(file number, label) pairs, and how the epoch ended.
"""

from __future__ import annotations

import logging
from pathlib import Path

EPOCHS = 4


def write_files(root: Path, count: int) -> Path:
    """``count`` one-byte files in two label folders, numbered in the reader's order."""
    for index in range(count):
        folder = root / f"label{index % 2}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{index:03}.jpg").write_bytes(bytes([index]))  # the reader lists *.jpg, and never decodes
    return root


def pipelines(root: Path, batch_size: int, shards: int) -> list:
    from nvidia.dali import fn, pipeline_def

    @pipeline_def(batch_size=batch_size, num_threads=1, device_id=None)
    def files(shard):
        data, label = fn.readers.file(file_root=str(root), name="Reader", shard_id=shard, num_shards=shards)
        return data, label

    built = [files(shard) for shard in range(shards)]
    for pipe in built:
        pipe.build()
    return built


def samples(batch) -> list:
    """A PyTorch plugin batch (one dict or list per pipeline) as [file number, label] pairs."""
    result = []
    for per_pipeline in batch:
        data, label = (per_pipeline["data"], per_pipeline["label"]) if isinstance(per_pipeline, dict) else per_pipeline
        result.append([[int(row[0]), int(value)] for row, value in zip(data.tolist(), label.flatten().tolist())])
    return result


def epochs(iterator, ending: str) -> list:
    """``EPOCHS`` epochs of ``iterator``, each ended as ``ending`` says, with how each ended.

    ``len(it)`` batches, then ``reset()``, or ``iter(it)``, or nothing (``auto_reset``).
    """
    recorded = []
    for _ in range(EPOCHS):
        batches, end = [], "len(it) batches"
        try:
            if ending.startswith("len"):
                for _ in range(len(iterator)):
                    batches.append(samples(next(iterator)))
            else:
                for batch in iterator:
                    batches.append(samples(batch))
                end = "StopIteration"
        except StopIteration:
            end = f"StopIteration after {len(batches)} of len(it) = {len(iterator)}"
        if ending == "len, reset()":
            iterator.reset()
        elif ending == "len, iter()":
            iterator = iter(iterator)
        recorded.append({"batches": batches, "end": end})
    return recorded


# name: (files, batch size, shards, iterator options)
DATA = {
    "5 files, batches of 2": (5, 2, 1, {"reader_name": "Reader"}),
    "7 files, batches of 3": (7, 3, 1, {"reader_name": "Reader"}),
    "8 files, batches of 3": (8, 3, 1, {"reader_name": "Reader"}),
    "6 files, batches of 3": (6, 3, 1, {"reader_name": "Reader"}),
    "7 files, 2 shards, batches of 2": (7, 2, 2, {"reader_name": "Reader"}),
    "5 files, size=5, batches of 2": (5, 2, 1, {"size": 5}),
    "5 files, batches of 2, no first batch": (5, 2, 1, {"reader_name": "Reader", "prepare_first_batch": False}),
}
ENDINGS = ["len, reset()", "len, iter()", "until StopIteration, reset()", "len, auto_reset"]
POLICIES = ["DROP", "PARTIAL", "FILL"]


def case_names() -> list[tuple[str, str, str, str]]:
    names = [
        (data, ending, "DROP", kind)
        for data in DATA
        for ending in ENDINGS
        for kind in ("DALIGenericIterator", "DALIClassificationIterator")
    ]
    names += [(data, "len, reset()", policy, "DALIGenericIterator") for data in DATA for policy in POLICIES[1:]]
    return names


def run_case(root: Path, data: str, ending: str, policy: str, kind: str) -> list:
    import nvidia.dali.plugin.pytorch as plugin

    count, batch_size, shards, options = DATA[data]
    folder = write_files(root / f"{count}", count)
    options = {**options, "last_batch_policy": getattr(plugin.LastBatchPolicy, policy)}
    if ending == "len, auto_reset":
        options["auto_reset"] = True
    if ending == "until StopIteration, reset()":
        options["auto_reset"] = False
    pipes = pipelines(folder, batch_size, shards)
    if kind == "DALIGenericIterator":
        iterator = plugin.DALIGenericIterator(pipes, ["data", "label"], **options)
    else:
        iterator = plugin.DALIClassificationIterator(pipes, **options)
    if ending == "until StopIteration, reset()":
        recorded = []
        for _ in range(EPOCHS):
            recorded.append({"batches": [samples(batch) for batch in iterator], "end": "StopIteration"})
            iterator.reset()
        return recorded
    return epochs(iterator, ending)


def run_corpus(root: Path) -> dict:
    logging.getLogger().setLevel(logging.ERROR)  # DALI warns about resets it ignores, on the root logger
    outcomes = {}
    for data, ending, policy, kind in case_names():
        try:
            outcomes[f"{kind}, {data}, {policy}, {ending}"] = run_case(root, data, ending, policy, kind)
        except Exception as error:
            outcomes[f"{kind}, {data}, {policy}, {ending}"] = {"raises": f"{type(error).__name__}: {error}"}
    return outcomes
