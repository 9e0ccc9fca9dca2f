"""The pages about the whole record: decisions (with corrections), leases, telemetry.

Time-dependent values carry their raw time in data-* attributes so that the site's script
recomputes them in the reader's browser: a static page is stale the moment it is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from atlas_files.facts import timeutil
from atlas_files.sitegen import fragments as f
from atlas_files.sitegen import urls
from atlas_files.sitegen.pages import front_matter
from atlas_files.sitegen.sanitize import heading, text

if TYPE_CHECKING:
    from atlas_files.sitegen.pages import PageContext

RELATIONS = ("agreed", "disagreed", "timed-out")


def _options(values: list[str], everything: str) -> str:
    opts = [f'<option value="">{text(everything)}</option>']
    opts += [f'<option value="{text(v.lower())}">{text(v)}</option>' for v in values]
    return "".join(opts)


def decisions(ctx: PageContext) -> str:
    page = urls.DECISIONS
    snap = ctx.snap
    out = [front_matter("Decisions", hide_toc=True), "# Decisions\n\n"]
    # A decision belongs to the project whose folder holds it, whatever its file says.
    all_decisions = [(p, d) for p in snap.projects for d in p.decisions]
    all_decisions.sort(key=lambda pd: (pd[1].at, pd[1].id), reverse=True)
    topics = sorted({d.topic for _, d in all_decisions})
    datalist = "".join(f'<option value="{text(t)}"></option>' for t in topics)
    filters = (
        '<div class="atlas-filter" data-atlas-filter-for="atlas-decisions">'
        '<label>Project <select data-atlas-key="project">'
        f"{_options([p.name for p in snap.projects], 'all projects')}</select></label>"
        '<label>Relation <select data-atlas-key="relation">'
        f"{_options(list(RELATIONS), 'any relation')}</select></label>"
        '<label>Topic <input type="search" data-atlas-key="topic" list="atlas-topics" '
        f'placeholder="part of a topic"></label><datalist id="atlas-topics">{datalist}'
        f'</datalist><span class="atlas-filter-count">{f.count(len(all_decisions), "decision")}'
        "</span></div>"
    )
    rows = []
    for project, d in all_decisions:
        refs = []
        if d.recommended_by:
            refs.append(f"recommended by {text(d.recommended_by)}")
        if d.accepts:
            refs.append("accepts " + f.ref_link(snap.known, project.name, page, d.accepts))
        for ref in d.links:
            refs.append("links " + f.ref_link(snap.known, project.name, page, ref))
        if d.digest_ok is False:
            refs.append(f.mark("damaged", "edited in place"))
        notes = "".join(f.correction_note(c, page) for c in project.fixes.get(d.id, ()))
        notes += f.ident(d.id)
        if refs:
            notes += f'<p class="atlas-meta">{" · ".join(refs)}</p>'
        rows.append(
            f'<tr id="{text(d.id)}" data-project="{text(project.name)}" '
            f'data-relation="{text(d.relation.lower())}" data-topic="{text(d.topic.lower())}">'
            f"<td>{f.when_short(d.at)}</td>"
            f'<td>{text(d.topic)}<br><span class="atlas-meta">{text(project.name)}</span></td>'
            f'<td class="atlas-text">{text(d.recommended)}</td>'
            f'<td class="atlas-text">{text(d.chosen)}</td>'
            f"<td>{f.mark('relation', d.relation)}</td>"
            f'<td><div class="atlas-text">{text(d.why)}</div>{notes}</td>'
            f"<td>{text(d.author)}</td></tr>"
        )
        ctx.event(d.at, project.name, f"decision on {f.truncate(d.topic, 60)}", page, d.id,
                  d.author)
    out.append(f.block(
        "<p>Every decision of every project, newest first: what was recommended, what was "
        "chosen, and why the two stand as they do (the relation is stated by the decider, "
        "never inferred). Filter by project, relation or topic; corrections are shown on "
        "what they correct and listed below.</p>" + filters))
    if rows:
        head = ["Time", "Topic", "Recommended", "Chosen", "Relation", "Why", "Author"]
        out.append(f.block(f.table(head, rows, ident="atlas-decisions")))
    else:
        out.append(f.block("<p>No decisions yet.</p>"))
    out.append("## Corrections and retractions\n\n")
    out.append(_corrections(ctx))
    return "".join(out)


def _corrections(ctx: PageContext) -> str:
    page = urls.DECISIONS
    snap = ctx.snap
    entries = [(p, c) for p in snap.projects for c in p.corrections]
    entries.sort(key=lambda pc: (pc[1].at, pc[1].id), reverse=True)
    if not entries:
        return f.block("<p>Nothing has been corrected or retracted.</p>")
    rows = []
    for project, c in entries:
        target = f.ref_link(snap.known, project.name, page, c.ref)
        notes = "".join(f.correction_note(x, page) for x in project.fixes.get(c.id, ()))
        rows.append(
            f'<tr id="{text(c.id)}"><td>{f.when_short(c.at)}</td><td>{text(project.name)}'
            f"</td><td>{f.mark('retracted' if c.kind == 'retraction' else 'corrected', c.kind)}"
            f"</td><td>{target}</td><td><div class=\"atlas-text\">{text(c.text)}</div>{notes}"
            f"{f.ident(c.id)}</td><td>{text(c.author)}</td></tr>"
        )
        ctx.event(c.at, project.name, f"{c.kind} of {c.ref}", page, c.id, c.author)
    head = ["Time", "Project", "Kind", "Of", "What was wrong, or why retracted", "Author"]
    return f.block(
        "<p>A correction says what was wrong with a version or an entry; a retraction says a "
        "version's conclusion no longer holds. Neither edits what it is about.</p>"
        + f.table(head, rows, ident="atlas-corrections"))


def _usage(usage: dict[str, Any] | None) -> str:
    if not usage:
        return ""
    used, total = usage.get("memory_used_mib"), usage.get("memory_total_mib")
    stale = " (stale)" if usage.get("stale") else ""
    if not usage.get("reachable"):
        return f"machine unreachable at its last probe{stale}"
    if isinstance(used, (int, float)) and isinstance(total, (int, float)) and total > 0:
        return f"{bar(used, total)} {used:,.0f} / {total:,.0f} MiB{stale}"
    return ""


def bar(used: float, total: float) -> str:
    pct = max(0.0, min(100.0, 100.0 * float(used) / float(total)))
    return (f'<span class="atlas-bar" role="meter" aria-valuemin="0" aria-valuemax="100" '
            f'aria-valuenow="{pct:.0f}"><span style="width: {pct:.1f}%"></span></span>')


def leases(ctx: PageContext, advisory: str) -> str:
    sheet = ctx.snap.leases
    now = ctx.now
    out = [front_matter("Leases", hide_toc=True), "# Leases\n\n"]
    out.append(f.block(
        '<p class="admonition-title">Leases are advisory</p>'
        f'<p class="atlas-advisory">{text(advisory)}</p>', "admonition warning"))
    out.append(f.block(
        "<p>The state below is as read when the site was built, "
        f"{f.when(timeutil.format_time(now))}. "
        "A static page is stale the moment it is built, so each countdown is recomputed "
        "every second by your browser from the lease's expiry time and your clock: a lease "
        "shown as held reads as free (expired) once that time passes, even if nobody "
        "rebuilt the site. Releases and new claims since the build are not shown.</p>"))
    rows = []
    for lease in sheet.leases if sheet else ():
        expires = (f' data-atlas-expires="{text(lease.expires_at)}"'
                   if lease.expires_at and (lease.held or lease.ended == "expired") else "")
        if lease.held:
            state = f'<span class="atlas-state">{f.mark("held")}</span>'
            left = f"expires in {timeutil.format_duration(lease.expires_in_s or 0)}"
        else:
            state = f'<span class="atlas-state">{f.mark("free")}</span>'
            left = text(lease.ended or "")
        last = ""
        if not lease.held and lease.last_holder:
            last = f"last held by {text(lease.last_holder)}"
        clock = (f'<br><span class="atlas-note">{text(lease.clock_warning)}</span>'
                 if lease.clock_warning else "")
        until = ""
        expiry = f.parse_time(lease.expires_at)
        if expiry is not None:
            until = (f'<br><span class="atlas-meta" title="{text(lease.expires_at)}">until '
                     f'{expiry.strftime("%Y-%m-%d %H:%M:%S UTC")}</span>')
        # A lease on repository paths says which, under its name.
        covers = "".join(f'<br><span class="atlas-meta">covers <code>{text(p)}</code></span>'
                         for p in lease.paths)
        rows.append(
            f'<tr id="lease--{text(lease.resource)}"{expires}><td>{f.name_code(lease.resource)}'
            f"{covers}</td>"
            f'<td>{state} <span class="atlas-countdown">{left}</span>{until}{clock}'
            f"</td><td>{text(lease.holder or '')}{last}</td>"
            f'<td class="atlas-text">{text(lease.why or "")}</td><td>{lease.generation}</td>'
            f"<td>{f.when_short(lease.claimed_at) if lease.claimed_at else ''}</td>"
            f"<td>{_usage(sheet.telemetry.get(lease.resource))}</td></tr>"
        )
    if rows:
        head = ["Resource", "State", "Holder", "Why", "Generation", "Claimed",
                "GPU memory (telemetry)"]
        out.append(f.block(f.table(head, rows, ident="atlas-leases")))
    else:
        out.append(f.block("<p>No lease has ever been claimed in this record.</p>"))
    busy = list(sheet.unleased_busy) if sheet else []
    if busy:
        out.append("## GPUs in use without a lease\n\n")
        brows = [
            f"<tr><td>{f.name_code(str(g.get('resource') or ''))}</td>"
            f"<td>{_usage({**g, 'reachable': True})}</td>"
            f"<td>{f.age(g.get('observed_at'))}</td></tr>"
            for g in busy
        ]
        out.append(f.block(
            "<p>Telemetry shows load, never intent: these GPUs were busy at their machine's "
            "last probe, and nobody holds a lease on them.</p>"
            + f.table(["GPU", "Memory in use", "Observed"], brows)))
    return "".join(out)


def telemetry(ctx: PageContext) -> str:
    snap = ctx.snap
    out = [front_matter("Telemetry"), "# Telemetry\n\n"]
    out.append(f.block(f'<p class="atlas-note">{text(snap.telemetry_limits)}</p>'))
    if not snap.telemetry:
        out.append(f.block("<p>No machines are configured and no rows were written. Add "
                           "machines under <code>machines:</code> in atlas.yaml and run "
                           "<code>atlas telemetry probe</code>.</p>"))
    for row in snap.telemetry:
        out.append(f"## {heading(row.machine)}\n\n")
        out.append(_machine(row))
    return "".join(out)


def _machine(row: Any) -> str:
    if row.reachable is None:
        reach = f.mark("unreachable", "no row")
    else:
        reach = f.mark("held", "reachable") if row.reachable else f.mark("unreachable")
    fresh = f.mark("stale") if row.stale else f.mark("free", "fresh")
    facts = [f"{reach} <span class=\"atlas-freshness\">{fresh}</span>"]
    if row.observed_at:
        facts.append(f"observed {f.when(row.observed_at)} by {text(row.observer or '?')}")
    facts.append(f"stale after {timeutil.format_duration(row.stale_after_s)}")
    if row.host:
        facts.append(f"host {text(row.host)}")
    inner = [f'<p class="atlas-meta">{" · ".join(facts)}</p>']
    if row.error:
        inner.append(f'<p class="atlas-note atlas-text">{text(row.error)}</p>')
    gpu_rows = []
    for gpu in row.gpus:
        if not isinstance(gpu, dict):
            continue
        used, total = gpu.get("memory_used_mib"), gpu.get("memory_total_mib")
        if isinstance(used, (int, float)) and isinstance(total, (int, float)) and total > 0:
            memory = f"{bar(used, total)} {used:,.0f} / {total:,.0f} MiB"
        else:
            memory = "unknown"
        util = gpu.get("utilization_gpu_pct")
        procs = gpu.get("processes")
        gpu_rows.append(
            f"<tr><td>gpu{text(gpu.get('index'))}</td><td>{text(gpu.get('name') or '')}</td>"
            f"<td>{memory}</td><td>{text(util) + '%' if util is not None else ''}</td>"
            f"<td>{len(procs) if isinstance(procs, list) else ''}</td></tr>"
        )
    if gpu_rows:
        inner.append(f.table(["GPU", "Name", "Memory in use", "Utilisation", "Processes"],
                             gpu_rows))
    elif row.reachable:
        inner.append("<p>No GPUs reported.</p>")
    observed = ""
    if row.observed_at:
        observed = (f' data-atlas-observed="{text(row.observed_at)}" '
                    f'data-atlas-stale-after="{float(row.stale_after_s):.0f}"')
    return (f'<div class="atlas-machine" id="machine--{text(row.machine)}"{observed}>\n'
            + "\n".join(inner) + "\n</div>\n\n")


RECENTLY_DONE = 20


def tasks(ctx: PageContext, project: Any, advisory: str) -> str:
    """One project's board: ready, claimed (each with a countdown the reader's browser
    keeps running), blocked (with what blocks it), and the most recently finished."""
    page = urls.tasks_page(project.name)
    states = list(project.tasks)
    out = [front_matter(f"Tasks: {project.name}", hide_toc=True),
           f"# Tasks of {heading(project.name)}\n\n"]
    out.append(f.block(
        '<p class="admonition-title">A claim is a lease</p>'
        f'<p class="atlas-advisory">{text(advisory)}</p>', "admonition note"))
    out.append(f.block(
        f"<p>As read when the site was built, {f.when(timeutil.format_time(ctx.now))}; "
        "each claim's countdown is recomputed by your browser, so a claim whose time "
        "passed reads as expired. Take a task with <code>atlas task next --for 2h</code>, "
        "finish it with <code>atlas task done ID</code>.</p>"))

    def row(st: Any, *cells: str) -> str:
        title = f'{text(st.task.title)}<br>{f.ident(st.id)}'
        why = f'<div class="atlas-text">{text(st.task.why or "")}</div>'
        paths = "".join(f'<br><span class="atlas-meta">touches <code>{text(p)}</code></span>'
                        for p in st.task.paths)
        return (f'<td>{title}{paths}</td><td>{why}</td>' + "".join(cells))

    ready = [st for st in states if st.state == "ready"]
    claimed = [st for st in states if st.state == "claimed"]
    blocked = [st for st in states if st.state == "blocked"]
    finished = sorted((st for st in states if st.ended is not None),
                      key=lambda st: st.ended.at, reverse=True)[:RECENTLY_DONE]
    sections = []
    sections.append(("Ready", ["Task", "Why", "Added"], [
        f'<tr id="task--{text(st.id)}">'
        + row(st, f"<td>{f.when_short(st.task.created_at)}<br>by {text(st.task.author)}</td>")
        + "</tr>" for st in ready]))
    sections.append(("Claimed", ["Task", "Why", "Holder", "Claim"], [
        f'<tr id="task--{text(st.id)}" data-atlas-expires="{text(st.expires_at or "")}" '
        'data-atlas-expired-state="ready (claim expired)">'
        + row(st, f"<td>{text(st.holder or '')}</td>",
              f'<td><span class="atlas-state">{f.mark("held", "claimed")}</span> '
              f'<span class="atlas-countdown">expires in '
              f"{timeutil.format_duration(st.expires_in_s or 0)}</span></td>")
        + "</tr>" for st in claimed]))
    sections.append(("Blocked", ["Task", "Why", "Waits for"], [
        f'<tr id="task--{text(st.id)}">'
        + row(st, "<td>" + "<br>".join(
            f"{f.ident(b.id)} {text(b.title or '')}: {text(b.why)}" for b in st.blocked_by)
            + "</td>")
        + "</tr>" for st in blocked]))
    sections.append(("Recently done", ["Task", "Why", "Ended"], [
        f'<tr id="task--{text(st.id)}">'
        + row(st, f"<td>{f.mark('free' if st.state == 'done' else 'retracted', st.state)} "
              f"by {text(st.ended.author)}<br>{f.when_short(st.ended.at)}"
              f'<div class="atlas-text">{text(st.ended.why or "")}</div></td>')
        + "</tr>" for st in finished]))
    for title, head, rows in sections:
        out.append(f"## {title}\n\n")
        if rows:
            ident = f"atlas-tasks-{title.split()[-1].lower()}"
            out.append(f.block(f.table(head, rows, ident=ident)))
        else:
            out.append(f.block(f"<p>No task is {title.lower()}.</p>"
                               if title != "Recently done" else "<p>No task is done yet.</p>"))
    for st in states:
        if st.ended is not None:
            ctx.event(st.ended.at, project.name,
                      f"task {st.state}: {f.truncate(st.task.title, 60)}", page,
                      f"task--{st.id}", st.ended.author)
    return "".join(out)
