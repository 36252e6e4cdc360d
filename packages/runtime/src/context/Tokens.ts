/**
 * Token arithmetic for handoffs. A deliberately simple estimate (about four characters
 * per token) that is cheap, deterministic and the same everywhere it is used.
 */
export const DEFAULT_HANDOFF_BUDGET_TOKENS = 16_000
export const MIN_HANDOFF_BUDGET_TOKENS = 1_024
export const MAX_HANDOFF_BUDGET_TOKENS = 64_000

/** ≈ ceil(chars / 4). */
export const estimateTokens = (text: string): number => Math.ceil(text.length / 4)

/** The number of characters a token budget allows under `estimateTokens`. */
export const charsForTokens = (tokens: number): number => tokens * 4

/** Clamps a requested budget into 1,024–64,000 tokens; anything not a finite number gets the default. */
export const clampHandoffBudget = (tokens: number | undefined): number =>
  tokens === undefined || !Number.isFinite(tokens)
    ? DEFAULT_HANDOFF_BUDGET_TOKENS
    : Math.min(MAX_HANDOFF_BUDGET_TOKENS, Math.max(MIN_HANDOFF_BUDGET_TOKENS, Math.floor(tokens)))
