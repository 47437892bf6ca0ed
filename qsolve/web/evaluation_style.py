"""The evaluation and knowledge pages' own look, served at ``/evaluations/style.css`` (the pages allow
styles from this site only, no ``style=`` attribute), on top of ``static/style.css``."""

STYLESHEET = """
.ev-meta { display: grid; grid-template-columns: max-content 1fr; gap: .15rem 1rem; margin: .4rem 0 1rem; }
.ev-meta dt { color: var(--muted); }
.ev-meta dd { margin: 0; }
.ev-status { display: inline-block; padding: 0 .45rem; border-radius: 3px; font-size: 13px;
             border: 1px solid var(--line); background: var(--soft); }
.ev-status.completed { color: var(--ok); border-color: var(--ok); }
.ev-status.failed, .ev-status.interrupted { color: var(--bad); border-color: var(--bad); }
.ev-status.cancelled { color: var(--muted); }
.ev-status.running, .ev-status.pending { color: var(--warn); border-color: var(--warn); }
.ev-record { border: 1px solid var(--line); border-radius: 6px; padding: .6rem 1rem; margin: 1rem 0; }
.ev-record h2 { margin-top: .2rem; }
.ev-figures { display: flex; gap: 1rem; flex-wrap: wrap; margin: .4rem 0; }
.ev-figures figure { margin: 0; }
.ev-figures img { max-width: 460px; max-height: 340px; border: 1px solid var(--line); display: block; }
.ev-figures figcaption { font-size: 12px; color: var(--muted); }
.ev-answers td pre, .ev-pre { white-space: pre-wrap; word-break: break-word; margin: 0; max-width: 44rem;
                              font: 13px/1.4 ui-monospace, SFMono-Regular, Menlo, monospace; }
.ev-answers td.q { font-weight: 600; white-space: nowrap; }
.ev-flag { color: var(--bad); font-weight: 700; }
.ev-differs td, tr.ev-differs { background: #fff6e5; }
.ev-mark { color: var(--bad); font-weight: 700; }
.ev-rows { margin: .5rem 0 1rem; }
.ev-row { border: 1px solid var(--line); border-radius: 5px; margin: .35rem 0; }
.ev-row > summary { display: grid; grid-template-columns: 14rem 8rem 1fr 1fr 16rem; gap: .6rem;
                    padding: .35rem .6rem; cursor: pointer; list-style-position: inside; }
.ev-row.ev-head > summary { cursor: default; font-weight: 600; background: var(--soft); }
.ev-row .ev-body { padding: .4rem .8rem .8rem; border-top: 1px solid var(--line); }
.ev-kind.decision { color: var(--bad); font-weight: 700; }
.ev-kind.content { color: var(--warn); font-weight: 600; }
.ev-kind.same { color: var(--ok); }
.ev-kind.only { color: var(--muted); font-style: italic; }
table.ev-diff { width: 100%; table-layout: fixed;
                font: 12px/1.35 ui-monospace, SFMono-Regular, Menlo, monospace; }
table.ev-diff td { padding: 0 .4rem; border: 0; white-space: pre-wrap; word-break: break-word; }
table.ev-diff td.no { width: 2.5rem; color: var(--muted); text-align: right; }
table.ev-diff tr.changed td.l, table.ev-diff tr.removed td.l { background: #fde8e7; }
table.ev-diff tr.changed td.r, table.ev-diff tr.added td.r { background: #e6f6ea; }
table.ev-diff tr.skipped td { color: var(--muted); font-style: italic; background: var(--soft); }
.ev-prompt { margin: .6rem 0; }
.ev-forms { display: flex; gap: 2rem; flex-wrap: wrap; align-items: flex-start; }
form.ev-verdict { display: flex; gap: .5rem; flex-wrap: wrap; align-items: end; margin: .4rem 0; }
form.ev-verdict label { display: grid; gap: .1rem; font-size: 13px; }
form.ev-verdict textarea { min-width: 22rem; }
.ev-tasks li { margin: .2rem 0; }
.ev-warnings li { color: var(--warn); }
""".lstrip()
