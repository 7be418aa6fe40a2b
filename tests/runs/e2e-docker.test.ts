import { it } from 'node:test';
import { endToEnd } from './e2e-suite.js';

const host = process.env.SVC_DOCKER_HOST;
if (host) {
  endToEnd('docker', { SVC_SANDBOX: 'docker', SVC_DOCKER_HOST: host });
} else {
  console.log(
    '[runs] docker backend SKIPPED: SVC_DOCKER_HOST is not set (npm test starts dockerd when docker.io is installed)',
  );
  it(
    'a run end to end (docker)',
    { skip: 'SVC_DOCKER_HOST is not set: install docker.io (scripts/prepare-host.sh) so npm test can start dockerd' },
    () => {},
  );
}
