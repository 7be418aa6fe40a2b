import { BwrapBackend } from '../../adapters/sandbox/bwrap.js';
import { svcBinaryPath } from '../../adapters/sandbox/select.js';
import { sandboxConformance } from './conformance.js';
import { collectionEscapes } from './escapes-collection.js';
import { isolationEscapes } from './escapes-isolation.js';

sandboxConformance('bwrap', (root) => new BwrapBackend(root, svcBinaryPath()));
collectionEscapes('bwrap', (root) => new BwrapBackend(root, svcBinaryPath()));
isolationEscapes('bwrap', (root) => new BwrapBackend(root, svcBinaryPath()));
