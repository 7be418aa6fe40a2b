// CodeMirror 6 and its languages. Only CodeEditor.tsx imports this module, and only with a dynamic import, so the
// editor (about 150 KB gzipped) is fetched when a page first shows one and never weighs on the jobs page's first load
// (docs/performance.md budgets that page's initial JavaScript).
import { defaultKeymap, history, historyKeymap, indentWithTab } from '@codemirror/commands';
import { json } from '@codemirror/lang-json';
import { javascript } from '@codemirror/lang-javascript';
import { python } from '@codemirror/lang-python';
import {
  bracketMatching,
  defaultHighlightStyle,
  HighlightStyle,
  indentOnInput,
  StreamLanguage,
  syntaxHighlighting,
} from '@codemirror/language';
import { dockerFile } from '@codemirror/legacy-modes/mode/dockerfile';
import { shell } from '@codemirror/legacy-modes/mode/shell';
import { highlightSelectionMatches, searchKeymap } from '@codemirror/search';
import { Compartment, EditorState, type Extension } from '@codemirror/state';
import {
  drawSelection,
  EditorView,
  highlightActiveLine,
  highlightActiveLineGutter,
  keymap,
  lineNumbers,
} from '@codemirror/view';
import { tags } from '@lezer/highlight';
import type { EditorLanguage } from './editor-language.js';

export interface EditorOptions {
  doc: string;
  language: EditorLanguage;
  /** The accessible name of the editable text (what a label names for a textarea). */
  label: string;
  readOnly: boolean;
  /** The height of an empty editor, in lines. */
  minLines: number;
  /** Called with the whole text after each change a person makes. */
  onChange: (text: string) => void;
}

export interface EditorHandle {
  /** Replaces the text unless it already is `text` (a change from outside, such as a reload; not an undo step). */
  setDoc(text: string): void;
  focus(): void;
  destroy(): void;
}

function languageSupport(language: EditorLanguage): Extension {
  switch (language) {
    case 'python':
      return python();
    case 'javascript':
      return javascript();
    case 'json':
      return json();
    case 'shell':
      return StreamLanguage.define(shell);
    case 'dockerfile':
      return StreamLanguage.define(dockerFile);
    case 'text':
      return [];
  }
}

// Colours from the app's own variables (web/src/styles.css), so light and dark follow the OS setting as the rest does.
const theme = EditorView.theme({
  '&': {
    backgroundColor: 'var(--code-bg)',
    color: 'var(--text)',
    borderRadius: '6px',
    border: '1px solid var(--line)',
    maxHeight: '70vh',
  },
  '&.cm-focused': { outline: '2px solid var(--focus)', outlineOffset: '1px' },
  '.cm-content': {
    fontFamily: "ui-monospace, 'SFMono-Regular', Menlo, Consolas, monospace",
    caretColor: 'var(--text)',
  },
  '.cm-scroller': {
    fontFamily: "ui-monospace, 'SFMono-Regular', Menlo, Consolas, monospace",
    lineHeight: '1.45',
    overflow: 'auto',
  },
  '.cm-gutters': { backgroundColor: 'transparent', color: 'var(--muted)', border: 'none' },
  '.cm-activeLine, .cm-activeLineGutter': { backgroundColor: 'color-mix(in srgb, var(--accent) 8%, transparent)' },
  '.cm-cursor': { borderLeftColor: 'var(--text)' },
  '&.cm-focused .cm-selectionBackground, .cm-selectionBackground, ::selection': {
    backgroundColor: 'color-mix(in srgb, var(--accent) 28%, transparent)',
  },
});

// The default highlight style is made for light backgrounds; in dark mode these variables keep tokens readable.
const appHighlight = HighlightStyle.define([
  { tag: [tags.comment, tags.meta], color: 'var(--muted)', fontStyle: 'italic' },
  { tag: [tags.keyword, tags.operatorKeyword, tags.controlKeyword], color: 'var(--accent)', fontWeight: '600' },
  { tag: [tags.string, tags.special(tags.string)], color: 'var(--ok)' },
  { tag: [tags.number, tags.bool, tags.null, tags.atom], color: 'var(--warn)' },
  { tag: [tags.variableName, tags.propertyName], color: 'var(--info)' },
  { tag: tags.invalid, color: 'var(--bad)' },
]);

export function createEditor(parent: HTMLElement, options: EditorOptions): EditorHandle {
  const editable = new Compartment();
  let applying = false;
  // The editor lives in a shadow root: CodeMirror writes its styles into a <style> element when mounted in the
  // document, which the app's Content-Security-Policy (style-src 'self', api/routes/web.ts) refuses; in a shadow root
  // it uses a constructed style sheet instead, which the policy allows. The app's colour variables inherit into it.
  const root = parent.shadowRoot ?? parent.attachShadow({ mode: 'open' });
  const view = new EditorView({
    parent: root,
    root,
    state: EditorState.create({
      doc: options.doc,
      extensions: [
        lineNumbers(),
        highlightActiveLineGutter(),
        history(),
        drawSelection(),
        indentOnInput(),
        bracketMatching(),
        highlightActiveLine(),
        highlightSelectionMatches(),
        syntaxHighlighting(appHighlight),
        syntaxHighlighting(defaultHighlightStyle, { fallback: true }),
        // Tab indents inside the editor; Escape then Tab leaves it, so keyboard users are never trapped.
        keymap.of([...defaultKeymap, ...historyKeymap, ...searchKeymap, indentWithTab]),
        languageSupport(options.language),
        theme,
        EditorView.theme({ '.cm-content, .cm-gutter': { minHeight: `${options.minLines * 1.45}em` } }),
        EditorView.lineWrapping,
        EditorView.contentAttributes.of({ 'aria-label': options.label, 'aria-multiline': 'true' }),
        editable.of([EditorState.readOnly.of(options.readOnly), EditorView.editable.of(!options.readOnly)]),
        EditorView.updateListener.of((u) => {
          if (u.docChanged && !applying) options.onChange(u.state.doc.toString());
        }),
      ],
    }),
  });
  return {
    setDoc(text) {
      if (view.state.doc.toString() === text) return;
      applying = true;
      try {
        view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } });
      } finally {
        applying = false;
      }
    },
    focus: () => view.focus(),
    destroy: () => view.destroy(),
  };
}
