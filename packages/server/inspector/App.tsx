/**
 * The inspector's views: the threads (a tree of roots with their forks and subagents,
 * searchable by title), a thread (its runs on one lane per provider thread, a run's cell
 * on the lane that natively served it, marked when a handoff told it the rest; its
 * handoffs, lineage and children), and a handoff (its text, strategy, covered runs, who
 * wrote it). A thread's view refreshes itself every second.
 */
import { useEffect, useState } from "preact/hooks"
import type { Rpc } from "./Rpc.js"

interface Thread {
  readonly id: string
  readonly title: string | null
  readonly lineage: { readonly parentThreadId: string | null; readonly relationshipToParent: string | null }
}
interface Run {
  readonly id: string
  readonly ordinal: number
  readonly provider: string
  readonly status: string
  readonly providerThreadId: string | null
  readonly contextResolution: string
  readonly contextHandoffId: string | null
}
interface ProviderThread {
  readonly id: string
  readonly provider: string
  readonly nativeRefStrength: string
  readonly status: string
}
interface Handoff {
  readonly id: string
  readonly strategy: string
  readonly status: string
  readonly coveredRunOrdinals: { readonly from: number; readonly to: number } | null
  readonly createdByProvider: string | null
  readonly toProviderThreadId: string | null
  readonly summaryText: string
  readonly supersededBy: string | null
  readonly targetRunId: string | null
}
interface ThreadView {
  readonly thread: Thread
  readonly runs: ReadonlyArray<Run>
  readonly providerThreads: ReadonlyArray<ProviderThread>
  readonly handoffs: ReadonlyArray<Handoff>
  readonly children: ReadonlyArray<Thread>
  readonly page?: { readonly runCount: number; readonly from: number; readonly to: number }
}

export type Route =
  | { readonly view: "threads" }
  | { readonly view: "thread"; readonly threadId: string }
  | { readonly view: "handoff"; readonly threadId: string; readonly handoffId: string }

const nameOf = (thread: Thread) => thread.title ?? thread.id

const covered = (h: Handoff) =>
  h.coveredRunOrdinals === null ? "no runs" : `runs ${h.coveredRunOrdinals.from}-${h.coveredRunOrdinals.to}`

export const App = ({ rpc, route, go }: { rpc: Rpc; route: Route; go: (route: Route) => void }) => (
  <>
    <header>
      <strong>Skein inspector</strong>
      <button class="link" style="color:#f7f7f5" onClick={() => go({ view: "threads" })}>
        Threads
      </button>
    </header>
    <main>
      {route.view === "threads" ? (
        <Threads rpc={rpc} go={go} />
      ) : route.view === "thread" ? (
        <ThreadPage rpc={rpc} threadId={route.threadId} go={go} />
      ) : (
        <HandoffPage rpc={rpc} route={route} go={go} />
      )}
    </main>
  </>
)

/** Loads `load` now and every `everyMs` (if given), keeping the last answer or error. */
const useLoaded = <A,>(load: () => Promise<A>, keys: ReadonlyArray<unknown>, everyMs?: number) => {
  const [state, setState] = useState<{ value?: A; error?: string }>({})
  useEffect(() => {
    let live = true
    const once = () =>
      load().then(
        (value) => live && setState({ value }),
        (error: Error) => live && setState({ error: error.message })
      )
    void once()
    const timer = everyMs === undefined ? undefined : setInterval(once, everyMs)
    return () => {
      live = false
      if (timer !== undefined) clearInterval(timer)
    }
  }, keys)
  return state
}

