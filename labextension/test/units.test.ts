import assert from 'node:assert/strict';
import { test } from 'node:test';

import { fillLevel, formatBytes } from '../src/units';

test('an unknown size is said in a word, never "?"', () => {
  assert.equal(formatBytes(null), 'unknown');
  assert.equal(formatBytes(undefined), 'unknown');
});

test('sizes are binary units with one decimal below 100', () => {
  assert.equal(formatBytes(512), '512 B');
  assert.equal(formatBytes(1536), '1.5 KiB');
  assert.equal(formatBytes(8 * 2 ** 30), '8.0 GiB');
  assert.equal(formatBytes(300 * 2 ** 20), '300 MiB');
});

test('a device warns at 85% and is in danger at 95%', () => {
  assert.equal(fillLevel(84, 100), 'ok');
  assert.equal(fillLevel(85, 100), 'warn');
  assert.equal(fillLevel(95, 100), 'danger');
  assert.equal(fillLevel(null, 100), 'ok');
});
