import { memo, useLayoutEffect, useRef, useState, type ReactNode } from 'react';
import { useVirtualizer } from '@tanstack/react-virtual';
import { cost, duration } from '../format.js';
import type { EventDto } from '../types.js';
import { StatusBadge } from './ui.js';

/** What is streaming right now: the model's text and reasoning, and each running tool call's output by call id. */
export interface LiveText {
  text: string;
  reasoning: string;
  tools: Record<string, string>;
}

type Payload = Record<string, unknown>;

const str = (v: unknown): string =>
  typeof v === 'string' ? v : v === undefined || v === null ? '' : JSON.stringify(v, null, 2);

/** A one-line account of a timeline entry; the whole payload stays one click away. */
function describe(e: EventDto): { title: ReactNode; body?: string; tone?: 'error' | 'ok' } {
  const p = (e.payload ?? {}) as Payload;
  switch (e.type) {
    case 'run.status':
      return {
        title: (
          <>
            Status <StatusBadge status={str(p.status)} />
          </>
        ),
      };
    case 'llm.call':
      return p.error
        ? { title: `Model call, turn ${str(p.turn)}, failed`, body: str(p.error), tone: 'error' }
        : {
            title: `Model call, turn ${str(p.turn)}${typeof p.cost === 'number' ? ` · ${cost(p.cost)}` : ''}${typeof p.model === 'string' ? ` · ${p.model}` : ''}`,
          };
    case 'tool.call': {
      const args = p.args as Payload | string | undefined;
      const command =
        typeof args === 'object' && args !== null && typeof args.command === 'string' ? args.command : null;
      return {
        title: (
          <>
            Tool <code>{str(p.name)}</code>
          </>
        ),
        body: command ?? str(args),
      };
    }
    case 'tool.result':
      return {
        title: (
          <>
            Result of <code>{str(p.name)}</code>
            {p.isError === true ? ' (error)' : ''}
          </>
        ),
        body: str(p.content),
        tone: p.isError === true ? 'error' : undefined,
      };
    case 'log':
      return { title: 'Log', body: str(p.text ?? p.message ?? p.line ?? p) };
    case 'finish':
      return { title: <>Finished: {str(p.status)}</>, tone: p.status === 'success' ? 'ok' : 'error' };
    case 'verify.result':
      return {
        title: `Checks ${p.passed === true ? 'passed' : 'failed'}`,
        tone: p.passed === true ? 'ok' : 'error',
        body: Array.isArray(p.checks)
          ? p.checks
              .map((c: unknown) => {
                const cc = c as Payload;
                return `${cc.passed === false ? '✗' : '✓'} ${str(cc.check)}${cc.detail ? ` — ${str(cc.detail)}` : ''}`;
              })
              .join('\n')
          : undefined,
      };
    case 'fallback':
      return { title: 'Fell back to the agent', body: str(p.reason), tone: 'error' };
    case 'error':
      return { title: 'Error', body: str(p.message ?? p.error ?? p), tone: 'error' };
    case 'sandbox.create':
      return { title: 'Sandbox created' };
    case 'sandbox.setup':
      return { title: 'Setup ran', body: p.error ? str(p.error) : undefined };
    case 'sandbox.image_wait':
      return { title: 'Waiting for the environment image' };
    case 'sandbox.destroy':
      return { title: 'Sandbox removed' };
    case 'agent.compaction':
      return { title: 'Conversation compacted' };
    default:
      return { title: e.type };
  }
}

/** The raw payload, serialized only once someone opens it: a long timeline would otherwise stringify every entry. */
function PayloadDetails({ payload }: { payload: unknown }) {
  const [open, setOpen] = useState(false);
  return (
    <details onToggle={(e) => setOpen(e.currentTarget.open)}>
      <summary>Details</summary>
      {open && <pre className="entry-body">{JSON.stringify(payload, null, 2)}</pre>}
    </details>
  );
}

/** One entry; memoised, so an arriving entry renders itself and not the rows already on screen. */
const Entry = memo(function Entry({ e, start, streaming }: { e: EventDto; start: number; streaming?: string }) {
  const d = describe(e);
  return (
    <>
      <div className="entry-head">
        <span className="at" title={new Date(e.ts).toISOString()}>
          +{duration(e.ts - start)}
        </span>
        <span className="what">{d.title}</span>
        {e.ms !== null && <span className="muted small">{duration(e.ms)}</span>}
      </div>
      {d.body && <pre className="entry-body">{d.body.length > 4000 ? `${d.body.slice(0, 4000)}\n…` : d.body}</pre>}
      {streaming !== undefined && (
        <pre className="entry-body streaming" aria-live="off">
          {streaming}
        </pre>
      )}
      <PayloadDetails payload={e.payload} />
    </>
  );
});

const toneOf = (e: EventDto) => describe(e).tone;

