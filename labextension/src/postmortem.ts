import { Dialog, Notification, showDialog } from '@jupyterlab/apputils';
import { CodeCell } from '@jupyterlab/cells';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { Kernel, KernelAPI } from '@jupyterlab/services';
import { Widget } from '@lumino/widgets';

import { postAPI, requestAPI } from './api';
import { ActionsChannels } from './channel';
import { IKernelState, ILivePanel, IPostMortem, LIVE_PANEL_METADATA } from './protocol';
import { formatBytes } from './units';

/**
 * Tells what a notebook's kernel last recorded when it dies or is restarted by the server
 * after dying: which cell ran, how far it got, the GPU memory just before, the likely cause
 * and what to do, with an action that scrolls to the cell. The record is the kernel's state
 * file where the server has it; for a kernel whose file is on another machine (behind a
 * gateway), the last state the kernel reported on its comm, which the server reads the same way.
 */
export function watchKernelDeaths(tracker: INotebookTracker, channels: ActionsChannels): void {
  tracker.widgetAdded.connect((_, panel) => {
    let reported: string | null = null;
    panel.sessionContext.statusChanged.connect((context, status) => {
      const kernel = context.session?.kernel;
      if (status === 'restarting') {
        // The person's restart, or the server's after a death: a restart by the server is
        // followed, in a microtask the kernel connection queued before this signal, by
        // 'autorestarting', which reports it; this check comes after that one.
        void Promise.resolve().then(() => {
          if (context.session?.kernel?.status === 'restarting') {
            stopLivePanels(panel, true);
          }
        });
      } else if (status === 'autorestarting' || status === 'dead') {
        stopLivePanels(panel, false);
        if (kernel && reported !== kernel.id) {
          reported = kernel.id;
          void report(panel, kernel, channels.get(kernel).takeLastState());
        }
      } else if (status === 'busy') {
        reported = null; // a kernel that works again may die again
      }
    });
  });
}

/**
 * Replace each live panel of the notebook by the words its mark carries: its kernel died or was
 * restarted, so nothing will freeze it, and its widgets are gone (a page reloaded later would
 * say "Error displaying widget: model not found" in its place).
 */
export function stopLivePanels(panel: NotebookPanel, restarted: boolean): void {
  for (const cell of panel.content.widgets) {
    if (!(cell instanceof CodeCell)) {
      continue;
    }
    const outputs = cell.model.outputs;
    for (let index = 0; index < outputs.length; index++) {
      const mark = outputs.get(index).metadata[LIVE_PANEL_METADATA] as ILivePanel | undefined;
      if (mark && typeof mark.stopped_text === 'string') {
        const words = (restarted && mark.restarted_text) || mark.stopped_text;
        outputs.set(index, {
          output_type: 'display_data',
          data: { 'text/plain': words },
          metadata: {}
        });
      }
    }
  }
}

async function report(
  panel: NotebookPanel,
  kernel: Kernel.IKernelConnection,
  reported: IKernelState | null
): Promise<void> {
  let found: IPostMortem | null;
  const path = `kernels/${kernel.id}/post-mortem`;
  try {
    if (!(await KernelAPI.getKernelModel(kernel.id))) {
      return; // shut down on purpose: the server no longer has it; a dead kernel stays listed
    }
    found = await requestAPI<IPostMortem>(path);
    if (!found && reported) {
      found = await postAPI<IPostMortem>(path, reported);
    }
  } catch (error) {
    Notification.error(
      `The kernel of ${panel.title.label} died; its last record cannot be read (${(error as Error).message}).`,
      { autoClose: false }
    );
    return;
  }
  if (!found) {
    return; // the guard recorded nothing in this kernel: Lab's own message says it restarted
  }
  const cell = found.state.cell;
  const where = cell
    ? ` while running cell [${cell.execution_count ?? ' '}] ${cell.first_line}`
    : '';
  const actions: Notification.IAction[] = [
    {
      label: 'Details',
      callback: () => void showDetails(panel, found as IPostMortem),
      displayType: 'accent'
    }
  ];
  if (cell) {
    actions.unshift({
      label: 'Go to the cell',
      callback: () => goToCell(panel, cell.cell_id, cell.execution_count)
    });
  }
  Notification.error(`Kernel died${where}. ${found.title}.`, { autoClose: false, actions });
}

/** Scroll to the cell the kernel was running and select it. */
function goToCell(
  panel: NotebookPanel,
  cellId: string | null,
  executionCount: number | null
): void {
  const notebook = panel.content;
  const index = notebook.widgets.findIndex(
    cell =>
      (cellId !== null && cell.model.id === cellId) ||
      (cellId === null &&
        executionCount !== null &&
        (cell.model as any).executionCount === executionCount)
  );
  if (index >= 0) {
    notebook.activeCellIndex = index;
    void notebook.scrollToItem(index, 'center');
    panel.activate();
  }
}

async function showDetails(panel: NotebookPanel, found: IPostMortem): Promise<void> {
  const body = new Widget();
  body.addClass('jp-GpuGuard-postMortem');
  const state = found.state;
  const rows: [string, string][] = [];
  if (state.cell) {
    rows.push(['Cell', `[${state.cell.execution_count ?? ' '}] ${state.cell.first_line}`]);
  }
  if (state.phase || state.step) {
    // A custom loop's heartbeats count steps outside Keras' phases.
    rows.push(['Progress', [state.phase, `${state.step} steps`].filter(Boolean).join(', ')]);
  }
  for (const device of state.devices) {
    rows.push([
      device.name,
      `${formatBytes(device.used_bytes)} of ${formatBytes(device.total_bytes)} used`
    ]);
  }
  if (state.host_total_bytes) {
    rows.push([
      'Host memory',
      `${formatBytes(state.host_available_bytes)} of ${formatBytes(state.host_total_bytes)} available`
    ]);
  }
  if (state.last_rule_id) {
    rows.push(['Last diagnosis', state.last_rule_id]);
  }
  rows.push(['Recorded at', new Date(state.updated_at * 1000).toLocaleTimeString()]);
  const facts = document.createElement('dl');
  for (const [label, value] of rows) {
    const term = document.createElement('dt');
    term.textContent = label;
    const detail = document.createElement('dd');
    detail.textContent = value;
    facts.append(term, detail);
  }
  const why = document.createElement('p');
  why.textContent = found.why;
  const remedies = document.createElement('ul');
  for (const remedy of found.remedies) {
    const item = document.createElement('li');
    item.textContent = remedy;
    remedies.append(item);
  }
  body.node.append(facts, why, remedies);
  const buttons = state.cell
    ? [Dialog.cancelButton({ label: 'Close' }), Dialog.okButton({ label: 'Go to the cell' })]
    : [Dialog.okButton({ label: 'Close' })];
  const result = await showDialog({ title: found.title, body, buttons });
  if (result.button.accept && state.cell) {
    goToCell(panel, state.cell.cell_id, state.cell.execution_count);
  }
}
