import { Poll } from '@lumino/polling';
import { ISignal, Signal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';
import { showPopup } from '@jupyterlab/statusbar';

import { requestAPI } from './api';
import { IShownDevice, shownDevices } from './devices';
import { IKernelState, IMeterReading } from './protocol';
import { fillLevel, formatBytes } from './units';

/** Where the current notebook's kernel is, and what it last reported of itself. */
export interface ICurrentKernel {
  id: () => string | null;
  report: () => IKernelState | null;
}

/**
 * The server's GPU reading, polled every 2 s while the page is visible; the interval backs off
 * up to 30 s while the server fails to answer, and the poll stands by while the page is hidden.
 */
export class MeterModel {
  constructor() {
    this._poll = new Poll({
      factory: () => this._refresh(),
      frequency: { interval: 2000, backoff: true, max: 30000 },
      standby: 'when-hidden',
      name: 'ipy-gpuguard:meter'
    });
  }

  get reading(): IMeterReading | null {
    return this._reading;
  }

  /** Why there is no reading, when the server could not be asked. */
  get error(): string | null {
    return this._error;
  }

  get changed(): ISignal<this, void> {
    return this._changed;
  }

  refresh(): Promise<void> {
    return this._poll.refresh();
  }

  dispose(): void {
    this._poll.dispose();
  }

  private async _refresh(): Promise<void> {
    try {
      this._reading = await requestAPI<IMeterReading>('devices');
      this._error = null;
    } catch (error) {
      this._error = (error as Error).message;
      this._changed.emit();
      throw error; // the poll backs off
    }
    this._changed.emit();
  }

  private _poll: Poll;
  private _reading: IMeterReading | null = null;
  private _error: string | null = null;
  private _changed = new Signal<this, void>(this);
}

/**
 * The status bar's GPU meter: each GPU's used/total with a bar (warning from 85%, danger from
 * 95%) and the current notebook's kernel's share; a click opens the panel with every GPU and
 * every kernel. A kernel the server cannot see (behind a gateway) adds the GPUs of its own
 * report, said to be on the kernel's host.
 */
export class MeterItem extends Widget {
  constructor(
    private readonly _model: MeterModel,
    private readonly _currentKernel: ICurrentKernel,
    private readonly _kernelName: (kernelId: string) => string
  ) {
    super();
    this.addClass('jp-GpuGuard-meter');
    this.node.tabIndex = 0;
    this.node.setAttribute('role', 'button');
    this._model.changed.connect(this.update, this);
    this.node.addEventListener('click', () => this._openPanel());
    this.update();
  }

  protected onUpdateRequest(): void {
    const reading = this._model.reading;
    const kernelId = this._currentKernel.id();
    const devices = shownDevices(reading, kernelId, this._currentKernel.report());
    if (!reading || !devices.length) {
      // The reason is a sentence of its own ("no GPU telemetry: NVML …"): the tooltip's.
      const reason = reading?.reason ?? this._model.error ?? 'waiting for the server';
      this.node.replaceChildren(span('jp-GpuGuard-meter-none', reading ? 'no GPU' : 'GPU: …'));
      this.node.title = `ipy_gpuguard: ${reason}`;
      return;
    }
    const content = devices.map(device => deviceMeter(device, devices.length > 1));
    const remote = devices.find(device => device.kernelHost !== null);
    if (remote) {
      this.node.title =
        `GPU memory; this kernel runs on ${remote.kernelHost}, whose GPUs it reports itself ` +
        '(click for every GPU and kernel)';
    } else {
      const share = reading.kernels.find(k => k.kernel_id === kernelId);
      if (reading.attribution) {
        content.push(span('jp-GpuGuard-meter-kernel', 'this kernel: not attributable'));
      } else if (kernelId) {
        content.push(
          span('jp-GpuGuard-meter-kernel', `this kernel: ${formatBytes(share?.used_bytes ?? 0)}`)
        );
      }
      this.node.title = 'GPU memory (click for every GPU and kernel)';
    }
    this.node.replaceChildren(...content);
  }

  private _openPanel(): void {
    const body = new MeterPanel(this._model, this._currentKernel, this._kernelName);
    showPopup({ body, anchor: this, align: 'right' });
  }
}

/** Every GPU and every kernel's memory, in the popup the meter opens. */
class MeterPanel extends Widget {
  constructor(
    private readonly _model: MeterModel,
    private readonly _currentKernel: ICurrentKernel,
    private readonly _kernelName: (id: string) => string
  ) {
    super();
    this.addClass('jp-GpuGuard-meterPanel');
    this._model.changed.connect(this.update, this);
    this.update();
  }

  protected onUpdateRequest(): void {
    const reading = this._model.reading;
    const parts: HTMLElement[] = [heading('GPUs')];
    const shown = shownDevices(reading, this._currentKernel.id(), this._currentKernel.report());
    if (!reading || !shown.length) {
      parts.push(span('', reading?.reason ?? this._model.error ?? 'waiting for the server'));
      this.node.replaceChildren(...parts);
      return;
    }
    const devices = document.createElement('table');
    for (const device of shown) {
      const row = devices.insertRow();
      const where = device.kernelHost ? ` (on ${device.kernelHost}, the kernel's report)` : '';
      row.insertCell().textContent = `${device.index}: ${device.name}${where}`;
      row.insertCell().append(bar(device));
      row.insertCell().textContent =
        device.problem ?? `${formatBytes(device.used_bytes)} / ${formatBytes(device.total_bytes)}`;
      row.insertCell().textContent = [
        device.utilization_percent !== null ? `${device.utilization_percent}%` : '',
        device.temperature_c !== null ? `${device.temperature_c} °C` : ''
      ]
        .filter(Boolean)
        .join(' · ');
    }
    parts.push(devices, heading('Kernels'));
    if (reading.attribution) {
      parts.push(span('', reading.attribution));
    } else if (!reading.kernels.length) {
      parts.push(span('', 'no kernel of this server holds GPU memory'));
    } else {
      const kernels = document.createElement('table');
      for (const share of reading.kernels) {
        const row = kernels.insertRow();
        row.insertCell().textContent = this._kernelName(share.kernel_id);
        row.insertCell().textContent = formatBytes(share.used_bytes);
      }
      parts.push(kernels);
    }
    this.node.replaceChildren(...parts);
  }

  dispose(): void {
    this._model.changed.disconnect(this.update, this);
    super.dispose();
  }
}

function deviceMeter(device: IShownDevice, numbered: boolean): HTMLElement {
  const item = span('jp-GpuGuard-meter-device', '');
  const label = numbered ? `GPU ${device.index} ` : 'GPU ';
  const value = device.problem
    ? device.problem
    : `${formatBytes(device.used_bytes)} / ${formatBytes(device.total_bytes)}`;
  const simulated = device.simulated ? ' (simulated)' : '';
  const where = device.kernelHost ? ` on ${device.kernelHost}` : '';
  item.append(
    span('', label),
    bar(device),
    span('jp-GpuGuard-meter-value', value + simulated + where)
  );
  return item;
}

function bar(device: IShownDevice): HTMLElement {
  const outer = span('jp-GpuGuard-bar', '');
  const inner = span(
    `jp-GpuGuard-bar-fill jp-GpuGuard-level-${fillLevel(device.used_bytes, device.total_bytes)}`,
    ''
  );
  const share =
    device.used_bytes && device.total_bytes ? device.used_bytes / device.total_bytes : 0;
  inner.style.width = `${Math.min(100, Math.round(share * 100))}%`;
  outer.append(inner);
  return outer;
}

function span(className: string, text: string): HTMLElement {
  const node = document.createElement('span');
  node.className = className;
  node.textContent = text;
  return node;
}

function heading(text: string): HTMLElement {
  const node = document.createElement('div');
  node.className = 'jp-GpuGuard-heading';
  node.textContent = text;
  return node;
}
