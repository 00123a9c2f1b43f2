"""What ``mcpkit auth doctor`` reports (:mod:`.doctor`): one :class:`Finding` per step of
the walk, gathered in a :class:`DoctorReport`."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

__all__ = ["DoctorReport", "Finding", "Status"]

#: ``FAIL``: the client would not get past this step; ``warn``: it works but hurts some
#: setups; ``skip``: it could not be tried from here.
Status = Literal["ok", "warn", "FAIL", "skip"]


@dataclass(slots=True)
class Finding:
    """One step of the walk: ``status``, what was seen (``detail``) and, unless it is
    ``ok``, what to change (``fix``)."""

    step: str
    status: Status
    detail: str
    fix: str | None = None

    def line(self) -> str:
        text = f"{self.status:<4}  {self.step:<18} {self.detail}"
        return f"{text} Fix: {self.fix}" if self.fix else text


@dataclass(slots=True)
class DoctorReport:
    url: str
    client: str
    findings: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether the chosen client would sign in: no step failed."""
        return all(f.status != "FAIL" for f in self.findings)

    def to_json(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "client": self.client,
            "ok": self.ok,
            "steps": [asdict(f) for f in self.findings],
        }
