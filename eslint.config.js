// Lint for every TypeScript file of the service, its tests, benchmarks and demo. The rules that matter most here
// are the promise rules: a dropped promise whose store write fails takes the whole process down
// (docs/design.md, "Failure handling"). web/src is linted too, against its own browser tsconfig and with the rules
// of React hooks (docs/design.md, "Web app").
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import prettier from 'eslint-config-prettier';
import reactHooks from 'eslint-plugin-react-hooks';

// The service's own folders, then all tsconfig.test.json compiles; a loose .ts at the top (a scratch file) is no part
// of the project.
const service = [
  'domain',
  'schemas',
  'store',
  'projections',
  'adapters',
  'app',
  'api',
  'runner',
  'broker',
  'server',
  'cli',
].map((d) => `${d}/**/*.ts`);
const typed = [...service, ...['bench', 'demo', 'tests'].map((d) => `${d}/**/*.ts`)];

// `.catch(() => undefined)` and `.catch(() => {})`: a failure dropped without a word.
const swallowed = [
  "CallExpression[callee.property.name='catch'] > ArrowFunctionExpression[body.type='Identifier'][body.name='undefined']",
  "CallExpression[callee.property.name='catch'] > ArrowFunctionExpression[body.type='BlockStatement'][body.body.length=0]",
];
const swallowedMessage =
  "Say why the failure is ignored: `.catch(ignoreFailure('reason', log))` (domain/ignore-failure.ts).";

export default tseslint.config(
  {
    ignores: [
      'node_modules/',
      'dist/',
      'web/*',
      '!web/src/',
      // Generated from the OpenAPI document (scripts/gen-api.mjs); `npm run gen:api -- --check` keeps it current.
      'web/src/api-types.ts',
      '**/*.js',
      '**/*.mjs',
      '**/*.cjs',
      '**/*.d.mts',
    ],
  },
  { files: typed, ...js.configs.recommended },
  ...tseslint.configs.recommendedTypeChecked.map((c) => ({ ...c, files: typed })),
  {
    files: typed,
    languageOptions: {
      parserOptions: { project: ['./tsconfig.test.json'], tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // `void promise` counts as dropped too: that is how the timeline writes that crashed the process were written.
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          ignoreVoid: false,
          // node:test runs these itself and reports their failures.
          allowForKnownSafeCalls: [
            {
              from: 'package',
              package: 'node:test',
              name: ['test', 'describe', 'it', 'suite', 'before', 'after', 'beforeEach', 'afterEach'],
            },
          ],
        },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      // A switch over a union (event types, run states) names every member or says `default:` on purpose.
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
      // A leading underscore marks what is left out on purpose (a field dropped from a rest copy, an unused argument).
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          destructuredArrayIgnorePattern: '^_',
          ignoreRestSiblings: true,
          caughtErrors: 'none',
        },
      ],

      // Off, each because the code base would need a sweep rather than a fix:
      // JSON from requests, stores, model SDKs and test answers is read as loosely typed values and checked by the
      // TypeBox schemas at the boundaries; these five rules would flag about 1,500 such reads.
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      // Style only (about 280 redundant `!` and casts); fixing churns files others are editing.
      '@typescript-eslint/no-unnecessary-type-assertion': 'off',
      // Store adapters implement async interfaces with synchronous SQLite: `async` without `await` is deliberate.
      '@typescript-eslint/require-await': 'off',
      // Deciders and ports are plain objects of functions that never use `this`.
      '@typescript-eslint/unbound-method': 'off',
      // `unknown | X` unions document what a value usually is.
      '@typescript-eslint/no-redundant-type-constituents': 'off',
      // Messages built from loosely typed JSON fields; worth tightening, but not as a sweep.
      '@typescript-eslint/no-base-to-string': 'off',
      // New in ESLint 10's recommended set; `cause` is added as code is touched.
      'preserve-caught-error': 'off',
      'no-useless-assignment': 'off',
    },
  },
  {
    // Tests, benchmarks and the demo read API answers as `Record<string, any>` on purpose: they assert on them.
    files: ['tests/**/*.ts', 'bench/**/*.ts', 'demo/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // The run's life reads as named steps (docs/runs.md): no function of the runner grows past a screen again.
    files: ['app/run/**/*.ts', 'runner/**/*.ts', 'server/runner-role.ts'],
    rules: { 'max-lines-per-function': ['error', { max: 60, skipBlankLines: true, skipComments: true }] },
  },
  {
    // A failure is ignored on purpose, with its reason, through ignoreFailure (domain/ignore-failure.ts,
    // docs/design.md "Failure handling"); never by an empty handler. Tests may swallow their own.
    files: service,
    rules: {
      'no-restricted-syntax': ['error', ...swallowed.map((selector) => ({ selector, message: swallowedMessage }))],
    },
  },
  ...webConfig(),
  // Formatting is Prettier's (`npm run format`); the rules that would argue with it are off.
  prettier,
);

/**
 * The web app: type-aware rules against web/tsconfig.json (DOM, no Node) and the rules of React hooks, with their
 * compiler-based checks (no ref read or written during render, no state set in an effect body, pure renders).
 */
function webConfig() {
  const files = ['web/src/**/*.ts', 'web/src/**/*.tsx'];
  return [
    { files, ...js.configs.recommended },
    ...tseslint.configs.recommendedTypeChecked.map((c) => ({ ...c, files })),
    { files, ...reactHooks.configs.flat['recommended-latest'] },
    {
      files,
      languageOptions: {
        parserOptions: { project: ['./web/tsconfig.json'], tsconfigRootDir: import.meta.dirname },
      },
      rules: {
        '@typescript-eslint/no-floating-promises': [
          'error',
          {
            ignoreVoid: true,
            // Its promise exists only under a data router; the app's BrowserRouter navigates synchronously.
            allowForKnownSafeCalls: [{ from: 'package', package: 'react-router', name: 'NavigateFunction' }],
          },
        ],
        // An event handler may be async: React ignores what it returns, and each handler catches its own errors.
        '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { attributes: false } }],
        '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
        '@typescript-eslint/no-unused-vars': [
          'error',
          { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true, caughtErrors: 'none' },
        ],
        'react-hooks/exhaustive-deps': 'error',
      },
    },
  ];
}
