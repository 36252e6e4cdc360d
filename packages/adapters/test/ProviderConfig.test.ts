import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { makeId, ProviderName, ProviderRegistry } from "@skein/domain"
import {
  alphaCapabilities,
  betaCapabilities,
  claudeLikeCapabilities,
  codexLikeCapabilities,
  loadProvidersConfig,
  makeProviderAdapters,
  providerRegistryLayer
} from "../src/ProviderConfig.js"
import { scriptedServerPath } from "../src/scripted/ScriptedAdapter.js"
import * as TurnEvents from "../src/process/TurnEvents.js"

const roots: Array<string> = []
const tempDir = (): string => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "skein-config-"))
  roots.push(dir)
  return dir
}
afterAll(() => {
  for (const dir of roots) Fs.rmSync(dir, { recursive: true, force: true })
})

const configFile = (content: unknown): string => {
  const file = Path.join(tempDir(), "providers.json")
  Fs.writeFileSync(file, typeof content === "string" ? content : JSON.stringify(content))
  return file
}

const registry = (options: { configFile?: string; dataDir: string }) =>
  Effect.provide(ProviderRegistry, providerRegistryLayer(options))

describe("provider configuration", () => {
  it("exports the capability profiles", () => {
    expect(alphaCapabilities).toMatchObject({ resume: true, fork: "at_turn", rollback: "native" })
    expect(betaCapabilities).toMatchObject({ resume: true, fork: "none", rollback: "none" })
    expect(codexLikeCapabilities).toMatchObject({ fork: "at_turn", rollback: "native", handoffDelivery: ["developer"] })
    expect(claudeLikeCapabilities).toMatchObject({ fork: "at_turn", rollback: "native", handoffDelivery: ["system"] })
  })

  it.effect("without a config file: scripted alpha and beta", () =>
    Effect.gen(function* () {
      const { adapters } = yield* registry({ dataDir: tempDir() })
      expect(adapters.map((a) => [a.name, a.driver])).toEqual([
        ["alpha", "scripted"],
        ["beta", "scripted"]
      ])
      expect(adapters[0]?.capabilities).toEqual(alphaCapabilities)
      expect(adapters[1]?.capabilities).toEqual(betaCapabilities)
    })
  )

  it.live("a valid file: overrides merge into the driver profile; state lives under dataDir/providers/NAME", () =>
    Effect.gen(function* () {
      const dataDir = tempDir()
      const file = configFile({
        providers: {
          gamma: {
            driver: "scripted",
            capabilities: { fork: "latest", handoffDelivery: ["system", "preamble"], summarise: true },
            command: [process.execPath, scriptedServerPath()],
            env: { SKEIN_EXAMPLE: "1" },
            model: "scripted-large"
          }
        }
      })
      const { adapters } = yield* registry({ configFile: file, dataDir })
      expect(adapters).toHaveLength(1)
      const gamma = adapters[0]!
      expect(gamma.name).toBe("gamma")
      expect(gamma.model).toBe("scripted-large")
      expect(gamma.capabilities).toMatchObject({
        resume: true,
        fork: "latest",
        rollback: "native",
        handoffDelivery: ["system", "preamble"],
        summarise: true
      })
      yield* Effect.scoped(
        Effect.gen(function* () {
          const session = yield* gamma.openSession({ workspace: null })
          const { nativeRef } = yield* session.startThread({ workspace: null, model: null })
          const events = yield* TurnEvents.collect((onEvents) =>
            session.runTurn(
              { nativeRef, runId: makeId.run(), message: "hi", handoff: null, model: null, workspace: null },
              onEvents
            )
          )
          expect(events.at(-1)?._tag).toBe("TurnCompleted")
        })
      )
      const threads = Fs.readdirSync(Path.join(dataDir, "providers", "gamma", "threads"))
      expect(threads).toHaveLength(1)
      // The thread's first line is its record (turns are appended after it).
      const stored = JSON.parse(
        Fs.readFileSync(Path.join(dataDir, "providers", "gamma", "threads", threads[0]!), "utf8").split("\n")[0]!
      )
      expect(stored.model).toBe("scripted-large")
    })
  )

  it.effect("a file that is not JSON is a typed error saying so", () =>
    Effect.gen(function* () {
      const file = configFile("{ providers: nope")
      const error = yield* Effect.flip(loadProvidersConfig(file))
      expect(error._tag).toBe("InvalidInput")
      expect(error.detail).toContain(file)
      expect(error.detail).toContain("not valid JSON")
    })
  )

  it.effect("a wrong value or an unknown key is named with its path", () =>
    Effect.gen(function* () {
      const wrongValue = yield* Effect.flip(
        loadProvidersConfig(
          configFile({ providers: { alpha: { driver: "scripted", capabilities: { fork: "sometimes" } } } })
        )
      )
      expect(wrongValue.detail).toContain("providers.alpha.capabilities.fork")
      expect(wrongValue.detail).toContain('expected "none" | "latest" | "at_turn", got "sometimes"')
      const typo = yield* Effect.flip(
        loadProvidersConfig(configFile({ providers: { alpha: { driver: "scripted", capabilites: {} } } }))
      )
      expect(typo.detail).toContain("providers.alpha.capabilites")
      const badName = yield* Effect.flip(
        loadProvidersConfig(configFile({ providers: { "bad name!": { driver: "scripted" } } }))
      )
      expect(badName.detail).toContain("bad name!")
      const noProviders = yield* Effect.flip(loadProvidersConfig(configFile({ alpha: { driver: "scripted" } })))
      expect(noProviders.detail).toContain("providers")
      const missing = yield* Effect.flip(loadProvidersConfig(Path.join(tempDir(), "absent.json")))
      expect(missing.detail).toContain("ENOENT")
      expect(missing.message).toMatch(/^Invalid input: cannot read provider config/)
    })
  )

  it.effect("codex and claude instances build adapters; a missing binary shows in the probe, not at load", () =>
    Effect.gen(function* () {
      const dataDir = tempDir()
      const adapters = yield* makeProviderAdapters(
        {
          providers: {
            [ProviderName.make("cx")]: {
              driver: "codex",
              command: [Path.join(dataDir, "no-codex")],
              approvals: "accept"
            },
            [ProviderName.make("cc")]: { driver: "claude", command: [Path.join(dataDir, "no-claude")] }
          }
        },
        { dataDir }
      )
      expect(adapters.map((a) => [a.name, a.driver, a.capabilities.handoffDelivery])).toEqual([
        ["cx", "codex", ["preamble"]],
        ["cc", "claude", ["preamble"]]
      ])
      const probe = yield* adapters[0]!.probe!
      expect(probe.usable).toBe(false)
      expect(probe.problem).toContain("is not an executable file")
      expect(probe.problem).toContain("npm install -g @openai/codex@0.171.0")
    })
  )

  it.effect("a field meant for another driver, or a delivery the driver cannot make, is refused", () =>
    Effect.gen(function* () {
      const dataDir = tempDir()
      const sandbox = yield* Effect.flip(
        registry({ configFile: configFile({ providers: { cc: { driver: "claude", sandbox: "read-only" } } }), dataDir })
      )
      expect(sandbox.detail).toContain('"sandbox" applies to driver codex, not claude')
      const delivery = yield* Effect.flip(
        registry({
          configFile: configFile({
            providers: { cx: { driver: "codex", capabilities: { handoffDelivery: ["system"] } } }
          }),
          dataDir
        })
      )
      expect(delivery.detail).toContain("cannot deliver handoffs as system")
    })
  )

  it.effect(
    "an acp instance needs its command; its options are its own; an agent that does not start shows in the probe",
    () =>
      Effect.gen(function* () {
        const dataDir = tempDir()
        const noCommand = yield* Effect.flip(
          registry({ configFile: configFile({ providers: { a: { driver: "acp" } } }), dataDir })
        )
        expect(noCommand.detail).toContain('driver acp needs "command"')
        const foreign = yield* Effect.flip(
          registry({
            configFile: configFile({ providers: { cx: { driver: "codex", configOptions: { mode: "x" } } } }),
            dataDir
          })
        )
        expect(foreign.detail).toContain('"configOptions" applies to driver acp, not codex')
        const [broken] = yield* makeProviderAdapters(
          {
            providers: {
              [ProviderName.make("a")]: {
                driver: "acp",
                command: [Path.join(dataDir, "no-agent")],
                capabilities: { steer: false }
              }
            }
          },
          { dataDir }
        )
        // Nothing said by the agent: a new session each time, handoffs as a preamble.
        expect(broken!.capabilities).toMatchObject({
          resume: false,
          fork: "none",
          rollback: "none",
          handoffDelivery: ["preamble"]
        })
        const probe = yield* broken!.probe!
        expect(probe).toMatchObject({ usable: false, version: null })
        expect(probe.problem).toContain(`could not start ${Path.join(dataDir, "no-agent")}`)
      })
  )
})
