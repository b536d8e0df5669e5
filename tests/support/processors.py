"""A processor for the tests: a prefix before each section's text, usable from Python and, registered, from YAML."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from memconfig import Section


@dataclasses.dataclass(frozen=True)
class Prefix:
    """Puts *prefix* before each section's text; its token names the setting."""

    prefix: str

    @classmethod
    def from_config(cls, options: Mapping[str, Any]) -> Prefix:
        return cls(**options)

    @property
    def token(self) -> str:
        return f"prefix:{self.prefix}"

    def __call__(self, sections: Sequence[Section]) -> Sequence[Section]:
        return [dataclasses.replace(s, text=self.prefix + s.text) for s in sections]
