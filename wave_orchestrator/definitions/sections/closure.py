"""lane.yaml's ``closure:``: the closure roles every wave must have an agent of, and the
ones a lane requires only from some wave on (early waves often have nothing to integrate)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from ..model import CLOSURE_ORDER, EMPTY, NUMBER_RANGES
from ..source.schema import Checker, did_you_mean

CLOSURE_KEYS = ("required_roles", "required_from_wave")
DEFAULT_REQUIRED = ("cont-qa",)  # a wave is done only when a cont-qa agent says so


class ClosureRules(NamedTuple):
    """The roles a wave must have an agent of: ``required_roles`` in every wave, unless
    ``from_wave`` names the first wave that needs the role (a role only there counts too)."""

    required_roles: tuple[str, ...] = DEFAULT_REQUIRED
    from_wave: Mapping[str, int] = EMPTY

    def required_in(self, wave: int) -> tuple[str, ...]:
        """The roles wave ``wave`` must have, in closure order."""
        return tuple(
            role
            for role in CLOSURE_ORDER
            if (role in self.required_roles or role in self.from_wave)
            and wave >= self.from_wave.get(role, 0)
        )

    def expected(self, role: str) -> str:
        """The setting that requires ``role``, as a problem's "expected" names it."""
        if role in self.from_wave:
            return f"closure.required_from_wave: {role} from wave {self.from_wave[role]}"
        return "closure.required_roles: " + ", ".join(self.required_roles)


def check_closure(ck: Checker, value: Any) -> ClosureRules:
    """``closure``: its roles are closure roles; a first wave is a wave number from 1."""
    raw = ck.mapping(value, ("closure",), CLOSURE_KEYS) or {}
    roles: tuple[str, ...] = DEFAULT_REQUIRED
    if "required_roles" in raw:
        got = ck.string_list(
            raw["required_roles"], ("closure", "required_roles"), choices=CLOSURE_ORDER, noun="role"
        )
        roles = tuple(got or ())
    return ClosureRules(roles, _from_wave(ck, raw.get("required_from_wave")))


def _from_wave(ck: Checker, value: Any) -> dict[str, int]:
    where = ("closure", "required_from_wave")
    if value is None:
        return {}
    if not isinstance(value, dict):
        ck.wrong_type(where, value, "a mapping of closure role to wave number")
        return {}
    out: dict[str, int] = {}
    for role, first in value.items():
        if role not in CLOSURE_ORDER:
            ck.error(
                (*where, role),
                f"unknown role {str(role)!r}" + did_you_mean(str(role), CLOSURE_ORDER),
                "one of: " + ", ".join(CLOSURE_ORDER),
                key=True,
            )
            continue
        limits = (1, NUMBER_RANGES["wave"][1])
        got = ck.number(first, (*where, role), integer=True, positive=True, limits=limits)
        if got is not None:
            out[role] = int(got)
    return out
