"""Budgets: a source's own max_chars / max_tokens and the block's formatter.budget, cut on line boundaries, visibly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from structlog.testing import capture_logs
from support.cli import memconfig
from support.pipelines import events_named as _events
from support.pipelines import plain_pipeline

from memconfig import BudgetExceeded, ConfigError, Pipeline, Render, SkipReason
from memconfig.process.tokens import ESTIMATE


def _lines(n: int, stem: str = "line") -> str:
    """*n* lines of 20 characters each, newline included."""
    return "".join(f"{stem} {i:02d} ".ljust(19, ".") + "\n" for i in range(n))


def _write(root: Path, files: dict[str, str | bytes]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8", newline="")


def _build(root: Path, sources: list[Any], **formatter: Any) -> tuple[Render, list[dict[str, Any]]]:
    pipeline = plain_pipeline(root, sources, formatter=formatter)
    with capture_logs() as logs:
        render = pipeline.build({})
    return render, logs


def _cuts(logs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    cuts = {e["source"]: e for e in _events(logs, "source_truncated")}
    assert len(cuts) == len(_events(logs, "source_truncated"))  # one event per cut source
    return cuts


def _drops(logs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {e["source"]: e for e in _events(logs, "source_dropped")}


# -- the total budget, policy truncate ---------------------------------------------------------


def test_budget_smaller_than_the_sources_gives_a_block_within_it_with_a_marker_and_one_event(tmp_path: Path) -> None:
    """Two files over formatter.budget.max_chars: the later one is cut on a line, marked; one source_truncated."""
    _write(tmp_path, {"a.md": _lines(5, "a"), "b.md": _lines(10, "b")})
    render, logs = _build(tmp_path, ["a.md", "b.md"], budget={"max_chars": 250})
    assert len(render.text) <= 250
    kept_a, rest = render.text.split("\n\n", 1)
    assert kept_a == _lines(5, "a").rstrip()  # the earlier source, on equal priority, is untouched
    assert rest.startswith(_lines(1, "b"))
    assert rest.endswith("[… b.md cut here: 100 more characters not shown]")
    kept = rest.split("\n[…")[0]
    assert kept == _lines(5, "b").rstrip()  # whole lines only
    assert len(render.text) + 20 > 250  # just enough: one more line would not fit
    [cut] = _cuts(logs).values()
    assert cut["source"] == "b.md" and cut["budget"] == "total" and cut["setting"] == "formatter.budget.max_chars"
    assert (cut["unit"], cut["limit"], cut["marker"]) == ("chars", 250, True)
    assert cut["chars_before"] == len(_lines(10).rstrip())
    assert cut["chars_after"] == len(rest)
    assert (cut["tokens_before"], cut["tokens_after"]) == (None, None)
    [built] = _events(logs, "prompt_built")
    assert (built["truncated"], built["dropped"], built["chars"]) == (1, 0, len(render.text))
    assert render.counts["truncated"] == 1


def test_block_that_fits_is_left_alone(tmp_path: Path) -> None:
    """Under the budget nothing is cut, nothing is logged, the block is what it is without a budget."""
    _write(tmp_path, {"a.md": _lines(3)})
    with_budget, logs = _build(tmp_path, ["a.md"], budget={"max_chars": 1000})
    without, _ = _build(tmp_path, ["a.md"])
    assert with_budget.text == without.text
    assert not _events(logs, "source_truncated") and not _events(logs, "source_dropped")


def test_the_budget_counts_the_whole_layout(tmp_path: Path) -> None:
    """With the deepagents preset, the template, paths and separators count: the block is within max_chars."""
    _write(tmp_path, {"a.md": _lines(30), "b.md": _lines(30)})
    bare = len(Pipeline.from_config({"version": 1}).build({}).text)
    limit = bare + 400
    pipeline = Pipeline.from_config(
        {
            "version": 1,
            "base_dir": str(tmp_path),
            "sources": ["a.md", "b.md"],
            "formatter": {"budget": {"max_chars": limit}},
        }
    )
    with capture_logs() as logs:
        render = pipeline.build({})
    assert limit - 20 - 50 < len(render.text) <= limit  # cut just enough (a line, plus the marker's own line)
    assert "</agent_memory>" in render.text and "[… " in render.text
    assert len(_events(logs, "source_truncated")) >= 1


def test_lowest_priority_is_cut_first(tmp_path: Path) -> None:
    """priority: the first source has the lowest, so it is cut, not the later one."""
    _write(tmp_path, {"a.md": _lines(10, "a"), "b.md": _lines(10, "b")})
    sources = [{"url": "a.md", "priority": -1}, {"url": "b.md", "priority": 5}]
    render, logs = _build(tmp_path, sources, budget={"max_chars": 300})
    assert len(render.text) <= 300
    assert set(_cuts(logs)) == {"a.md"}
    assert render.text.endswith(_lines(10, "b").rstrip())


def test_on_equal_priority_the_later_source_goes_first(tmp_path: Path) -> None:
    """Three sources, the middle one more important: the last is cut (here: to nothing, so dropped), then the first."""
    _write(tmp_path, {"a.md": _lines(5, "a"), "b.md": _lines(5, "b"), "c.md": _lines(5, "c")})
    sources = ["a.md", {"url": "b.md", "priority": 1}, "c.md"]
    render, logs = _build(tmp_path, sources, budget={"max_chars": 160})
    assert len(render.text) <= 160
    drops, cuts = _drops(logs), _cuts(logs)
    assert set(drops) == {"c.md"} and set(cuts) == {"a.md"}
    assert drops["c.md"]["reason"] == "over_budget"
    assert "formatter.budget.max_chars is 160" in drops["c.md"]["detail"]
    assert "cutting it to fit would leave nothing of it" in drops["c.md"]["detail"]
    assert _lines(5, "b").rstrip() in render.text


def test_a_source_cut_to_nothing_is_dropped_and_the_next_one_cut(tmp_path: Path) -> None:
    """The lowest-priority source is small: taking it out is not enough, so it is dropped and the next one cut."""
    _write(tmp_path, {"big.md": _lines(20), "small.md": "tiny\n"})
    render, logs = _build(tmp_path, ["big.md", "small.md"], budget={"max_chars": 200})
    assert len(render.text) <= 200
    assert set(_drops(logs)) == {"small.md"} and set(_cuts(logs)) == {"big.md"}
    records = {r.source: r for r in render.sources}
    assert (records["small.md"].status, records["small.md"].reason) == ("skipped", SkipReason.OVER_BUDGET)
    assert "over_budget" not in records["big.md"].detail
    assert records["big.md"].notes == ("source_truncated",)
    assert records["big.md"].chars == len(render.text)
    [built] = _events(logs, "prompt_built")
    assert (built["truncated"], built["dropped"], built["sources_loaded"]) == (1, 1, 1)


# -- policy drop and fail ----------------------------------------------------------------------


def test_drop_policy_leaves_out_whole_sources_in_order_until_it_fits(tmp_path: Path) -> None:
    """policy drop: the last two sources go whole (reason over_budget, sizes in the detail); nothing is cut."""
    _write(tmp_path, {"a.md": _lines(4, "a"), "b.md": _lines(4, "b"), "c.md": _lines(4, "c")})
    render, logs = _build(tmp_path, ["a.md", "b.md", "c.md"], budget={"max_chars": 100, "policy": "drop"})
    assert render.text == _lines(4, "a").rstrip()
    assert not _events(logs, "source_truncated")
    drops = _drops(logs)
    assert set(drops) == {"b.md", "c.md"}
    assert all(d["reason"] == "over_budget" for d in drops.values())
    assert drops["c.md"]["detail"] == (  # c.md went first, then b.md
        "formatter.budget.max_chars is 100 characters; the block was 241 characters, 79 of them this source's: "
        "policy drop"
    )
    assert "the block was 160 characters, 79 of them this source's" in drops["b.md"]["detail"]
    assert drops["b.md"]["chars"] == len(_lines(4))
    assert [(r.source, r.status) for r in render.sources] == [
        ("a.md", "loaded"),
        ("b.md", "skipped"),
        ("c.md", "skipped"),
    ]


def test_fail_policy_raises_naming_the_budget_the_sizes_and_the_largest_sources(tmp_path: Path) -> None:
    """policy fail: BudgetExceeded (exit code 1) with the sizes; prompt_failed lists the largest sources."""
    _write(tmp_path, {"a.md": _lines(2), "b.md": _lines(8)})
    pipeline = plain_pipeline(
        tmp_path, ["a.md", "b.md"], formatter={"preset": "plain", "budget": {"max_chars": 50, "policy": "fail"}}
    )
    with capture_logs() as logs, pytest.raises(BudgetExceeded) as caught:
        pipeline.build({})
    error = caught.value
    assert (error.budget, error.size, error.limit, error.unit, error.exit_code) == (
        "formatter.budget.max_chars",
        200,
        50,
        "characters",
        1,
    )
    assert error.largest == (("b.md", 159), ("a.md", 39))
    assert str(error) == (
        "the memory block is 200 characters, over formatter.budget.max_chars = 50 (policy: fail); "
        "largest sources: 'b.md' 159, 'a.md' 39"
    )
    assert not _events(logs, "prompt_built")
    [failed] = _events(logs, "prompt_failed")
    assert [(f["source"], f["reason"]) for f in failed["failures"]] == [
        ("b.md", "over_budget"),
        ("a.md", "over_budget"),
    ]
    assert failed["failures"][0]["detail"] == "159 of the block's 200 characters; formatter.budget.max_chars is 50"


def test_fail_policy_from_the_cli_exits_1_with_the_message(tmp_path: Path) -> None:
    """`memconfig render` over a budget with policy fail: exit 1, the message names budget and sizes, no traceback."""
    _write(tmp_path, {"a.md": _lines(8)})
    config = {
        "version": 1,
        "sources": ["a.md"],
        "formatter": {"preset": "plain", "budget": {"max_chars": 40, "policy": "fail"}},
    }
    (tmp_path / "memconfig.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    done = memconfig("render", "-c", "memconfig.yaml", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout == ""
    assert (
        "memconfig: error: the memory block is 159 characters, over formatter.budget.max_chars = 40 (policy: fail); "
        "largest sources: 'a.md' 159"
    ) in done.stderr
    log = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    assert [e["event"] for e in log] == ["source_loaded", "prompt_failed"]


# -- the marker --------------------------------------------------------------------------------


def test_marker_is_a_template_with_the_cut_in_its_slots(tmp_path: Path) -> None:
    """A custom marker gets {name} {path} {cut} {kept} {unit}; it counts toward the budget."""
    _write(tmp_path, {"notes/b.md": _lines(10)})
    marker = "<<{name}|{path}|cut {cut}|kept {kept}|{unit}>>"
    render, logs = _build(tmp_path, [{"url": "notes/b.md", "name": "B"}], budget={"max_chars": 150, "marker": marker})
    kept = _lines(5).rstrip()
    assert render.text == kept + "\n<<B|notes/b.md|cut 100|kept 99|characters>>"
    assert len(render.text) <= 150
    assert _cuts(logs)["notes/b.md"]["chars_after"] == len(render.text)


def test_empty_marker_leaves_no_text_but_the_cut_is_logged(tmp_path: Path) -> None:
    """marker: "" (to match another tool's output): whole lines only, nothing added; source_truncated still."""
    _write(tmp_path, {"a.md": _lines(10)})
    render, logs = _build(tmp_path, ["a.md"], budget={"max_chars": 70, "marker": ""})
    assert render.text == _lines(3).rstrip()
    cut = _cuts(logs)["a.md"]
    assert (cut["marker"], cut["chars_after"], cut["limit"]) == (False, 59, 70)


def test_bad_marker_slot_is_a_config_error() -> None:
    """A marker with an unknown slot fails validation at formatter.budget.marker."""
    with pytest.raises(ConfigError) as caught:
        Pipeline.from_config({"version": 1, "formatter": {"budget": {"max_chars": 100, "marker": "{source}"}}})
    assert "formatter.budget.marker: unknown slot {source}" in str(caught.value)


def test_marker_cannot_close_the_wrapper(tmp_path: Path) -> None:
    """A source name holding </agent_memory> goes into the marker neutralised: the block has one closing tag."""
    _write(tmp_path, {"a.md": _lines(40)})
    pipeline = Pipeline.from_config(
        {
            "version": 1,
            "base_dir": str(tmp_path),
            "sources": [{"url": "a.md", "name": "x</agent_memory>y", "max_chars": 100}],
        }
    )
    render = pipeline.build({})
    assert render.text.count("</agent_memory>") == 1
    assert "cut here" in render.text


# -- per-source limits -------------------------------------------------------------------------


def test_source_max_chars_cuts_that_source_only(tmp_path: Path) -> None:
    """sources[1].max_chars cuts b.md on a line boundary, with the marker; a.md is untouched; budget 'source'."""
    _write(tmp_path, {"a.md": _lines(10, "a"), "b.md": _lines(10, "b")})
    render, logs = _build(tmp_path, ["a.md", {"url": "b.md", "max_chars": 100}])
    a, b = render.text.split("\n\n")
    assert a == _lines(10, "a").rstrip()
    assert b == _lines(2, "b") + "[… b.md cut here: 160 more characters not shown]"
    assert len(b) <= 100
    cut = _cuts(logs)["b.md"]
    assert (cut["budget"], cut["setting"], cut["limit"], cut["chars_after"]) == (
        "source",
        "sources[1].max_chars",
        100,
        len(b),
    )


def test_first_line_longer_than_the_limit_is_cut_at_a_character(tmp_path: Path) -> None:
    """One long line (minified JSON, say): no line boundary fits, so the line itself is cut, the marker after it."""
    _write(tmp_path, {"one.json": "x" * 500 + "\nsecond line\n"})
    render, logs = _build(tmp_path, [{"url": "one.json", "max_chars": 100}])
    head, marker = render.text.split("\n")
    assert head == "x" * (100 - 1 - len(marker)) and marker.startswith("[… one.json cut here:")
    assert len(render.text) == 100
    assert _cuts(logs)["one.json"]["chars_after"] == 100


def test_crlf_file_is_cut_between_lines_and_its_marker_line_ends_in_crlf(tmp_path: Path) -> None:
    """A CRLF file keeps whole CRLF lines; no lone CR is left; the marker follows on a line of its own."""
    text = "".join(f"crlf line {i:02d}\r\n" for i in range(10))
    _write(tmp_path, {"win.md": text.encode()})
    render, logs = _build(tmp_path, [{"url": "win.md", "max_chars": 100}])
    kept, marker = render.text.rsplit("\r\n", 1)
    assert kept + "\r\n" == "".join(f"crlf line {i:02d}\r\n" for i in range(3))
    assert marker.startswith("[… win.md cut here:")
    assert "\r" not in render.text.replace("\r\n", "")
    assert len(render.text) <= 100
    assert _cuts(logs)["win.md"]["chars_before"] == len(text.rstrip())


def test_crlf_long_first_line_drops_its_cr(tmp_path: Path) -> None:
    """A first CRLF line cut at a character: the kept part ends without a stray CR before the marker's CRLF."""
    _write(tmp_path, {"win.md": ("y" * 300 + "\r\nnext\r\n").encode()})
    render, _ = _build(tmp_path, [{"url": "win.md", "max_chars": 80}])
    head, marker = render.text.split("\r\n")
    assert set(head) == {"y"} and marker.startswith("[…")
    assert len(render.text) <= 80


def test_multibyte_text_is_cut_on_characters_and_counted_in_characters(tmp_path: Path) -> None:
    """Japanese text under max_chars: sizes are characters (not bytes), whole lines kept, nothing garbled."""
    line = "日本語のテキストです。\n"  # 12 characters, 34 bytes
    _write(tmp_path, {"ja.md": line * 10})
    render, logs = _build(tmp_path, [{"url": "ja.md", "max_chars": 80}], budget={"marker": "[…{cut}]"})
    assert render.text == line * 6 + "[…48]"
    cut = _cuts(logs)["ja.md"]
    assert (cut["chars_before"], cut["chars_after"]) == (len((line * 10).rstrip()), 77)


def test_max_tokens_with_the_estimate(tmp_path: Path) -> None:
    """max_tokens counts with the documented estimate: the source's estimated tokens end up within the limit."""
    _write(tmp_path, {"ja.md": "日本語のテキストです。\n" * 40, "en.md": _lines(40)})
    sources = [{"url": "ja.md", "max_tokens": 100}, {"url": "en.md", "max_tokens": 100}]
    render, logs = _build(tmp_path, sources)
    ja, en = render.text.split("\n\n")
    cuts = _cuts(logs)
    for key, text in (("ja.md", ja), ("en.md", en)):
        assert ESTIMATE(text) <= 100
        assert cuts[key]["unit"] == "tokens" and cuts[key]["tokens_after"] == ESTIMATE(text)
        assert cuts[key]["tokens_before"] > 100
        assert "more tokens not shown]" in text


def test_a_source_with_both_limits_fits_both(tmp_path: Path) -> None:
    """max_chars and max_tokens on one source: one cut, within both."""
    _write(tmp_path, {"a.md": "日本語のテキストです。\n" * 40})
    render, logs = _build(tmp_path, [{"url": "a.md", "max_chars": 200, "max_tokens": 60}])
    assert len(render.text) <= 200 and ESTIMATE(render.text) <= 60
    assert len(_cuts(logs)) == 1


def test_glob_matches_inherit_their_globs_limit_and_priority(tmp_path: Path) -> None:
    """Each file a glob matches gets the glob's max_chars; under the budget, the glob's priority."""
    _write(tmp_path, {"rules/one.md": _lines(10), "rules/two.md": _lines(10), "top.md": _lines(10, "t")})
    sources = [{"glob": "rules/*.md", "max_chars": 60, "priority": 9}, "top.md"]
    render, logs = _build(tmp_path, sources, budget={"max_chars": 200})
    cuts = _cuts(logs)
    assert cuts["rules/one.md"]["setting"] == cuts["rules/two.md"]["setting"] == "sources[0].max_chars"
    assert cuts["top.md"]["setting"] == "formatter.budget.max_chars"  # priority 0 < 9: the top file is cut first
    assert len(render.text) <= 200
    records = {r.source: r for r in render.sources}
    assert records["rules/one.md"].notes == ("source_truncated",)


def test_source_whose_limit_cannot_hold_the_marker_is_dropped(tmp_path: Path) -> None:
    """max_chars too small for even the marker: the source is left out as over_budget, saying why."""
    _write(tmp_path, {"a.md": _lines(3), "b.md": "kept\n"})
    render, logs = _build(tmp_path, [{"url": "a.md", "max_chars": 10}, "b.md"])
    assert render.text == "kept"
    [drop] = _events(logs, "source_dropped")
    assert drop["reason"] == "over_budget" and "sources[0].max_chars is 10 characters" in drop["detail"]


# -- the budget in the cache's eyes ------------------------------------------------------------


def test_changed_budget_in_the_yaml_takes_effect_on_a_loaded_state(tmp_path: Path) -> None:
    """A state loaded under one budget, rendered by a pipeline built from the edited YAML: the new budget applies."""
    _write(tmp_path, {"a.md": _lines(20)})
    path = tmp_path / "memconfig.yaml"

    def config(limit: int) -> Pipeline:
        data = {"version": 1, "sources": ["a.md"], "formatter": {"preset": "plain", "budget": {"max_chars": limit}}}
        path.write_text(yaml.safe_dump(data), encoding="utf-8")
        return Pipeline.from_yaml(path)

    state: dict[str, Any] = {}
    first = config(300).build(state)
    again = config(300).build(state)
    second = config(120).build(state)
    assert len(first.text) <= 300 and again.text == first.text
    assert len(second.text) <= 120 < len(first.text)


def test_unchanged_turn_is_served_from_the_memo_with_the_same_counts(tmp_path: Path) -> None:
    """The second render of the same state runs no processor: memo, same block and counts, no new cut event."""
    _write(tmp_path, {"a.md": _lines(20)})
    pipeline = plain_pipeline(tmp_path, ["a.md"], formatter={"preset": "plain", "budget": {"max_chars": 100}})
    state: dict[str, Any] = {}
    first = pipeline.build(state)
    with capture_logs() as logs:
        second = pipeline.build(state)
    assert second.memo and second.text == first.text
    assert not _events(logs, "source_truncated")
    [built] = _events(logs, "prompt_built")
    assert built["truncated"] == 1


def test_layout_alone_over_the_budget_is_a_config_error() -> None:
    """A budget the empty block (the deepagents template) already exceeds is refused when the pipeline is built."""
    with pytest.raises(ConfigError) as caught:
        Pipeline.from_config({"version": 1, "formatter": {"budget": {"max_chars": 50}}})
    assert "formatter.budget.max_chars: the block with no source in it" in str(caught.value)


@pytest.mark.parametrize(
    ("budget", "message"),
    [
        pytest.param(
            {"max_chars": 10, "max_tokens": 10}, "give only one of 'max_chars', 'max_tokens' or 'max_bytes'", id="both"
        ),
        pytest.param({"policy": "drop"}, "'policy' needs a limit", id="policy-without-limit"),
        pytest.param({"max_chars": 0}, "greater than 0", id="zero"),
    ],
)
def test_budget_settings_are_checked(budget: dict[str, Any], message: str) -> None:
    """Contradictory or empty budgets are config errors at formatter.budget."""
    with pytest.raises(ConfigError) as caught:
        Pipeline.from_config({"version": 1, "formatter": {"budget": budget}})
    assert "formatter.budget" in str(caught.value) and message in str(caught.value)


def test_marker_alone_sets_the_marker_of_per_source_cuts(tmp_path: Path) -> None:
    """formatter.budget with only a marker: no total limit, the marker used by sources' own limits."""
    _write(tmp_path, {"a.md": _lines(10)})
    render, _ = _build(tmp_path, [{"url": "a.md", "max_chars": 50}], budget={"marker": "(cut)"})
    assert render.text == _lines(2) + "(cut)"


def test_a_source_cut_by_its_own_limit_and_the_budget_is_cut_once(tmp_path: Path) -> None:
    """Own max_chars, then the block's budget: one cut from the whole text, one marker, one event (the budget's)."""
    _write(tmp_path, {"a.md": _lines(30)})
    render, logs = _build(tmp_path, [{"url": "a.md", "max_chars": 300}], budget={"max_chars": 120})
    assert render.text.count("[…") == 1
    assert render.text == _lines(3) + "[… a.md cut here: 540 more characters not shown]"
    [cut] = _events(logs, "source_truncated")
    assert (cut["budget"], cut["chars_before"], cut["chars_after"]) == ("total", 599, len(render.text))
    [built] = _events(logs, "prompt_built")
    assert built["truncated"] == 1
