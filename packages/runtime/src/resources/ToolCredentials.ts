/**
 * Who may call Skein's tools: bearer credentials, each scoped to one app thread. A host
 * asks for one (`thread.toolCredential`) for an agent it runs itself; the agents Skein
 * runs get one per provider session and thread, with the tools' address, when their
 * native thread is started or resumed in that session (`forSession`), once a server has
 * said where the tools are served (`setEndpoint`); they are revoked when the session
 * ends (`endSession`). Credentials live in memory: a restart revokes them all.
 */
import { randomBytes } from "node:crypto"
import type { AgentTools, SkeinError, ThreadId } from "@skein/domain"
import { ThreadNotFound } from "@skein/domain"
import { Context, Effect, Layer, Option } from "effect"
import { EventStore } from "../store/EventStore.js"

export interface ToolCredentialsShape {
  /** A new credential for `threadId`, valid until revoked; fails when there is no such thread. */
  readonly issue: (threadId: ThreadId) => Effect.Effect<string, SkeinError>
  /** Ends a credential; a later call with it is refused. */
  readonly revoke: (token: string) => Effect.Effect<void>
  /** The thread a credential acts for, or undefined when it is not a live credential. */
  readonly threadOf: (token: string) => ThreadId | undefined
  /** Where the tools are served (an absolute URL), or null: none. */
  readonly endpoint: () => string | null
  readonly setEndpoint: (url: string | null) => void
  /**
   * The tools for an agent Skein runs on `threadId` in provider session `sessionId` (one
   * credential per session and thread), or undefined when none are served.
   */
  readonly forSession: (sessionId: string, threadId: ThreadId) => AgentTools | undefined
  /** The session has ended: every credential given to its agents is revoked. */
  readonly endSession: (sessionId: string) => Effect.Effect<void>
}

export class ToolCredentials extends Context.Tag("@skein/runtime/ToolCredentials")<
  ToolCredentials,
  ToolCredentialsShape
>() {}

/** 32 random bytes, base64url: a token nobody guesses, looked up as a session id is. */
const newToken = () => `skt_${randomBytes(32).toString("base64url")}`

/** A registry of credentials; `exists` says whether a thread may have one. */
export const make = (exists: (threadId: ThreadId) => Effect.Effect<void, SkeinError>): ToolCredentialsShape => {
  const threads = new Map<string, ThreadId>()
  /** Session → thread → the credential its agent holds. */
  const sessions = new Map<string, Map<ThreadId, string>>()
  let endpoint: string | null = null
  const add = (threadId: ThreadId) => {
    const token = newToken()
    threads.set(token, threadId)
    return token
  }
  return {
    issue: (threadId) =>
      Effect.zipRight(
        exists(threadId),
        Effect.sync(() => add(threadId))
      ),
    revoke: (token) => Effect.sync(() => void threads.delete(token)),
    threadOf: (token) => threads.get(token),
    endpoint: () => endpoint,
    setEndpoint: (url) => {
      endpoint = url
    },
    forSession: (sessionId, threadId) => {
      if (endpoint === null) return undefined
      let held = sessions.get(sessionId)
      if (held === undefined) sessions.set(sessionId, (held = new Map()))
      let token = held.get(threadId)
      if (token === undefined || !threads.has(token)) held.set(threadId, (token = add(threadId)))
      return { url: endpoint, token }
    },
    endSession: (sessionId) =>
      Effect.sync(() => {
        for (const token of sessions.get(sessionId)?.values() ?? []) threads.delete(token)
        sessions.delete(sessionId)
      })
  }
}

/** The registry, checking a host's thread against the store (the Orchestrator checks the input first). */
export const layer: Layer.Layer<ToolCredentials, never, EventStore> = Layer.effect(
  ToolCredentials,
  Effect.map(EventStore, (store) =>
    make((threadId) =>
      Effect.flatMap(store.lookup.thread(threadId), (thread) =>
        Option.isSome(thread) ? Effect.void : Effect.fail(new ThreadNotFound({ threadId }))
      )
    )
  )
)