/** How close to the end (px) still counts as "at the end", so a live run keeps following. */
const endSlack = 48;

/**
 * The whole timeline, virtualised: only the entries in view (and a few around) are in the page, so a run of 10,000
 * entries opens as fast as one of ten and every entry stays reachable by scrolling (docs/performance.md, "Web app budgets").
 * A live run follows its newest entry until the person scrolls up to read; "Jump to latest" follows again.
 */
export function Timeline({ events, live, running }: { events: EventDto[]; live: LiveText; running: boolean }) {
  const scroller = useRef<HTMLDivElement>(null);
  const [follow, setFollow] = useState(running);
  // When the person last touched the scroller (wheel, key, pointer, touch): only their scrolling stops the follow.
  const touched = useRef(0);
  const count = events.length;
  const start = events[0]?.ts ?? 0;
  // The virtualizer's functions change with every scroll, so this component is not memoised by the compiler; the rows
  // are (Entry).
  // eslint-disable-next-line react-hooks/incompatible-library
  const virtualizer = useVirtualizer({
    count,
    getScrollElement: () => scroller.current,
    estimateSize: () => 58,
    overscan: 8,
    getItemKey: (i) => events[i]?.seq ?? i,
  });
  useLayoutEffect(() => {
    if (follow && count > 0) virtualizer.scrollToIndex(count - 1, { align: 'end' });
  }, [follow, count, virtualizer]);

  if (count === 0) return <p className="muted">{running ? 'Waiting for the first step…' : 'No timeline entries.'}</p>;
  const items = virtualizer.getVirtualItems();
  const offset = items[0]?.start ?? 0;
  const userTouched = () => {
    touched.current = performance.now();
  };
  return (
    <>
      <div className="timeline-tools">
        <span className="muted small" role="status">
          {count} {count === 1 ? 'entry' : 'entries'}
        </span>
        <button
          type="button"
          className="ghost small"
          onClick={() => {
            setFollow(false);
            virtualizer.scrollToIndex(0, { align: 'start' });
          }}
        >
          Jump to start
        </button>
        <button
          type="button"
          className="ghost small"
          aria-pressed={follow}
          onClick={() => {
            setFollow(true);
            virtualizer.scrollToIndex(count - 1, { align: 'end' });
          }}
        >
          {running ? 'Follow latest' : 'Jump to end'}
        </button>
      </div>
      <div
        ref={scroller}
        className="timeline-scroll"
        role="region"
        aria-label={`Timeline, ${count} entries; scroll for more`}
        tabIndex={0}
        onWheel={userTouched}
        onKeyDown={(ev) => {
          userTouched();
          // Home and End go through the virtualizer: a native jump lands by estimated row heights, and rows measured on
          // the way shift it, so it stopped a few rows short of the start (docs/performance.md, "Web app budgets").
          if (ev.key === 'Home' || ev.key === 'End') {
            ev.preventDefault();
            const last = ev.key === 'End';
            setFollow(last && running);
            virtualizer.scrollToIndex(last ? count - 1 : 0, { align: last ? 'end' : 'start' });
          }
        }}
        onPointerDown={userTouched}
        onTouchStart={userTouched}
        onScroll={(ev) => {
          const el = ev.currentTarget;
          const atEnd = el.scrollHeight - el.scrollTop - el.clientHeight <= endSlack;
          if (atEnd && running && !follow) setFollow(true);
          else if (!atEnd && follow && performance.now() - touched.current < 1000) setFollow(false);
        }}
      >
        <div className="timeline-space" style={{ height: virtualizer.getTotalSize() }}>
          <ol className="timeline" aria-label="Timeline" style={{ transform: `translateY(${offset}px)` }}>
            {items.map((item) => {
              const e = events[item.index];
              const callId = (e.payload as Payload | null)?.callId;
              const streaming = e.type === 'tool.call' && typeof callId === 'string' ? live.tools[callId] : undefined;
              const tone = toneOf(e);
              return (
                <li
                  key={item.key}
                  ref={virtualizer.measureElement}
                  data-index={item.index}
                  aria-posinset={item.index + 1}
                  aria-setsize={count}
                  className={`entry type-${e.type.replace(/\./g, '-')}${tone ? ` tone-${tone}` : ''}`}
                  data-type={e.type}
                  data-seq={e.seq}
                >
                  <Entry e={e} start={start} streaming={streaming} />
                </li>
              );
            })}
          </ol>
        </div>
      </div>
      {running && (live.reasoning || live.text) && (
        <div className="live-text card">
          {live.reasoning && (
            <details open>
              <summary>Thinking…</summary>
              <pre className="entry-body">{live.reasoning}</pre>
            </details>
          )}
          {live.text && <pre className="entry-body">{live.text}</pre>}
        </div>
      )}
    </>
  );
}
