import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

// Built by `npm run build:dashboard` into dist/, which is committed and served by Postline at `/`.
// Deterministic (hashed names, no time stamps), so test/e2e/dashboard.test.ts can check the committed build is current.
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/',
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
  },
});
