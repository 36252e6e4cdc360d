/**
 * Branded identifiers. Every id is an opaque string with a short, readable prefix
 * (`thr_`, `run_` …) so that a log line says what it names.
 */
import { Schema } from "effect"

const id = <B extends string>(brand: B) => Schema.NonEmptyTrimmedString.pipe(Schema.brand(brand))

export const ThreadId = id("ThreadId")
export type ThreadId = typeof ThreadId.Type
export const RunId = id("RunId")
export type RunId = typeof RunId.Type
export const TurnItemId = id("TurnItemId")
export type TurnItemId = typeof TurnItemId.Type
export const ProviderThreadId = id("ProviderThreadId")
export type ProviderThreadId = typeof ProviderThreadId.Type
export const ProviderSessionId = id("ProviderSessionId")
export type ProviderSessionId = typeof ProviderSessionId.Type
export const ContextTransferId = id("ContextTransferId")
export type ContextTransferId = typeof ContextTransferId.Type
export const ContextHandoffId = id("ContextHandoffId")
export type ContextHandoffId = typeof ContextHandoffId.Type
export const CheckpointId = id("CheckpointId")
export type CheckpointId = typeof CheckpointId.Type
export const CommandId = id("CommandId")
export type CommandId = typeof CommandId.Type
export const ApprovalId = id("ApprovalId")
export type ApprovalId = typeof ApprovalId.Type

/** The name of a configured provider instance (`alpha`, `codex`, …), not a driver. */
export const ProviderName = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, {
    message: () => "a provider name is 1-64 letters, digits, '_', '.' or '-'"
  }),
  Schema.brand("ProviderName")
)
export type ProviderName = typeof ProviderName.Type

/** A provider's own handle for a thread (Codex thread id, Claude session id …). */
export const NativeThreadRef = Schema.String
/** A provider's own handle for one turn (Codex turn id, Claude message uuid …). */
export const NativeTurnRef = Schema.String

/** Two hex digits for each byte value. */
const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, "0"))
/** Random bytes from the platform's CSPRNG, drawn 4 KB at a time: 80 bits an id. */
const pool = new Uint8Array(4096)
let taken = pool.length
/**
 * 20 random hex digits, every one of them random (a UUID's version digit is the same in
 * every id), read from a pool of bytes: cheaper on a run's path than cutting ids from
 * `randomUUID` with a regular expression.
 */
const random = (): string => {
  if (taken + 10 > pool.length) {
    globalThis.crypto.getRandomValues(pool)
    taken = 0
  }
  let hex = ""
  for (let i = 0; i < 10; i++) hex += HEX[pool[taken++]!]
  return hex
}

/**
 * `schema.make` without its check: a prefix and 20 hex digits are a non-empty trimmed
 * string by construction, and a run makes several ids on its path (run, items,
 * checkpoint), where each check cost a schema parse.
 */
const unchecked = true

/** Fresh ids. Random, so that ids made by two processes never collide. */
export const makeId = {
  thread: () => ThreadId.make(`thr_${random()}`, unchecked),
  run: () => RunId.make(`run_${random()}`, unchecked),
  turnItem: () => TurnItemId.make(`itm_${random()}`, unchecked),
  providerThread: () => ProviderThreadId.make(`pth_${random()}`, unchecked),
  providerSession: () => ProviderSessionId.make(`pss_${random()}`, unchecked),
  transfer: () => ContextTransferId.make(`xfr_${random()}`, unchecked),
  handoff: () => ContextHandoffId.make(`hof_${random()}`, unchecked),
  checkpoint: () => CheckpointId.make(`chk_${random()}`, unchecked),
  command: () => CommandId.make(`cmd_${random()}`, unchecked),
  approval: () => ApprovalId.make(`apr_${random()}`, unchecked),
  /** A file restore's id (it names the restore's backup ref in the user's repository). */
  restore: (): string => `rst_${random()}`
} as const
