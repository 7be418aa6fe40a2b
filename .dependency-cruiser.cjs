// The dependency rule of docs/architecture.md, checked by `npm run lint`: each layer imports only from the layers
// before it, so the folders read top to bottom with no cycle. Tests, benchmarks and the demo may import anything;
// nothing imports them.
const order = [
  ['domain', []],
  ['schemas', ['domain']],
  ['store', ['domain']],
  ['adapters', ['domain', 'schemas', 'store']],
  ['projections', ['domain', 'schemas', 'store']],
  ['app', ['domain', 'schemas', 'store', 'adapters', 'projections']],
  ['api', ['domain', 'schemas', 'store', 'adapters', 'projections', 'app']],
  ['runner', ['domain', 'schemas', 'store', 'adapters', 'projections', 'app']],
  ['broker', ['domain', 'schemas', 'store', 'adapters', 'projections', 'app']],
  ['server', ['domain', 'schemas', 'store', 'adapters', 'projections', 'app', 'api', 'runner', 'broker']],
  ['cli', ['domain', 'schemas', 'store', 'adapters', 'projections', 'app', 'api', 'runner', 'broker', 'server']],
];
const source = order.map(([layer]) => layer);

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    ...order.map(([layer, allowed]) => ({
      name: `${layer}-imports-only-earlier-layers`,
      severity: 'error',
      comment: `${layer}/ may import only from ${allowed.length ? allowed.join(', ') : 'itself and packages'} (docs/architecture.md)`,
      from: { path: `^${layer}/` },
      to: { path: `^(${source.filter((l) => l !== layer && !allowed.includes(l)).join('|')})/` },
    })),
    {
      name: 'no-imports-of-tests',
      severity: 'error',
      comment: 'production code never imports tests, benchmarks or the demo',
      from: { path: `^(${source.join('|')})/` },
      to: { path: '^(tests|bench|demo)/' },
    },
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'modules import each other in one direction only',
      from: { path: `^(${source.join('|')})/` },
      to: { circular: true, dependencyTypesNot: ['type-only'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|dist|web)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};
// The layers in order, for scripts/architecture.mjs (not enumerable: dependency-cruiser refuses unknown keys).
Object.defineProperty(module.exports, 'layers', { value: source });
