/**
 * The lineage graph of the threads: each root with its forks and subagents, laid out by
 * dagre (top to bottom), drawn as SVG; a thread's node opens it.
 */
import { Graph, layout } from "@dagrejs/dagre"

export interface LineageThread {
  readonly id: string
  readonly title: string | null
  readonly lineage: { readonly parentThreadId: string | null; readonly relationshipToParent: string | null }
}

const WIDTH = 170
const HEIGHT = 34

const shorten = (text: string) => (text.length > 22 ? `${text.slice(0, 21)}…` : text)

export const LineageGraph = ({
  threads,
  open
}: {
  threads: ReadonlyArray<LineageThread>
  open: (threadId: string) => void
}) => {
  const graph = new Graph()
  graph.setGraph({ rankdir: "TB", nodesep: 24, ranksep: 40, marginx: 8, marginy: 8 })
  graph.setDefaultEdgeLabel(() => ({}))
  const known = new Set(threads.map((t) => t.id))
  for (const t of threads) graph.setNode(t.id, { width: WIDTH, height: HEIGHT })
  for (const t of threads) {
    const parent = t.lineage.parentThreadId
    if (parent !== null && known.has(parent)) {
      graph.setEdge(parent, t.id, { label: t.lineage.relationshipToParent ?? "", width: 60, height: 14 })
    }
  }
  layout(graph)
  const size = graph.graph()
  const byId = new Map(threads.map((t) => [t.id, t]))
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
        const label = (edge as { label?: string }).label ?? ""
        const middle = points[Math.floor(points.length / 2)]
        return (
          <g key={`${e.v}-${e.w}`}>
            <polyline
              points={points.map((p: { x: number; y: number }) => `${p.x},${p.y}`).join(" ")}
              fill="none"
              stroke={label === "subagent" ? "#8a5a00" : "#0b5cad"}
              stroke-dasharray={label === "subagent" ? "4 3" : undefined}
            />
            {middle && (
              <text x={middle.x + 4} y={middle.y} font-size="11" fill="#66707a">
                {label}
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
              {shorten(thread.title ?? thread.id)}
            </text>
          </g>
        )
      })}
    </svg>
  )
}
