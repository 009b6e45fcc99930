import { JupyterFrontEnd } from '@jupyterlab/application';
import { Cell, CodeCell, CodeCellModel, ICellModel } from '@jupyterlab/cells';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { IRenderMime, IRenderMimeRegistry, MimeModel } from '@jupyterlab/rendermime';
import { Kernel } from '@jupyterlab/services';
import { OutputArea, OutputAreaModel } from '@jupyterlab/outputarea';
import { Message } from '@lumino/messaging';
import { Signal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';

import { ActionOutputs, lineCount, savedMetadata, savedOutput } from './actionoutput';
import { requestAPI } from './api';
import { applyBatchEdit } from './celledit';
import { ActionsChannel, ActionsChannels, IActionProgress } from './channel';
import { cardView, carryOver, IButtonState, ICardActivity } from './cardview';
import {
  APPLY_TO_CELL,
  CARD_MIME,
  FRONTEND_ACTIONS,
  ICard,
  IActionResult,
  IKernelState,
  RESTART_AND_RUN_TO_HERE,
  SCHEMA_VERSION
} from './protocol';

/** What every card renderer shares: the application, the notebooks, the kernels' comms. */
export interface ICardHost {
  app: JupyterFrontEnd;
  tracker: INotebookTracker;
  channels: ActionsChannels;
  rendermime: IRenderMimeRegistry;
}

/** Lab's own command: restart the kernel, run every cell above the selected one, and it. */
const RESTART_AND_RUN_TO_SELECTED = 'notebook:restart-and-run-to-selected';
const INTERRUPT = 'interrupt';

/**
 * What goes on with each card in this page, by card id: a renderer is replaced whenever its
 * output changes (an action's result updates the card), the activity stays.
 */
const activities = new Map<string, ICardActivity>();
const activityChanged = new Signal<Map<string, ICardActivity>, string>(activities);
/** What each card's last action printed, which stays too (and is saved with the card). */
const actionOutputs = new ActionOutputs();

function setActivity(cardId: string, activity: ICardActivity): void {
  activities.set(cardId, activity);
  activityChanged.emit(cardId);
}

/**
 * The renderer of `application/vnd.ipy-gpuguard.card+json`: the whole card from its data, so
 * that a saved notebook shows it without a kernel, with buttons that act from the frontend.
 */
export class CardRenderer extends Widget implements IRenderMime.IRenderer {
  constructor(private readonly _host: ICardHost) {
    super();
    this.addClass('jp-GpuGuard-card');
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const card = model.data[CARD_MIME] as unknown as ICard;
    this.node.dataset.kind = card.kind;
    actionOutputs.restore(card.id, model.metadata);
    if (card.version !== SCHEMA_VERSION || !card.words) {
      // A card of another version of the guard: its own HTML says what it says.
      this._card = null;
      await this._renderHTML(model);
      return;
    }
    this._card = card;
    this._render();
  }

  /** The kernel's HTML of the card, through the notebook's HTML renderer (and its sanitizer). */
  private async _renderHTML(model: IRenderMime.IMimeModel): Promise<void> {
    const html = model.data['text/html'];
    const text = model.data['text/plain'];
    if (typeof html !== 'string') {
      this.node.replaceChildren(el('pre', typeof text === 'string' ? text : ''));
      return;
    }
    const renderer = this._host.rendermime.createRenderer('text/html');
    await renderer.renderModel(
      new MimeModel({ data: { 'text/html': html }, trusted: model.trusted })
    );
    this.node.replaceChildren(renderer.node);
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    activityChanged.connect(this._onActivity, this);
    actionOutputs.changed.connect(this._onActivity, this);
    const panel = this._panel();
    panel?.sessionContext.kernelChanged.connect(this._render, this);
    this._hostModel = this._hostCell()?.model ?? null;
    this._hostModel?.stateChanged.connect(this._render, this);
    this._render();
  }

  protected onBeforeDetach(msg: Message): void {
    activityChanged.disconnect(this._onActivity, this);
    actionOutputs.changed.disconnect(this._onActivity, this);
    if (this._outputArea?.isAttached) {
      Widget.detach(this._outputArea);
    }
    this._panel()?.sessionContext.kernelChanged.disconnect(this._render, this);
    this._hostModel?.stateChanged.disconnect(this._render, this);
    this._hostModel = null;
    this._watch(null);
    this._watchStatus(null);
    super.onBeforeDetach(msg);
  }

  private _onActivity(_: unknown, cardId: string): void {
    if (cardId === this._card?.id) {
      this._render();
    }
  }

  private _render(): void {
    const card = this._card;
    if (!card) {
      return;
    }
    const kernel = this._kernel();
    const channel = kernel ? this._host.channels.get(kernel) : null;
    this._watch(channel);
    if (channel && this.isAttached) {
      channel.open(card.id); // the guard is loaded wherever a new card is shown
    }
    const activity = activities.get(card.id) ?? {};
    const area = this._outputAreaOf(actionOutputs.get(card.id));
    if (area?.isAttached) {
      Widget.detach(area); // out of the card drawn before, into the one drawn now
    }
    const view = cardView(
      card,
      this._buttons(card, kernel, channel),
      activity,
      action => void this._click(action),
      area ? { lines: activity.running ? null : lineCount(area.model) } : null
    );
    // The card is drawn anew whenever the kernel's state changes: keep what the person folded
    // open or closed, and the buttons they may be pressing, as they were.
    carryOver(this.node, view);
    this.node.replaceChildren(view);
    const slot = view.querySelector<HTMLElement>('.jp-GpuGuard-outputSlot');
    if (area && slot && this.isAttached) {
      Widget.attach(area, slot);
    }
  }

  /**
   * The output area that shows `model` (what the card's last action printed), as a notebook
   * shows a cell's output: JupyterLab's own, with the application's renderers. A new model
   * (a new action printed) gets a new area.
   */
  private _outputAreaOf(model: OutputAreaModel | undefined): OutputArea | null {
    if (this._outputArea && this._outputArea.model !== model) {
      if (this._outputArea.isAttached) {
        Widget.detach(this._outputArea);
      }
      this._outputArea.dispose();
      this._outputArea = null;
    }
    if (model && !this._outputArea) {
      this._outputArea = new OutputArea({ model, rendermime: this._host.rendermime });
    }
    return this._outputArea;
  }

  dispose(): void {
    this._outputArea?.dispose();
    this._outputArea = null;
    super.dispose();
  }

  /** The card's buttons, each disabled with its reason where it cannot act now. */
  private _buttons(
    card: ICard,
    kernel: Kernel.IKernelConnection | null,
    channel: ActionsChannel | null
  ): IButtonState[] {
    const kernelProblem = this._kernelProblem(card, kernel, channel);
    const buttons: IButtonState[] = card.actions.map(offer => {
      let reason = offer.enabled ? '' : offer.reason;
      if (
        !reason &&
        offer.action === RESTART_AND_RUN_TO_HERE &&
        !this._panel()?.sessionContext.session
      ) {
        reason = 'no kernel to restart: start one first';
      } else if (!reason && !FRONTEND_ACTIONS.has(offer.action)) {
        reason = kernelProblem ?? '';
      }
      return { action: offer.action, label: offer.label, enabled: !reason, reason };
    });
    if (card.kind === 'hang' && (this._cellRunning() || this._recordedRunning(card, kernel))) {
      buttons.unshift({
        action: INTERRUPT,
        label: 'Interrupt the kernel',
        enabled: true,
        reason: ''
      });
    }
    return buttons;
  }

  /** Why the kernel cannot act on this card now; `null` when it can. */
  private _kernelProblem(
    card: ICard,
    kernel: Kernel.IKernelConnection | null,
    channel: ActionsChannel | null
  ): string | null {
    if (!kernel || !channel || kernel.status === 'dead') {
      return 'no kernel: this card can only be applied; run the cell again to retry';
    }
    if (channel.state === 'opening' || channel.state === 'closed') {
      return 'connecting to the kernel…';
    }
    if (channel.state !== 'open' || !channel.isLive(card.id)) {
      return "this card's kernel session has ended: run the cell again for a card that acts";
    }
    if (kernel.status === 'busy' && !activities.get(card.id)?.running) {
      return 'the kernel is busy: wait for the running cell to end';
    }
    return null;
  }

  private async _click(action: string): Promise<void> {
    const card = this._card;
    if (!card) {
      return;
    }
    if (action === INTERRUPT) {
      await this._kernel()?.interrupt();
    } else if (action === APPLY_TO_CELL) {
      if (this._apply(card)) {
        await this._tellKernelApplied(card);
      }
    } else if (action === RESTART_AND_RUN_TO_HERE) {
      await this._restartAndRunToHere(card);
    } else {
      await this._sendToKernel(card, action);
    }
  }

  private _apply(card: ICard): boolean {
    const cell = this._targetCell(card);
    if (!cell || !card.batch_edit) {
      setActivity(card.id, {
        message: 'The cell that failed is no longer in this notebook.',
        ok: false
      });
      return false;
    }
    const outcome = applyBatchEdit(cell.model, card.batch_edit);
    setActivity(card.id, { message: outcome.message, ok: outcome.ok });
    return outcome.ok;
  }

  private async _restartAndRunToHere(card: ICard): Promise<void> {
    const panel = this._panel();
    const cell = this._targetCell(card);
    if (!panel || !cell || !this._apply(card)) {
      return;
    }
    const notebook = panel.content;
    notebook.activeCellIndex = notebook.widgets.indexOf(cell);
    notebook.deselectAll();
    this._host.app.shell.activateById(panel.id);
    await this._host.app.commands.execute(RESTART_AND_RUN_TO_SELECTED);
  }

  /**
   * Tell the card's kernel which size Apply wrote into the cell, so that the card's words say
   * what the cell holds; the card comes back with them. Nothing is lost when the kernel is gone
   * or busy: the cell holds the size either way.
   */
  private async _tellKernelApplied(card: ICard): Promise<void> {
    const kernel = this._kernel();
    const size = card.batch_edit?.batch_size;
    const channel = kernel ? this._host.channels.get(kernel) : null;
    if (!channel || size === undefined || !channel.isLive(card.id)) {
      return;
    }
    try {
      const result = await channel.send(
        { action: APPLY_TO_CELL, card: card.id, args: { batch_size: size } },
        () => undefined
      );
      await this._keepResult(card.id, result);
    } catch {
      // The kernel went away: the cell holds the size, which is what Apply is for.
    }
  }

  private async _sendToKernel(card: ICard, action: string): Promise<void> {
    const kernel = this._kernel();
    const offer = card.actions.find(o => o.action === action);
    if (!kernel || !offer) {
      return;
    }
    const channel = this._host.channels.get(kernel);
    const running = `${offer.label}…`;
    let first = true;
    setActivity(card.id, { running });
    const progress = (update: IActionProgress) => {
      // Only the card's own display: an attempt shows its panel's summary too.
      if (update.display && update.displayId === card.id) {
        this._replaceOutput(card.id, update.display);
      }
      if (update.stream) {
        // Into the card's output area, which shows it as the cell's own output would.
        actionOutputs.add(card.id, update.stream, first);
        first = false;
      }
    };
    let result: IActionResult;
    try {
      result = await channel.send({ action: offer.action, card: card.id }, progress);
    } catch (error) {
      setActivity(card.id, { message: `${offer.label}: ${(error as Error).message}`, ok: false });
      return;
    }
    await this._keepResult(card.id, result);
    // An action that ran attempts is reported by the card itself (its attempts and verdict);
    // the kernel's message is the verdict's first line, in the words of its text card.
    const attempted =
      (result.card?.retry?.attempts.length ?? 0) > (card.retry?.attempts.length ?? 0);
    setActivity(card.id, attempted ? {} : { message: result.message, ok: result.ok });
  }

  /**
   * The card as an action left it, with its HTML and text, in place of its output, so that the
   * saved notebook shows it in every frontend (the kernel's display updates reach only the cell
   * that first showed it). What the card's last action printed goes with it: as stream outputs
   * in the bundle's metadata, which this renderer shows again, and drawn by this page's own
   * renderers into the HTML (a fold) and the text, which every other frontend shows.
   */
  private async _keepResult(cardId: string, result: IActionResult): Promise<void> {
    if (!result.card) {
      return;
    }
    const bundle: Record<string, any> = { [CARD_MIME]: result.card };
    const model = actionOutputs.get(cardId);
    const output = model ? await savedOutput(model, this._host.rendermime) : null;
    if (result.html) {
      bundle['text/html'] = result.html + (output?.html ?? '');
    }
    if (result.text) {
      bundle['text/plain'] = output ? `${result.text}\n\n${output.text}` : result.text;
    }
    this._replaceOutput(cardId, bundle, output ? savedMetadata(output.outputs) : undefined);
  }

  /**
   * Put the card's new display bundle in place of its output in the notebook's model, so that
   * the saved notebook keeps what the action did (the kernel's display update went to the
   * comm's message, which no output area listens to). The whole bundle: text and HTML too.
   * The output's metadata stays unless it is given (it carries what the last action printed).
   */
  private _replaceOutput(
    cardId: string,
    data: Record<string, any>,
    metadata?: Record<string, any>
  ): void {
    const panel = this._panel();
    for (const cell of panel?.content.widgets ?? []) {
      if (!(cell instanceof CodeCell)) {
        continue;
      }
      const outputs = cell.model.outputs;
      for (let index = 0; index < outputs.length; index++) {
        const shown = outputs.get(index).data[CARD_MIME] as unknown as ICard | undefined;
        if (shown?.id === cardId) {
          const shownOutput = outputs.get(index);
          const bundle = data[CARD_MIME] ? data : { ...shownOutput.data, ...data };
          outputs.set(index, {
            output_type: 'display_data',
            data: bundle,
            metadata: metadata ?? shownOutput.metadata
          });
          return;
        }
      }
    }
  }

  /** The cell the card's edit is for: by the id the kernel was given, else the card's own. */
  private _targetCell(card: ICard): Cell | undefined {
    const cells = this._panel()?.content.widgets ?? [];
    const id = card.batch_edit?.cell_id ?? card.cell_id;
    return cells.find(cell => id && cell.model.id === id) ?? this._hostCell();
  }

  /**
   * Whether the cell that shows this card still runs. Not the kernel's status: that follows
   * every request, and one on the control channel reports idle while the cell runs.
   */
  private _cellRunning(): boolean {
    const model = this._hostCell()?.model;
    return model instanceof CodeCellModel && model.executionState === 'running';
  }

  /**
   * Whether the card's kernel records its cell as running, for a page reloaded while the cell
   * hangs: the page no longer knows that its cell runs, and the kernel, stuck, cannot answer on
   * the comm. Its recorded state comes from the server extension, asked again when the
   * kernel's status changes. Only a busy kernel runs a cell (a restarted one keeps the record
   * of the kernel before it until the guard loads again); a stuck one, which cannot answer the
   * reloaded page's first request, stays of unknown status.
   */
  private _recordedRunning(card: ICard, kernel: Kernel.IKernelConnection | null): boolean {
    this._watchStatus(kernel);
    if (!kernel || (kernel.status !== 'busy' && kernel.status !== 'unknown')) {
      this._recordAsked = '';
      return false;
    }
    const key = `${kernel.id} ${kernel.status}`;
    if (this._recordAsked !== key) {
      this._recordAsked = key;
      void this._askRecord(card, kernel, key);
    }
    return this._recordSays;
  }

  private async _askRecord(
    card: ICard,
    kernel: Kernel.IKernelConnection,
    key: string
  ): Promise<void> {
    let runs = false;
    try {
      const state = await requestAPI<IKernelState>(`kernels/${kernel.id}/state`);
      runs = !!state?.running && !!card.cell_id && state.cell?.cell_id === card.cell_id;
    } catch {
      runs = false; // nothing recorded that can be read: the page's own knowledge stands
    }
    if (this._recordAsked === key && runs !== this._recordSays) {
      this._recordSays = runs;
      this._render();
    }
  }

  private _hostCell(): Cell | undefined {
    return this._panel()?.content.widgets.find(cell => cell.node.contains(this.node));
  }

  private _panel(): NotebookPanel | null {
    return this._host.tracker.find(panel => panel.node.contains(this.node)) ?? null;
  }

  private _kernel(): Kernel.IKernelConnection | null {
    return this._panel()?.sessionContext.session?.kernel ?? null;
  }

  /** Re-render when the kernel's status changes: its recorded state is asked again. */
  private _watchStatus(kernel: Kernel.IKernelConnection | null): void {
    if (kernel === this._statusKernel) {
      return;
    }
    this._statusKernel?.statusChanged.disconnect(this._render, this);
    this._statusKernel = kernel;
    kernel?.statusChanged.connect(this._render, this);
  }

  /** Re-render when what the buttons depend on changes in the card's kernel. */
  private _watch(channel: ActionsChannel | null): void {
    if (channel === this._channel) {
      return;
    }
    this._channel?.changed.disconnect(this._render, this);
    this._channel = channel;
    channel?.changed.connect(this._render, this);
  }

  private _card: ICard | null = null;
  private _recordAsked = '';
  private _recordSays = false;
  private _statusKernel: Kernel.IKernelConnection | null = null;
  private _hostModel: ICellModel | null = null;
  private _channel: ActionsChannel | null = null;
  private _outputArea: OutputArea | null = null;
}

function el(tag: string, text: string): HTMLElement {
  const node = document.createElement(tag);
  node.textContent = text;
  return node;
}
