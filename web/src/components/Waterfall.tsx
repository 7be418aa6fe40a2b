import { useMemo, useRef } from 'react';
import { useVirtualizer } from '@tanstack/react-virtual';
import { duration } from '../format.js';
import type { EventDto } from '../types.js';

/** One bar: a span of the run (a tool call from its call to its result) or a step that took time (a model call). */
export interface Span {
  id: string;
  label: string;
  start: number;
  end: number;
  depth: number;
  failed: boolean;
}

type Payload = Record<string, unknown>;
const text = (v: unknown) => (typeof v === 'string' ? v : '');

function labelOf(e: EventDto): string {
  const p = (e.payload ?? {}) as Payload;
  switch (e.type) {
    case 'tool.call':
    case 'tool.result':
      return `tool ${text(p.name)}`;
    case 'llm.call':
      return `model call${typeof p.turn === 'number' ? ` ${p.turn}` : ''}${p.purpose ? ` (${text(p.purpose)})` : ''}`;
    case 'sandbox.create':
      return 'sandbox created';
    case 'sandbox.setup':
      return 'setup';
    case 'sandbox.image_wait':
      return 'waiting for the image';
    case 'sandbox.destroy':
      return 'sandbox removed';
    case 'agent.compaction':
      return 'compaction';
    default:
      return e.type;
  }
}

/**
 * The spans of a timeline, in the order they started: entries sharing a `spanId` make one bar from the earliest start
 * to the latest end (an entry with `ms` started `ms` before its timestamp); `parentSpanId` nests a bar under another.
 */
export function spansOf(events: readonly EventDto[]): Span[] {
  const byId = new Map<string, Span & { parent: string | null }>();
  const out: Array<Span & { parent: string | null }> = [];
  for (const e of events) {
    const p = (e.payload ?? {}) as Payload;
    const failed = p.isError === true || (e.type === 'llm.call' && p.error !== undefined && p.error !== null);
    const start = e.ts - (e.ms ?? 0);
    if (e.spanId) {
      const known = byId.get(e.spanId);
      if (known) {
        known.start = Math.min(known.start, start);
        known.end = Math.max(known.end, e.ts);
        known.failed ||= failed;
        continue;
      }
      const span = { id: e.spanId, label: labelOf(e), start, end: e.ts, depth: 0, failed, parent: e.parentSpanId };
      byId.set(e.spanId, span);
      out.push(span);
    } else if (e.ms !== null) {
      out.push({ id: `seq-${e.seq}`, label: labelOf(e), start, end: e.ts, depth: 0, failed, parent: e.parentSpanId });
    }
  }
  for (const s of out) {
    let depth = 0;
    for (let at = s.parent; at && depth < 8; at = byId.get(at)?.parent ?? null) depth++;
    s.depth = depth;
  }
  return out.sort((a, b) => a.start - b.start);
}

const rowHeight = 28;

/** The run's spans as bars on one time axis, virtualised like the timeline (a long run has thousands). */
export function Waterfall({ events }: { events: readonly EventDto[] }) {
  const spans = useMemo(() => spansOf(events), [events]);
  const scroller = useRef<HTMLDivElement>(null);
  // eslint-disable-next-line react-hooks/incompatible-library -- the virtualizer's functions change on scroll
  const virtualizer = useVirtualizer({
    count: spans.length,
    getScrollElement: () => scroller.current,
    estimateSize: () => rowHeight,
    overscan: 12,
  });
  if (spans.length === 0) return <p className="muted">No timed steps yet.</p>;
  const t0 = Math.min(events[0]?.ts ?? 0, ...spans.slice(0, 1).map((s) => s.start));
  const t1 = Math.max(events[events.length - 1]?.ts ?? 0, t0 + 1, ...spans.slice(-200).map((s) => s.end));
  const whole = t1 - t0;
  return (
    <div
      ref={scroller}
      className="waterfall"
      role="region"
      aria-label={`Waterfall, ${spans.length} steps over ${duration(whole)}`}
      tabIndex={0}
    >
      <ol style={{ height: virtualizer.getTotalSize() }}>
        {virtualizer.getVirtualItems().map((item) => {
          const s = spans[item.index];
          const left = ((s.start - t0) / whole) * 100;
          const width = Math.max(0.3, ((s.end - s.start) / whole) * 100);
          return (
            <li
              key={item.key}
              className={`span${s.failed ? ' failed' : ''}`}
              style={{ transform: `translateY(${item.start}px)`, height: rowHeight }}
              aria-posinset={item.index + 1}
              aria-setsize={spans.length}
            >
              <span className="span-label" style={{ paddingLeft: s.depth * 12 }}>
                {s.label}
                {s.failed && <span className="sr-only"> (failed)</span>}
              </span>
              <span className="span-track" aria-hidden="true">
                <span className="span-bar" style={{ left: `${left}%`, width: `${width}%` }} />
              </span>
              <span className="span-ms">
                {duration(s.end - s.start)} <span className="muted small">at +{duration(s.start - t0)}</span>
              </span>
            </li>
          );
        })}
      </ol>
    </div>
  );
}
