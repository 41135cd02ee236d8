/**
 * The APL editor: CodeMirror with APL's highlighting and completion, Ctrl/Cmd-Enter to run, errors marked
 * where they are. It lives outside Preact's rendering: the page creates it once into an element and talks
 * to it through the handle, so no render can hand the editor an older text or re-dispatch into it.
 */
import { EditorState } from '@codemirror/state';
import { EditorView, keymap, lineNumbers, placeholder } from '@codemirror/view';
import { defaultKeymap, history, historyKeymap } from '@codemirror/commands';
import { autocompletion, completionKeymap } from '@codemirror/autocomplete';
import { setDiagnostics, lintGutter } from '@codemirror/lint';
import { defaultHighlightStyle, syntaxHighlighting, bracketMatching } from '@codemirror/language';
import { errorPlace } from './apl-errors';
import { aplCompletion, aplLanguage, type CompletionSources } from './apl-language';

export interface AplEditorOptions {
  text: string;
  onChange(text: string): void;
  onRun(): void;
  sources: CompletionSources;
}

export interface AplEditor {
  text(): string;
  /** Replaces the text (a starred query picked). */
  setText(text: string): void;
  /** Marks the service's error ("line L, column C: …") at its place; undefined clears it. */
  showError(message: string | undefined): void;
  destroy(): void;
}

export function createAplEditor(parent: HTMLElement, o: AplEditorOptions): AplEditor {
  const view = new EditorView({
    parent,
    state: EditorState.create({
      doc: o.text,
      extensions: [
        lineNumbers(),
        history(),
        bracketMatching(),
        aplLanguage,
        syntaxHighlighting(defaultHighlightStyle),
        autocompletion({ override: [aplCompletion(o.sources)] }),
        lintGutter(),
        placeholder("['dataset'] | where status >= 500 | summarize count() by bin_auto(_time)"),
        keymap.of([
          { key: 'Mod-Enter', run: () => (o.onRun(), true) },
          ...defaultKeymap,
          ...historyKeymap,
          ...completionKeymap,
        ]),
        EditorView.updateListener.of((u) => {
          if (u.docChanged) o.onChange(u.state.doc.toString());
        }),
        // Its styles go into <style> elements, which the page's policy applies only with this answer's nonce.
        EditorView.cspNonce.of(document.querySelector<HTMLMetaElement>('meta[name=style-nonce]')?.content ?? ''),
        EditorView.contentAttributes.of({ 'aria-label': 'APL query', 'data-testid': 'apl-editor' }),
      ],
    }),
  });
  return {
    text: () => view.state.doc.toString(),
    setText: (text) => view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } }),
    showError(message) {
      const place = message ? errorPlace(view.state.doc.toString(), message) : undefined;
      view.dispatch(
        setDiagnostics(
          view.state,
          place ? [{ from: place.from, to: place.to, severity: 'error', message: place.reason }] : [],
        ),
      );
    },
    destroy: () => view.destroy(),
  };
}
