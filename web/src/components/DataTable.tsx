import { useRef, type ReactNode } from 'react';
import { useVirtualizer } from '@tanstack/react-virtual';

/** One column: its header, how a row shows in it, and the server's sort key when it sorts. */
export interface Column<T> {
  key: string;
  header: ReactNode;
  /** The label a cell carries on a phone, where each row is a card (defaults to the header when it is text). */
  label?: string;
  sortKey?: string;
  className?: string;
  cell: (row: T) => ReactNode;
}

/** Above this many rows the table renders only what is in view (docs/performance.md, "Web app budgets"). */
export const virtualFrom = 150;

/**
 * The app's one table of records (jobs, runs, secrets, tokens): sortable headers that say their order, a label per
 * cell for the phone layout, and, for long lists, virtual rows in a scroller of its own so that 2,000 rows cost what
 * twenty do. Rows not loaded yet (`undefined`) show as placeholders.
 */
export function DataTable<T>({
  rows,
  rowKey,
  columns,
  sort,
  onSort,
  className,
  label,
}: {
  rows: ReadonlyArray<T | undefined>;
  rowKey: (row: T) => string;
  columns: Array<Column<T>>;
  sort?: string;
  onSort?: (key: string) => void;
  className?: string;
  label: string;
}) {
  const head = (
    <thead>
      <tr>
        {columns.map((c) =>
          c.sortKey && onSort ? (
            <SortHeader key={c.key} header={c.header} sortKey={c.sortKey} sort={sort ?? ''} onSort={onSort} />
          ) : (
            <th key={c.key} scope="col">
              {c.header}
            </th>
          ),
        )}
      </tr>
    </thead>
  );
  if (rows.length < virtualFrom)
    return (
      <div className="table-wrap">
        <table className={className} aria-label={label}>
          {head}
          <tbody>
            {rows.map((row, i) => (
              <Row key={row ? rowKey(row) : `loading-${i}`} row={row} columns={columns} />
            ))}
          </tbody>
        </table>
      </div>
    );
  return <VirtualTable rows={rows} rowKey={rowKey} columns={columns} head={head} className={className} label={label} />;
}

function VirtualTable<T>({
  rows,
  rowKey,
  columns,
  head,
  className,
  label,
}: {
  rows: ReadonlyArray<T | undefined>;
  rowKey: (row: T) => string;
  columns: Array<Column<T>>;
  head: ReactNode;
  className?: string;
  label: string;
}) {
  const scroller = useRef<HTMLDivElement>(null);
  // The virtualizer's functions change with every scroll, so the compiler leaves this component alone.
  // eslint-disable-next-line react-hooks/incompatible-library
  const virtualizer = useVirtualizer({
    count: rows.length,
    getScrollElement: () => scroller.current,
    estimateSize: () => 52,
    overscan: 12,
    getItemKey: (i) => {
      const row = rows[i];
      return row ? rowKey(row) : `loading-${i}`;
    },
  });
  const items = virtualizer.getVirtualItems();
  const before = items[0]?.start ?? 0;
  const after = virtualizer.getTotalSize() - (items[items.length - 1]?.end ?? 0);
  return (
    <div
      ref={scroller}
      className="table-wrap virtual"
      tabIndex={0}
      role="region"
      aria-label={`${label}, ${rows.length} rows; scroll for more`}
    >
      <table className={className} aria-label={label} aria-rowcount={rows.length + 1}>
        {head}
        <tbody>
          {before > 0 && <tr className="spacer" aria-hidden="true" style={{ height: before }} />}
          {items.map((item) => (
            <Row
              key={item.key}
              row={rows[item.index]}
              columns={columns}
              index={item.index}
              measure={virtualizer.measureElement}
            />
          ))}
          {after > 0 && <tr className="spacer" aria-hidden="true" style={{ height: after }} />}
        </tbody>
      </table>
    </div>
  );
}

function Row<T>({
  row,
  columns,
  index,
  measure,
}: {
  row: T | undefined;
  columns: Array<Column<T>>;
  index?: number;
  measure?: (el: HTMLTableRowElement | null) => void;
}) {
  const position = index === undefined ? {} : { 'data-index': index, 'aria-rowindex': index + 2 };
  if (row === undefined)
    return (
      <tr ref={measure} className="placeholder" {...position}>
        <td colSpan={columns.length}>
          <span className="muted">Loading…</span>
        </td>
      </tr>
    );
  return (
    <tr ref={measure} {...position}>
      {columns.map((c) => (
        <td
          key={c.key}
          className={c.className}
          data-label={c.label ?? (typeof c.header === 'string' ? c.header : undefined)}
        >
          {c.cell(row)}
        </td>
      ))}
    </tr>
  );
}

function SortHeader({
  header,
  sortKey,
  sort,
  onSort,
}: {
  header: ReactNode;
  sortKey: string;
  sort: string;
  onSort: (k: string) => void;
}) {
  const dir = sort === sortKey ? 'ascending' : sort === `-${sortKey}` ? 'descending' : 'none';
  return (
    <th scope="col" aria-sort={dir}>
      <button type="button" className="sort" onClick={() => onSort(sortKey)}>
        {header}
        <span aria-hidden="true">{dir === 'ascending' ? ' ▲' : dir === 'descending' ? ' ▼' : ''}</span>
      </button>
    </th>
  );
}
