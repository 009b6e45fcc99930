import { ICellModel } from '@jupyterlab/cells';
import { sha256 } from '@noble/hashes/sha256';
import { bytesToHex } from '@noble/hashes/utils';

import { IBatchEdit, ITextEdit } from './protocol';

/** What came of writing a batch edit into a cell. */
export interface IEditOutcome {
  ok: boolean;
  message: string;
}

/** The SHA-256 of a cell's source, as the kernel hashed it (UTF-8, hex). */
function sourceHash(source: string): string {
  return bytesToHex(sha256(new TextEncoder().encode(source)));
}

/**
 * Write the card's batch edit into the cell, as one step that Ctrl-Z undoes.
 *
 * Refused when the cell's source is not the one that ran (its hash differs): the offsets would
 * land on other text. A cell that already holds the edit is left as it is.
 */
export function applyBatchEdit(model: ICellModel, edit: IBatchEdit): IEditOutcome {
  const source = model.sharedModel.getSource();
  const size = edit.batch_size;
  if (sourceHash(source) !== edit.source_sha256) {
    const after = edit.edits.map(e => lineAfter(e)).join('; ');
    const already = holdsEdit(source, edit);
    return {
      ok: already,
      message: already
        ? `The cell already has batch size ${size}.`
        : `The cell changed since it ran: change it by hand (${after}).`
    };
  }
  const shared = model.sharedModel;
  shared.transact(() => {
    for (const change of [...edit.edits].sort((a, b) => b.start - a.start)) {
      const current = shared.getSource();
      shared.updateSource(
        utf16Offset(current, change.start),
        utf16Offset(current, change.end),
        change.new_text
      );
    }
  });
  return { ok: true, message: `Batch size ${size} is now in the cell (Ctrl-Z undoes it).` };
}

/** The line an edit leaves, as the card shows it. */
export function lineAfter(edit: ITextEdit): string {
  const points = Array.from(edit.line_text);
  const oldLength = Array.from(edit.old_text).length;
  points.splice(edit.column, oldLength, ...Array.from(edit.new_text));
  return `line ${edit.line}: ${points.join('').trim()}`;
}

/**
 * Whether `source` is the source that ran with the edits made: put back, in order, each
 * edit's old text where its new text stands; the result hashes as the card says.
 */
function holdsEdit(source: string, edit: IBatchEdit): boolean {
  const points = Array.from(source);
  for (const change of [...edit.edits].sort((a, b) => a.start - b.start)) {
    // Everything before `change` is back to the original, so its offsets hold again.
    const length = Array.from(change.new_text).length;
    if (points.slice(change.start, change.start + length).join('') !== change.new_text) {
      return false;
    }
    points.splice(change.start, length, ...Array.from(change.old_text));
  }
  return sourceHash(points.join('')) === edit.source_sha256;
}

/** A code-point offset in `text` as the UTF-16 index the editor counts in. */
function utf16Offset(text: string, points: number): number {
  return Array.from(text).slice(0, points).join('').length;
}
