/**
 * A run: its message and items (messages, commands, file changes, plans, approvals,
 * child agents, the handoff it was given), its usage, its checkpoint's diff summary, and
 * its open approvals answered from the page. Followed live through `thread.events`.
 */
import type { Checkpoint, RunView, ThreadView, TurnItem } from "@skein/domain"
import { useState } from "preact/hooks"
import { useFollowed } from "./Loading.js"
import type { Go, Route } from "./Route.js"
import type { Rpc } from "./Rpc.js"

type Answer = (approvalId: string, decision: "accept" | "decline") => void

/** One item as a line of the run's page. */
const ItemLine = ({ item, answer, go }: { item: TurnItem; answer: Answer; go: Go }) => {
  switch (item.type) {
    case "user_message":
      return (
        <p>
          <strong>user</strong> {item.text}
        </p>
      )
    case "assistant_message":
      return (
        <p>
          <strong>agent</strong> {item.text}
        </p>
      )
    case "reasoning":
      return <p class="meta">hidden reasoning, kept with its provider</p>
    case "tool_call":
      return (
        <p>
          <strong>tool</strong> {item.name} <code>{item.input}</code> {item.output ? `→ ${item.output}` : ""}
        </p>
      )
    case "command_execution":
      return (
        <p>
          <strong>command</strong> <code>{item.command}</code> exit {String(item.exitCode)}
        </p>
      )
    case "file_change":
      return (
        <p>
          <strong>file</strong> {item.kind} {item.path}
        </p>
      )
    case "plan":
      return (
        <div>
          <strong>plan</strong>
          <ul>
            {item.steps.map((step, i) => (
              <li key={i}>
                {step.status}: {step.text}
              </li>
            ))}
          </ul>
        </div>
      )
    case "approval_request":
      return (
        <p data-testid="approval">
          <strong>approval</strong> {item.question} <span class="meta">{item.status}</span>
          {item.status === "open" && (
            <>
              {" "}
              <button onClick={() => answer(item.approvalId, "accept")}>Accept</button>{" "}
              <button onClick={() => answer(item.approvalId, "decline")}>Decline</button>
            </>
          )}
        </p>
      )
    case "child_agent":
      return (
        <p>
          <strong>child agent</strong> {item.description} <span class="meta">{item.status}</span>
          {item.childThreadId !== undefined && (
            <button class="link" onClick={() => go({ view: "thread", threadId: item.childThreadId! })}>
              {" "}
              its thread
            </button>
          )}
        </p>
      )
    case "handoff_context":
      return (
        <p class="meta">
          given{" "}
          <button
            class="link"
            onClick={() => go({ view: "handoff", threadId: item.threadId, handoffId: item.handoffId })}
          >
            handoff {item.handoffId}
          </button>{" "}
          ({item.text.length} characters, {item.delivery})
        </p>
      )
    case "error":
      return <p class="error">{item.message}</p>
  }
}

/** What the run's checkpoint holds: each file it changed, and any left out for its size. */
const Changes = ({ checkpoint }: { checkpoint: Checkpoint | undefined }) => (
  <section class="panel" data-testid="checkpoint">
    <h3>Files</h3>
    {checkpoint === undefined ? (
      <p class="meta">no checkpoint</p>
    ) : checkpoint.diffSummary.length === 0 ? (
      <p class="meta">
        {checkpoint.kind} checkpoint {checkpoint.status}: no file changed
      </p>
    ) : (
      <>
        <p class="meta">
          {checkpoint.kind} checkpoint {checkpoint.status}
          {checkpoint.commitSha !== undefined && ` · ${checkpoint.commitSha.slice(0, 12)}`}
        </p>
        <table class="diff">
          <tbody>
            {checkpoint.diffSummary.map((d) => (
              <tr key={d.path} data-testid="diff">
                <td class={`change-${d.change}`}>{d.change}</td>
                <td>
                  <code>{d.path}</code>
                </td>
                <td class="added">+{d.additions}</td>
                <td class="deleted">−{d.deletions}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </>
    )}
    {(checkpoint?.omitted ?? []).map((o) => (
      <p key={o.path} class="error">
        {o.path} ({o.bytes} bytes) was too large to keep: a restore cannot bring it back
      </p>
    ))}
  </section>
)

export const RunPage = ({ rpc, route, go }: { rpc: Rpc; route: Extract<Route, { view: "run" }>; go: Go }) => {
  const [failure, setFailure] = useState<string | null>(null)
  const loaded = useFollowed(
    rpc,
    route.threadId,
    () =>
      rpc.call<ThreadView>("thread.get", {
        threadId: route.threadId,
        runs: { after: route.ordinal - 1, limit: 1 },
        items: true
      }),
    [route.threadId, route.ordinal]
  )
  if (loaded.error) return <p class="error">{loaded.error}</p>
  const run: RunView | undefined = loaded.value?.runs[0]
  if (run === undefined) return <p>Loading…</p>
  const checkpoint = loaded.value?.checkpoints.find((c) => c.runId === run.id)
  const answer: Answer = (approvalId, decision) => {
    setFailure(null)
    rpc
      .call("approval.respond", { threadId: route.threadId, approvalId, decision })
      .catch((error: Error) => setFailure(error.message))
  }
  return (
    <>
      <button class="link" onClick={() => go({ view: "thread", threadId: route.threadId })}>
        ← the thread
      </button>
      <h2>
        Run {run.ordinal} on {run.provider}
      </h2>
      <p data-testid="run-status">
        {run.status} · context {run.contextResolution ?? "-"}
        {run.usage !== undefined && ` · ${run.usage.inputTokens} tokens in, ${run.usage.outputTokens} out`}
        {run.failure !== null && ` · ${run.failure.reason}: ${run.failure.message}`}
      </p>
      {failure !== null && <p class="error">{failure}</p>}
      <section class="panel">
        <p>
          <strong>user</strong> {run.message}
        </p>
        {run.items.map((item) => (
          <ItemLine key={item.id} item={item} answer={answer} go={go} />
        ))}
      </section>
      <Changes checkpoint={checkpoint} />
    </>
  )
}
