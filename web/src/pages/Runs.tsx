import { useEffect } from 'react';
import { RunsTable } from '../components/RunsTable.js';

export function RunsPage() {
  useEffect(() => {
    document.title = 'Runs · svc';
  }, []);
  return (
    <section>
      <div className="page-head">
        <h1>Runs</h1>
      </div>
      <RunsTable showJob />
    </section>
  );
}
