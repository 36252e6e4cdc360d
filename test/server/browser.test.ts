/**
 * A real browser against a real daemon: headless Chromium opens a page served from
 * another origin (a loopback server on another port) that tries every way in to a
 * default daemon, with no token, a guessed one and even the right one; not one call
 * goes through. A page of an origin the daemon allows, with the token, makes its call.
 *
 * The browser is the system's Chromium where there is one, else the one the npm
 * registry ships (see test/support/browser.ts): the test needs no system package.
 */
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { describe, expect, it } from "vitest"
import { withChromium } from "../support/browser.js"
import { childEnv, runSkein, tempDir, tokenIn, trackDaemons } from "./support.js"

const start = trackDaemons()

/**
 * The page: \`tryEveryWay(daemon, token)\` tries each WebSocket url in turn (on open
 * it asks for thread.create), then a plain HTTP POST to the RPC path, and answers
 * with what happened and the page's own origin.
 */
const pageHtml = `<!doctype html>
<meta charset="utf-8">
<title>a page of another origin</title>
<script>
window.tryEveryWay = async (daemon, token) => {
const create = JSON.stringify({ _tag: "Request", id: "1", tag: "thread.create", payload: { title: "made by " + location.origin }, headers: [] })
const attempts = [["no token", daemon], ["guessed token", daemon + "?token=" + "g".repeat(20) + "uessed-token-0123456789"]]
if (token) attempts.push(["the right token", daemon + "?token=" + encodeURIComponent(token)])
const attempt = ([name, url]) => new Promise((resolve) => {
  const result = { name, opened: false, error: false, closeCode: null, messages: [] }
  let socket
  try { socket = new WebSocket(url) } catch (e) { result.threw = String(e); return resolve(result) }
  const timer = setTimeout(() => { result.timedOut = true; socket.close(); resolve(result) }, 10000)
  socket.onopen = () => { result.opened = true; socket.send(create) }
  socket.onmessage = (event) => { result.messages.push(String(event.data).slice(0, 1000)); socket.close() }
  socket.onerror = () => { result.error = true }
  socket.onclose = (event) => { result.closeCode = event.code; clearTimeout(timer); resolve(result) }
})
const post = async () => {
  try {
    const response = await fetch(daemon.replace(/^ws/, "http"), { method: "POST", headers: { "content-type": "text/plain" }, body: create })
    return { name: "http post", status: response.status, body: (await response.text()).slice(0, 300) }
  } catch (e) {
    return { name: "http post", fetchError: String(e) }
  }
}
const results = []
for (const a of attempts) results.push(await attempt(a))
results.push(await post())
return { origin: location.origin, results }
}
</script>
`

interface PageServer {
  readonly origin: string
  readonly close: () => Promise<void>
}

/** Serves the page on 127.0.0.1 (a port of its own: an origin of its own). */
const servePage = async (): Promise<PageServer> => {
  const server = Http.createServer((request, response) => {
    if (request.url === "/") {
      response.writeHead(200, { "content-type": "text/html; charset=utf-8" })
      return void response.end(pageHtml)
    }
    response.writeHead(404).end()
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}

/** Opens the page in headless Chromium and has it try every way in to `daemon`. */
const tryFromPage = (page: PageServer, daemon: string, token: string): Promise<any> =>
  withChromium(async (browser) => {
    const tab = await browser.newPage()
    await tab.goto(`${page.origin}/`)
    return tab.evaluate(`tryEveryWay(${JSON.stringify(daemon)}, ${JSON.stringify(token)})`)
  })

const threadTitles = async (home: string, url: string): Promise<Array<string>> => {
  const listed = await runSkein(["call", "--url", url, "thread.list"], childEnv(home))
  expect(listed.code, listed.stderr).toBe(0)
  return JSON.parse(listed.stdout).map((t: { title: string }) => t.title)
}

describe("a browser", () => {
  it("a page of another origin cannot make a single call to a default daemon, not even with its token", async () => {
    const home = tempDir("skein-browser-")
    const daemon = await start(["--port", "0"], childEnv(home))
    const page = await servePage()
    try {
      const report = await tryFromPage(page, daemon.url, tokenIn(home))
      expect(report.origin).toBe(page.origin)
      const sockets = report.results.filter((r: { name: string }) => r.name !== "http post")
      expect(sockets.map((r: { name: string }) => r.name)).toEqual(["no token", "guessed token", "the right token"])
      for (const socket of sockets) {
        // refused at the handshake: never open, nothing received
        expect(socket, JSON.stringify(socket)).toMatchObject({ opened: false, messages: [], closeCode: 1006 })
      }
      // a plain POST is no way in either (refused with 403; the page cannot even read that)
      const post = report.results.find((r: { name: string }) => r.name === "http post")
      expect(post.fetchError ?? `status ${post.status}`).toMatch(/TypeError|status 403/)
      // and nothing happened on the daemon
      expect(await threadTitles(home, daemon.url)).toEqual([])
      expect(daemon.stderr()).toContain(`refused a WebSocket from a page of origin \\"${page.origin}\\"`)
    } finally {
      await page.close()
    }
  }, 90_000)

  it("a page of an allowed origin with the token makes its call", async () => {
    const home = tempDir("skein-browser-allowed-")
    const page = await servePage()
    try {
      const daemon = await start(["--port", "0", "--allow-origin", page.origin], childEnv(home))
      const report = await tryFromPage(page, daemon.url, tokenIn(home))
      const byName = new Map(report.results.map((r: { name: string }) => [r.name, r]))
      // the origin alone is not enough
      for (const name of ["no token", "guessed token"]) {
        expect(byName.get(name), name).toMatchObject({ opened: false, messages: [] })
      }
      const allowed = byName.get("the right token") as { opened: boolean; messages: Array<string> }
      expect(allowed.opened).toBe(true)
      const reply = JSON.parse(allowed.messages[0]!)
      expect(reply).toMatchObject({
        _tag: "Exit",
        requestId: "1",
        exit: { _tag: "Success", value: { title: `made by ${page.origin}` } }
      })
      expect(await threadTitles(home, daemon.url)).toEqual([`made by ${page.origin}`])
    } finally {
      await page.close()
    }
  }, 90_000)
})
