/**
 * The inspector's entry: the token comes in the page's fragment (`#token=…`, never sent
 * to a server), is kept in memory and dropped from the address bar; the rest of the
 * fragment is the route (`thread=…`, `handoff=…`) and, when not `/rpc`, the RPC's path
 * (`rpc=…`).
 */
import { render } from "preact"
import { useEffect, useState } from "preact/hooks"
import { App } from "./App.js"
import type { Route } from "./Route.js"
import { connect, type Rpc } from "./Rpc.js"

const params = new URLSearchParams(location.hash.slice(1))
const token = params.get("token") ?? ""

const routeOf = (fragment: URLSearchParams): Route => {
  const threadId = fragment.get("thread")
  const handoffId = fragment.get("handoff")
  const run = Number(fragment.get("run"))
  if (threadId !== null && handoffId !== null) return { view: "handoff", threadId, handoffId }
  if (threadId !== null && Number.isInteger(run) && run > 0) return { view: "run", threadId, ordinal: run }
  return threadId !== null ? { view: "thread", threadId } : { view: "threads" }
}

const fragmentOf = (route: Route): string =>
  route.view === "threads"
    ? ""
    : route.view === "thread"
      ? `thread=${encodeURIComponent(route.threadId)}`
      : route.view === "run"
        ? `thread=${encodeURIComponent(route.threadId)}&run=${route.ordinal}`
        : `thread=${encodeURIComponent(route.threadId)}&handoff=${encodeURIComponent(route.handoffId)}`

const Root = () => {
  const [rpc, setRpc] = useState<Rpc | { error: string } | null>(null)
  const [route, setRoute] = useState<Route>(routeOf(params))
  useEffect(() => {
    history.replaceState(null, "", `#${fragmentOf(route)}`)
    // The daemon's RPC path (`/rpc`, unless the address names another).
    const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}${params.get("rpc") ?? "/rpc"}`
    connect(url, token).then(setRpc, (error: Error) => setRpc({ error: error.message }))
    const back = () => setRoute(routeOf(new URLSearchParams(location.hash.slice(1))))
    addEventListener("hashchange", back)
    return () => removeEventListener("hashchange", back)
  }, [])
  const go = (next: Route) => {
    location.hash = fragmentOf(next)
    setRoute(next)
  }
  if (rpc === null) return <p>Connecting…</p>
  if ("error" in rpc)
    return (
      <p class="error">
        {rpc.error}. Open the inspector with `skein inspect`, which puts the daemon's token in the address.
      </p>
    )
  return <App rpc={rpc} route={route} go={go} />
}

render(<Root />, document.getElementById("app")!)
