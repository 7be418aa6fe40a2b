const sizes = [10, 25, 50, 100];

/** The page size a list's URL asks for: a number of rows, or `all` (the whole list, virtualised). */
export type PageSize = number | 'all';

/** Reads `pageSize` from the URL: `all`, or any size the list routes answer (1..100, offered or not), else 25. */
export function pageSizeOf(value: string | null): PageSize {
  if (value === 'all') return 'all';
  const n = Number(value);
  return Number.isInteger(n) && n >= 1 && n <= 100 ? n : 25;
}

export function Pager({
  page,
  pageSize,
  total,
  onPage,
  onPageSize,
}: {
  page: number;
  pageSize: PageSize;
  total: number;
  onPage: (p: number) => void;
  onPageSize: (s: PageSize) => void;
}) {
  const size = (
    <label>
      Per page{' '}
      <select
        value={String(pageSize)}
        onChange={(e) => onPageSize(e.target.value === 'all' ? 'all' : Number(e.target.value))}
      >
        {sizes.map((s) => (
          <option key={s} value={s}>
            {s}
          </option>
        ))}
        <option value="all">all</option>
      </select>
    </label>
  );
  if (pageSize === 'all')
    return (
      <nav className="pager" aria-label="Pages">
        <span className="muted">All {total}, scroll the list</span>
        {size}
      </nav>
    );
  const pages = Math.max(1, Math.ceil(total / pageSize));
  const from = Math.min(total, (page - 1) * pageSize + 1);
  const to = Math.min(total, page * pageSize);
  return (
    <nav className="pager" aria-label="Pages">
      <span className="muted">
        {from}–{to} of {total}
      </span>
      <button type="button" disabled={page <= 1} onClick={() => onPage(page - 1)}>
        Previous
      </button>
      <span aria-current="page">
        Page {page} of {pages}
      </span>
      <button type="button" disabled={page >= pages} onClick={() => onPage(page + 1)}>
        Next
      </button>
      {size}
    </nav>
  );
}
