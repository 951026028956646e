"""The built documentation works where it is opened, with no network.

Every script, stylesheet, font, image or frame that a page or a stylesheet of docs/_build/html
pulls in must be a file of the build: a remote one (``https://``, ``//host``, any ``scheme://``)
or a local one that is missing breaks the site offline (formulas left as raw LaTeX when MathJax
comes from a CDN). Links a reader follows (``<a href>``) may point anywhere. JavaScript files
are not scanned (they hold namespace URIs such as MathML's); the tags that load them are,
and an inline script may not name an http(s) URL.

Under ``make test`` the checks of the built site skip while there is no build (CI runs the
tests before ``make docs``); ``make docs-check``, which .ci/run calls, builds the site and runs
this module with ``REQUIRE_DOCS_BUILD=1``, under which a missing build fails instead. The
checker's own tests run on crafted pages either way.
"""

from __future__ import annotations

import os
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

BUILD = Path(__file__).resolve().parents[1] / "docs" / "_build" / "html"
REQUIRE_BUILD = "REQUIRE_DOCS_BUILD"
# The pages whose formulas the site exists to show; they must be in the build.
MATH_PAGES = ["contract.html", "metrics/mrr.html", "metrics/ndcg.html"]
# Where sphinx.ext.mathjax (Sphinx 9) loads MathJax from when nothing bundles it.
MATHJAX_CDN = "https://cdn.jsdelivr.net/npm/mathjax@4/tex-mml-chtml.js"

# Attributes whose URL the browser fetches on its own when it renders the element.
FETCHED = {
    "script": ("src",),
    "link": ("href",),
    "img": ("src", "srcset"),
    "source": ("src", "srcset"),
    "iframe": ("src",),
    "embed": ("src",),
    "audio": ("src",),
    "video": ("src", "poster"),
    "track": ("src",),
    "input": ("src",),
    "object": ("data",),
}
SCHEME_OR_HOST = re.compile(r"^(?:[a-z][a-z0-9+.-]*:)?//", re.IGNORECASE)
OTHER_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)
CSS_COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)
CSS_URL = re.compile(r"""url\(\s*(?:"([^"]*)"|'([^']*)'|([^)\s]*))\s*\)""", re.IGNORECASE)
CSS_IMPORT_STRING = re.compile(r"""@import\s+(?:"([^"]*)"|'([^']*)')""", re.IGNORECASE)
INLINE_SCRIPT_URL = re.compile(r"""https?://[^\s"'`)]+|["'`]//[\w.-]+\.[a-z]{2,}[^"'`]*""", re.IGNORECASE)


