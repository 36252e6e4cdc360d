/** Codex (`codex app-server`, the pinned binary) end to end, offline against the mock Responses API. */
import { agentSuite } from "./suite.js"

agentSuite("codex")
