import * as nbformat from '@jupyterlab/nbformat';
import { IOutputAreaModel, OutputAreaModel } from '@jupyterlab/outputarea';
import { IRenderMimeRegistry, MimeModel } from '@jupyterlab/rendermime';
import { ISignal, Signal } from '@lumino/signaling';

import { FOLD_LINES, outputSummary } from './cardview';
import { CARD_MIME } from './protocol';

/**
 * What a card's last action printed (a retry's attempts: Keras' progress bar, its epochs and
 * metrics), held as a notebook holds a cell's output: in JupyterLab's own output model, which
 * folds `\r` and `\b` as the stream arrives, shown by its own renderers, which do ANSI.
 *
 * The output belongs to the card: it is saved in the card's bundle, as raw stream outputs in its
 * metadata (for this extension, which renders them again), and rendered into its HTML and text
 * (for every frontend without it), so that the run that fixed the cell keeps its metrics.
 */

/** Where a card's saved bundle keeps the stream outputs: in its metadata, under the card's type. */
const SAVED_KEY = 'action_output';

/** The card's output in the forms its saved bundle carries. */
export interface ISavedOutput {
  /** The stream outputs, as a notebook saves them (ANSI codes kept, `\r` and `\b` folded). */
  outputs: nbformat.IStream[];
  /**
   * What the renderers of this page drew of them, for frontends without this extension: a fold
   * as the card shows it (folded when long), and the text under its summary.
   */
  html: string;
  text: string;
}

/** The output of each card's last action that printed, by card id, in this page. */
export class ActionOutputs {
  /** A card gained a new output (the renderers redraw it; later text updates its area itself). */
  get changed(): ISignal<this, string> {
    return this._changed;
  }

  get(cardId: string): OutputAreaModel | undefined {
    return this._models.get(cardId);
  }

  /**
   * A stream the kernel printed while an action on the card ran. The first of an action starts
   * the card's output afresh: an action that prints nothing (Free memory, Apply) keeps the last.
   */
  add(cardId: string, stream: nbformat.IStream, first: boolean): void {
    let model = this._models.get(cardId);
    if (!model || first) {
      model = new OutputAreaModel({ trusted: false });
      this._set(cardId, model);
    }
    model.add(stream);
  }

  /**
   * The output a saved card carries in its bundle's `metadata`, unless this page has the card's
   * own (newer) one.
   */
  restore(cardId: string, metadata: unknown): void {
    if (this._models.has(cardId)) {
      return;
    }
    const outputs = savedStreams(metadata);
    if (outputs.length) {
      this._set(cardId, new OutputAreaModel({ values: outputs, trusted: false }));
    }
  }

  private _set(cardId: string, model: OutputAreaModel): void {
    const previous = this._models.get(cardId);
    this._models.set(cardId, model);
    this._changed.emit(cardId);
    previous?.dispose(); // after the renderers have let go of it
  }

  private _models = new Map<string, OutputAreaModel>();
  private _changed = new Signal<this, string>(this);
}

/** The number of lines of an output, as it shows. */
export function lineCount(model: IOutputAreaModel): number {
  return streams(model).reduce(
    (lines, stream) => lines + joined(stream.text).replace(/\n$/, '').split('\n').length,
    0
  );
}

/**
 * The output as the card's saved bundle keeps it: the streams, and what JupyterLab's own text
 * renderer draws of them (ANSI as coloured spans in the HTML, left out of the text).
 */
export async function savedOutput(
  model: IOutputAreaModel,
  rendermime: IRenderMimeRegistry
): Promise<ISavedOutput> {
  const outputs = streams(model);
  const lines = lineCount(model);
  const summary = outputSummary({ lines });
  const html: string[] = [
    `<details${lines <= FOLD_LINES ? ' open' : ''}><summary>${summary}</summary>`
  ];
  const text: string[] = [`${summary}:\n`];
  for (const stream of outputs) {
    const mimeType = `application/vnd.jupyter.${stream.name}`;
    const renderer = rendermime.createRenderer(mimeType);
    await renderer.renderModel(new MimeModel({ data: { [mimeType]: joined(stream.text) } }));
    html.push(renderer.node.innerHTML);
    text.push(renderer.node.textContent ?? '');
    renderer.dispose();
  }
  html.push('</details>');
  return { outputs, html: html.join(''), text: text.join('') };
}

/** The metadata of a card's saved bundle that carries its output. */
export function savedMetadata(outputs: nbformat.IStream[]): Record<string, any> {
  return { [CARD_MIME]: { [SAVED_KEY]: outputs } };
}

function streams(model: IOutputAreaModel): nbformat.IStream[] {
  return model
    .toJSON()
    .filter(nbformat.isStream)
    .map(stream => ({ ...stream, text: joined(stream.text) }));
}

/** The stream outputs in a saved card's metadata; anything else there is left out. */
function savedStreams(metadata: unknown): nbformat.IStream[] {
  const ours = (metadata as Record<string, any> | undefined)?.[CARD_MIME];
  const saved: unknown = ours?.[SAVED_KEY];
  if (!Array.isArray(saved)) {
    return [];
  }
  return saved
    .filter(
      (output): output is nbformat.IStream =>
        !!output &&
        output.output_type === 'stream' &&
        (output.name === 'stdout' || output.name === 'stderr') &&
        (typeof output.text === 'string' || Array.isArray(output.text))
    )
    .map(stream => ({ output_type: 'stream', name: stream.name, text: joined(stream.text) }));
}

function joined(text: nbformat.MultilineString): string {
  return Array.isArray(text) ? text.join('') : text;
}
