import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jobDecider, jobStreamId } from './domain/job.js';
import { ProjectionEngine } from './projections/engine.js';
import { allProjectors } from './projections/index.js';
import { openSqliteDocumentStore } from './store/sqlite-document-store.js';
import { openSqliteEventStore } from './store/sqlite-event-store.js';
import { newId } from './app/ids.js';
const dir = mkdtempSync(join(tmpdir(), 'gc-proj-'));
const events = openSqliteEventStore(join(dir, 'e.db'));
const docs = openSqliteDocumentStore(join(dir, 'r.db'));
const engine = new ProjectionEngine(events, docs, allProjectors, { error: (o, m) => console.error(m, o), info: () => {} });
await engine.start();
const meta = { workspaceId: 'w1', actor: { type: 'user' as const, id: 'u' }, requestId: 'r', correlationId: 'r', causationId: null, ts: 1, v: 1 };
for (let round = 0; round < 6; round++) {
  const n = 50;
  const c0 = process.cpuUsage();
  let last: any;
  for (let k = 0; k < 40; k++) {
    const rs = await Promise.all(Array.from({ length: n }, () => { const id = newId(); return events.append(jobStreamId(id), jobDecider.decide({ type: 'CreateJob', jobId: id, workspaceId: 'w1', fields: { name: `job ${id}`, instruction: 'Count the files in the workspace.' }, now: Date.now() }, jobDecider.initialState).map((e) => ({ ...e, metadata: meta })), 'no_stream'); }));
    await Promise.all(rs.map((r) => engine.waitFor(r.position, 10000)));
  }
  const c = process.cpuUsage(c0);
  console.log('µs cpu per creation (append+project)', ((c.user + c.system) / (n * 40)).toFixed(1));
}
await engine.stop();
