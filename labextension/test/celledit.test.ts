import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';

import { applyBatchEdit, lineAfter } from '../src/celledit';
import { IBatchEdit } from '../src/protocol';

const SOURCE = '%%gpuguard\nBATCH_SIZE = 512  # größer\nmodel.fit(x, batch_size=BATCH_SIZE)\n';

/** The card's edit of `BATCH_SIZE = 512` to `new_text`, as the kernel writes it. */
function edit(newText: string): IBatchEdit {
  const start = Array.from(SOURCE).indexOf('5', 11);
  return {
    cell_id: 'c1',
    source_sha256: createHash('sha256').update(SOURCE, 'utf8').digest('hex'),
    batch_size: Number(newText),
    edits: [
      {
        line: 2,
        column: 13,
        start,
        end: start + 3,
        old_text: '512',
        new_text: newText,
        line_text: 'BATCH_SIZE = 512  # größer'
      }
    ]
  };
}

/** A cell model as far as the edit uses it: its shared source. */
function cell(source: string): any {
  let text = source;
  return {
    sharedModel: {
      getSource: () => text,
      transact: (change: () => void) => change(),
      updateSource: (start: number, end: number, value: string) => {
        text = text.slice(0, start) + value + text.slice(end);
      }
    },
    text: () => text
  };
}

test('the edit writes the new size where the old one stood, and nothing else', () => {
  const model = cell(SOURCE);
  const outcome = applyBatchEdit(model, edit('64'));
  assert.deepEqual(outcome, {
    ok: true,
    message: 'Batch size 64 is now in the cell (Ctrl-Z undoes it).'
  });
  assert.equal(model.text(), SOURCE.replace('= 512', '= 64'));
});

test('a cell changed since it ran is left alone, and the card says what to change', () => {
  const model = cell(SOURCE + '# changed\n');
  const outcome = applyBatchEdit(model, edit('64'));
  assert.equal(outcome.ok, false);
  assert.equal(
    outcome.message,
    'The cell changed since it ran: change it by hand (line 2: BATCH_SIZE = 64  # größer).'
  );
  assert.equal(model.text(), SOURCE + '# changed\n');
});

test('a cell that already holds the edit is not edited twice', () => {
  const model = cell(SOURCE.replace('= 512', '= 64'));
  const outcome = applyBatchEdit(model, edit('64'));
  assert.deepEqual(outcome, { ok: true, message: 'The cell already has batch size 64.' });
});

test('the line after an edit counts code points, not UTF-16 units', () => {
  const [change] = edit('128').edits;
  assert.equal(lineAfter(change), 'line 2: BATCH_SIZE = 128  # größer');
});

test("a size this card wrote earlier is no change of the person's: the next size replaces it", () => {
  // Issue 35 item 10: Apply 128, Find the largest, Apply 192 was refused as a change by hand.
  const model = cell(SOURCE);
  assert.equal(applyBatchEdit(model, edit('128')).ok, true);
  const outcome = applyBatchEdit(model, edit('192'));
  assert.deepEqual(outcome, {
    ok: true,
    message: 'Batch size 192 is now in the cell (Ctrl-Z undoes it).'
  });
  assert.equal(model.text(), SOURCE.replace('= 512', '= 192'));
  assert.deepEqual(applyBatchEdit(model, edit('192')), {
    ok: true,
    message: 'The cell already has batch size 192.'
  });
});

test('a number in place of the size and another change besides is still refused', () => {
  const model = cell(SOURCE.replace('= 512', '= 128') + '# changed\n');
  assert.equal(applyBatchEdit(model, edit('192')).ok, false);
  const words = cell(SOURCE.replace('= 512', '= many'));
  assert.equal(applyBatchEdit(words, edit('192')).ok, false);
});
