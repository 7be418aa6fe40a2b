import { Link } from 'react-router-dom';
import { Empty } from '../components/ui.js';

export function NotFoundPage() {
  return (
    <Empty title="No such page">
      <p>
        The address does not name a page of this app. <Link to="/jobs">Go to the jobs</Link>.
      </p>
    </Empty>
  );
}
