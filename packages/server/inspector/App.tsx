/**
 * The inspector: a header and the view the route names (ThreadsPage, ThreadPage,
 * RunPage, HandoffPage), each reading the daemon over the RPC.
 */
import { HandoffPage } from "./HandoffPage.js"
import type { Go, Route } from "./Route.js"
import type { Rpc } from "./Rpc.js"
import { RunPage } from "./RunPage.js"
import { ThreadPage } from "./ThreadPage.js"
import { ThreadsPage } from "./ThreadsPage.js"

export const App = ({ rpc, route, go }: { rpc: Rpc; route: Route; go: Go }) => (
  <>
    <header>
      <strong>Skein inspector</strong>
      <button class="link" style="color:#f7f7f5" onClick={() => go({ view: "threads" })}>
        Threads
      </button>
    </header>
    <main>
      {route.view === "threads" ? (
        <ThreadsPage rpc={rpc} go={go} />
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
