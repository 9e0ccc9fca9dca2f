"""Untrusted text on its way into the site: bodies are rendered and sanitised, strings are
escaped, and the Markdown pages MkDocs reads carry no live markup from the record."""

from __future__ import annotations

import html
import json
import string
import unicodedata
from html.parser import HTMLParser
from pathlib import Path

import markdown
import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from support.site_records import PAYLOADS, hostile_record

from atlas_files import sitegen
from atlas_files.facts import timeutil
from atlas_files.protocol import artifacts, leases
from atlas_files.sitegen.sanitize import (
    ALLOWED_ATTRIBUTES,
    ALLOWED_TAGS,
    BodyRenderer,
    clean_str,
    new_markdown,
    text,
)
from atlas_files.storage import frontmatter
from atlas_files.storage.record import Record

MARKDOWN_BITS = [
    "# ", "## ", "\n\n", "\n", "`", "```\n", "    ", "> ", "- ", "1. ", "| a | b |\n|---|---|\n",
    "[x](", ")", "![i](", "<", ">", "{: ", " }", "&#", ";", "javascript:", "data:text/html,",
    "\"", "'", "*", "_", "[ref]: ", "<https://x.y>", "&lt;", "\x02", "\x03",
]
hostile_text = st.lists(
    st.one_of(st.sampled_from(PAYLOADS + MARKDOWN_BITS), st.text(max_size=20)), max_size=14,
).map("".join)

# What the generator itself puts around record text (tags and attributes of its own).
PAGE_TAGS = ALLOWED_TAGS | {
    "div", "span", "time", "table", "details", "summary", "label", "select", "option",
    "input", "datalist", "section", "p", "h1", "h2", "h3", "a", "pre", "code", "br", "ul",
    "li", "em", "strong", "wbr",
}
PAGE_ATTRIBUTES = {
    "class", "id", "href", "title", "datetime", "style", "role", "aria-valuemin",
    "aria-valuemax", "aria-valuenow", "data-atlas-age", "data-atlas-expires",
    "data-atlas-observed", "data-atlas-stale-after", "data-atlas-filter-for", "data-atlas-key",
    "data-search-exclude", "data-label",
    "data-project", "data-relation", "data-topic", "value", "type", "list", "placeholder",
    "rel", "src", "alt", "align", "colspan", "rowspan", "start", "width", "height",
}


class Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))


def elements(fragment: str) -> list[tuple[str, dict[str, str]]]:
    c = Collect()
    c.feed(fragment)
    c.close()
    return c.tags


def assert_inert(fragment: str, tags: set[str], attributes: set[str] | None) -> None:
    for tag, attrs in elements(fragment):
        assert tag in tags, (tag, fragment)
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, name)
            if attributes is None:
                assert name in ALLOWED_ATTRIBUTES.get(tag, set()) | {"rel"}, (tag, name)
            else:
                assert name in attributes, (tag, name)
            if name in ("href", "src"):
                scheme = value.split(":", 1)[0].lower() if ":" in value.split("/")[0] else ""
                assert scheme in ("", "http", "https", "mailto"), (tag, value)
            if name == "style":
                assert value.startswith("width: ") and value.endswith("%"), value


def test_each_payload_is_inert_after_rendering() -> None:
    r = BodyRenderer()
    for payload in PAYLOADS:
        out = r.render(payload, lambda target: None)
        assert_inert(out, ALLOWED_TAGS, None)
        assert "__pwned" not in "".join(str(a) for _, a in elements(out))


@settings(max_examples=150, deadline=None)
@given(body=hostile_text)
# Emphasis around raw HTML made Python-Markdown lose one of its placeholders, which
# reached the page as "klzzwxh:0002" and a control character (found by this test).
@example(body="_<script>window.__pwned='script'</script>_<script>window.__pwned='s'</script>")
def test_rendered_bodies_hold_only_allowed_markup(body: str) -> None:
    out = BodyRenderer().render(body, lambda target: "../x.html#v1" if "@" in target else None)
    assert_inert(out, ALLOWED_TAGS, None)
    assert "\x02" not in out and "\x03" not in out and "klzzwxh" not in out


@settings(max_examples=200, deadline=None)
@given(value=hostile_text)
def test_text_escapes_everything_and_loses_nothing_but_controls(value: str) -> None:
    out = text(value)
    assert not set(out) & set("<>\"'")
    assert html.unescape(out) == clean_str(value)


# Prose with every ASCII punctuation mark, runs of spaces before line ends, and Markdown.
markdownish_text = st.lists(st.one_of(
    st.sampled_from(MARKDOWN_BITS + ["  \n", "`c`", "**b**", "_i_", "<b>x</b>", "a@b.c",
                                     "<x@y.z>", "\\*", "\\.", "a \\# b", "[l](u)",
                                     "![i](u)", "&amp;"]),
    st.text(alphabet=string.ascii_letters[:4] + " \n", max_size=8),
    st.text(alphabet=string.punctuation, max_size=2),
), max_size=16).map("".join)


@settings(max_examples=300, deadline=None)
@given(body=markdownish_text)
def test_skipping_plain_text_renders_as_python_markdown_does(body: str) -> None:
    """The renderer skips Python-Markdown's inline pass on texts where no pattern can
    match; what it renders must be exactly what Python-Markdown renders without that."""
    source = clean_str(body)
    assert new_markdown().convert(source) == new_markdown(skip_plain_text=False).convert(source)


