"""The result of :func:`~ignite_ranking.compare.compare`: a table, Markdown, LaTeX, JSON, CSV, a plot."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import string
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["Comparison", "Report"]

_TEST_NAMES = {
    "t-test": "paired t-test",
    "wilcoxon": "Wilcoxon signed-rank test",
    "randomization": "paired randomization test",
    "bootstrap": "paired bootstrap test",
}
_CORRECTION_NAMES = {
    "none": "no correction",
    "bonferroni": "Bonferroni correction",
    "holm": "Holm correction",
    "bh": "Benjamini-Hochberg correction",
}


@dataclass(frozen=True)
class Comparison:
    """System B against system A on one metric; differences are ``B - A``.

    Attributes:
        metric, system_a, system_b: what is compared.
        mean_a, mean_b: the systems' means over the compared queries.
        difference: the mean of the per-query differences ``B - A``.
        ci_percentile, ci_bca: ``1 - alpha`` bootstrap intervals of the mean difference.
        ci_t: the ``1 - alpha`` Student t-interval of the mean difference (n - 1 degrees of
            freedom), the interval of the paired t-test.
        p, p_adjusted: test name -> p-value, and adjusted over the comparisons of the metric.
        effect_size: paired Cohen's d, mean difference / sd of the differences.
        wins, ties, losses: queries where B is above, equal to, below A.
    """

    metric: str
    system_a: str
    system_b: str
    mean_a: float
    mean_b: float
    difference: float
    ci_percentile: tuple[float, float]
    ci_bca: tuple[float, float]
    p: dict[str, float]
    p_adjusted: dict[str, float]
    effect_size: float
    wins: int
    ties: int
    losses: int
    ci_t: tuple[float, float] = (math.nan, math.nan)


def _clean(value):
    """JSON-safe: NaN and infinities become None."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def _fmt(value: float, signed: bool = False) -> str:
    if math.isnan(value):
        return "nan"
    return f"{value:+.4f}" if signed else f"{value:.4f}"


def _fmt_p(value: float) -> str:
    if math.isnan(value):
        return "nan"
    return f"{value:.2e}" if value < 1e-4 else f"{value:.4f}"


def _is_control(ch: str) -> bool:
    """A character that breaks a line or a layout: C0/C1 controls (newlines, tabs), U+2028/9."""
    return unicodedata.category(ch) in ("Cc", "Zl", "Zp")


def _plain(text: str) -> str:
    """A plain-table cell: control characters (newlines, tabs...) as Python writes them, ``\\n``."""
    return "".join(ch.encode("unicode_escape").decode("ascii") if _is_control(ch) else ch for ch in text)


# Backslash escapes of the ASCII punctuation that formats inline Markdown or splits a pipe table;
# HTML's specials as entities, so that no name is read as a tag.
_MARKDOWN = {ch: "\\" + ch for ch in "\\`*_[]|~"}
_MARKDOWN.update({"&": "&amp;", "<": "&lt;", ">": "&gt;"})


def _markdown(text: str) -> str:
    """A Markdown table cell or text: a line break as ``<br>``, other controls as ``\\xNN``."""
    text = text.replace("\r\n", "\n")
    out = []
    for ch in text:
        if ch in ("\n", "\r", "\u2028", "\u2029"):
            out.append("<br>")
        elif _is_control(ch):
            out.append("\\" + ch.encode("unicode_escape").decode("ascii"))
        else:
            out.append(_MARKDOWN.get(ch, ch))
    return "".join(out)


_LATEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_"}
_LATEX.update({"{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"})
_LATEX.update({"<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}"})


def _latex_escape(text: str) -> str:
    """LaTeX text: its specials escaped; line breaks and other controls as a space (a blank line
    would end the tabular's paragraph)."""
    return "".join(" " if _is_control(ch) else _LATEX.get(ch, ch) for ch in text)


def _marker(index: int) -> str:
    """The LaTeX table's mark of the system at ``index``: a..z, then aa, ab... (as spreadsheet
    columns), distinct for any number of systems."""
    name = ""
    index += 1
    while index:
        index, digit = divmod(index - 1, 26)
        name = string.ascii_lowercase[digit] + name
    return name


