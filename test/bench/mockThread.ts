/**
 * A mock model server on a thread of its own, for the agents bench: a real model server
 * answers from elsewhere, whatever the process driving the agent is doing. On the bench's
 * own event loop, every reply the mock streams would wait behind Skein's work and be
 * counted as Skein's latency, while the direct baseline, which does almost nothing
 * between lines, would not pay it.
 *
 * Run as a worker: `workerData.kind` picks the mock; it posts `{ url }` once listening
 * and closes the server on any message, then exits.
 */
import { parentPort, Worker, workerData } from "node:worker_threads"
import { startMessagesMock } from "../agents/mocks/MessagesMock.js"
import { startResponsesMock } from "../agents/mocks/ResponsesMock.js"

export interface MockThread {
  readonly url: string
  readonly close: () => Promise<void>
}

/** Starts the mock for `kind` on a worker thread. */
export const startMockThread = (kind: "codex" | "claude"): Promise<MockThread> =>
  new Promise((resolve, reject) => {
    const worker = new Worker(new URL(import.meta.url), { workerData: { kind } })
    const exited = new Promise<void>((done) => worker.once("exit", () => done()))
    worker.once("error", reject)
    worker.once("message", (message: { readonly url: string }) =>
      resolve({
        url: message.url,
        close: async () => {
          worker.postMessage("close")
          await exited
        }
      })
    )
  })

if (parentPort !== null && workerData?.kind !== undefined) {
  const port = parentPort
  const mock = workerData.kind === "codex" ? await startResponsesMock() : await startMessagesMock()
  port.once("message", () => {
    void mock.close().then(() => port.close())
  })
  port.postMessage({ url: mock.url })
}
