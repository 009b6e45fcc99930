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
 * The cell may hold the source that ran, or that source with another size at the edit's places
 * (this card's earlier Apply, or the person's own): a change the card made is not a change of
 * the person's. Refused when anything else changed (its hash would differ): the offsets would
 * land on other text. A cell that already holds the edit is left as it is.
 */
export function applyBatchEdit(model: ICellModel, edit: IBatchEdit): IEditOutcome {
  const source = model.sharedModel.getSource();
  const size = edit.batch_size;
  const ran = sourceThatRan(source, edit);
  if (ran === null) {
    const after = edit.edits.map(e => lineAfter(e)).join('; ');
    return {
      ok: false,
      message: `The cell changed since it ran: change it by hand (${after}).`
    };
  }
  const wanted = withEdits(ran, edit.edits);
  if (wanted === source) {
    return { ok: true, message: `The cell already has batch size ${size}.` };
  }
  // One replacement of what differs: the editor keeps the cursor and the rest of the text.
  const [start, end, text] = difference(source, wanted);
  const shared = model.sharedModel;
  shared.transact(() => shared.updateSource(start, end, text));
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
 * The source that ran, when `source` is it with any whole number written at each edit's place:
 * put back, in order, each edit's old text where a number stands; `null` when that does not
 * hash as the card says (something else changed).
 */
function sourceThatRan(source: string, edit: IBatchEdit): string | null {
  const points = Array.from(source);
  for (const change of [...edit.edits].sort((a, b) => a.start - b.start)) {
    // Everything before `change` is back to the original, so its offsets hold again.
    let end = change.start;
    while (end < points.length && /[0-9]/.test(points[end])) {
      end++;
    }
    if (end === change.start) {
      return null;
    }
    points.splice(change.start, end - change.start, ...Array.from(change.old_text));
  }
  const ran = points.join('');
  return sourceHash(ran) === edit.source_sha256 ? ran : null;
}

/** `source` with `edits` made (offsets in code points of `source`). */
function withEdits(source: string, edits: ITextEdit[]): string {
  const points = Array.from(source);
  for (const change of [...edits].sort((a, b) => b.start - a.start)) {
    points.splice(change.start, change.end - change.start, ...Array.from(change.new_text));
  }
  return points.join('');
}

/** The UTF-16 range of `before` that differs from `after`, and its text in `after`. */
function difference(before: string, after: string): [number, number, string] {
  let start = 0;
  while (start < before.length && start < after.length && before[start] === after[start]) {
    start++;
  }
  let tail = 0;
  while (
    tail < before.length - start &&
    tail < after.length - start &&
    before[before.length - 1 - tail] === after[after.length - 1 - tail]
  ) {
    tail++;
  }
  return [start, before.length - tail, after.slice(start, after.length - tail)];
}
