import { defineConfig, type Plugin } from 'vite';
import react from '@vitejs/plugin-react';
import { fileURLToPath } from 'node:url';
import { sourceHash } from './source-hash.js';

const here = fileURLToPath(new URL('.', import.meta.url));

/** Writes `.source-hash` (web/source-hash.ts) for the sources this build started from. */
function sourceHashPlugin(): Plugin {
  let hash = '';
  return {
    name: 'svc-source-hash',
    buildStart() {
      hash = sourceHash(fileURLToPath(new URL('..', import.meta.url)));
    },
    generateBundle() {
      this.emitFile({ type: 'asset', fileName: '.source-hash', source: hash });
    },
  };
}

// Built into dist/web, which `svc serve` serves at `/` (api/routes/web.ts). Hashed names under /assets are cached
// for a year; no inline script, so the strict Content-Security-Policy holds (docs/design.md, "Web app").
export default defineConfig({
  root: here,
  base: '/',
  plugins: [react(), sourceHashPlugin()],
  build: {
    outDir: fileURLToPath(new URL('../dist/web', import.meta.url)),
    emptyOutDir: true,
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    sourcemap: false,
    target: 'es2022',
  },
  server: { proxy: { '/api': 'http://127.0.0.1:8080', '/hooks': 'http://127.0.0.1:8080' } },
});
