// Lint for every TypeScript file of the service, its tests, benchmarks and demo. The rules that matter most here
// are the promise rules: a dropped promise whose store write fails takes the whole process down
// (docs/design.md, "Failure handling"). web/ has its own toolchain and its own config.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const typed = ['**/*.ts'];

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', 'web/', '**/*.js', '**/*.mjs', '**/*.cjs', '**/*.d.mts'] },
  { files: typed, ...js.configs.recommended },
  ...tseslint.configs.recommendedTypeChecked.map((c) => ({ ...c, files: typed })),
  {
    files: typed,
    languageOptions: {
      parserOptions: { project: ['./tsconfig.test.json'], tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': ['error', { ignoreVoid: false, allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['test', 'describe', 'it', 'suite', 'before', 'after', 'beforeEach', 'afterEach'] }] }],
      '@typescript-eslint/no-misused-promises': 'error',
    },
  },
);
