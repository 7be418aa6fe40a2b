import { useCallback, useEffect, useRef, useState } from 'react';
import { ApiError, get } from './api.js';

export interface Loaded<T> {
  data: T | undefined;
  error: ApiError | null;
  loading: boolean;
  /** Loads again; the data already shown stays until the answer comes. */
  reload: () => void;
}

/** GETs `path` (null: nothing) and again whenever it changes; a late answer for an older path is dropped. */
export function useApi<T>(path: string | null): Loaded<T> {
  const [state, setState] = useState<{
    path: string | null;
    data: T | undefined;
    error: ApiError | null;
    loading: boolean;
  }>({ path, data: undefined, error: null, loading: path !== null });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    if (path === null) return;
    const abort = new AbortController();
    setState((s) => ({ ...s, loading: true }));
    get<T>(path, abort.signal).then(
      (data) => setState({ path, data, error: null, loading: false }),
      (err: unknown) => {
        if (abort.signal.aborted) return;
        setState((s) => ({
          ...s,
          path,
          error: err instanceof ApiError ? err : new ApiError(0, 'error', String(err)),
          loading: false,
        }));
      },
    );
    return () => abort.abort();
  }, [path, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data: state.data, error: state.error, loading: state.loading, reload };
}

/**
 * Calls `onChange` (at most every `minMs`) when any run of the workspace changes status: lists and strips stay live
 * without polling. The browser's EventSource reconnects by itself after a network drop.
 */
export function useRunEvents(
  onChange: (e: { runId: string; jobId: string; status: string }) => void,
  minMs = 500,
): void {
  const latest = useRef(onChange);
  latest.current = onChange;
  useEffect(() => {
    const source = new EventSource('/api/events');
    let timer: number | undefined;
    let last: { runId: string; jobId: string; status: string } | null = null;
    source.addEventListener('run', (m: MessageEvent<string>) => {
      try {
        last = JSON.parse(m.data) as { runId: string; jobId: string; status: string };
      } catch {
        return;
      }
      if (timer === undefined) {
        timer = window.setTimeout(() => {
          timer = undefined;
          if (last) latest.current(last);
        }, minMs);
      }
    });
    return () => {
      source.close();
      if (timer !== undefined) window.clearTimeout(timer);
    };
  }, [minMs]);
}

/** A value that follows `value` once it stopped changing for `ms` (search boxes). */
export function useDebounced<T>(value: T, ms: number): T {
  const [v, setV] = useState(value);
  useEffect(() => {
    const t = window.setTimeout(() => setV(value), ms);
    return () => window.clearTimeout(t);
  }, [value, ms]);
  return v;
}
