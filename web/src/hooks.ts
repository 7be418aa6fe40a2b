import { useCallback, useEffect, useEffectEvent, useState } from 'react';
import { asApiError, type ApiError } from './api.js';

export interface Loaded<T> {
  data: T | undefined;
  error: ApiError | null;
  loading: boolean;
  /** Loads again; the data already shown stays until the answer comes. */
  reload: () => void;
}

/**
 * Runs `load` (a `call` of the typed client) when `key` is set and again whenever it changes; a late answer for an
 * older key is dropped. `key` names what `load` fetches (its path and query), so the page says when it changed.
 */
export function useApi<T>(key: string | null, load: (signal: AbortSignal) => Promise<T>): Loaded<T> {
  const [state, setState] = useState<{
    data: T | undefined;
    error: ApiError | null;
    loading: boolean;
  }>({ data: undefined, error: null, loading: key !== null });
  const [tick, setTick] = useState(0);
  const run = useEffectEvent((signal: AbortSignal) => load(signal));
  useEffect(() => {
    if (key === null) return;
    const abort = new AbortController();
    setState((s) => ({ ...s, loading: true }));
    run(abort.signal).then(
      (data) => {
        if (!abort.signal.aborted) setState({ data, error: null, loading: false });
      },
      (err: unknown) => {
        if (abort.signal.aborted) return;
        setState((s) => ({ ...s, error: asApiError(err), loading: false }));
      },
    );
    return () => abort.abort();
  }, [key, tick]);
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
  const notify = useEffectEvent((e: { runId: string; jobId: string; status: string }) => onChange(e));
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
          if (last) notify(last);
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
