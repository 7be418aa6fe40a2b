import { BwrapBackend } from '../../adapters/sandbox/bwrap.js';
import { svcBinaryPath } from '../../adapters/sandbox/select.js';
import type { SandboxBackend } from '../../adapters/sandbox/types.js';
import { sandboxConformance } from './conformance.js';
import { collectionEscapes } from './escapes-collection.js';
import { isolationEscapes } from './escapes-isolation.js';

/** Every sandbox started when its first command is (no ready ones). */
const onDemand = (root: string) => new BwrapBackend(root, svcBinaryPath(), undefined, 0);

/**
 * The same backend with every create waiting until a ready sandbox of its disk size is started, so that the suites'
 * agent sandboxes are all ones started ahead of their run (docs/design.md, "Sandbox provisioning"). The real backend,
 * only driven more patiently than a run would.
 */
function startedAhead(root: string): SandboxBackend {
  const real = new BwrapBackend(root, svcBinaryPath());
  return {
    kind: real.kind,
    prepare: () => real.prepare(),
    info: () => real.info(),
    create: async (spec) => {
      real.warm(spec.limits.diskMb);
      await real.readySettled();
      return real.create(spec);
    },
    list: () => real.list(),
    destroy: (id) => real.destroy(id),
    close: () => real.close(),
  };
}

sandboxConformance('bwrap', onDemand);
collectionEscapes('bwrap', onDemand);
isolationEscapes('bwrap', onDemand);
sandboxConformance('bwrap, started ahead', startedAhead);
isolationEscapes('bwrap, started ahead', startedAhead);
