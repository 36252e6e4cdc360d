/**
 * The inspector in a real headless Chromium (playwright-core; see test/support/browser.ts)
 * against a daemon (the `skein` executable): `skein inspect` gives the address with the
 * token in the fragment; the page finds a thread by its title, shows its lanes (one per
 * provider thread, the coverage read the seeds' way) and its handoffs, opens a handoff
 * (by its arrow) whose text holds a word planted in an earlier run, follows a fork to its
 * source, shows a run started meanwhile without a reload, shows a fork's inheritance
 * waiting on the lineage graph's edge until the fork runs, a rolled-back run, a
 * checkpoint's changed files, and answers a run's approval. A page of another origin,
 * holding the token, still gets no socket.
 * Screenshots of each view go to test/dist/screenshots/inspector (ignored by git).
 */
import type { ProviderName, ThreadId } from "@skein/domain"
import { makeSkeinClient } from "@skein/server"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { repoRoot } from "../agents/support.js"
import { git } from "../support/gitRepo.js"
import { withChromium } from "../support/browser.js"
import { childEnv, runSkein, tempDir, tokenIn, trackDaemons } from "./support.js"

const start = trackDaemons()

/** What the page's functions use of the browser (this package compiles without the DOM's types). */
interface Browser {
  readonly location: { readonly hash: string }
  readonly document: {
    readonly querySelectorAll: (selector: string) => { readonly length: number }
    readonly querySelector: (selector: string) => { readonly textContent: string | null } | null
  }
}
const alpha = "alpha" as ProviderName
const beta = "beta" as ProviderName

