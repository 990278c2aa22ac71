"""The sweep page's quality-versus-cost section: each answered configuration's answer quality against
what its answers cost per 1,000 questions, its Pareto set marked, and the costs as a table."""

from __future__ import annotations

from ragsweep.cost.records import NO_PRICE, USD_AXIS
from ragsweep.evaluation.records import SweepResult
from ragsweep.report import svg
from ragsweep.report.svg import esc, fmt


def cost_section(sweep: SweepResult) -> str | None:
    """The section's HTML; None for a sweep that did not answer."""
    pareto = sweep.cost_pareto
    if pareto is None:
        return None
    axis = "$ per 1,000 questions" if pareto.axis == USD_AXIS else f"tokens per 1,000 questions ({NO_PRICE})"
    plots = []
    for metric, front in pareto.fronts.items():
        on_front = set(front)
        points = []
        for c in sweep.configs:
            cost, value = (getattr(c.cost, pareto.axis, None) if c.cost else None), c.metric(metric)
            if cost is not None and value is not None:
                points.append((c.id, float(cost), float(value), c.id in on_front))
        if points:
            plots.append(svg.scatter_chart(points, f"{metric} vs cost", axis, metric))
    return (
        "".join(plots)
        + _cost_table(sweep)
        + (
            '<p class="note">Cost: the prompt and completion tokens of every LLM call a configuration\'s answers took '
            "(a reply from the cache counts: serving pays for it), at the pipeline's $llm_price_per_1k_prompt / "
            "$llm_price_per_1k_completion (and $embedding_price_per_1k for the questions). Red: the Pareto set, "
            "no other configuration has at least its quality for at most its cost.</p>"
        )
    )


def _cost_table(sweep: SweepResult) -> str:
    pareto = sweep.cost_pareto
    fronts = pareto.fronts if pareto is not None else {}
    rows = []
    for c in sweep.configs:
        if c.cost is None or not c.cost.questions:
            continue
        k = c.cost
        usd = NO_PRICE if k.usd_per_1k_questions is None else f"${k.usd_per_1k_questions:.4f}"
        on = ", ".join(m for m, ids in fronts.items() if c.id in ids)
        rows.append(
            f'<tr><td class="cid">{esc(c.id)}</td><td class="num">{k.calls}</td><td class="num">{k.sent_calls}</td>'
            f'<td class="num">{k.prompt_tokens}</td><td class="num">{k.completion_tokens}</td>'
            f'<td class="num">{fmt(k.tokens_per_1k_questions, 0)}</td><td class="num">{esc(usd)}</td>'
            f"<td>{esc(on)}</td></tr>"
        )
    head = (
        '<tr><th>configuration</th><th class="num">calls</th><th class="num">sent</th><th class="num">prompt '
        'tokens</th><th class="num">completion tokens</th><th class="num">tokens / 1k q</th>'
        '<th class="num">$ / 1k q</th><th>Pareto set of</th></tr>'
    )
    return f'<div class="scroll"><table class="sortable">{head}{"".join(rows)}</table></div>'
