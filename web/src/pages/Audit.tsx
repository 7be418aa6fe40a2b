import { useEffect } from 'react';
import { AuditTable } from '../components/AuditTable.js';

/** The workspace's change history, for admins (docs/api.md, "Rules of particular routes"). */
export function AuditPage() {
  useEffect(() => {
    document.title = 'Audit · svc';
  }, []);
  return (
    <section>
      <div className="page-head">
        <h1>Audit</h1>
      </div>
      <p className="muted">
        Every change made in this workspace, by whom, newest first. Secrets and tokens never appear.
      </p>
      <AuditTable />
    </section>
  );
}
