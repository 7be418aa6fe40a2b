import type Database from 'better-sqlite3';

/**
 * What the event store's readers select. Named rather than `*`: the category below is for the index, and a row read
 * for its event need not compute it.
 */
export const eventColumns = 'position, id, stream_id, revision, type, data, metadata';

/** The category of a stream id in SQL, as `categoryOf` reads it: the part before the first dash, '' without one. */
const categoryExpr = "substr(stream_id, 1, instr(stream_id, '-') - 1)";

/** Index of the events by position with their stream category, which a replay reads the log by. */
export const categoryIndex = 'events_category';

const hasCategory = (db: Database.Database) =>
  (db.prepare('PRAGMA table_xinfo(events)').all() as Array<{ name: string }>).some((c) => c.name === 'category');

/**
 * The events' stream category as a generated column, and an index of (position, category), on a new database and on
 * one written before them. The column is computed by SQLite from the stream id, so appends write what they always
 * wrote and the index follows them; a replay reading a few categories scans the small index in position order and
 * reads only the rows it keeps, instead of every row of the log (docs/design.md, "Replay"). Adding the column and
 * building the index is one transaction, checked again inside it: two processes opening an old database at once
 * migrate it once.
 */
export function addCategoryIndex(db: Database.Database): void {
  if (hasCategory(db)) {
    db.exec(`CREATE INDEX IF NOT EXISTS ${categoryIndex} ON events (position, category)`);
    return;
  }
  const migrate = db.transaction(() => {
    if (!hasCategory(db))
      db.exec(`ALTER TABLE events ADD COLUMN category TEXT GENERATED ALWAYS AS (${categoryExpr}) VIRTUAL`);
    db.exec(`CREATE INDEX IF NOT EXISTS ${categoryIndex} ON events (position, category)`);
  });
  migrate.immediate();
}

/**
 * The categories stream prefixes name, when each is exactly one category's (`run-`, not `run` nor `run-abc`): a
 * category holds no dash, so `<category>-` starts exactly the ids of that category. Null when one is not.
 */
export function categoriesOf(prefixes: readonly string[]): string[] | null {
  const out: string[] = [];
  for (const p of prefixes) {
    const dash = p.indexOf('-');
    if (dash <= 0 || dash !== p.length - 1) return null;
    out.push(p.slice(0, dash));
  }
  return out;
}

/**
 * Rows after a position in the named categories, in position order: the positions come from the index alone, and
 * only their rows are read from the table.
 */
export function byCategorySql(categories: number): string {
  const marks = Array.from({ length: categories }, () => '?').join(', ');
  return (
    `SELECT ${eventColumns} FROM (SELECT position AS p FROM events INDEXED BY ${categoryIndex} ` +
    `WHERE position > ? AND category IN (${marks}) ORDER BY position LIMIT ?) JOIN events ON position = p ORDER BY p`
  );
}
