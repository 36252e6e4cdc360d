/**
 * Runs a `skein` command other than help (which `bin.ts` answers without loading this).
 * SIGTERM/SIGINT interrupt the command (the daemon closes gracefully and exits 0); if
 * closing takes longer than the grace period the process exits 1 anyway.
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeTerminal from "@effect/platform-node/NodeTerminal"
import { Cause, Effect, Exit, Layer, Logger, Option } from "effect"
import { CliExit, runCli } from "./Cli.js"

const SHUTDOWN_GRACE_MS = 10_000

const armGraceTimer = () => {
  setTimeout(() => {
    process.stderr.write(`skein: shutdown took over ${SHUTDOWN_GRACE_MS} ms; exiting\n`)
    process.exit(1)
  }, SHUTDOWN_GRACE_MS).unref()
}
export const main = (argv: ReadonlyArray<string>): void => {
  process.once("SIGTERM", armGraceTimer)
  process.once("SIGINT", armGraceTimer)
  runCli(argv).pipe(
    // stdout belongs to command output (and to the protocol under `skein stdio`): logs go to stderr.
    Effect.provide(Logger.replace(Logger.defaultLogger, Logger.withConsoleError(Logger.logfmtLogger))),
    // What @effect/cli needs, and no more: NodeContext would also build a process
    // executor and a worker manager, which cost start-up time and no command uses.
    Effect.provide(Layer.mergeAll(NodeFileSystem.layer, NodePath.layer, NodeTerminal.layer)),
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
}
