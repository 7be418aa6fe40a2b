import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

/**
 * One hash over everything the bundle is made from (web/ and the schemas its types come from). The build writes it
 * next to index.html as `.source-hash`, so the browser tests can tell a build of the current sources from one
 * another checkout step made a moment earlier (mtimes cannot: builds run concurrently here).
 */
export function sourceHash(root: string): string {
  const hash = createHash('sha256');
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      if (name === 'node_modules') continue;
      const full = join(dir, name);
      if (statSync(full).isDirectory()) walk(full);
      else hash.update(relative(root, full)).update('\0').update(readFileSync(full)).update('\0');
    }
  };
  walk(join(root, 'web'));
  walk(join(root, 'schemas'));
  return hash.digest('hex');
}