class _References(HTMLParser):
    """Collects (what, url) for every resource a page makes the browser fetch."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, str]] = []
        self._raw_text_tag: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name in FETCHED.get(tag, ()):
                urls = [c.split()[0] for c in value.split(",") if c.strip()] if name == "srcset" else [value]
                self.found += [(f"<{tag} {name}>", url) for url in urls]
            elif name == "style":
                self.found += [(f"<{tag} style>", url) for url in css_urls(value)]
        if tag in ("script", "style"):
            self._raw_text_tag = tag

    def handle_endtag(self, tag: str) -> None:
        if tag == self._raw_text_tag:
            self._raw_text_tag = None

    def handle_data(self, data: str) -> None:
        if self._raw_text_tag == "style":
            self.found += [("<style>", url) for url in css_urls(data)]
        elif self._raw_text_tag == "script":
            self.found += [
                ("inline <script>", m.group().strip("\"'`")) for m in INLINE_SCRIPT_URL.finditer(data)
            ]


def css_urls(css: str) -> list[str]:
    """The URLs a stylesheet fetches: its ``url(...)`` values and ``@import "..."`` targets."""
    css = CSS_COMMENT.sub("", css)
    urls = [next(g for g in m.groups() if g is not None) for m in CSS_URL.finditer(css)]
    urls += [m.group(1) if m.group(1) is not None else m.group(2) for m in CSS_IMPORT_STRING.finditer(css)]
    return urls


def html_references(html: str) -> list[tuple[str, str]]:
    """(what, url) for each script, stylesheet, font, image or frame that a page fetches."""
    parser = _References()
    parser.feed(html)
    parser.close()
    return parser.found


def offline_problems(root: Path) -> list[str]:
    """Every reference under ``root`` (a built HTML site) that does not resolve to one of its files."""
    problems = []
    for path in sorted(root.rglob("*")):
        if path.suffix == ".html":
            references = html_references(path.read_text(encoding="utf-8"))
        elif path.suffix == ".css":
            references = [("stylesheet url", url) for url in css_urls(path.read_text(encoding="utf-8"))]
        else:
            continue
        page = path.relative_to(root).as_posix()
        for what, url in references:
            why = _unresolved(url, path.parent, root)
            if why:
                problems.append(f"{page}: {what} {url!r} {why}")
    return problems


def _unresolved(url: str, base: Path, root: Path) -> str | None:
    """Why ``url``, referenced from a file in ``base``, is not a file of the site; None if it is."""
    url = url.strip()
    if SCHEME_OR_HOST.match(url):
        return "is remote: the page needs a network"
    if OTHER_SCHEME.match(url):  # data:, blob:, about: are part of the page itself
        return None
    path = unquote(urlsplit(url).path)
    if not path:  # "#fragment" or "?query" alone: the page itself
        return None
    if path.startswith("/"):
        return "is absolute: only a web server's root resolves it"
    target = (base / path).resolve()
    if not target.is_relative_to(root.resolve()):
        return "points outside the built site"
    if not target.is_file():
        return "is missing from the built site"
    return None


@pytest.fixture(scope="module")
def built_site() -> Path:
    if (BUILD / "index.html").is_file():
        return BUILD
    message = f"no built site at {BUILD}: run `make docs` first"
    if os.environ.get(REQUIRE_BUILD):
        pytest.fail(f"{message} ({REQUIRE_BUILD} is set: the check must not skip)")
    pytest.skip(message)


def test_built_site_references_nothing_remote_or_missing(built_site):
    problems = offline_problems(built_site)
    assert not problems, (
        "the built docs need files they do not have (rebuild with `make docs`):\n" + "\n".join(problems)
    )


@pytest.mark.parametrize("page", MATH_PAGES)
def test_formula_pages_load_mathjax_from_the_build(built_site, page):
    html = (built_site / page).read_text(encoding="utf-8")
    assert 'class="math notranslate' in html, f"{page} has no formula left to render"
    scripts = [url for what, url in html_references(html) if what == "<script src>"]
    mathjax = [url for url in scripts if "mathjax" in url.lower()]
    assert mathjax, f"{page} loads no MathJax; its scripts: {scripts}"
    for url in mathjax:
        assert _unresolved(url, (built_site / page).parent, built_site) is None, url


# The checker itself, on crafted sites: it must catch a CDN coming back.


def _site(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def test_sphinx_default_mathjax_cdn_is_caught(tmp_path):
    page = f'<html><head><script defer="defer" src="{MATHJAX_CDN}"></script></head></html>'
    site = _site(tmp_path, {"metrics/mrr.html": page})
    assert offline_problems(site) == [
        f"metrics/mrr.html: <script src> {MATHJAX_CDN!r} is remote: the page needs a network"
    ]


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("page.html", '<link rel="stylesheet" href="https://fonts.googleapis.com/css2?family=Inter">'),
        ("page.html", '<link rel="preload" as="font" href="HTTP://cdn.example.org/f.woff2">'),
        ("page.html", '<script src="//cdn.example.org/lib.js"></script>'),
        ("page.html", '<img alt="badge" src="https://img.shields.io/badge/x-y-green">'),
        ("page.html", '<img alt="" srcset="https://cdn.example.org/a@2x.png 2x">'),
        ("page.html", '<iframe src="https://www.youtube.com/embed/x"></iframe>'),
        ("page.html", '<div style="background: url(https://cdn.example.org/bg.png)"></div>'),
        ("page.html", "<style>@import 'https://cdn.example.org/theme.css';</style>"),
        (
            "page.html",
            "<script>window.MathJax = {loader: {paths: {mathjax: 'https://cdn.example.org/mj'}}}</script>",
        ),
        ("_static/custom.css", '@import url("https://fonts.googleapis.com/css2?family=Inter");'),
        ("_static/custom.css", "@font-face { src: url(//fonts.gstatic.com/s/inter.woff2) format('woff2'); }"),
        ("_static/custom.css", "a { background-image: url( 'https://cdn.example.org/i.svg' ); }"),
    ],
)
def test_remote_resources_are_caught(tmp_path, name, text):
    problems = offline_problems(_site(tmp_path, {name: text}))
    assert len(problems) == 1
    assert problems[0].startswith(f"{name}: ") and problems[0].endswith("is remote: the page needs a network")


def test_missing_and_absolute_local_assets_are_caught(tmp_path):
    site = _site(
        tmp_path,
        {
            "metrics/mrr.html": '<script defer src="../_static/mathjax/tex-chtml.js"></script>'
            '<link rel="stylesheet" href="/_static/site.css">',
            "_static/site.css": "@font-face { src: url(fonts/missing.woff2); }",
        },
    )
    assert offline_problems(site) == [
        "_static/site.css: stylesheet url 'fonts/missing.woff2' is missing from the built site",
        "metrics/mrr.html: <script src> '../_static/mathjax/tex-chtml.js' is missing from the built site",
        "metrics/mrr.html: <link href> '/_static/site.css' is absolute: only a web server's root resolves it",
    ]


def test_a_self_contained_site_passes(tmp_path):
    page = """<html><head>
    <link rel="stylesheet" href="../_static/site.css?v=1a2b">
    <link rel="search" href="#">
    <script defer src="../_static/mathjax/tex-chtml.js"></script>
    <script>window.MathJax = {"options": {"processHtmlClass": "math"}}  // see docs</script>
    <style>.x { background:
        url("data:image/svg+xml;charset=utf-8,<svg xmlns='http://www.w3.org/2000/svg'/>") }</style>
    </head><body>
    <a href="https://github.com/ignite-ranking/ignite-ranking">source</a>
    <img alt="chart" src="../_images/chart%20one.png" srcset="../_images/chart%20one.png 1x">
    </body></html>"""
    css = """/* MathJax fonts, see https://www.mathjax.org */
    @font-face { font-family: MJ; src: url("fonts/mj.woff2") format("woff2"), url('fonts/mj.woff'); }"""
    site = _site(
        tmp_path,
        {
            "metrics/mrr.html": page,
            "_static/site.css": css,
            "_static/fonts/mj.woff2": "",
            "_static/fonts/mj.woff": "",
            "_static/mathjax/tex-chtml.js": "var url = 'https://www.w3.org/1998/Math/MathML';",
            "_images/chart one.png": "",
        },
    )
    assert offline_problems(site) == []
