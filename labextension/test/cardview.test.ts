import './dom';

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { cardView, carryOver, FOLD_LINES } from '../src/cardview';
import { ICard } from '../src/protocol';

/** A card as the kernel sends it after a retry that fixed the cell, with its words. */
function card(): ICard {
  return {
    version: 3,
    id: 'card-1',
    kind: 'oom',
    rule_id: 'oom.tf.tensor',
    title: 'Out of GPU memory',
    summary: 'TensorFlow could not allocate 4 GiB.',
    error_type: 'ResourceExhaustedError',
    matched: 'OOM when allocating',
    facts: [],
    evidence: [],
    remedies: [],
    notes: [],
    chart: [],
    reclaimed: { pending: false, freed_bytes: null, held_bytes: null, frames_cleared: 12 },
    retry: {
      offer: {
        batch_size: 64,
        current_batch_size: 512,
        target: null,
        reason: '',
        choices: [],
        notes: [],
        reruns: []
      },
      attempts: [{ batch_size: 64, result: 'fits', peak_bytes: null, error: null }],
      verdict: {
        state: 'fixed',
        batch_size: 64,
        held_bytes: null,
        searched: false,
        remembered: false
      },
      capacity_bytes: null,
      running: false
    },
    batch_edit: null,
    actions: [],
    cell_id: 'c1',
    execution_count: 5,
    words: {
      reclaim: 'Cleared 12 frames of the failed call; no framework allocator to measure it.',
      offer: ['Retry: batch size 64 instead of 512.'],
      attempts: [
        {
          batch_size: 64,
          result: 'fits',
          peak: 'not measured: the allocator keeps no statistics here',
          line: 'batch size 64: fits'
        }
      ],
      verdict: ['Fixed: batch size 64 fits.', "The cell's source still says 512."],
      edit: 'To keep batch size 64, the cell would change: line 2: BATCH = 512 → BATCH = 64.'
    }
  };
}

test("the card prints the kernel's words and words nothing itself", () => {
  const text = cardView(card(), [], {}, () => undefined).textContent ?? '';
  const words = card().words!;
  for (const sentence of [words.reclaim, ...words.verdict, words.edit, words.attempts[0].peak]) {
    assert.ok(text.includes(sentence), sentence);
  }
  assert.ok(!text.includes('?'), text);
  assert.ok(!text.includes('Freeing the failure gave back'), text);
});

test('before any attempt the card shows the offer, and the verdict once there is one', () => {
  const offered = card();
  offered.retry!.attempts = [];
  offered.retry!.verdict = null;
  offered.words = { ...offered.words!, attempts: [], verdict: [], edit: '' };
  const text = cardView(offered, [], {}, () => undefined).textContent ?? '';
  assert.ok(text.includes('Retry: batch size 64 instead of 512.'));
  assert.ok(!text.includes('Fixed'));
});

test('a disabled button carries its reason, said once under the row', () => {
  const buttons = [
    { action: 'retry', label: 'Retry', enabled: false, reason: 'a retry is running' },
    { action: 'find_max', label: 'Find', enabled: false, reason: 'a retry is running' }
  ];
  const view = cardView(card(), buttons, {}, () => undefined);
  const reasons = Array.from(
    view.querySelectorAll('.jp-GpuGuard-reason'),
    node => node.textContent
  );
  assert.deepEqual(reasons, ['a retry is running']);
  assert.equal(view.querySelector('button')?.getAttribute('title'), 'a retry is running');
});

test('a card drawn anew keeps the button under the pointer, up to date, and the folds', () => {
  // A live hang card is drawn four times a second: under load a click whose press and release
  // straddled a redraw was lost, and the stuck cell went on (the browser test of the Interrupt).
  const clicked: string[] = [];
  const interrupt = {
    action: 'interrupt',
    label: 'Interrupt the kernel',
    enabled: true,
    reason: ''
  };
  const host = document.createElement('div');
  host.append(cardView(card(), [interrupt], {}, action => clicked.push(action)));
  const pressed = host.querySelector('button[data-action=interrupt]') as HTMLButtonElement;
  host.querySelectorAll('details').forEach(details => (details.open = true));
  const busy = { ...interrupt, enabled: false, reason: 'the kernel is busy' };
  const redrawn = cardView(card(), [busy], {}, action => clicked.push(`new ${action}`));
  carryOver(host, redrawn);
  host.replaceChildren(redrawn);
  const button = host.querySelector('button[data-action=interrupt]') as HTMLButtonElement;
  assert.equal(button, pressed);
  assert.equal(button.disabled, true);
  assert.equal(button.title, 'the kernel is busy');
  assert.ok(Array.from(host.querySelectorAll('details')).every(details => details.open));
  button.disabled = false;
  button.click();
  assert.deepEqual(clicked, ['interrupt']);
});

test("an action's output shows unfolded while it runs, and folded once it has ended long", () => {
  const running = cardView(card(), [], { running: 'Retry…' }, () => undefined, { lines: null });
  const during = running.querySelector('details.jp-GpuGuard-output') as HTMLDetailsElement;
  assert.ok(during.open);
  assert.equal(during.querySelector('summary')?.textContent, 'Output');
  assert.ok(during.querySelector('.jp-GpuGuard-outputSlot'), 'the slot of the output area');

  const short = cardView(card(), [], {}, () => undefined, { lines: FOLD_LINES });
  const kept = short.querySelector('details.jp-GpuGuard-output') as HTMLDetailsElement;
  assert.ok(kept.open);
  assert.equal(kept.querySelector('summary')?.textContent, `Output (${FOLD_LINES} lines)`);

  const long = cardView(card(), [], {}, () => undefined, { lines: FOLD_LINES + 1 });
  assert.ok(!(long.querySelector('details.jp-GpuGuard-output') as HTMLDetailsElement).open);
  assert.equal(
    cardView(card(), [], {}, () => undefined).querySelector('.jp-GpuGuard-output'),
    null
  );
});

test('a redraw keeps each fold as the person left it, whatever folds came or went', () => {
  const evidenced = card();
  evidenced.evidence = ['OOM when allocating tensor'];
  const host = document.createElement('div');
  host.append(cardView(evidenced, [], { running: 'Retry…' }, () => undefined));
  (host.querySelector('details.jp-GpuGuard-evidence') as HTMLDetailsElement).open = true;
  // The attempt printed: its output comes before the evidence.
  const printed = cardView(evidenced, [], { running: 'Retry…' }, () => undefined, { lines: null });
  carryOver(host, printed);
  host.replaceChildren(printed);
  (host.querySelector('details.jp-GpuGuard-output') as HTMLDetailsElement).open = true;
  // It ended long: folded, whatever it was while it ran; the evidence still open.
  const ended = cardView(evidenced, [], {}, () => undefined, { lines: FOLD_LINES + 5 });
  carryOver(host, ended);
  assert.ok((ended.querySelector('details.jp-GpuGuard-evidence') as HTMLDetailsElement).open);
  assert.ok(!(ended.querySelector('details.jp-GpuGuard-output') as HTMLDetailsElement).open);
});