@dataclass
class Report:
    """Every comparison of a :func:`~ignite_ranking.compare.compare` call, with its settings.

    ``str(report)`` is a plain-text table; :meth:`to_markdown`, :meth:`to_latex`,
    :meth:`to_json` and :meth:`to_csv` export it; :meth:`plot` draws the per-query differences.

    Attributes:
        systems, metrics: names, in the order given.
        queries: the compared query keys (positions when the input had none).
        values: ``(systems, queries, metrics)`` per-query values.
        comparisons: one :class:`Comparison` per metric and pair (metric by metric).
        tests, correction, alpha, alternative, resamples, seed, baseline: the settings.
    """

    systems: list[str]
    metrics: list[str]
    queries: list
    values: np.ndarray
    comparisons: list[Comparison]
    tests: list[str]
    correction: str
    alpha: float
    alternative: str
    resamples: int
    seed: int | None
    baseline: str | None

    @property
    def num_queries(self) -> int:
        return len(self.queries)

    def means(self) -> dict[str, dict[str, float]]:
        """system -> metric -> mean over the compared queries."""
        table = self.values.mean(axis=1)
        return {
            s: {m: float(table[i, k]) for k, m in enumerate(self.metrics)} for i, s in enumerate(self.systems)
        }

    def significant(self, comparison: Comparison) -> bool:
        """Whether the first test's adjusted p-value is below alpha."""
        p = comparison.p_adjusted[self.tests[0]]
        return not math.isnan(p) and p < self.alpha

    # ------------------------------------------------------------------------------- tables

    def _settings_line(self, escape: Callable[[str], str]) -> str:
        level = round(100 * (1 - self.alpha), 6)
        tests = ", ".join(_TEST_NAMES[t] for t in self.tests)
        if self.alternative != "two-sided":
            tests += f" (one-sided: B {self.alternative} than A)"
        against = f"against baseline {escape(self.baseline)}" if self.baseline else "all pairs"
        seed = "none" if self.seed is None else self.seed
        queries = "1 query" if self.num_queries == 1 else f"{self.num_queries} queries"
        return (
            f"{queries}, {against}; {tests}; {_CORRECTION_NAMES[self.correction]} per "
            f"metric; alpha {self.alpha:g}, {level:g}% CIs (Student t; bootstrap BCa), {self.resamples} "
            f"resamples, seed {seed}"
        )

    def _pair_header(self) -> list[str]:
        level = round(100 * (1 - self.alpha), 6)
        header = [
            "metric",
            "A",
            "B",
            "mean A",
            "mean B",
            "B - A",
            f"{level:g}% CI (t)",
            f"{level:g}% CI (BCa)",
        ]
        for test in self.tests:
            header.append(f"p {test}")
            if self.correction != "none":
                header.append(f"p adj {test}")
        return [*header, "d", "W/T/L"]

    def _pair_rows(self, escape: Callable[[str], str]) -> list[list[str]]:
        rows = []
        for c in self.comparisons:
            names = [escape(c.metric), escape(c.system_a), escape(c.system_b)]
            row = [*names, _fmt(c.mean_a), _fmt(c.mean_b), _fmt(c.difference, True)]
            for low, high in (c.ci_t, c.ci_bca):
                row.append(f"[{_fmt(low, True)}, {_fmt(high, True)}]")
            for test in self.tests:
                row.append(_fmt_p(c.p[test]))
                if self.correction != "none":
                    row.append(
                        _fmt_p(c.p_adjusted[test])
                        + ("*" if self.significant(c) and test == self.tests[0] else "")
                    )
            row += [f"{c.effect_size:.3f}", f"{c.wins}/{c.ties}/{c.losses}"]
            rows.append(row)
        return rows

    def _mean_rows(self, escape: Callable[[str], str]) -> list[list[str]]:
        means = self.means()
        return [[escape(s), *(_fmt(means[s][m]) for m in self.metrics)] for s in self.systems]

    def _tables(self, escape: Callable[[str], str]) -> list[tuple[list[str], list[list[str]]]]:
        """(header, rows) of the means and of the comparisons, names passed through ``escape``."""
        return [
            (["system", *map(escape, self.metrics)], self._mean_rows(escape)),
            (self._pair_header(), self._pair_rows(escape)),
        ]

    def to_table(self) -> str:
        """A plain-text table: the systems' means, then one row per comparison."""

        def grid(header: list[str], rows: list[list[str]]) -> str:
            widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
            lines = [
                "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True))
                for row in [header, *rows]
            ]
            lines.insert(1, "  ".join("-" * w for w in widths))
            return "\n".join(line.rstrip() for line in lines)

        star = f"* adjusted p ({self.tests[0]}) < {self.alpha:g}"
        return "\n\n".join(
            [
                self._settings_line(_plain),
                *(grid(header, rows) for header, rows in self._tables(_plain)),
                star + "; d = paired Cohen's d; W/T/L = queries where B wins/ties/loses against A",
            ]
        )

    def __str__(self) -> str:
        return self.to_table()

    def to_markdown(self) -> str:
        """The same tables as :meth:`to_table`, as Markdown pipe tables; names are escaped
        (``|``, backslash and inline markup with a backslash, ``& < >`` as entities, a line
        break as ``<br>``), so that no name adds a column or reads as markup or HTML."""

        def pipe(header: list[str], rows: list[list[str]]) -> str:
            lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
            return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])

        return "\n\n".join(
            [
                self._settings_line(_markdown) + ".",
                *(pipe(header, rows) for header, rows in self._tables(_markdown)),
                f"\\* adjusted p ({self.tests[0]}) < {self.alpha:g}; d = paired Cohen's d; "
                "W/T/L = queries where B wins/ties/loses against A.",
            ]
        )

    def to_latex(self, label: str = "tab:compare", digits: int = 4) -> str:
        """A booktabs table of the means, best value per metric bold, significance as superscripts.

        Each system gets a letter (past 26 systems: aa, ab...; the marks of a value are then
        separated by commas); a value carries the letters of the systems it is significantly
        better than (first test, adjusted p < alpha), which the caption explains. Names are
        escaped (LaTeX's specials; a line break becomes a space). Needs ``\\usepackage{booktabs}``.
        """
        letters = {s: _marker(i) for i, s in enumerate(self.systems)}
        order = {letter: i for i, letter in enumerate(letters.values())}
        joiner = "," if len(self.systems) > 26 else ""
        means = self.means()
        beats: dict[tuple[str, str], list[str]] = {}
        for c in self.comparisons:
            if self.significant(c) and c.mean_a != c.mean_b:
                winner, loser = (c.system_b, c.system_a) if c.mean_b > c.mean_a else (c.system_a, c.system_b)
                beats.setdefault((winner, c.metric), []).append(letters[loser])
        best = {m: max(means[s][m] for s in self.systems) for m in self.metrics}
        lines = [
            r"\begin{table}[t]",
            r"\centering",
            r"\caption{" + self._latex_caption() + "}",
            r"\label{" + label + "}",
            r"\begin{tabular}{l" + "r" * len(self.metrics) + "}",
            r"\toprule",
            "System & " + " & ".join(_latex_escape(m) for m in self.metrics) + r" \\",
            r"\midrule",
        ]
        for s in self.systems:
            cells = []
            for m in self.metrics:
                cell = f"{means[s][m]:.{digits}f}"
                if means[s][m] == best[m]:
                    cell = r"\textbf{" + cell + "}"
                marks = sorted(beats.get((s, m), []), key=order.__getitem__)
                if marks:
                    cell += "$^{" + joiner.join(marks) + "}$"
                cells.append(cell)
            lines.append(f"({letters[s]}) {_latex_escape(s)} & " + " & ".join(cells) + r" \\")
        lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
        return "\n".join(lines)

    def _latex_caption(self) -> str:
        scope = (
            f"against the baseline {_latex_escape(self.baseline)}" if self.baseline else "between all pairs"
        )
        return (
            f"Mean over {self.num_queries} queries; the best value per measure is in bold. A superscript "
            f"letter marks a significant improvement over the system with that letter, compared "
            f"{scope} ({_TEST_NAMES[self.tests[0]]}, {_CORRECTION_NAMES[self.correction]} over the "
            f"comparisons of each measure, $\\alpha = {self.alpha:g}$)."
        )

    # ------------------------------------------------------------------------------- exports

    def to_dict(self) -> dict:
        """Settings, means and comparisons as plain Python values (NaN as None)."""
        return _clean(
            {
                "num_queries": self.num_queries,
                "systems": self.systems,
                "metrics": self.metrics,
                "settings": {
                    "tests": self.tests,
                    "correction": self.correction,
                    "alpha": self.alpha,
                    "confidence": 1 - self.alpha,
                    "alternative": self.alternative,
                    "resamples": self.resamples,
                    "seed": self.seed,
                    "baseline": self.baseline,
                },
                "means": self.means(),
                "comparisons": [
                    {
                        "metric": c.metric,
                        "system_a": c.system_a,
                        "system_b": c.system_b,
                        "mean_a": c.mean_a,
                        "mean_b": c.mean_b,
                        "difference": c.difference,
                        "ci_t": list(c.ci_t),
                        "ci_percentile": list(c.ci_percentile),
                        "ci_bca": list(c.ci_bca),
                        "p": dict(c.p),
                        "p_adjusted": dict(c.p_adjusted),
                        "effect_size": c.effect_size,
                        "wins": c.wins,
                        "ties": c.ties,
                        "losses": c.losses,
                    }
                    for c in self.comparisons
                ],
            }
        )

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def to_csv(self) -> str:
        """One row per comparison; full precision; empty cells for NaN."""
        header = ["metric", "system_a", "system_b", "mean_a", "mean_b", "difference"]
        header += ["ci_t_low", "ci_t_high", "ci_percentile_low", "ci_percentile_high", "ci_bca_low"]
        header += ["ci_bca_high"]
        for test in self.tests:
            header += [f"p_{test}", f"p_adjusted_{test}"]
        header += ["effect_size", "wins", "ties", "losses"]
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(header)
        for c in self.comparisons:
            row = [
                c.metric,
                c.system_a,
                c.system_b,
                c.mean_a,
                c.mean_b,
                c.difference,
                *c.ci_t,
                *c.ci_percentile,
                *c.ci_bca,
            ]
            for test in self.tests:
                row += [c.p[test], c.p_adjusted[test]]
            row += [c.effect_size, c.wins, c.ties, c.losses]
            writer.writerow(["" if isinstance(v, float) and math.isnan(v) else v for v in row])
        return out.getvalue()

    def format(self, kind: str) -> str:
        """The report as ``"table"``, ``"markdown"``, ``"latex"``, ``"json"`` or ``"csv"``."""
        formats = {
            "table": self.to_table,
            "markdown": self.to_markdown,
            "latex": self.to_latex,
            "json": self.to_json,
            "csv": self.to_csv,
        }
        if kind not in formats:
            raise ValueError(f"format must be one of {list(formats)}, got {kind!r}")
        return formats[kind]()

    # ------------------------------------------------------------------------------- plot

    def differences(self, metric: str, system_a: str, system_b: str) -> np.ndarray:
        """Per-query ``B - A`` of one metric, in the order of :attr:`queries`."""
        for what, name, names in (("metric", metric, self.metrics), ("system", system_a, self.systems)):
            if name not in names:
                raise ValueError(f"{what} must be one of {names}, got {name!r}")
        if system_b not in self.systems:
            raise ValueError(f"system must be one of {self.systems}, got {system_b!r}")
        m = self.metrics.index(metric)
        return (
            self.values[self.systems.index(system_b), :, m] - self.values[self.systems.index(system_a), :, m]
        )

    def plot(
        self,
        path: str | os.PathLike,
        metric: str | None = None,
        system_a: str | None = None,
        system_b: str | None = None,
    ) -> None:
        """Writes the per-query difference chart of ``metric`` (B - A) to an image file (PNG).

        Queries are sorted by difference; bars above zero are queries where B wins. Defaults:
        the first metric and the first comparison's pair. Needs matplotlib
        (``pip install 'ignite-ranking[compare]'``).
        """
        from .plot import plot_differences

        first = self.comparisons[0]
        metric = metric or self.metrics[0]
        system_a = system_a or first.system_a
        system_b = system_b or first.system_b
        plot_differences(self.differences(metric, system_a, system_b), path, metric, system_a, system_b)
