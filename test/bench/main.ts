/**
 * `npm run bench`: every figure the issues ask for, printed, never asserted. Each
 * figure comes with a baseline measured in the same run where one makes sense, since
 * these machines are shared and noisy.
 */
const suites: ReadonlyArray<[string, () => Promise<{ run: () => Promise<void> }>]> = [
  ["store", () => import("./store.js")],
  ["actors", () => import("./actors.js")],
  ["context", () => import("./context.js")],
  ["server", () => import("./server.js")]
]

const only = process.argv.slice(2)
for (const [name, load] of suites) {
  if (only.length > 0 && !only.includes(name)) continue
  const started = Date.now()
  await (await load()).run()
  console.log(`(${name}: ${((Date.now() - started) / 1000).toFixed(1)} s)\n`)
}
