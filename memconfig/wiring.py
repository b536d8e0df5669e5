"""The one wiring: the stages a config asks for, built in one place.

:meth:`Pipeline.from_config <memconfig.Pipeline.from_config>`, the LangChain
middleware (through it) and the deepagents drop-in all build their stages
here, so this is the only caller of the stages' ``from_config``. The
processors form a named chain (:mod:`memconfig.process.chain`): the built-in
rules in a fixed order, the config's named ones (``processors:``) and
the caller's own after ``escaping`` unless placed by name (``before:`` /
``after:``, or :class:`~memconfig.process.Placed`), the budgets last.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, NamedTuple, Protocol

from .append import appender_for
from .cache import PolicyCache
from .format import TemplateFormatter
from .load import FsspecLoader
from .load.protocols import protocol_loaders
from .process import Cleaning, EscapeClosingTags
from .process.budget import Measure, budget_processors
from .process.chain import BUILT_IN, Placed, Rule, ordered
from .process.named import named_processors
from .sources import build_sources
from .stages import Appender, Formatter, Loader, Processor, StateCache, token_of

if TYPE_CHECKING:
    from .config import Config
    from .config.schema import ProcessorConfig
    from .sources import Source

__all__ = ["BlockFormatter", "Stages", "build_stages"]


class BlockFormatter(Formatter, Measure, Protocol):
    """A formatter the built-in rules can be made for: its wrappers (escaping) and its sizes (budgets)."""


class Stages(NamedTuple):
    """The stages of one pipeline, as :func:`build_stages` makes them.

    Attributes:
        sources: the config's sources, built.
        layout: the config's own formatter (a caller may lay the block out with another, see *formatter*).
        formatter: what the block is laid out with.
        rules: the processor chain, named, in order.
        loader: reads the sources.
        cache: keeps contents in state and decides what is read.
        appender: the config's ``appender.format``.
    """

    sources: tuple[Source, ...]
    layout: TemplateFormatter
    formatter: BlockFormatter
    rules: tuple[Rule, ...]
    loader: Loader
    cache: StateCache
    appender: Appender


def build_stages(
    config: Config,
    *,
    processors: Sequence[Processor | Placed] = (),
    loader: Loader | None = None,
    sources: Sequence[Source] | None = None,
    formatter: Callable[[TemplateFormatter], BlockFormatter] | None = None,
    cache: StateCache | None = None,
    appender: Appender | None = None,
    enabled: Collection[str] | None = None,
) -> Stages:
    """Build every stage *config* asks for; each keyword puts the caller's own in place of the built one.

    Args:
        processors: the caller's own processors: after the built-in cleaning and escaping
            and the processors the config names (``processors:``, each under its registered
            name), before the budgets, unless :class:`~memconfig.process.Placed` by name
            (as a config's own are by ``before:`` / ``after:``).
        loader: instead of the fsspec one; its ``token`` (if it has one; else its class) is
            part of what states are made for.
        sources: instead of the config's, built (the drop-in's paths, handed to a backend as given).
        formatter: what makes the formatter from the config's (the drop-in's template);
            the escaping and the budgets are made for the one it gives.
        cache: instead of the policy cache (a view that never reads).
        enabled: the built-in rules that may run, by name (``None``: every one the config asks
            for); the layout's ``disable`` leaves out more.

    Raises:
        ConfigError: a budget the config asks for cannot be had.
    """
    built = tuple(build_sources(config) if sources is None else sources)
    layout = TemplateFormatter.from_config(
        config.formatter, built, presets=config.presets, template_text=config.template_text
    )
    laid_out: BlockFormatter = layout if formatter is None else formatter(layout)
    allowed = tuple(name for name in (BUILT_IN if enabled is None else enabled) if name not in layout.layout.disable)
    on = allowed.__contains__
    cleaning = Cleaning.for_layout(layout.layout, built, allowed)
    rules = [Rule(name, step) for name, step in zip(cleaning.names, cleaning.steps, strict=True)]
    if on("rules"):
        rules += [Rule("rules", step) for step in _rules(built, config.base_path)]
    if laid_out.wrappers and on("escaping"):
        rules.append(Rule("escaping", EscapeClosingTags(tuple(laid_out.wrappers))))
    if on("budgets"):
        rules += [Rule("budgets", step) for step in budget_processors(config, laid_out, built)]
    steps = named_processors(config.processors)
    named = [_named_rule(chosen, step) for chosen, step in zip(config.processors, steps, strict=True)]
    chain = tuple(ordered(rules, [*named, *processors]))
    if loader is None:
        loader = FsspecLoader.from_config(
            config.loader,
            config.base_path,
            fingerprints=config.cache.policy != "once",
            is_blank=cleaning.is_blank,
            blank_token=cleaning.token,
            by_protocol=protocol_loaders(built, config.loader),
        )
    if cache is None:
        tokens = [token_of(loader), *(rule.processor.token for rule in chain), laid_out.token]
        cache = PolicyCache.from_config(config.cache, built, tokens)
    if appender is None:
        appender = appender_for(config.appender.format, config)
    return Stages(built, layout, laid_out, chain, loader, cache, appender)


def _named_rule(chosen: ProcessorConfig, processor: Processor) -> Rule | Placed:
    """A config's processor under its registered name: at its ``before:`` / ``after:`` rule, else the users' spot."""
    if chosen.before is None and chosen.after is None:
        return Rule(chosen.name, processor)
    return Placed(processor, before=chosen.before, after=chosen.after, name=chosen.name)


def _rules(sources: Sequence[Source], root: str | os.PathLike[str]) -> list[Processor]:
    """The rules step, when a source declares rules (only such configs import wcmatch and the rules module)."""
    if not any(s.rules is not None for s in sources):
        return []
    from .process.rules import rules_processor

    return list(rules_processor(sources, root))
