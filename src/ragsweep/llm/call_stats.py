"""What an LLM client's calls came to and what its endpoint did to them: the records a run keeps and
the terminal prints (no client, no httpx: a report reads them without either)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from pydantic import BaseModel, Field


class EndpointStats(BaseModel):
    """What the endpoint did to a client's attempts, and the limit it left."""

    attempts: int = 0  # requests sent (the openai client's retries included)
    timeouts: int = 0
    rate_limited: int = 0  # 429s and 503s
    oversized: int = 0
    cuts: int = 0  # times the limit came down (a congestion signal at one call in flight changes nothing)
    limit_high: int = 0  # the most calls in flight the limit allowed
    limit_end: int = 0
    ceiling: int = 0  # settings.concurrency

    def add(self, other: "EndpointStats") -> None:
        """Another client's (a sweep's configurations, eval's answerer and judge): counts add up."""
        for name in ("attempts", "timeouts", "rate_limited", "oversized", "cuts"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.limit_high = max(self.limit_high, other.limit_high)
        self.ceiling = max(self.ceiling, other.ceiling)
        self.limit_end = other.limit_end

    def line(self) -> str:
        """How the endpoint behaved, for a command's summary."""
        retried = f"{self.timeouts} timeout(s), {self.rate_limited} rate limit(s) (429/503)"
        cut = f", halved {self.cuts}x" if self.cuts else ""
        return (
            f"endpoint: {self.attempts} request(s), {retried}, {self.oversized} oversized reply(ies); "
            f"parallel calls up to {self.limit_high} of {self.ceiling}{cut}, {self.limit_end} at the end"
        )


class LLMCalls(BaseModel):
    """A client's calls (one ``chat`` each, however many attempts) and what its endpoint did."""

    calls: int = 0
    failed: int = 0
    cached: int = 0
    errors: dict[str, int] = Field(default_factory=dict)  # the failures by kind: "timeout", "http 429", ...
    endpoint: EndpointStats = Field(default_factory=EndpointStats)

    @property
    def failure_rate(self) -> float:
        return self.failed / self.calls if self.calls else 0.0

    @classmethod
    def total(cls, parts: Iterable["LLMCalls"]) -> "LLMCalls":
        out = cls()
        errors: Counter[str] = Counter()
        for part in parts:
            out.calls, out.failed, out.cached = (
                out.calls + part.calls,
                out.failed + part.failed,
                out.cached + part.cached,
            )
            errors.update(part.errors)
            out.endpoint.add(part.endpoint)
        out.errors = dict(errors.most_common())
        return out

    def why(self) -> str:
        """``3x timeout, 1x http 500``: the failures by kind ("" without any)."""
        return ", ".join(f"{n}x {kind}" for kind, n in self.errors.items())

    def line(self, what: str = "LLM") -> str:
        """``LLM: 40 calls, 3 failed (7.5%: 3x timeout), 5 from cache`` and the endpoint's line."""
        why = self.why()
        failed = f"{self.failed} failed ({self.failure_rate:.1%}{': ' + why if why else ''})"
        return f"{what}: {self.calls} calls, {failed}, {self.cached} from cache; {self.endpoint.line()}"
