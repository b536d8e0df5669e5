"""The processors a config names (``processors:``), built from the processor registry.

Each name is one of :data:`memconfig.registry.PROCESSORS` (the config was
checked against it when it was loaded); its target's ``from_config`` is handed
the entry's ``options`` and returns the processor. Options it refuses are a
config error at their key path, raised when the pipeline is built.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..exceptions import ConfigError, Problem
from ..registry import processors as registry

if TYPE_CHECKING:
    from ..config.schema import ProcessorConfig
    from ..stages import Processor

__all__ = ["named_processors"]


def named_processors(named: Sequence[ProcessorConfig]) -> list[Processor]:
    """The processors *named*, in order, each built from its options.

    Raises:
        ConfigError: a processor's module is not installed (what to install is
            named), or it refuses its options (at ``processors[i].options``).
    """
    built: list[Processor] = []
    for index, chosen in enumerate(named):
        factory = registry.load(chosen.name)
        try:
            built.append(factory.from_config(chosen.options))
        except (TypeError, ValueError) as exc:
            raise ConfigError([Problem(f"processors[{index}].options", f"{chosen.name!r}: {exc}")]) from None
    return built
