#!/usr/bin/env node
/**
 * The `skein` executable. SIGTERM/SIGINT interrupt the command (the daemon closes
 * gracefully and exits 0); if closing takes longer than the grace period the process
 * exits 1 anyway.
 */
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { Cause, Effect, Exit, Logger, Option } from "effect"
import { CliExit, runCli } from "./Cli.js"

const SHUTDOWN_GRACE_MS = 10_000

const armGraceTimer = () => {
  setTimeout(() => {
    process.stderr.write(`skein: shutdown took over ${SHUTDOWN_GRACE_MS} ms; exiting\n`)
    process.exit(1)
  }, SHUTDOWN_GRACE_MS).unref()
}
process.once("SIGTERM", armGraceTimer)
process.once("SIGINT", armGraceTimer)

runCli(process.argv).pipe(
  // stdout belongs to command output (and to the protocol under `skein stdio`): logs go to stderr.
  Effect.provide(Logger.replace(Logger.defaultLogger, Logger.withConsoleError(Logger.logfmtLogger))),
  Effect.provide(NodeContext.layer),
  NodeRuntime.runMain({
    disableErrorReporting: true,
    teardown: (exit, onExit) => {
      if (Exit.isSuccess(exit) || Cause.isInterruptedOnly(exit.cause)) return onExit(0)
      const failure = Cause.failureOption(exit.cause)
      if (Option.isSome(failure) && failure.value instanceof CliExit) return onExit(failure.value.code)
      if (Option.isNone(failure)) process.stderr.write(`${Cause.pretty(exit.cause)}\n`)
      onExit(1)
    }
  })
)
