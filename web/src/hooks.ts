import { useCallback, useEffect, useEffectEvent, useLayoutEffect, useRef, useState } from 'react';
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
  // Loading is derived, not set: the request in flight is `${tick} ${key}`, and `answered` names the last one that
  // came back, so nothing is set synchronously in the effect.
  const [state, setState] = useState<{ answered: string | null; data: T | undefined; error: ApiError | null }>({
    answered: null,
    data: undefined,
    error: null,
  });
  const [tick, setTick] = useState(0);
  const run = useEffectEvent((signal: AbortSignal) => load(signal));
  useEffect(() => {
    if (key === null) return;
    const abort = new AbortController();
    const answered = `${tick} ${key}`;
    run(abort.signal).then(
      (data) => {
        if (!abort.signal.aborted) setState({ answered, data, error: null });
      },
      (err: unknown) => {
        if (!abort.signal.aborted) setState((s) => ({ ...s, answered, error: asApiError(err) }));
      },
    );
    return () => abort.abort();
  }, [key, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  const loading = key !== null && state.answered !== `${tick} ${key}`;
  return { data: state.data, error: state.error, loading, reload };
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

/**
 * `fn`, called once calls stopped for `ms` (a search box writing the URL): the write happens in the event's own
 * time, not in an effect that would have to tell a typed value from one the URL brought back.
 */
export function useDebouncedCallback<A extends unknown[]>(fn: (...args: A) => void, ms: number): (...args: A) => void {
  const latest = useRef(fn);
  useLayoutEffect(() => {
    latest.current = fn;
  });
  const timer = useRef<number | undefined>(undefined);
  useEffect(() => () => window.clearTimeout(timer.current), []);
  return useCallback(
    (...args: A) => {
      window.clearTimeout(timer.current);
      timer.current = window.setTimeout(() => latest.current(...args), ms);
    },
    [ms],
  );
}

/** A copy of `value` that the person may edit, taken again whenever `value` itself changes (the URL's search). */
export function useEditableCopy(value: string): [string, (v: string) => void] {
  const [copy, setCopy] = useState({ of: value, text: value });
  // Adjusted during render, as React advises for state that follows a prop: no effect, no extra paint.
  if (copy.of !== value) setCopy({ of: value, text: value });
  const set = useCallback((text: string) => setCopy((c) => ({ ...c, text })), []);
  return [copy.of === value ? copy.text : value, set];
}
