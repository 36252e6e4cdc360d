/**
 * `skein inspect [THREAD]`: the address of the daemon's inspector page, with the token
 * in the fragment (which a browser never sends to a server, and which no log of the
 * daemon's sees), and the thread to open, if named. The daemon is asked first, so that
 * a daemon that is not there, or a thread that is not, is told here and not on the page.
 * `--open` hands the address to the system's browser opener (xdg-open, open).
 */
import { Console, Effect, Option } from "effect"
import { spawn } from "node:child_process"
import { resolveClientToken } from "./Client.js"
import { decodeThreadId, withClient, type Connection } from "./CliClient.js"
import { DEFAULT_RPC_PATH, INSPECT_PATH } from "./Address.js"

/** The page's address for a daemon at `rpcUrl` (`ws://127.0.0.1:7878/`). */
export const inspectorUrl = (rpcUrl: string, token: string | undefined, threadId: string | undefined): string => {
  const url = new URL(rpcUrl)
  const rpcPath = url.pathname
  url.protocol = url.protocol === "wss:" ? "https:" : "http:"
  url.pathname = INSPECT_PATH
  url.search = ""
  const fragment = new URLSearchParams()
  if (token !== undefined) fragment.set("token", token)
  if (rpcPath !== DEFAULT_RPC_PATH && rpcPath !== "/") fragment.set("rpc", rpcPath)
  if (threadId !== undefined) fragment.set("thread", threadId)
  url.hash = fragment.toString()
  return url.toString()
}

const opener = process.platform === "darwin" ? "open" : process.platform === "win32" ? "explorer" : "xdg-open"

export const inspect = (o: Connection & { readonly thread: Option.Option<string>; readonly open: boolean }) =>
  withClient(o, (client) =>
    Effect.gen(function* () {
      const threadId = Option.isSome(o.thread) ? yield* decodeThreadId(o.thread.value) : undefined
      // The daemon answers (and knows the thread) before the address is given out.
      if (threadId === undefined) yield* client.provider.list()
      else yield* client.thread.get({ threadId, runs: { limit: 1 }, items: false })
      const { token } = yield* resolveClientToken({ url: o.url, token: Option.getOrUndefined(o.token) })
      const address = inspectorUrl(o.url, token, threadId)
      yield* Console.log(address)
      if (o.open) {
        yield* Effect.sync(() => {
          const child = spawn(opener, [address], { stdio: "ignore", detached: true })
          child.on("error", () => process.stderr.write(`skein: could not run ${opener}; open the address above\n`))
          child.unref()
        })
      }
    })
  )
