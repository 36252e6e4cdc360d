/**
 * A thread: where it came from, its runs on their lanes (Lanes.tsx), its handoffs, the
 * transfers still waiting to be taken in, the threads made from it and its runs. The
 * newest 200 runs (a window of `thread.get`), followed live through `thread.events`.
 */
import type { ContextTransfer, ThreadView } from "@skein/domain"
import { labels, range } from "../src/CoverageText.js"
import { Lanes } from "./Lanes.js"
import { useFollowed } from "./Loading.js"
import { type Go, nameOf } from "./Route.js"
import type { Rpc } from "./Rpc.js"

/** Runs shown at once: the newest this many. */
const WINDOW = 200

/** A transfer still waiting, in words: `a merge-back from thr_… (made by the user)`. */
const waiting = (threadId: string, x: ContextTransfer): string => {
  const other = x.sourceThreadId === threadId ? `to ${x.targetThreadId}` : `from ${x.sourceThreadId}`
  const at = x.sourcePoint.runOrdinal === undefined ? "" : ` at run ${x.sourcePoint.runOrdinal}`
  return `${x.type.replace("_", " ")} ${other}${at}, made by the ${x.createdBy}`
}

export const ThreadPage = ({ rpc, threadId, go }: { rpc: Rpc; threadId: string; go: Go }) => {
  const loaded = useFollowed(
    rpc,
    threadId,
    () => rpc.call<ThreadView>("thread.get", { threadId, runs: { limit: WINDOW }, items: false }),
    [threadId]
  )
  if (loaded.error) return <p class="error">{loaded.error}</p>
  const view = loaded.value
  if (view === undefined) return <p>Loading…</p>
  const { thread, runs, handoffs, children } = view
  const names = labels(view)
  const parent = thread.lineage.parentThreadId
  const pending = view.transfers.filter((x) => x.status === "pending")
  return (
    <>
      <h2>{nameOf(thread)}</h2>
      {parent !== null && (
        <p>
          {thread.lineage.sideChat ? "side chat" : thread.lineage.relationshipToParent} of{" "}
          <button class="link" data-testid="parent" onClick={() => go({ view: "thread", threadId: parent })}>
            {parent}
          </button>
          {thread.lineage.observeOnly && <span class="meta">observe-only: what a provider's own child agent did</span>}
        </p>
      )}
      <p class="meta">
        {view.page ? `runs ${view.page.from}-${view.page.to} of ${view.page.runCount}` : `${runs.length} runs`}
        {thread.restore !== undefined &&
          ` · file restore to run ${thread.restore.toRunOrdinal}: ${thread.restore.status}`}
      </p>
      <Lanes view={view} go={go} />
      {pending.length > 0 && (
        <section class="panel" data-testid="pending">
          <h3>Waiting to be taken in</h3>
          <ul>
            {pending.map((x) => (
              <li key={x.id}>
                {waiting(threadId, x)} <span class="meta">{x.id}</span>
              </li>
            ))}
          </ul>
        </section>
      )}
      <section class="panel">
        <h3>Handoffs</h3>
        {handoffs.length === 0 ? (
          <p class="meta">none: every run was served natively</p>
        ) : (
          <ul>
            {handoffs.map((h) => (
              <li key={h.id}>
                <button
                  class="link"
                  data-testid="handoff"
                  onClick={() => go({ view: "handoff", threadId, handoffId: h.id })}
                >
                  {names.handoffs.get(h.id)} {h.strategy}
                </button>
                <span class="meta">
                  covers {range(h)} · to{" "}
                  {h.toProviderThreadId === null
                    ? "?"
                    : (names.providerThreads.get(h.toProviderThreadId) ?? h.toProviderThreadId)}{" "}
                  · {h.status} · {h.id}
                </span>
              </li>
            ))}
          </ul>
        )}
      </section>
      {children.length > 0 && (
        <section class="panel">
          <h3>Forks and subagents</h3>
          <ul>
            {children.map((c) => (
              <li key={c.id}>
                <button class="link" onClick={() => go({ view: "thread", threadId: c.id })}>
                  {nameOf(c)}
                </button>
                <span class="meta">{c.lineage.sideChat ? "side chat" : c.lineage.relationshipToParent}</span>
              </li>
            ))}
          </ul>
        </section>
      )}
      <section class="panel">
        <h3>Runs</h3>
        <ol>
          {runs.map((r) => (
            <li key={r.id} value={r.ordinal} data-testid="run">
              <button class="link" onClick={() => go({ view: "run", threadId, ordinal: r.ordinal })}>
                {r.provider} · {r.status}
              </button>
              <span class="meta">context {r.contextResolution}</span>
            </li>
          ))}
          {(view.queued ?? []).map((r) => (
            <li key={r.id} class="meta">
              queued: {r.provider}
            </li>
          ))}
        </ol>
      </section>
    </>
  )
}
