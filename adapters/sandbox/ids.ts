/**
 * A sandbox id names a host directory (bwrap) and a container and its volumes (docker): letters, digits, `_`, `.`
 * and `-`, not starting with a dot or a dash, so no id can be `..`, a path, or read as an option.
 */
export function checkSandboxId(id: string): void {
  if (!/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/.test(id)) throw new Error(`not a sandbox id: ${JSON.stringify(id)}`);
}
