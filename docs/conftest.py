"""Runs the ``>>>`` examples of the documentation pages as doctests under ``make test``.

Each Markdown page under docs/ is one test. Code-fence lines are blanked before parsing (line
numbers stay right), so an example's expected output ends at its closing fence, as a reader
sees it, instead of running on into the fence. Examples on one page share their names, top to
bottom, like a doctest file.
"""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest

FENCE = re.compile(r"^\s*(```|~~~|:::)")
OPTIONS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
DOCS = Path(__file__).resolve().parent


def pytest_collect_file(file_path: Path, parent):
    if file_path.suffix == ".md" and "_build" not in file_path.relative_to(DOCS).parts:
        return MarkdownPage.from_parent(parent, path=file_path)
    return None


class MarkdownPage(pytest.File):
    def collect(self):
        text = self.path.read_text(encoding="utf-8")
        blanked = "\n".join("" if FENCE.match(line) else line for line in text.splitlines())
        test = doctest.DocTestParser().get_doctest(blanked, {}, self.path.name, str(self.path), 0)
        if test.examples:
            yield MarkdownDoctest.from_parent(self, name="doctest", test=test)


class MarkdownDoctest(pytest.Item):
    def __init__(self, *, test: doctest.DocTest, **kwargs):
        super().__init__(**kwargs)
        self.test = test

    def runtest(self) -> None:
        failures: list[str] = []
        runner = doctest.DocTestRunner(optionflags=OPTIONS)
        runner.run(self.test, out=failures.append, clear_globs=True)
        if failures:
            raise MarkdownDoctestFailure("".join(failures))

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, MarkdownDoctestFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, None, f"doctests in {self.path.name}"


class MarkdownDoctestFailure(Exception):
    pass
