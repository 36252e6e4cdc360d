/**
 * The slash commands `skein acp` offers an editor (`available_commands_update`), and what
 * a prompt that is one does instead of a run: `/provider NAME` switches the session's
 * provider, `/fork` forks the thread at its latest stable run, `/merge-back` brings a
 * fork's work back to its source, `/rollback N` rolls the thread back to run N,
 * `/handoff` shows the text of the thread's last handoff. Each answers with one agent
 * message saying what it did. Any other prompt is a run.
 */
import type * as acp from "@agentclientprotocol/sdk/unstable"
import type { ThreadId } from "@skein/domain"
import type { AcpBackend } from "./AcpBackend.js"
import { Effect } from "effect"

export const availableCommands: Array<acp.AvailableCommand> = [
  { name: "provider", description: "Send the next prompts to another provider instance", input: { hint: "NAME" } },
  { name: "fork", description: "Fork this thread at its latest stable run (a new session to load)" },
  { name: "merge-back", description: "Bring this fork's work back to the thread it was forked from" },
  {
    name: "rollback",
    description: "Roll this thread back to run N (later runs leave the conversation)",
    input: { hint: "N" }
  },
  { name: "handoff", description: "Show the text of this thread's last handoff" }
]

/** A prompt's text as a slash command, or undefined when it is not one of ours. */
export const commandOf = (text: string): { readonly name: string; readonly argument: string } | undefined => {
  const match = /^\/([a-z-]+)(?:\s+(.*))?$/s.exec(text.trim())
  if (match === null || !availableCommands.some((c) => c.name === match[1])) return undefined
  return { name: match[1]!, argument: (match[2] ?? "").trim() }
}

/**
 * What a command does, as the sentence the editor shows. `setProvider` checks and
 * records the session's provider.
 */
export const runCommand = (
  orchestrator: AcpBackend,
  threadId: ThreadId,
  command: { readonly name: string; readonly argument: string },
  setProvider: (name: string) => Effect.Effect<void, unknown>
): Effect.Effect<string, unknown> => {
  switch (command.name) {
    case "provider":
      return Effect.as(setProvider(command.argument), `The next prompts go to ${command.argument}.`)
    case "fork":
      return Effect.map(
        orchestrator.forkThread({ sourceThreadId: threadId, sourcePoint: "latest_stable" }),
        ({ thread }) =>
          `Forked as ${thread.id}: load that session to work on the fork; /merge-back there brings it back.`
      )
    case "merge-back":
      return Effect.map(
        orchestrator.mergeBack({ forkThreadId: threadId }),
        (transfer) =>
          `Merged back into ${transfer.targetThreadId}: its next run receives what this fork did (${transfer.id}).`
      )
    case "rollback": {
      const ordinal = Number(command.argument)
      if (!Number.isInteger(ordinal) || ordinal < 0) return Effect.succeed("Give the run to go back to: /rollback N.")
      return Effect.map(
        orchestrator.rollback({ threadId, toRunOrdinal: ordinal }),
        (view) =>
          `Rolled back to run ${ordinal}: ${view.runs.filter((r) => r.status === "rolled_back").length} run(s) left the conversation.`
      )
    }
    default:
      return Effect.map(orchestrator.getThread(threadId, { items: false }), (view) => {
        const last = view.handoffs.at(-1)
        return last === undefined
          ? "No handoff yet: every run so far had what it needed natively."
          : `Handoff ${last.id} (${last.strategy}, runs ${last.coveredRunOrdinals.from}-${last.coveredRunOrdinals.to}, ${last.status}):\n\n${last.summaryText}`
      })
  }
}
