import { ILabShell, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { INotebookTracker } from '@jupyterlab/notebook';
import { IRenderMime, IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { IStatusBar } from '@jupyterlab/statusbar';
import { Widget } from '@lumino/widgets';

import { ActionsChannels } from './channel';
import { MeterItem, MeterModel } from './meter';
import { watchKernelDeaths } from './postmortem';
import { CARD_MIME, CONTROLS_MIME } from './protocol';
import { CardRenderer } from './renderer';

/** The comm of each notebook's kernel: the cards' actions, and the kernel's reports the meter and
 * the post-mortems read. */
const channels = new ActionsChannels();

/** Below ipywidgets' -10: a card's bundle may carry a widget view too; the card wins. */
const CARD_RANK = -20;

/**
 * What a card's widget buttons show here: nothing. The card above has the same buttons,
 * and they act whether or not the kernel knew this extension when it showed the card.
 */
class HiddenControls extends Widget implements IRenderMime.IRenderer {
  constructor() {
    super();
    this.addClass('jp-GpuGuard-hiddenControls');
    this.hide();
  }

  async renderModel(): Promise<void> {
    return;
  }
}

/**
 * The card renderer, its actions and the post-mortems. A plain plugin, not a mime extension,
 * so that the renderer can reach the notebooks and their kernels.
 */
const cards: JupyterFrontEndPlugin<void> = {
  id: 'ipy-gpuguard:cards',
  description: 'Renders ipy_gpuguard remediation cards and carries out their actions.',
  autoStart: true,
  requires: [IRenderMimeRegistry, INotebookTracker],
  activate: (app: JupyterFrontEnd, rendermime: IRenderMimeRegistry, tracker: INotebookTracker) => {
    const host = { app, tracker, channels, rendermime };
    tracker.widgetAdded.connect((_, panel) => host.channels.watch(panel.sessionContext));
    rendermime.addFactory(
      { safe: true, mimeTypes: [CARD_MIME], createRenderer: () => new CardRenderer(host) },
      CARD_RANK
    );
    rendermime.addFactory(
      { safe: true, mimeTypes: [CONTROLS_MIME], createRenderer: () => new HiddenControls() },
      CARD_RANK
    );
    watchKernelDeaths(tracker, channels);
  }
};

/** The GPU meter in the status bar; absent where the frontend has no status bar. */
const meter: JupyterFrontEndPlugin<void> = {
  id: 'ipy-gpuguard:meter',
  description: 'A GPU memory meter in the status bar, with each kernel’s share.',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [IStatusBar, ILabShell],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    statusBar: IStatusBar | null,
    labShell: ILabShell | null
  ) => {
    if (!statusBar) {
      return;
    }
    const model = new MeterModel();
    const kernel = () => tracker.currentWidget?.sessionContext.session?.kernel ?? null;
    const currentKernel = {
      id: () => kernel()?.id ?? null,
      report: () => {
        const current = kernel();
        return current ? channels.get(current).liveState : null;
      }
    };
    const kernelName = (kernelId: string) => {
      const panel = tracker.find(p => p.sessionContext.session?.kernel?.id === kernelId);
      return panel ? panel.title.label : `kernel ${kernelId.slice(0, 8)}`;
    };
    const item = new MeterItem(model, currentKernel, kernelName);
    tracker.currentChanged.connect(() => item.update());
    channels.reported.connect((_, reporter) => {
      if (reporter === kernel()) {
        item.update();
      }
    });
    statusBar.registerStatusItem('ipy-gpuguard:meter', { item, align: 'left', rank: 4 });
    labShell?.currentChanged.connect(() => item.update());
  }
};

export default [cards, meter];
