import { useState, type ReactNode } from 'react';
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

/** Entries shown at first; a long run's earlier entries come on request, so the page opens fast (docs/performance.md). */
const firstShown = 400;

export function Timeline({ events, live, running }: { events: EventDto[]; live: LiveText; running: boolean }) {
  const [shown, setShown] = useState(firstShown);
  const start = events[0]?.ts ?? 0;
  if (events.length === 0)
    return <p className="muted">{running ? 'Waiting for the first step…' : 'No timeline entries.'}</p>;
  const hidden = Math.max(0, events.length - shown);
  return (
    <>
      {hidden > 0 && (
        <button type="button" className="ghost" onClick={() => setShown((n) => n + 2000)}>
          Show {Math.min(hidden, 2000)} earlier of {hidden} hidden entries
        </button>
      )}
      <ol className="timeline" aria-label="Timeline">
        {(hidden > 0 ? events.slice(hidden) : events).map((e) => {
          const d = describe(e);
          const callId = (e.payload as Payload | null)?.callId;
          const streaming = e.type === 'tool.call' && typeof callId === 'string' ? live.tools[callId] : undefined;
          return (
            <li
              key={e.seq}
              className={`entry type-${e.type.replace(/\./g, '-')}${d.tone ? ` tone-${d.tone}` : ''}`}
              data-type={e.type}
            >
              <div className="entry-head">
                <span className="at" title={new Date(e.ts).toISOString()}>
                  +{duration(e.ts - start)}
                </span>
                <span className="what">{d.title}</span>
                {e.ms !== null && <span className="muted small">{duration(e.ms)}</span>}
              </div>
              {d.body && (
                <pre className="entry-body">{d.body.length > 4000 ? `${d.body.slice(0, 4000)}\n…` : d.body}</pre>
              )}
              {streaming !== undefined && (
                <pre className="entry-body streaming" aria-live="off">
                  {streaming}
                </pre>
              )}
              <PayloadDetails payload={e.payload} />
            </li>
          );
        })}
      </ol>
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
