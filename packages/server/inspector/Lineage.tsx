/**
 * The lineage graph of the threads: each root with its forks and subagents, laid out by
 * dagre (top to bottom), drawn as SVG; a thread's node opens it. An edge carries how the
 * child came to be and the transfers between the two threads still waiting to be taken
 * in (a fork's inheritance before its first run, a merge-back or a subagent's result
 * before the parent's next run), drawn dashed and orange while any waits.
 */
import { Graph, layout } from "@dagrejs/dagre"
import type { AppThread, ContextTransfer } from "@skein/domain"
import { nameOf } from "./Route.js"

const WIDTH = 170
const HEIGHT = 34

const shorten = (text: string) => (text.length > 22 ? `${text.slice(0, 21)}…` : text)

interface EdgeLabel {
  readonly relationship: string
  readonly pending: ReadonlyArray<string>
}

/** The label of a parent-child edge: `fork`, or `fork · merge_back pending`. */
export const edgeText = (edge: EdgeLabel): string =>
  edge.pending.length === 0 ? edge.relationship : `${edge.relationship} · ${edge.pending.join(", ")} pending`

export const LineageGraph = ({
  threads,
  pending,
  open
}: {
  threads: ReadonlyArray<AppThread>
  /** Transfers still waiting to be taken in. */
  pending: ReadonlyArray<ContextTransfer>
  open: (threadId: string) => void
}) => {
  const graph = new Graph()
  graph.setGraph({ rankdir: "TB", nodesep: 24, ranksep: 48, marginx: 8, marginy: 8 })
  graph.setDefaultEdgeLabel(() => ({}))
  const known = new Set(threads.map((t) => t.id))
  for (const t of threads) graph.setNode(t.id, { width: WIDTH, height: HEIGHT })
  for (const t of threads) {
    const parent = t.lineage.parentThreadId
    if (parent === null || !known.has(parent)) continue
    const waiting = pending
      .filter(
        (x) =>
          (x.sourceThreadId === parent && x.targetThreadId === t.id) ||
          (x.sourceThreadId === t.id && x.targetThreadId === parent)
      )
      .map((x) => x.type)
    const label: EdgeLabel = { relationship: t.lineage.relationshipToParent ?? "", pending: waiting }
    graph.setEdge(parent, t.id, { label, width: waiting.length > 0 ? 150 : 60, height: 14 })
  }
  layout(graph)
  const size = graph.graph()
  const byId = new Map<string, AppThread>(threads.map((t) => [t.id, t]))
  return (
    <svg
      data-testid="lineage"
      width={Math.max(size.width ?? 0, 1)}
      height={Math.max(size.height ?? 0, 1)}
      role="img"
      aria-label="lineage of the threads"
    >
      {graph.edges().map((e) => {
        const edge = graph.edge(e)
        const points = edge.points ?? []
        const label = (edge as { label?: EdgeLabel }).label ?? { relationship: "", pending: [] }
        const middle = points[Math.floor(points.length / 2)]
        const waiting = label.pending.length > 0
        const colour = waiting ? "#c46a00" : label.relationship === "subagent" ? "#8a5a00" : "#0b5cad"
        return (
          <g key={`${e.v}-${e.w}`} data-testid={waiting ? "pending-edge" : "edge"}>
            <polyline
              points={points.map((p: { x: number; y: number }) => `${p.x},${p.y}`).join(" ")}
              fill="none"
              stroke={colour}
              stroke-width={waiting ? 2 : 1}
              stroke-dasharray={waiting || label.relationship === "subagent" ? "4 3" : undefined}
            />
            {middle && (
              <text x={middle.x + 4} y={middle.y} font-size="11" fill={waiting ? colour : "#66707a"}>
                {edgeText(label)}
              </text>
            )}
          </g>
        )
      })}
      {graph.nodes().map((id) => {
        const node = graph.node(id)
        const thread = byId.get(id)!
        return (
          <g key={id} data-testid="node" style="cursor:pointer" onClick={() => open(id)}>
            <rect
              x={node.x - WIDTH / 2}
              y={node.y - HEIGHT / 2}
              width={WIDTH}
              height={HEIGHT}
              rx="6"
              fill={thread.lineage.parentThreadId === null ? "#e8eef5" : "#ffffff"}
              stroke="#9aa4ae"
            />
            <text x={node.x} y={node.y + 4} text-anchor="middle" font-size="12">
              {shorten(nameOf(thread))}
            </text>
          </g>
        )
      })}
    </svg>
  )
}
