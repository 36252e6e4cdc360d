#!/usr/bin/env node
/**
 * The scripted provider as a standalone program:
 *   node main.js --state-dir DIR --name NAME --capabilities JSON
 * JSON lines over stdio (see Protocol.ts). It exits as soon as its stdin closes, so
 * it never outlives the process that started it.
 */
import { parseArgs } from "node:util"
import { Schema } from "effect"
import { ProviderCapabilities } from "@skein/domain"
import { makeScriptedServer } from "./ScriptedServer.js"

const fail = (message: string): never => {
  process.stderr.write(`scripted provider: ${message}\n`)
  process.exit(2)
}

const { values } = parseArgs({
  options: {
    "state-dir": { type: "string" },
    name: { type: "string" },
    capabilities: { type: "string" }
  },
  strict: true
})
const stateDir = values["state-dir"] ?? fail("--state-dir DIR is required")
const name = values.name ?? fail("--name NAME is required")
let capabilities: ProviderCapabilities
try {
  capabilities = Schema.decodeUnknownSync(ProviderCapabilities)(JSON.parse(values.capabilities ?? "null"))
} catch (error) {
  capabilities = fail(`--capabilities must be a ProviderCapabilities JSON object: ${String(error)}`)
}

const server = makeScriptedServer({
  stateDir,
  name,
  capabilities,
  send: (message) => {
    process.stdout.write(`${JSON.stringify(message)}\n`)
  },
  crash: () => process.exit(70)
})

let buffer = ""
process.stdin.setEncoding("utf8")
process.stdin.on("data", (chunk: string) => {
  buffer += chunk
  let newline = buffer.indexOf("\n")
  while (newline >= 0) {
    const line = buffer.slice(0, newline).trim()
    buffer = buffer.slice(newline + 1)
    if (line.length > 0) server.handleLine(line)
    newline = buffer.indexOf("\n")
  }
})
process.stdin.on("end", () => process.exit(0))
process.stdin.on("error", () => process.exit(0))
