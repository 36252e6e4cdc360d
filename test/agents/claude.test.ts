/** Claude Code (`claude -p` in streaming JSON mode, the pinned binary) end to end, offline against the mock Messages API. */
import { agentSuite } from "./suite.js"

agentSuite("claude")
