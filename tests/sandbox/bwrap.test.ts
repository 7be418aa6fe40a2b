import { BwrapBackend } from '../../runner/sandbox/bwrap.js';
import { svcBinaryPath } from '../../runner/sandbox/select.js';
import { sandboxConformance } from './conformance.js';

sandboxConformance('bwrap', (root) => new BwrapBackend(root, svcBinaryPath()));
