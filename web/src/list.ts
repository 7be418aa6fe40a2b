import { useCallback, useEffect, useEffectEvent, useRef, useState } from 'react';
import { asApiError, type ApiError } from './api.js';

/** A list route's page: its rows and how many match in all. */
export interface ListPage<T> {
  items: T[];
  total: number;
}

export interface ListState<T> {
  /** The rows in order; in the whole-list view, rows not loaded yet are `undefined` up to `total`. */
  rows: Array<T | undefined> | undefined;
  total: number | undefined;
  error: ApiError | null;
  loading: boolean;
  reload: () => void;
}

/** The largest page the list routes answer. */
const biggestPage = 100;

/**
 * One page of a list route, or with `all` the whole list: its pages are read one after the other and shown as they
 * come (the first page is on screen while the rest load), for a virtualised table to scroll through. A reload of the
 * whole list keeps the rows shown until the new ones are all in, so a live update does not flicker.
 */
export function useList<T>(
  key: string,
  load: (page: number, pageSize: number, signal: AbortSignal) => Promise<ListPage<T>>,
  view: { all: boolean; page: number; pageSize: number },
): ListState<T> {
  const [state, setState] = useState<{
    key: string | null;
    answered: string | null;
    rows: Array<T | undefined> | undefined;
    total: number | undefined;
    error: ApiError | null;
  }>({ key: null, answered: null, rows: undefined, total: undefined, error: null });
  const [tick, setTick] = useState(0);
  // Which list the rows on screen belong to (a reload of the same list keeps them until its answer is complete).
  const shown = useRef<string | null>(null);
  const fetchPage = useEffectEvent((page: number, pageSize: number, signal: AbortSignal) =>
    load(page, pageSize, signal),
  );
  const { all, page, pageSize } = view;
  const fullKey = `${all ? 'all' : `${page}/${pageSize}`} ${key}`;
  useEffect(() => {
    const abort = new AbortController();
    const answered = `${tick} ${fullKey}`;
    const { signal } = abort;
    (async () => {
      if (!all) {
        const one = await fetchPage(page, pageSize, signal);
        if (signal.aborted) return;
        shown.current = fullKey;
        setState({ key: fullKey, answered, rows: one.items, total: one.total, error: null });
        return;
      }
      const first = await fetchPage(1, biggestPage, signal);
      if (signal.aborted) return;
      const rows: Array<T | undefined> = [...first.items];
      const fresh = shown.current !== fullKey;
      const complete = first.items.length >= first.total;
      if (fresh || complete) {
        shown.current = fullKey;
        setState((s) => ({
          key: fullKey,
          answered: complete ? answered : s.answered,
          rows: padded(rows, first.total),
          total: first.total,
          error: null,
        }));
      }
      for (let p = 2; rows.length < first.total && (p - 1) * biggestPage < first.total; p++) {
        const next = await fetchPage(p, biggestPage, signal);
        if (signal.aborted) return;
        if (next.items.length === 0) break;
        rows.push(...next.items);
        if (fresh) setState((s) => ({ ...s, rows: padded(rows, first.total) }));
      }
      if (signal.aborted) return;
      shown.current = fullKey;
      setState({ key: fullKey, answered, rows: rows.slice(0, first.total), total: rows.length, error: null });
    })().catch((err: unknown) => {
      if (!signal.aborted) setState((s) => ({ ...s, answered, error: asApiError(err) }));
    });
    return () => abort.abort();
  }, [fullKey, all, page, pageSize, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return {
    rows: state.rows,
    total: state.total,
    error: state.error,
    loading: state.answered !== `${tick} ${fullKey}`,
    reload,
  };
}

function padded<T>(rows: Array<T | undefined>, total: number): Array<T | undefined> {
  return rows.length >= total ? rows.slice(0, total) : rows.concat(new Array<undefined>(total - rows.length));
}
