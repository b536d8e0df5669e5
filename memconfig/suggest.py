""" "Did you mean …": the one way memconfig suggests a name for one it does not know.

Every message about an unknown name (a config key, a protocol, a preset, a
format, a skip reason, a ``MEMCONFIG_*`` variable, a command-line choice)
asks :func:`closest` for the names to suggest, so that they all suggest
alike. A leaf module: anything may import it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

__all__ = ["CUTOFF", "closest", "did_you_mean"]

CUTOFF = 0.7
"""How alike a name must be to be suggested (:class:`difflib.SequenceMatcher`'s ratio, ``difflib``'s own
default is 0.6): ``requried`` is 0.88 from ``required``, ``htps`` 0.89 from ``https``, ``form`` 0.75 from
``from``; ``cleaning`` is 0.62 from ``escaping``, which would mislead more than help."""
_NEAR = 0.1  # a second or third name is suggested only when nearly as close as the closest
_MOST = 3
_LONGEST = 200  # a longer word is no typo of a name; comparing it would only cost time


def closest(word: str, choices: Iterable[str]) -> list[str]:
    """The names of *choices* close enough to *word* to be what was meant, closest first (at most three).

    Compared without regard to case; empty when none is close (or *word* is
    itself one of them). Names nearly as close as the closest one are kept,
    others are dropped: ``htps`` gets ``https``, not ``http`` too.
    """
    if not word or len(word) > _LONGEST:
        return []
    import difflib  # only a mistake pays for it: the registries import this module on every start

    names = {name.lower(): name for name in choices if isinstance(name, str) and name}
    wanted = word.lower()
    if wanted in names:
        return []
    found = difflib.get_close_matches(wanted, list(names), n=_MOST, cutoff=CUTOFF)
    if not found:
        return []
    best = _ratio(wanted, found[0])
    return [names[name] for name in found if _ratio(wanted, name) >= best - _NEAR]


def did_you_mean(word: str, choices: Iterable[str], *, show: Callable[[str], str] = repr) -> str:
    """`` (did you mean 'https'?)`` for *word*, to follow it in a message; ``""`` when no choice is close.

    *show* writes each name (``repr``: quoted, as messages quote names; ``str`` for a variable's name).
    """
    found = closest(word, choices)
    if not found:
        return ""
    names = [show(str(name)) for name in found]  # str: a StrEnum's member is shown as its value
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
    return f" (did you mean {listed}?)"


def _ratio(a: str, b: str) -> float:
    import difflib

    return difflib.SequenceMatcher(None, a, b).ratio()
