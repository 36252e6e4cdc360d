#!/usr/bin/env node
/**
 * The `skein` executable: the entry of the bundle (`build.mjs`) that `bin/skein.js`
 * runs; `node dist/src/bin.js` runs the same CLI unbundled.
 *
 * Help (`--help`, `-h`, `skein help CMD`, a bare `skein`) is answered here from
 * `Help.ts` alone, before Effect or @effect/cli is loaded, so it starts about as fast as
 * Node itself; any other command loads `Main.ts`.
 */
import { colourFor } from "./CliStyle.js"
import { helpRequest } from "./Help.js"

const request = helpRequest(process.argv.slice(2))
if (request?._tag === "Help") {
  process.stdout.write(`${request.text(colourFor(process.stdout))}\n`)
} else if (request?._tag === "Refuse") {
  process.stderr.write(`skein: ${request.message}\n`)
  process.exitCode = 2
} else {
  void import("./Main.js").then(({ main }) => main(process.argv))
}