const Threads = ({ rpc, go }: { rpc: Rpc; go: (route: Route) => void }) => {
  const [query, setQuery] = useState("")
  const loaded = useLoaded(() => rpc.call<ReadonlyArray<Thread>>("thread.list", {}), [], 2000)
  if (loaded.error) return <p class="error">{loaded.error}</p>
  const threads = loaded.value ?? []
  const children = new Map<string, Array<Thread>>()
  for (const t of threads) {
    const parent = t.lineage.parentThreadId
    if (parent !== null) children.set(parent, [...(children.get(parent) ?? []), t])
  }
  const item = (t: Thread) => (
    <li key={t.id}>
      <button onClick={() => go({ view: "thread", threadId: t.id })}>{nameOf(t)}</button>
      <span class="meta">
        {t.lineage.relationshipToParent ?? "root"} · {t.id}
      </span>
      {query === "" && (children.get(t.id) ?? []).length > 0 && <ul>{children.get(t.id)!.map(item)}</ul>}
    </li>
  )
  const shown =
    query === ""
      ? threads.filter((t) => t.lineage.parentThreadId === null)
      : threads.filter((t) => nameOf(t).toLowerCase().includes(query.toLowerCase()))
  return (
    <>
      <input
        type="search"
        placeholder="Find a thread by title"
        value={query}
        onInput={(e) => setQuery((e.target as HTMLInputElement).value)}
      />
      <p class="meta">{threads.length} threads</p>
      <ul class="threads">{shown.map(item)}</ul>
    </>
  )
}

const ThreadPage = ({ rpc, threadId, go }: { rpc: Rpc; threadId: string; go: (route: Route) => void }) => {
  const loaded = useLoaded(
    () => rpc.call<ThreadView>("thread.get", { threadId, runs: { limit: 200 }, items: false }),
    [threadId],
    1000
  )
  if (loaded.error) return <p class="error">{loaded.error}</p>
  const view = loaded.value
  if (view === undefined) return <p>Loading…</p>
  const { thread, runs, providerThreads, handoffs, children } = view
  const parent = thread.lineage.parentThreadId
  return (
    <>
      <h2>{nameOf(thread)}</h2>
      {parent !== null && (
        <p>
          {thread.lineage.relationshipToParent} of{" "}
          <button class="link" data-testid="parent" onClick={() => go({ view: "thread", threadId: parent })}>
            {parent}
          </button>
        </p>
      )}
      <p class="meta">
        {view.page ? `runs ${view.page.from}-${view.page.to} of ${view.page.runCount}` : `${runs.length} runs`}
      </p>
      <table class="lanes">
        <thead>
          <tr>
            <th class="lane">provider thread</th>
            {runs.map((r) => (
              <th key={r.id}>{r.ordinal}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {providerThreads.map((pt) => (
            <tr key={pt.id} data-testid="lane">
              <th class="lane">
                {pt.provider} <span class={`meta status-${pt.status}`}>{pt.status}</span>
              </th>
              {runs.map((r) => {
                if (r.providerThreadId !== pt.id) return <td key={r.id} />
                const told = r.contextHandoffId !== null
                return (
                  <td
                    key={r.id}
                    class={r.status === "rolled_back" ? "rolled_back" : told ? "handoff" : "native"}
                    title={`run ${r.ordinal}: ${r.status}, context ${r.contextResolution}`}
                  >
                    {told ? "H" : "●"}
                  </td>
                )
              })}
            </tr>
          ))}
        </tbody>
      </table>
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
                  {h.strategy}
                </button>
                <span class="meta">
                  {covered(h)} · {h.status} · {h.id}
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
                <span class="meta">{c.lineage.relationshipToParent}</span>
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
              {r.provider} · {r.status} · context {r.contextResolution}
            </li>
          ))}
        </ol>
      </section>
    </>
  )
}

const HandoffPage = ({
  rpc,
  route,
  go
}: {
  rpc: Rpc
  route: Extract<Route, { view: "handoff" }>
  go: (route: Route) => void
}) => {
  const loaded = useLoaded(() => rpc.call<Handoff>("handoff.get", { handoffId: route.handoffId }), [route.handoffId])
  if (loaded.error) return <p class="error">{loaded.error}</p>
  const h = loaded.value
  if (h === undefined) return <p>Loading…</p>
  return (
    <>
      <button class="link" onClick={() => go({ view: "thread", threadId: route.threadId })}>
        ← the thread
      </button>
      <h2>Handoff {h.id}</h2>
      <p>
        {h.strategy} · {covered(h)} · {h.status} · written by {h.createdByProvider ?? "Skein's local summariser"}
        {h.supersededBy !== null && ` · superseded by ${h.supersededBy}`}
      </p>
      <pre class="handoff-text" data-testid="handoff-text">
        {h.summaryText}
      </pre>
    </>
  )
}
