/**
 * The pause before another try after losing an append's expected-revision check. Writers whose appends the store
 * commits together (the SQLite store's group commit, docs/design.md, "Events and read models") meet again in the
 * next turn, and the same one would lose every time: a random pause, growing with the attempt up to 50 ms, breaks
 * that step.
 */
export function conflictPause(attempt: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(50, 2 ** attempt)));
}