def test_body_links_only_to_the_web_or_to_resolved_pages() -> None:
    r = BodyRenderer()
    body = ("[a](plan@v2) [b](https://e.x/p) [c](mailto:x@e.x) [d](#own-heading) "
            "[e](../../../../etc/passwd) [f](ftp://e.x) ![g](img.png) ![h](https://e.x/i.png)")
    out = r.render(body, lambda target: "plan.html#v2" if target == "plan@v2" else None)
    hrefs = [a.get("href") for t, a in elements(out) if t == "a"]
    assert hrefs == ["plan.html#v2", "https://e.x/p", "mailto:x@e.x", None, None, None]
    srcs = [a.get("src") for t, a in elements(out) if t == "img"]
    assert srcs == [None, "https://e.x/i.png"]


def _site_markdown(out: Path) -> markdown.Markdown:
    """Python-Markdown configured as the generated mkdocs.yml configures MkDocs."""
    config = yaml.safe_load((out / "mkdocs.yml").read_text())
    names, configs = [], {}
    for ext in config["markdown_extensions"]:
        if isinstance(ext, dict):
            (name, options), = ext.items()
            names.append(name)
            configs[name] = options or {}
        else:
            names.append(ext)
    return markdown.Markdown(extensions=names, extension_configs=configs)


def _assert_pages_inert(out: Path) -> None:
    md = _site_markdown(out)
    for page in (out / "docs").rglob("*.md"):
        source = page.read_text()
        front, _, body = source.partition("\n---\n")
        meta = yaml.safe_load(front.removeprefix("---\n"))
        assert set(meta) <= {"title", "tags", "hide"}
        for tag in meta.get("tags") or []:
            assert tag in {"proposal", "accepted", "retracted", "corrected"}
        rendered = md.reset().convert(body)
        assert_inert(rendered, PAGE_TAGS, PAGE_ATTRIBUTES)
        for tag, attrs in elements(rendered):
            for name, value in attrs.items():
                # Record text may sit in a text-only attribute (a tooltip, a filter key),
                # escaped; nowhere else.
                if "__pwned" in value:
                    assert name in {"title", "value", "datetime"} or name.startswith("data-"), \
                        (tag, name, value)


def test_hostile_record_pages_carry_no_live_markup(tmp_path: Path) -> None:
    record = hostile_record(tmp_path / "rec")
    result = sitegen.write_docs(record, tmp_path / "out")
    assert result.topics == 1
    _assert_pages_inert(tmp_path / "out")
    # The hostile strings are still there, as text for a reader.
    evil = (tmp_path / "out" / "docs" / "artifacts" / "web" / "evil.md").read_text()
    assert html.escape("<script>window.__pwned='script'</script>") in evil


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(author=hostile_text, summary=hostile_text, body=hostile_text, why=hostile_text)
def test_hand_written_files_with_hostile_fields_stay_inert(
        tmp_path_factory: pytest.TempPathFactory, author: str, summary: str, body: str,
        why: str) -> None:
    root = tmp_path_factory.mktemp("hostile")
    record = Record.init(root / "rec", ["web"])
    stream = record.artifact_stream("t", "web")
    raw = clean_str(body).encode("utf-8", "replace")
    meta = {"name": "t", "version": 1, "based_on": 0, "author": clean_str(author),
            "written_at": timeutil.format_time(timeutil.now()), "summary": clean_str(summary),
            "digest": frontmatter.digest_of(raw)}
    stream.folder.mkdir(parents=True)
    stream.path(1).write_bytes(frontmatter.render(meta, raw))
    printable = "".join(ch for ch in why if unicodedata.category(ch) not in ("Cc", "Cs"))
    one_line = " ".join(printable.split())[:400] or "x"  # leases refuse control characters
    leases.claim(record, "box", holder="alice", duration_s=60, why=one_line)
    sitegen.write_docs(record, root / "out")
    _assert_pages_inert(root / "out")


def test_a_tampered_cache_is_still_sanitised(tmp_path: Path) -> None:
    record = Record.init(tmp_path / "rec", ["web"])
    artifacts.put(record, "t", "# Plain\n\nnothing to see\n", author="alice")
    artifacts.put(record, "t", "# Plain\n\nstill nothing\n", author="alice", expect=1)
    out = tmp_path / "out"
    sitegen.write_docs(record, out)
    shards = {p: json.loads(p.read_text()) for p in (out / ".atlas-cache").glob("bodies-*.json")}
    (body_file, body_key), = [(p, k) for p, d in shards.items() for k in d["bodies"]
                              if "still nothing" in d["bodies"][k] and not k.startswith("diff:")]
    (diff_file, diff_key), = [(p, k) for p, d in shards.items() for k in d["bodies"]
                              if k.startswith("diff:")]
    assert "+still nothing" in shards[diff_file]["bodies"][diff_key]
    shards[body_file]["bodies"][body_key] = (
        "<p>cached</p><script>window.__pwned=1</script><img src=x onerror=y>")
    shards[diff_file]["bodies"][diff_key] = "+<script>window.__pwned=2</script>\n"
    for path, data in shards.items():
        path.write_text(json.dumps(data))
    # The topic's memo would keep its page as it is; without it, the page is made again
    # from the (tampered) rendered bodies.
    (out / ".atlas-cache" / "topics.json").unlink()
    sitegen.write_docs(record, out)
    page = (out / "docs" / "artifacts" / "web" / "t.md").read_text()
    assert "<p>cached</p>" in page and "__pwned=2" in page  # the cache was used ...
    assert "<script" not in page and "onerror" not in page  # ... and sanitised again
