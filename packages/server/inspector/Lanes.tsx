/**
 * A thread's runs as a timeline: a column per run, a lane per provider thread, a run's
 * cell on the lane that natively served it. A run a handoff told the rest gets the
 * handoff's arrow into that lane (`→H2`, its strategy and the runs it covers; it opens
 * the handoff); rolled-back runs are struck through; a lane that is divergent, stale,
 * rolled back or failed is marked with the reason. Above it, the coverage at a glance, the
 * seeds' way: `C1 1-5,9 + H2 and L1 6-8 + H1`.
 */
import type { ContextHandoff, Run, ThreadView } from "@skein/domain"
import { contextColumn, labels, laneCoverage, range } from "../src/CoverageText.js"
import type { Go } from "./Route.js"

/** Provider thread states a reader should notice. */
const marked = new Set(["divergent", "stale", "rolled_back", "failed"])

const strategyWords: Record<ContextHandoff["strategy"], string> = {
  delta_since_target_last_seen: "delta",
  full_thread_summary: "full",
  checkpoint_summary: "checkpoint",
  manual_context: "manual",
  fork_delta: "fork delta"
}

export const Lanes = ({ view, go }: { view: ThreadView; go: Go }) => {
  const names = labels(view)
  const lanes = laneCoverage(view)
  const handoffs = new Map<string, ContextHandoff>(view.handoffs.map((h) => [h.id, h]))
  const threadId = view.thread.id
  const cell = (laneId: string, run: Run) => {
    if (run.providerThreadId !== laneId) return <td key={run.id} />
    const how = `run ${run.ordinal}: ${run.status}, ${contextColumn(view, run)}`
    if (run.status === "rolled_back") {
      return (
        <td key={run.id} class="rolled_back" title={how}>
          ↶
        </td>
      )
    }
    const handoff = run.contextHandoffId === null ? undefined : handoffs.get(run.contextHandoffId)
    if (handoff === undefined) {
      return (
        <td key={run.id} class={`native run-${run.status}`} title={how}>
          ●
        </td>
      )
    }
    return (
      <td key={run.id} class={`handoff run-${run.status}`} title={how}>
        <button
          class="arrow"
          data-testid="arrow"
          onClick={() => go({ view: "handoff", threadId, handoffId: handoff.id })}
        >
          →{names.handoffs.get(handoff.id)}
        </button>
        <small>
          {strategyWords[handoff.strategy]} {range(handoff)}
        </small>
      </td>
    )
  }
  return (
    <>
      <p data-testid="coverage" class="coverage">
        {lanes.map((lane) => lane.text).join(" and ") || "no provider thread yet"}
      </p>
      <div class="lanes">
        <table class="lanes">
          <thead>
            <tr>
              <th class="lane">provider thread</th>
              <th class="lane">holds</th>
              {view.runs.map((r) => (
                <th key={r.id}>
                  <button class="link" onClick={() => go({ view: "run", threadId, ordinal: r.ordinal })}>
                    {r.ordinal}
                  </button>
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {lanes.map(({ providerThread: pt, label, text }) => (
              <tr key={pt.id} data-testid="lane">
                <th class="lane" title={`${pt.provider} · ${pt.id} · ${pt.nativeRefStrength}`}>
                  {label} <span class="meta">{pt.provider}</span>
                  {marked.has(pt.status) && (
                    <span class={`mark status-${pt.status}`} data-testid="mark" title={pt.statusReason ?? pt.status}>
                      {pt.status.replace("_", " ")}
                      {pt.statusReason !== null && `: ${pt.statusReason}`}
                    </span>
                  )}
                </th>
                <td class="covers">{text.slice(label.length + 1)}</td>
                {view.runs.map((r) => cell(pt.id, r))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  )
}
