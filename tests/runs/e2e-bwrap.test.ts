import { endToEnd } from './e2e-suite.js';

endToEnd('bwrap', { SVC_SANDBOX: 'bwrap' });
