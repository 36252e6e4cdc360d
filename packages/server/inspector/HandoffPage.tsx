/**
 * A handoff: its text, strategy, the runs it covers, who wrote it, its status, what it
 * superseded and what superseded it, the run that took it in, and what was left out to
 * fit its budget.
 */
import type { ContextHandoff, ThreadView } from "@skein/domain"
import { range } from "../src/CoverageText.js"
import { useLoaded } from "./Loading.js"
import type { Go, Route } from "./Route.js"
import type { Rpc } from "./Rpc.js"

/** The handoff, and the runs after those it covers (where the run that took it in and any handoff it replaced are). */
const load = async (rpc: Rpc, route: Extract<Route, { view: "handoff" }>) => {
  const handoff = await rpc.call<ContextHandoff>("handoff.get", { handoffId: route.handoffId })
  const after = Math.max(0, Math.min(handoff.coveredRunOrdinals.from, handoff.coveredRunOrdinals.to) - 1)
  const around = await rpc.call<ThreadView>("thread.get", {
    threadId: handoff.threadId,
    runs: { after, limit: 100 },
    items: false
  })
  return { handoff, around }
}

export const HandoffPage = ({ rpc, route, go }: { rpc: Rpc; route: Extract<Route, { view: "handoff" }>; go: Go }) => {
  const loaded = useLoaded(() => load(rpc, route), [route.handoffId])
  if (loaded.error) return <p class="error">{loaded.error}</p>
  if (loaded.value === undefined) return <p>Loading…</p>
  const { handoff: h, around } = loaded.value
  const consumer = around.runs.find((r) => r.id === h.targetRunId)
  const replaced = around.handoffs.filter((other) => other.supersededBy === h.id)
  const open = (handoffId: string) => go({ view: "handoff", threadId: route.threadId, handoffId })
  return (
    <>
      <button class="link" onClick={() => go({ view: "thread", threadId: route.threadId })}>
        ← the thread
      </button>
      <h2>Handoff {h.id}</h2>
      <p data-testid="handoff-facts">
        {h.strategy} · covers {range(h)} · {h.kind} · {h.status} · written by{" "}
        {h.createdByProvider ?? "Skein's local summariser"}
      </p>
      <p class="meta">
        about {h.tokenEstimate} tokens of a budget of {h.budgetTokens}
        {h.targetRunId !== null &&
          (consumer === undefined ? (
            ` · taken in by run ${h.targetRunId}`
          ) : (
            <>
              {" · taken in by "}
              <button class="link" onClick={() => go({ view: "run", threadId: h.threadId, ordinal: consumer.ordinal })}>
                run {consumer.ordinal}
              </button>
            </>
          ))}
        {h.supersededBy !== null && (
          <>
            {" · superseded by "}
            <button class="link" onClick={() => open(h.supersededBy!)}>
              {h.supersededBy}
            </button>
          </>
        )}
        {replaced.map((other) => (
          <span key={other.id}>
            {" · supersedes "}
            <button class="link" onClick={() => open(other.id)}>
              {other.id}
            </button>
          </span>
        ))}
      </p>
      <pre class="handoff-text" data-testid="handoff-text">
        {h.summaryText}
      </pre>
      {h.payload.omitted.length > 0 && (
        <section class="panel" data-testid="omitted">
          <h3>Left out to fit the budget</h3>
          <ul>
            {h.payload.omitted.map((o, i) => (
              <li key={i}>
                {o.section}: {o.lines} lines ({o.reason})
              </li>
            ))}
          </ul>
        </section>
      )}
    </>
  )
}