describe("the inspector page", () => {
  it("finds a thread, shows its lanes and handoffs, reads a handoff, follows a fork, updates live", async () => {
    const home = tempDir("skein-inspector-")
    const daemon = await start(["--port", "0"], childEnv(home))
    const token = tokenIn(home)
    const client = (
      use: (c: Effect.Effect.Success<ReturnType<typeof makeSkeinClient>>) => Effect.Effect<unknown, unknown>
    ) => Effect.runPromise(Effect.scoped(Effect.flatMap(makeSkeinClient({ url: daemon.url, token }), use)))
    const ids = { source: "" as ThreadId, fork: "" as ThreadId }
    await client((c) =>
      Effect.gen(function* () {
        yield* c.thread.create({ title: "an unrelated thread" })
        const source = yield* c.thread.create({ title: "Inspector PLANTED thread" })
        const first = yield* c.run.start({
          threadId: source.id,
          provider: alpha,
          message: "the word is ZEBRAFISH",
          wait: true
        })
        yield* c.run.start({ threadId: source.id, provider: beta, message: "which word?", wait: true })
        const { thread: fork } = yield* c.thread.fork({
          sourceThreadId: source.id,
          sourcePoint: { runId: first.id },
          title: "its fork"
        })
        ids.source = source.id
        ids.fork = fork.id
      })
    )
    // Beside the compiled tests (ignored by git), kept after the run for a reviewer to look at.
    const shots = Path.join(repoRoot(), "test", "dist", "screenshots", "inspector")
    Fs.mkdirSync(shots, { recursive: true })
    const address = (await runSkein(["inspect", "--url", daemon.url], childEnv(home))).stdout.trim()
    expect(address).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/inspect#token=/)
    expect(address.split("#")[0]).not.toContain(token)

    await withChromium(async (browser) => {
      const page = await browser.newPage()
      await page.goto(address)
      // The token leaves the address bar once the page has it.
      await page.waitForFunction(() => !(globalThis as unknown as Browser).location.hash.includes("token="))
      const find = page.getByPlaceholder("Find a thread by title")
      await find.waitFor({ timeout: 10_000 }).catch(async (error: unknown) => {
        throw new Error(`the page shows ${await page.locator("body").innerText()}: ${String(error)}`)
      })
      await find.fill("PLANTED")
      await page.getByRole("button", { name: "Inspector PLANTED thread" }).click()
      await page.getByRole("heading", { name: "Inspector PLANTED thread" }).waitFor()
      // alpha's and beta's provider threads: two lanes; run 2 was told run 1 by a handoff,
      // whose arrow goes into beta's lane; the coverage reads the seeds' way.
      expect(await page.getByTestId("lane").count()).toBe(2)
      expect(await page.locator("td.handoff").count()).toBe(1)
      expect(await page.getByTestId("coverage").textContent()).toBe("A1 1 and B1 2 + H1")
      expect(await page.getByTestId("lane").nth(1).getByTestId("arrow").textContent()).toBe("→H1")
      expect(await page.locator("td.handoff small").textContent()).toBe("full 1")
      // The fork has not run: its inheritance still waits.
      expect(await page.getByTestId("pending").textContent()).toContain(`fork to ${ids.fork} at run 1`)
      await page.screenshot({ path: Path.join(shots, "thread.png"), fullPage: true })

      // Live: a run started elsewhere shows up without a reload.
      const before = await page.getByTestId("run").count()
      await client((c) => c.run.start({ threadId: ids.source, provider: beta, message: "and again", wait: true }))
      await page.waitForFunction(
        (n) => (globalThis as unknown as Browser).document.querySelectorAll('[data-testid="run"]').length > n,
        before,
        { timeout: 10_000 }
      )
      await page.getByText("A1 1 and B1 2-3 + H1").waitFor({ timeout: 10_000 })

      await page.getByTestId("arrow").first().click()
      const text = await page.getByTestId("handoff-text").textContent({ timeout: 10_000 })
      expect(text).toContain("ZEBRAFISH")
      expect(await page.getByTestId("handoff-facts").textContent()).toContain("full_thread_summary · covers 1")
      await page.getByText("taken in by run 2").waitFor()
      await page.screenshot({ path: Path.join(shots, "handoff.png"), fullPage: true })

      // A fork, opened by its address, leads to its source.
      await page.goto(address.replace(/#.*/, `#token=${encodeURIComponent(token)}&thread=${ids.fork}`))
      await page.getByRole("heading", { name: "its fork" }).waitFor()
      await page.getByTestId("parent").click()
      await page.getByRole("heading", { name: "Inspector PLANTED thread" }).waitFor()
      await page.screenshot({ path: Path.join(shots, "source.png"), fullPage: true })

      await page.goto(address)
      await page.getByRole("button", { name: "Inspector PLANTED thread" }).waitFor()
      // The lineage graph: a node per thread, the fork's edge labelled with the inheritance
      // that still waits; a node opens its thread.
      expect(await page.getByTestId("node").count()).toBe(3)
      expect(await page.getByTestId("pending-edge").textContent()).toBe("fork · fork pending")
      await page.screenshot({ path: Path.join(shots, "threads.png"), fullPage: true })

      // Once the fork runs, its inheritance is taken in: the edge waits no more.
      await client((c) => c.run.start({ threadId: ids.fork, provider: alpha, message: "go on", wait: true }))
      await page.getByTestId("pending-edge").waitFor({ state: "detached", timeout: 10_000 })
      expect(await page.getByTestId("lineage").textContent()).toContain("fork")
      await page.getByTestId("node").filter({ hasText: "its fork" }).click()
      await page.getByRole("heading", { name: "its fork" }).waitFor()

      // A rollback: the rolled-back run struck through on its lane.
      const rolled = (await client((c) =>
        Effect.gen(function* () {
          const thread = yield* c.thread.create({ title: "rolled" })
          yield* c.run.start({ threadId: thread.id, provider: alpha, message: "one", wait: true })
          yield* c.run.start({ threadId: thread.id, provider: beta, message: "two", wait: true })
          yield* c.thread.rollback({ threadId: thread.id, toRunOrdinal: 1 })
          return thread.id
        })
      )) as ThreadId
      await page.goto(address.replace(/#.*/, `#token=${encodeURIComponent(token)}&thread=${rolled}`))
      await page.getByRole("heading", { name: "rolled" }).waitFor()
      expect(await page.locator("td.rolled_back").count()).toBe(1)
      // beta's provider thread served only the rolled-back run: its lane is marked, with why.
      expect(await page.getByTestId("mark").textContent()).toMatch(/^rolled back: /)
      await page.screenshot({ path: Path.join(shots, "rolled-back.png"), fullPage: true })

      // A run's checkpoint: the files it changed. Then an approval answered from the page.
      const repo = Path.join(home, "repo")
      Fs.mkdirSync(repo)
      Fs.writeFileSync(Path.join(repo, "README"), "a repository\n")
      git(repo, "init", "-q", "-b", "main")
      git(repo, "add", "-A")
      git(repo, "commit", "-q", "-m", "init")
      const asking = (await client((c) =>
        Effect.gen(function* () {
          const thread = yield* c.thread.create({ title: "asks", workspace: repo })
          yield* c.run.start({
            threadId: thread.id,
            provider: alpha,
            message: "[[write:notes.txt:first\\nsecond]] write it",
            wait: true
          })
          yield* c.run.start({ threadId: thread.id, provider: alpha, message: "deploy? [[ask:may I deploy to PROD?]]" })
          return thread.id
        })
      )) as ThreadId
      await page.goto(address.replace(/#.*/, `#token=${encodeURIComponent(token)}&thread=${asking}&run=1`))
      await page.getByTestId("diff").first().waitFor({ timeout: 15_000 })
      expect(await page.getByTestId("diff").first().textContent()).toBe("addnotes.txt+2−0")
      await page.screenshot({ path: Path.join(shots, "checkpoint.png"), fullPage: true })
      await page.goto(address.replace(/#.*/, `#token=${encodeURIComponent(token)}&thread=${asking}&run=2`))
      const approval = page.getByTestId("approval")
      await approval.getByRole("button", { name: "Accept" }).click({ timeout: 15_000 })
      await page.waitForFunction(
        () =>
          (globalThis as unknown as Browser).document
            .querySelector('[data-testid="approval"]')
            ?.textContent?.includes("accept") ?? false,
        undefined,
        { timeout: 10_000 }
      )
      expect(await approval.textContent()).toContain("may I deploy to PROD?")
      await page.screenshot({ path: Path.join(shots, "run.png"), fullPage: true })
      const answered = await client((c) => c.thread.get({ threadId: asking }))
      const item = (
        answered as { runs: ReadonlyArray<{ items: ReadonlyArray<{ type: string; status?: string }> }> }
      ).runs[1]!.items.find((i) => i.type === "approval_request")
      expect(item?.status).toBe("accept")
    })
    console.log(`inspector screenshots: ${shots}`)
  }, 90_000)

  it("a page of another origin gets no socket, even with the token offered as the page would", async () => {
    const home = tempDir("skein-inspector-")
    const daemon = await start(["--port", "0"], childEnv(home))
    const token = tokenIn(home)
    const other = Http.createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/html" })
      res.end("<!doctype html><title>another origin</title>")
    })
    await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", resolve))
    try {
      const origin = `http://127.0.0.1:${(other.address() as AddressInfo).port}`
      const outcome = await withChromium(async (browser) => {
        const page = await browser.newPage()
        await page.goto(origin)
        return page.evaluate(
          ([url, t]) =>
            new Promise<{ opened: boolean; code: number | null }>((resolve) => {
              const socket = new WebSocket(url!, ["skein", `skein.token.${t}`])
              socket.onopen = () => resolve({ opened: true, code: null })
              socket.onclose = (event) => resolve({ opened: false, code: event.code })
            }),
          [daemon.url, token] as const
        )
      })
      expect(outcome).toEqual({ opened: false, code: 1006 })
      // The page itself is served to loopback names only.
      const { port } = new URL(daemon.url)
      const statusFor = (host: string) =>
        new Promise<number | undefined>((resolve, reject) =>
          Http.get({ host: "127.0.0.1", port, path: "/inspect", headers: { host } }, (res) => {
            res.resume()
            resolve(res.statusCode)
          }).on("error", reject)
        )
      expect(await statusFor("attacker.example")).toBe(421)
      expect(await statusFor(`127.0.0.1:${port}`)).toBe(200)
    } finally {
      await new Promise<void>((resolve) => other.close(() => resolve()))
    }
  }, 60_000)
})
