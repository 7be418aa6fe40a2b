import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));

// Built into dist/web, which `svc serve` serves at `/` (api/routes/web.ts). Hashed names under /assets are cached
// for a year; no inline script, so the strict Content-Security-Policy holds (docs/design.md, "Web app").
export default defineConfig({
  root: here,
  base: '/',
  plugins: [react()],
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
