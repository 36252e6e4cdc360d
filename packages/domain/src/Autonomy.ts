/**
 * How freely a provider instance's agent acts, and the rule that a subagent an agent
 * starts may not act more freely than that agent.
 */
import { Schema } from "effect"
import { SubagentMoreAutonomous } from "./Errors.js"

/**
 * How freely an instance's agent acts, in terms every driver maps to: who answers its
 * approval requests (`decline` < `ask`, a client decides < `accept`, or the agent does
 * not ask at all), and how far its commands reach (`read-only` < `workspace` < `full`).
 * A subagent an agent starts may not act more freely than that agent does.
 */
export const Autonomy = Schema.Struct({
  approvals: Schema.Literal("decline", "ask", "accept"),
  sandbox: Schema.Literal("read-only", "workspace", "full")
})
export type Autonomy = typeof Autonomy.Type

/** An instance that says nothing of its autonomy: a client answers its approvals; it acts in its workspace. */
export const defaultAutonomy: Autonomy = { approvals: "ask", sandbox: "workspace" }

const approvalsRank: Record<Autonomy["approvals"], number> = { decline: 0, ask: 1, accept: 2 }
const sandboxRank: Record<Autonomy["sandbox"], number> = { "read-only": 0, workspace: 1, full: 2 }

/** Whether `child` acts more freely than `parent` in approvals or in sandbox. */
export const actsMoreFreely = (child: Autonomy, parent: Autonomy): boolean =>
  approvalsRank[child.approvals] > approvalsRank[parent.approvals] ||
  sandboxRank[child.sandbox] > sandboxRank[parent.sandbox]

/** Why an agent on `parent` may not start a subagent on `child`, or undefined when it may. */
export const autonomyRefusal = (
  parent: { readonly provider: string; readonly autonomy: Autonomy },
  child: { readonly provider: string; readonly autonomy: Autonomy }
): SubagentMoreAutonomous | undefined => {
  const p = parent.autonomy
  const c = child.autonomy
  if (!actsMoreFreely(c, p)) return undefined
  return new SubagentMoreAutonomous({
    provider: child.provider,
    parentProvider: parent.provider,
    detail: `${child.provider} acts more freely (approvals ${c.approvals}, sandbox ${c.sandbox}) than you do on ${parent.provider} (approvals ${p.approvals}, sandbox ${p.sandbox}); a subagent may not. Pick an instance that acts no more freely (list_providers shows each one's autonomy)`
  })
}
