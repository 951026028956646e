"""The modules a batch's way through the library enters, in order, during one ``update``.

``python benchmarks/trace_path.py [--calls]`` traces, with ``sys.setprofile``, every call of a
Python function defined in ``ignite_ranking`` during one ``metric.update(...)`` of a few
representative cases, and prints for each case its *module sequence* and its *returns*.

Definitions (what ``tests/test_batch_path.py`` keeps):

- A *call* is a profile ``"call"`` event whose function is defined in a file under
  ``src/ignite_ranking``; a generator resuming (one event per ``next``) is not a call, its first
  start is. Its *caller* is the nearest frame below it that runs library code.
- A call *enters* its function's module when that module differs from its caller's (the first
  call, ``update``, enters its own): a function calling helpers of its own module stays in it.
- The *module sequence* is the modules entered, in order, consecutive repeats merged (a step
  calling two functions of one module in turn enters it once). Modules in :data:`LEAVES` are
  left out of it: leaf utilities, which import nothing of the library's but one another and which any step may
  call (the dtype and NaN checks, the exact relevance tests, the row chunks), are read once
  on their own and are no place the way comes back to.
- A *return* is an entry of the module sequence whose module already appeared earlier in it:
  the way had left that module for a different one and must come back to it. ``returns``
  counts them, and :func:`returns_by_module` says to which modules.
- :data:`STEPS` names the step of each module on the way (form, ranked batch, selection,
  scorers, exact sums); :func:`steps_out_of_order` lists the entries that go back to an earlier
  step. The lifecycle that calls the steps (``metrics/base.py``, ``metrics/group.py``) and the
  ranked batch's type (``kernels/batch.py``, read by every step after it) have no step.

Each case runs once untraced first (on another metric), so that the traced update sees no
first-use work (lazy imports, caches).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

import ignite_ranking

PACKAGE = Path(ignite_ranking.__file__).resolve().parent
# Leaf utilities: modules that import nothing of the library's and that every step may use.
LEAVES = frozenset(
    {
        "kernels/backend.py",
        "kernels/chunks.py",
        "kernels/constants.py",
        "kernels/inputs.py",
        "kernels/lookup.py",
        "metrics/devices.py",
    }
)
# The step of each module a batch's way enters, in the order of the steps.
STEPS = {
    "metrics/batches.py": "form",
    "kernels/forms.py": "form",
    "kernels/sources.py": "form",
    "kernels/ranking.py": "ranked batch",
    "kernels/candidates.py": "ranked batch",
    "kernels/ideal.py": "ranked batch",
    "kernels/within_r.py": "ranked batch",
    "kernels/selection.py": "selection",
    "kernels/boundary.py": "selection",
    "kernels/ties.py": "selection",
    "kernels/judged.py": "scorers",
    "metrics/per_query.py": "scorers",
    "metrics/cutoff_tail.py": "scorers",
    "kernels/scoring.py": "scorers",
    "kernels/expected.py": "scorers",
    "kernels/exact_sum.py": "exact sums",
    "metrics/label_notes.py": "exact sums",
}
STEP_ORDER = ("form", "ranked batch", "selection", "scorers", "exact sums")
_GENERATOR = 0x20 | 0x200  # CO_GENERATOR | CO_ASYNC_GENERATOR


@dataclass
class Trace:
    """One traced update: every call (``module:function``) and the module sequence."""

    calls: list[str]
    sequence: list[str]

    @property
    def returns(self) -> int:
        """Entries of the module sequence whose module appeared earlier in it."""
        return sum(returns_by_module(self.sequence).values())


def module_sequence(modules: list[str], leaves: frozenset[str] = LEAVES) -> list[str]:
    """``modules`` without :data:`LEAVES`, consecutive repeats merged."""
    sequence: list[str] = []
    for module in modules:
        if module not in leaves and (not sequence or sequence[-1] != module):
            sequence.append(module)
    return sequence


def returns_by_module(sequence: list[str]) -> Counter:
    """How many times the sequence comes back to each module after leaving it."""
    seen: set[str] = set()
    back: Counter = Counter()
    for module in sequence:
        if module in seen:
            back[module] += 1
        seen.add(module)
    return back


def steps_out_of_order(sequence: list[str]) -> list[str]:
    """The entries of ``sequence`` whose step comes before that of an entry ahead of them
    (a metric's own module, ``metrics/<name>.py``, is a scorer)."""
    late, out = 0, []
    for module in sequence:
        step = STEPS.get(module)
        if (
            step is None
            and module.startswith("metrics/")
            and module not in ("metrics/base.py", "metrics/group.py")
        ):
            step = "scorers"
        if step is None:
            continue
        at = STEP_ORDER.index(step)
        if at < late:
            out.append(module)
        late = max(late, at)
    return out


def trace(call: Callable[[], object], leaves: frozenset[str] = LEAVES) -> Trace:
    """Runs ``call()`` under ``sys.setprofile`` and returns the library calls it made."""
    calls: list[str] = []
    entered: list[str] = []
    started: set[int] = set()  # generator frames already started (a resume is not a call)
    prefix = str(PACKAGE) + "/"

    def module_of(frame) -> str | None:
        while frame is not None and not frame.f_code.co_filename.startswith(prefix):
            frame = frame.f_back
        return None if frame is None else frame.f_code.co_filename[len(prefix) :]

    def profile(frame, event, _arg):
        if event != "call":
            return
        code = frame.f_code
        if not code.co_filename.startswith(prefix):
            return
        if code.co_flags & _GENERATOR:
            if id(frame) in started:
                return
            started.add(id(frame))
        module = code.co_filename[len(prefix) :]
        calls.append(f"{module}:{code.co_qualname}")
        if module_of(frame.f_back) != module:
            entered.append(module)

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return Trace(calls, module_sequence(entered, leaves))


# ------------------------------------------------------------------------------------------- cases


def _dense(batch: int = 6, items: int = 100, seed: int = 0, levels: int | None = None):
    generator = torch.Generator().manual_seed(seed)
    if levels is None:
        scores = torch.rand(batch, items, generator=generator)
    else:  # a few score values: ties everywhere, also across the cutoffs
        scores = torch.randint(0, levels, (batch, items), generator=generator).float()
    labels = (torch.rand(batch, items, generator=generator) < 0.15).long()
    labels[0] = 0  # a query with nothing relevant
    return scores, labels


def _six(**options):
    from ignite_ranking import MAP, MRR, NDCG, HitRate, Precision, RankingMetrics, Recall

    cutoffs = [1, 5, 10]
    return RankingMetrics(
        mrr=MRR(cutoffs, **options),
        ndcg=NDCG(cutoffs, **options),
        recall=Recall(cutoffs, **options),
        precision=Precision(cutoffs, **options),
        hit_rate=HitRate(cutoffs, **options),
        map=MAP(cutoffs, **options),
    )


def _mrr(**options):
    from ignite_ranking import MRR

    return MRR([1, 5, 10], **options)


def _flat():
    scores, labels = _dense()
    lengths = [7, 3, 12, 5, 9, 4]  # ragged queries: candidate lists
    preds = torch.cat([scores[i, :n] for i, n in enumerate(lengths)])
    target = torch.cat([labels[i, :n] for i, n in enumerate(lengths)])
    indexes = torch.repeat_interleave(torch.arange(len(lengths)), torch.tensor(lengths))
    return preds, target, indexes


def _sparse():
    scores, labels = _dense()
    return scores, labels.to_sparse()


def _retrieved():
    from ignite_ranking import Retrieved

    scores, labels = _dense()
    top = scores.topk(10, dim=1)
    relevant = torch.full((labels.shape[0], labels.shape[1]), -1)
    for row in range(labels.shape[0]):
        found = labels[row].nonzero().squeeze(1)
        relevant[row, : found.numel()] = found
    return Retrieved(top.indices, relevant, scores=top.values)


# name -> (a fresh metric, the update's output)
CASES: dict[str, tuple[Callable[[], object], Callable[[], object]]] = {
    "mrr_dense": (_mrr, _dense),
    "mrr_dense_ties": (_mrr, lambda: _dense(levels=3)),
    "mrr_dense_average": (lambda: _mrr(ties="average"), lambda: _dense(levels=3)),
    "six_metrics": (_six, _dense),
    "mrr_flat": (_mrr, _flat),
    "mrr_sparse": (_mrr, _sparse),
    "mrr_retrieved": (_mrr, _retrieved),
}


def trace_case(name: str, leaves: frozenset[str] = LEAVES) -> Trace:
    """The trace of one ``update`` of case ``name`` (after one untraced warm-up update)."""
    make_metric, make_output = CASES[name]
    make_metric().update(make_output())
    metric, output = make_metric(), make_output()
    return trace(lambda: metric.update(output), leaves)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", default=list(CASES), help="cases to trace (default: all)")
    parser.add_argument("--calls", action="store_true", help="also list every call")
    parser.add_argument("--no-leaves", action="store_true", help="count the leaf utilities too")
    args = parser.parse_args()
    total = 0
    for name in args.cases:
        result = trace_case(name, frozenset() if args.no_leaves else LEAVES)
        total += result.returns
        back = ", ".join(f"{m} {n}" for m, n in returns_by_module(result.sequence).most_common())
        late = steps_out_of_order(result.sequence)
        print(
            f"{name}: {len(set(result.sequence))} modules, {result.returns} returns ({back or 'none'}); "
            f"{len(late)} back to an earlier step"
        )
        print("  " + " -> ".join(result.sequence))
        if args.calls:
            print("\n".join("    " + c for c in result.calls))
    print(f"total returns: {total}")


if __name__ == "__main__":
    main()
