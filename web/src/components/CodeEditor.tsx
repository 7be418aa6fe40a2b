import { useEffect, useLayoutEffect, useRef, useState } from 'react';
import { errorMessage } from '../../../domain/error-message.js';
import type { EditorHandle } from './codemirror.js';
import type { EditorLanguage } from './editor-language.js';
import './job-tabs.css';

/**
 * A code editor (CodeMirror 6) for a controlled text. The editor module is imported on first use, so pages that never
 * show one do not load it; if it cannot be loaded (an old tab after a redeploy removed the chunk), a plain textarea
 * with the same label takes its place and editing still works.
 */
export function CodeEditor({
  value,
  onChange,
  language,
  label,
  readOnly = false,
  minLines = 6,
}: {
  value: string;
  onChange?: (text: string) => void;
  language: EditorLanguage;
  label: string;
  readOnly?: boolean;
  minLines?: number;
}) {
  const host = useRef<HTMLDivElement>(null);
  const handle = useRef<EditorHandle | null>(null);
  // The latest value and callback for the editor's listener, updated after each render (not during it).
  const latest = useRef({ value, onChange });
  useLayoutEffect(() => {
    latest.current = { value, onChange };
  });
  const [state, setState] = useState<'loading' | 'ready' | 'failed'>('loading');
  const [failure, setFailure] = useState('');

  useEffect(() => {
    let cancelled = false;
    import('./codemirror.js').then(
      (m) => {
        if (cancelled || !host.current) return;
        handle.current = m.createEditor(host.current, {
          doc: latest.current.value,
          language,
          label,
          readOnly,
          minLines,
          onChange: (text) => latest.current.onChange?.(text),
        });
        setState('ready');
      },
      (err: unknown) => {
        if (cancelled) return;
        setFailure(errorMessage(err));
        setState('failed');
      },
    );
    return () => {
      cancelled = true;
      handle.current?.destroy();
      handle.current = null;
    };
  }, [language, label, readOnly, minLines]);

  useEffect(() => {
    handle.current?.setDoc(value);
  }, [value]);

  if (state === 'failed')
    return (
      <div className="code-editor">
        <textarea
          className="code-fallback"
          aria-label={label}
          rows={Math.max(minLines, value.split('\n').length + 1)}
          value={value}
          readOnly={readOnly}
          spellCheck={false}
          onChange={(e) => onChange?.(e.target.value)}
        />
        <div className="hint">The code editor could not be loaded ({failure}); this is a plain text box.</div>
      </div>
    );
  return (
    <div
      className="code-editor"
      ref={host}
      data-state={state}
      style={state === 'loading' ? { minHeight: `${minLines * 1.45 + 0.6}em` } : undefined}
      aria-busy={state === 'loading'}
    />
  );
}
