/**
 * A Claude Code session (the port's ProviderSessionHandle): a pool of `claude -p`
 * processes, one per native thread in use (ClaudePool), their lines decoded by
 * ClaudeEvents, the port's operations in ClaudeThreads and ClaudeTurns. See
 * ClaudeAdapter for what the driver does.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import type { ProviderSessionHandle } from "@skein/domain"
import type { ProviderFailure } from "@skein/domain"
import { Deferred, Effect, Exit } from "effect"
import type { Scope } from "effect"
import { failureOf } from "../agents/AgentOptions.js"
import type { LocatedBinary } from "../binary/AgentBinary.js"
import type { ClaudeAdapterOptions } from "./ClaudeAdapter.js"
import type { Shared } from "./ClaudeEvents.js"
import { makeClaudeEvents } from "./ClaudeEvents.js"
import { DEFAULT_PROCESS_IDLE_MS, makeClaudePool } from "./ClaudePool.js"
import { claudeThreads } from "./ClaudeThreads.js"
import { transcriptPath } from "./ClaudeTranscript.js"
import { claudeTurns } from "./ClaudeTurns.js"

export const openSession = (
  options: ClaudeAdapterOptions,
  env: Record<string, string>,
  binary: LocatedBinary,
  workspace: string | null,
  shared: Shared
): Effect.Effect<ProviderSessionHandle, ProviderFailure, Scope.Scope> =>
  Effect.gen(function* () {
    const provider = options.name
    const failure = failureOf(provider)
    const cwd = yield* Effect.sync(() => {
      const dir = workspace ?? options.stateDir
      Fs.mkdirSync(dir, { recursive: true })
      return Fs.realpathSync(dir)
    })
    const configDir = env.CLAUDE_CONFIG_DIR ?? Path.join(env.HOME ?? "", ".claude")
    const transcript = (sessionId: string) => transcriptPath(configDir, cwd, sessionId)
    const sessionScope = yield* Effect.scope
    const exited = yield* Deferred.make<{ readonly code: number | null; readonly signal: string | null }>()
    yield* Effect.addFinalizer(() => Deferred.done(exited, Exit.succeed({ code: null, signal: null })))

    const { onLine } = makeClaudeEvents({ provider, failure, policy: options.approvals ?? "ask", shared })
    const pool = yield* makeClaudePool(
      { options, env, binary, cwd, shared, failure, onLine, transcript },
      options.processIdleMs ?? DEFAULT_PROCESS_IDLE_MS
    )

    return {
      pid: null,
      ...claudeThreads({ shared, failure, pool, transcript }),
      ...claudeTurns({ shared, failure, pool, sessionScope }),
      summarise: () => Effect.fail(failure("unsupported", "the Claude driver does not write handoff summaries")),
      exited: Deferred.await(exited)
    } satisfies ProviderSessionHandle
  })
