/**
 * The threads: a tree of the roots with their forks, side chats and subagents, found by
 * title, and their lineage graph with the transfers still waiting on its edges. Read
 * again every two seconds.
 */
import type { AppThread, ContextTransfer } from "@skein/domain"
import { useState } from "preact/hooks"
import { LineageGraph } from "./Lineage.js"
import { useLoaded } from "./Loading.js"
import { type Go, nameOf } from "./Route.js"
import type { Rpc } from "./Rpc.js"

/** Past this many threads the graph is left out (the list stays). */
const GRAPH_LIMIT = 300

export const ThreadsPage = ({ rpc, go }: { rpc: Rpc; go: Go }) => {
  const [query, setQuery] = useState("")
  const loaded = useLoaded(
    () =>
      Promise.all([
        rpc.call<ReadonlyArray<AppThread>>("thread.list", {}),
        rpc.call<ReadonlyArray<ContextTransfer>>("transfer.list", { status: "pending" })
      ]),
    [],
    2000
  )
  if (loaded.error) return <p class="error">{loaded.error}</p>
  const [threads, pending] = loaded.value ?? [[], []]
  const children = new Map<string, Array<AppThread>>()
  for (const t of threads) {
    const parent = t.lineage.parentThreadId
    if (parent !== null) children.set(parent, [...(children.get(parent) ?? []), t])
  }
  const item = (t: AppThread) => (
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
      <p class="meta">
        {threads.length} threads · {pending.length} {pending.length === 1 ? "transfer" : "transfers"} waiting to be
        taken in
      </p>
      <ul class="threads">{shown.map(item)}</ul>
      {query === "" && threads.length > 0 && threads.length <= GRAPH_LIMIT && (
        <section class="panel">
          <h3>Lineage</h3>
          <LineageGraph threads={threads} pending={pending} open={(threadId) => go({ view: "thread", threadId })} />
        </section>
      )}
    </>
  )
}
