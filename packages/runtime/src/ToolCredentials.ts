/**
 * Who may call Skein's tools: bearer credentials, each scoped to one app thread. A host
 * asks for one (`thread.toolCredential`) for an agent it runs itself; a provider session
 * Skein launches gets one for its thread, revoked when the session ends. Credentials
 * live in memory: a restart revokes them all, as it ends every session.
 */
import { randomBytes } from "node:crypto"
import type { SkeinError, ThreadId } from "@skein/domain"
import { Effect } from "effect"

export interface ToolCredentialsShape {
  /** A new credential for `threadId`, valid until revoked; fails when there is no such thread. */
  readonly issue: (threadId: ThreadId) => Effect.Effect<string, SkeinError>
  /** Ends a credential; a later call with it is refused. */
  readonly revoke: (token: string) => Effect.Effect<void>
  /** The thread a credential acts for, or undefined when it is not a live credential. */
  readonly threadOf: (token: string) => ThreadId | undefined
}

/** 32 random bytes, base64url: a token nobody guesses, looked up as a session id is. */
const newToken = () => `skt_${randomBytes(32).toString("base64url")}`

/** A registry of credentials; `exists` says whether a thread may have one. */
export const make = (exists: (threadId: ThreadId) => Effect.Effect<void, SkeinError>): ToolCredentialsShape => {
  const threads = new Map<string, ThreadId>()
  return {
    issue: (threadId) =>
      Effect.zipRight(
        exists(threadId),
        Effect.sync(() => {
          const token = newToken()
          threads.set(token, threadId)
          return token
        })
      ),
    revoke: (token) => Effect.sync(() => void threads.delete(token)),
    threadOf: (token) => threads.get(token)
  }
}
