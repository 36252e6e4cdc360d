/**
 * The inspector's views: the threads (a tree of roots with their forks and subagents,
 * searchable by title), a thread (its runs on one lane per provider thread, a run's cell
 * on the lane that natively served it, marked when a handoff told it the rest; its
 * handoffs, lineage and children), a run (its items; an open approval answered here) and
 * a handoff (its text, strategy, covered runs, who wrote it, what was left out). A thread's
 * and a run's views follow the thread's events (`thread.events`).
 */
import { useEffect, useState } from "preact/hooks"
import { LineageGraph } from "./Lineage.js"
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
interface Item {
  readonly id: string
  readonly type: string
  readonly text?: string
  readonly name?: string
  readonly input?: string
  readonly output?: string | null
  readonly command?: string
  readonly exitCode?: number | null
  readonly path?: string
  readonly kind?: string
  readonly summary?: string
  readonly steps?: ReadonlyArray<{ readonly text: string; readonly status: string }>
  readonly approvalId?: string
  readonly question?: string
  readonly status?: string
  readonly message?: string
  readonly description?: string
  readonly result?: string | null
}
interface RunWithItems extends Run {
  readonly message: string
  readonly items: ReadonlyArray<Item>
  readonly usage?: { readonly inputTokens: number; readonly outputTokens: number }
  readonly failure: { readonly reason: string; readonly message: string } | null
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
  readonly tokenEstimate: number
  readonly budgetTokens: number
  readonly payload: {
    readonly omitted: ReadonlyArray<{ readonly section: string; readonly lines: number; readonly reason: string }>
  }
}
interface ThreadView {
  readonly thread: Thread
  readonly runs: ReadonlyArray<Run>
  readonly providerThreads: ReadonlyArray<ProviderThread>
  readonly handoffs: ReadonlyArray<Handoff>
  readonly children: ReadonlyArray<Thread>
  readonly page?: {
    readonly runCount: number
    readonly from: number
    readonly to: number
    readonly sequence: number
  }
}

export type Route =
  | { readonly view: "threads" }
  | { readonly view: "thread"; readonly threadId: string }
  | { readonly view: "run"; readonly threadId: string; readonly ordinal: number }
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
      ) : route.view === "run" ? (
        <RunPage rpc={rpc} route={route} go={go} />
      ) : (
        <HandoffPage rpc={rpc} route={route} go={go} />
      )}
    </main>
  </>
)

/**
 * A page of a thread (`thread.get` with a window), read now and again as the thread's
 * events come (`thread.events` from the page's sequence, followed for as long as the view
 * is open), at most four times a second however fast they come.
 */
const useFollowed = <A extends { readonly page?: { readonly sequence: number } }>(
  rpc: Rpc,
  threadId: string,
  load: () => Promise<A>,
  keys: ReadonlyArray<unknown>
) => {
  const [state, setState] = useState<{ value?: A; error?: string }>({})
  useEffect(() => {
    let live = true
    let queued: ReturnType<typeof setTimeout> | undefined
    let stop: (() => void) | undefined
    const once = (): Promise<void> =>
      load().then(
        (value) => {
          if (!live) return
          setState({ value })
          stop ??= rpc.stream("thread.events", { threadId, fromSequence: value.page?.sequence ?? 0 }, soon)
        },
        (error: Error) => {
          if (live) setState({ error: error.message })
        }
      )
    const soon = () => {
      queued ??= setTimeout(() => {
        queued = undefined
        void once()
      }, 250)
    }
    void once()
    return () => {
      live = false
      if (queued !== undefined) clearTimeout(queued)
      stop?.()
    }
  }, keys)
  return state
}

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
      {query === "" && threads.length > 0 && threads.length <= 300 && (
        <section class="panel">
          <h3>Lineage</h3>
          <LineageGraph threads={threads} open={(threadId) => go({ view: "thread", threadId })} />
        </section>
      )}
    </>
  )
}

const ThreadPage = ({ rpc, threadId, go }: { rpc: Rpc; threadId: string; go: (route: Route) => void }) => {
  const loaded = useFollowed(
    rpc,
    threadId,
    () => rpc.call<ThreadView>("thread.get", { threadId, runs: { limit: 200 }, items: false }),
    [threadId]
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
              <button class="link" onClick={() => go({ view: "run", threadId, ordinal: r.ordinal })}>
                {r.provider} · {r.status}
              </button>
              <span class="meta">context {r.contextResolution}</span>
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
      <p class="meta">
        about {h.tokenEstimate} tokens of a budget of {h.budgetTokens}
        {h.targetRunId !== null && ` · delivered with run ${h.targetRunId}`}
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

/** One item as a line of the run's page. */
const ItemLine = ({ item, answer }: { item: Item; answer: (approvalId: string, decision: string) => void }) => {
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
            {(item.steps ?? []).map((step, i) => (
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
              <button onClick={() => answer(item.approvalId!, "accept")}>Accept</button>{" "}
              <button onClick={() => answer(item.approvalId!, "decline")}>Decline</button>
            </>
          )}
        </p>
      )
    case "child_agent":
      return (
        <p>
          <strong>child agent</strong> {item.description} <span class="meta">{item.status}</span>
        </p>
      )
    case "handoff_context":
      return <p class="meta">the handoff it was given ({item.text?.length ?? 0} characters)</p>
    case "error":
      return <p class="error">{item.message}</p>
    default:
      return <p class="meta">{item.type}</p>
  }
}

const RunPage = ({
  rpc,
  route,
  go
}: {
  rpc: Rpc
  route: Extract<Route, { view: "run" }>
  go: (route: Route) => void
}) => {
  const [answering, setAnswering] = useState<string | null>(null)
  const loaded = useFollowed(
    rpc,
    route.threadId,
    () =>
      rpc.call<{ runs: ReadonlyArray<RunWithItems>; page?: { sequence: number } }>("thread.get", {
        threadId: route.threadId,
        runs: { after: route.ordinal - 1, limit: 1 },
        items: true
      }),
    [route.threadId, route.ordinal]
  )
  if (loaded.error) return <p class="error">{loaded.error}</p>
  const run = loaded.value?.runs[0]
  if (run === undefined) return <p>Loading…</p>
  const answer = (approvalId: string, decision: string) => {
    setAnswering(null)
    rpc
      .call("approval.respond", { threadId: route.threadId, approvalId, decision })
      .catch((error: Error) => setAnswering(error.message))
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
        {run.status} · context {run.contextResolution}
        {run.usage && ` · ${run.usage.inputTokens} tokens in, ${run.usage.outputTokens} out`}
        {run.failure && ` · ${run.failure.reason}: ${run.failure.message}`}
      </p>
      {answering !== null && <p class="error">{answering}</p>}
      <section class="panel">
        <p>
          <strong>user</strong> {run.message}
        </p>
        {run.items.map((item) => (
          <ItemLine key={item.id} item={item} answer={answer} />
        ))}
      </section>
    </>
  )
}
