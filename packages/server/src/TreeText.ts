/**
 * The text of `skein tree`: a thread's lineage, each thread with how it came to be,
 * its runs, its coverage and the transfers still waiting to be taken in. Pure.
 */
import type { ThreadView } from "@skein/domain"
import { coverageLines } from "./CoverageText.js"

/** A thread with the threads made from it, for `skein tree`. */
export interface LineageNode {
  readonly view: ThreadView
  readonly children: ReadonlyArray<LineageNode>
}

/**
 * The lineage tree: each thread with how it came to be (fork, side chat, subagent,
 * observe-only), its runs, the coverage of its provider threads, and the transfers
 * still waiting to be taken in.
 */
export const treeLines = (root: LineageNode): Array<string> => {
  const out: Array<string> = []
  const visit = (node: LineageNode, indent: string, branch: string, childIndent: string) => {
    const { thread, transfers, runs } = node.view
    const inherited = transfers.find(
      (x) =>
        (x.type === "fork" || x.type === "subagent_spawn") &&
        x.targetThreadId === thread.id &&
        x.status !== "superseded"
    )
    const kind = thread.lineage.observeOnly
      ? "observed child agent"
      : thread.lineage.relationshipToParent === "subagent"
        ? "subagent"
        : thread.lineage.relationshipToParent === "fork"
          ? thread.lineage.sideChat
            ? "side chat"
            : "fork"
          : "thread"
    const from = inherited?.sourcePoint.runOrdinal === undefined ? "" : ` from run ${inherited.sourcePoint.runOrdinal}`
    const live = runs.filter((r) => r.status !== "rolled_back").length
    const rolled = runs.length - live
    out.push(
      `${indent}${branch}${kind} ${thread.id} "${thread.title}"${from}  ${live} run(s)${rolled > 0 ? `, ${rolled} rolled back` : ""}${inherited ? `  [inherited: ${inherited.status}]` : ""}`
    )
    const detail = `${indent}${childIndent}${node.children.length > 0 ? "│ " : "  "} `
    for (const line of coverageLines(node.view)) out.push(`${detail}${line}`)
    const pending = transfers.filter(
      (x) =>
        x.status === "pending" && x.targetThreadId === thread.id && x.type !== "fork" && x.type !== "subagent_spawn"
    )
    for (const x of pending) out.push(`${detail}pending ${x.type} from ${x.sourceThreadId}`)
    node.children.forEach((child, i) => {
      const last = i === node.children.length - 1
      visit(child, `${indent}${childIndent}`, last ? "└─ " : "├─ ", last ? "   " : "│  ")
    })
  }
  visit(root, "", "", "")
  return out
}
