import assert from 'node:assert/strict';
import { test } from 'node:test';

import { shownDevices } from '../src/devices';
import { IKernelState, IMeterReading } from '../src/protocol';

const GiB = 2 ** 30;

function reading(devices: number, local: string[], uuid: string | null = null): IMeterReading {
  return {
    version: 3,
    source: devices ? 'nvml' : 'none',
    reason: devices ? null : 'no GPU telemetry: NVML found no device',
    updated_at: 100,
    devices: Array.from({ length: devices }, (_, index) => ({
      index,
      name: 'NVIDIA H100',
      simulated: false,
      used_bytes: GiB,
      total_bytes: 80 * GiB,
      utilization_percent: 10,
      temperature_c: 40,
      problem: null,
      uuid
    })),
    kernels: [],
    attribution: null,
    local_kernels: local
  };
}

function report(host: string | null, uuid: string | null = null): IKernelState {
  return {
    version: 3,
    pid: 42,
    kernel_id: 'k-1',
    updated_at: 100,
    running: true,
    cell: { cell_id: 'c-1', execution_count: 3, first_line: 'model.fit(x, y)' },
    phase: 'fit',
    step: 12,
    last_step_at: 99,
    devices: [
      {
        index: 0,
        name: 'Simulated GPU',
        simulated: true,
        used_bytes: 3 * GiB,
        total_bytes: 8 * GiB,
        allocator_bytes: 2 * GiB,
        utilization_percent: null,
        temperature_c: null,
        uuid
      }
    ],
    last_rule_id: null,
    outcome: null,
    host
  };
}

test('a kernel the server sees adds nothing: its GPU is the one the server reads', () => {
  const shown = shownDevices(reading(1, ['k-1']), 'k-1', report('vm'));
  assert.equal(shown.length, 1);
  assert.equal(shown[0].kernelHost, null);
  assert.equal(shown[0].used_bytes, GiB); // the server's reading, not the kernel's
});

test("a kernel behind a gateway adds its own GPU, said to be on the kernel's host", () => {
  const alone = shownDevices(reading(0, []), 'k-1', report('gpu-node-7'));
  assert.equal(alone.length, 1);
  assert.equal(alone[0].kernelHost, 'gpu-node-7');
  assert.equal(alone[0].used_bytes, 3 * GiB);
  const both = shownDevices(reading(1, ['k-2']), 'k-1', report('gpu-node-7'));
  assert.deepEqual(
    both.map(device => device.kernelHost),
    [null, 'gpu-node-7']
  );
});

test("a gateway kernel on the server's machine reports the server's GPU: counted once", () => {
  const shown = shownDevices(reading(1, [], 'GPU-1234'), 'k-1', report('vm', 'GPU-1234'));
  assert.equal(shown.length, 1);
  assert.equal(shown[0].kernelHost, null);
});

test('without the server, or without a report, only what the server read is shown', () => {
  assert.equal(shownDevices(null, 'k-1', report('gpu-node-7')).length, 0);
  assert.equal(shownDevices(reading(1, []), 'k-1', null).length, 1);
  assert.equal(shownDevices(reading(1, []), null, report('gpu-node-7')).length, 1);
});
