// The one token estimator: ceil(UTF-8 bytes / 4), at least 1. Model-independent and deterministic;
// every pack, benchmark and budget uses it, so budgets mean the same thing everywhere.
const encoder = new TextEncoder();

export const estimateTokens = (text: string): number => Math.max(1, Math.ceil(encoder.encode(text).length / 4));
