"""A changed turn redoes what changed: every later turn gives what a fresh pipeline gives, and says so in its events.

Sections of files that did not change are handed on as the same objects, so
each stage takes again what it made of them; these tests pin that the block,
the records, the manifest and the notes are exactly those of a cold render
after every kind of edit, and that a processor of the user's sees the
unchanged sections again, the edited one new.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs
from support.pipelines import events_named
from support.trees import write_atomically

from memconfig import Pipeline, Section

NAMES = ("a.md", "b.md", "c.md", "d.md")
EDITS: list[tuple[str, str | None]] = [  # (file, its new text; None: deleted)
    ("b.md", "b, edited"),
    ("c.md", "c holds </agent_memory> now"),  # escaped: a note on this turn
    ("a.md", "---\ntitle: x\n---\na with frontmatter"),
    ("d.md", "<!-- only a comment -->\n"),  # empty once cleaned: out of the prompt
    ("b.md", None),
    ("b.md", "b is back"),
    ("d.md", "d is back"),
    ("c.md", "c, plain again"),
]


def _config(root: Path, policy: str) -> dict[str, Any]:
    return {
        "version": 1,
        "base_dir": str(root),
        "sources": list(NAMES),
        "cache": {"policy": policy},
        "formatter": {"preset": "deepagents", "strip_html_comments": True, "strip_frontmatter": True},
    }


def _apply(root: Path, name: str, text: str | None) -> None:
    if text is None:
        (root / name).unlink()
    else:
        write_atomically(root / name, text)


def _turn(pipeline: Pipeline, state: dict[str, Any]) -> tuple[Any, list[dict[str, Any]]]:
    with capture_logs() as logs:
        render = pipeline.build(state)
    return render, logs


@pytest.mark.parametrize("policy", ["revalidate", "always"])
def test_every_turn_after_an_edit_is_a_cold_render(tmp_path: Path, policy: str) -> None:
    """Block, records, manifest entries and notes after each edit equal a fresh pipeline's on a fresh state."""
    for name in NAMES:
        write_atomically(tmp_path / name, f"{name} as it was")
    config = _config(tmp_path, policy)
    pipeline = Pipeline.from_config(config)
    state: dict[str, Any] = {}
    pipeline.build(state)
    for name, text in EDITS:
        _apply(tmp_path, name, text)
        warm, warm_logs = _turn(pipeline, state)
        cold, cold_logs = _turn(Pipeline.from_config(config), {})
        assert warm.text == cold.text, (name, text)
        assert warm.sha256 == cold.sha256
        assert [r._replace(notes=()) for r in warm.sources] == [r._replace(notes=()) for r in cold.sources]
        [manifest] = events_named(warm_logs, "prompt_manifest")
        [fresh] = events_named(cold_logs, "prompt_manifest")
        assert manifest["sources"] == fresh["sources"]
        if text is not None and "</agent_memory>" in text:
            [escaped] = events_named(warm_logs, "content_escaped")
            assert escaped["source"] == name
        [built], [cold_built] = events_named(warm_logs, "prompt_built"), events_named(cold_logs, "prompt_built")
        assert (built["escaped"], built["sources_loaded"]) == (cold_built["escaped"], cold_built["sources_loaded"])


class Seen:
    """A processor of the user's that keeps the sections it was handed on each call."""

    token = "seen/1"

    def __init__(self) -> None:
        self.calls: list[dict[str, Section]] = []

    def __call__(self, sections: Sequence[Section]) -> list[Section]:
        self.calls.append({s.source: s for s in sections})
        return list(sections)


def test_a_processor_is_handed_unchanged_sections_again(tmp_path: Path) -> None:
    """After one edit, the sections of the other files are the very objects of the turn before."""
    for name in NAMES:
        write_atomically(tmp_path / name, f"{name} as it was")
    seen = Seen()
    pipeline = Pipeline.from_config(_config(tmp_path, "revalidate"), processors=[seen])
    state: dict[str, Any] = {}
    pipeline.build(state)
    write_atomically(tmp_path / "b.md", "b, edited")
    assert "b, edited" in pipeline.build(state).text
    before, after = seen.calls
    assert [k for k in NAMES if after[k] is before[k]] == ["a.md", "c.md", "d.md"]
    assert after["b.md"].text == "b, edited"
