// The one token estimator: ceil(UTF-8 bytes / 4), at least 1. Model-independent and deterministic;
// every pack, benchmark and budget uses it, so budgets mean the same thing everywhere.
const encoder = new TextEncoder();

/** Tokens of a text of this many UTF-8 bytes (compile reads a claim's size, not its statement). */
export const tokensOfBytes = (bytes: number): number => Math.max(1, Math.ceil(bytes / 4));

export const estimateTokens = (text: string): number => tokensOfBytes(encoder.encode(text).length);
