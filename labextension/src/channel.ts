import { ISessionContext } from '@jupyterlab/apputils';
import * as nbformat from '@jupyterlab/nbformat';
import { Kernel, KernelMessage } from '@jupyterlab/services';
import { UUID } from '@lumino/coreutils';
import { ISignal, Signal } from '@lumino/signaling';

import {
  ACTIONS_TARGET,
  IAction,
  IActionResult,
  IKernelState,
  ILiveCards,
  IStateReport
} from './protocol';

/**
 * What this frontend tells the kernel: it renders cards itself (no widget views), and wants
 * the kernel's state record, pushed while a guarded cell runs: the one view of a kernel that
 * runs where the server cannot see it (behind a gateway).
 */
const HANDSHAKE = { renders: ['card'], reports: ['state'] };

/** What a card's display receives while its action runs in the kernel. */
export interface IActionProgress {
  /** A display bundle the kernel showed, and its display id (a card's is the card's id). */
  display?: KernelMessage.IUpdateDisplayDataMsg['content']['data'];
  displayId?: string;
  /** What the kernel printed while it ran (the cell's output during a retry), as it came. */
  stream?: nbformat.IStream;
}

/**
 * The comm `ipy_gpuguard.actions` of one kernel.
 *
 * It is opened once a card of that kernel is shown, with the handshake that makes the kernel
 * send its next cards as data, not widgets (the extension is loaded then, so the target
 * exists). The kernel answers with the ids of its live cards and repeats them whenever they
 * change; a kernel without the guard closes the comm at once. A restart forgets everything.
 */
export class ActionsChannel {
  constructor(readonly kernel: Kernel.IKernelConnection) {
    kernel.statusChanged.connect(this._onStatus, this);
    kernel.connectionStatusChanged.connect(() => this._changed.emit(), this);
    kernel.disposed.connect(() => this._reset('gone'), this);
  }

  /** `closed` until opened; `no-guard` when the kernel has no comm target (no extension). */
  get state(): 'closed' | 'opening' | 'open' | 'no-guard' | 'gone' {
    return this._state;
  }

  /** Whether the kernel holds this card (it can act on it). */
  isLive(cardId: string): boolean {
    return this._live.has(cardId);
  }

  /** Something a card's buttons depend on changed: the live cards, the comm, the kernel. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /**
   * The last state record the kernel reported, for the post-mortem of a kernel that died: kept
   * when it dies, forgotten when a new process starts, and given out once (a later death of the
   * next process is not this one's).
   */
  takeLastState(): IKernelState | null {
    const state = this._lastState;
    this._lastState = null;
    return state;
  }

  /** The last state record of the kernel's running process; `null` once it died or restarted
   * (its GPUs are no longer what it last said). */
  get liveState(): IKernelState | null {
    return this._liveState;
  }

  /** The kernel reported its state, or its process ended (no live state any more). */
  get reported(): ISignal<this, void> {
    return this._reported;
  }

  /**
   * Open the comm for a card shown in this kernel's notebook, unless it is open or opening.
   *
   * A kernel that is not yet connected and ready is tried again at its next status change
   * (messages sent while it starts are dropped). A kernel without the guard is asked again
   * only for a card it has not been asked for: a new card means the guard was loaded since.
   */
  open(cardId: string): void {
    const asked = this._askedFor.has(cardId);
    this._askedFor.add(cardId);
    if (this._state === 'opening' && this._comm?.isDisposed) {
      this._state = 'closed'; // the connection was reset under it
    }
    if (
      this._state === 'open' ||
      this._state === 'opening' ||
      this._state === 'gone' ||
      (this._state === 'no-guard' && asked)
    ) {
      return;
    }
    const kernel = this.kernel;
    const ready = kernel.status === 'idle' || kernel.status === 'busy';
    if (kernel.isDisposed || kernel.connectionStatus !== 'connected' || !ready) {
      return;
    }
    this._use(this.kernel.createComm(ACTIONS_TARGET)).open(HANDSHAKE);
  }

  /**
   * The comm the kernel opened as its guard loaded: answer the handshake on it, so that the
   * kernel sends even its first card, and a stall while the cell runs, as data.
   */
  adopt(comm: Kernel.IComm): void {
    if (this._comm && !this._comm.isDisposed) {
      this._comm.close(); // one comm per kernel: the guard was loaded again
    }
    this._use(comm).send(HANDSHAKE);
  }

  private _use(comm: Kernel.IComm): Kernel.IComm {
    this._comm = comm;
    this._state = 'opening';
    comm.onMsg = msg => this._received(msg.content.data as unknown);
    comm.onClose = () => {
      if (this._comm === comm) {
        this._comm = null;
        this._reset(this._state === 'opening' ? 'no-guard' : 'closed');
      }
    };
    this._changed.emit();
    return comm;
  }

  /**
   * Send an action; resolves with the kernel's result. `progress` hears the card's updates
   * and what the kernel prints while the action runs.
   */
  send(action: IAction, progress: (update: IActionProgress) => void): Promise<IActionResult> {
    const comm = this._comm;
    if (!comm || this._state !== 'open') {
      return Promise.reject(new Error('the kernel is not connected'));
    }
    const request = UUID.uuid4();
    return new Promise<IActionResult>((resolve, reject) => {
      this._pending.set(request, { resolve, reject });
      const future = comm.send({ ...action, request } as any);
      future.onIOPub = msg => {
        if (KernelMessage.isUpdateDisplayDataMsg(msg) || KernelMessage.isDisplayDataMsg(msg)) {
          const transient = msg.content.transient as { display_id?: string } | undefined;
          progress({ display: msg.content.data, displayId: transient?.display_id });
        } else if (KernelMessage.isStreamMsg(msg)) {
          const { name, text } = msg.content;
          progress({ stream: { output_type: 'stream', name, text } });
        }
      };
    });
  }

  dispose(): void {
    this._reset('gone');
    Signal.clearData(this);
  }

  private _received(data: unknown): void {
    if (!data || typeof data !== 'object') {
      return;
    }
    if ('state' in data) {
      this._lastState = this._liveState = (data as IStateReport).state;
      this._reported.emit();
    } else if ('cards' in data) {
      this._live = new Set((data as ILiveCards).cards);
      this._state = 'open';
      this._changed.emit();
    } else if ('action' in data) {
      const result = data as IActionResult;
      const pending = result.request ? this._pending.get(result.request) : undefined;
      if (pending && result.request) {
        this._pending.delete(result.request);
        pending.resolve(result);
      }
    }
  }

  private _onStatus(_kernel: Kernel.IKernelConnection, status: Kernel.Status): void {
    if (status === 'restarting' || status === 'autorestarting' || status === 'dead') {
      this._liveState = null;
      this._reset('closed');
      this._reported.emit();
    } else {
      if (status === 'starting') {
        this._lastState = null; // a new process: what the last one said is not its
      }
      this._changed.emit(); // busy or idle: the buttons follow
    }
  }

  private _reset(state: 'closed' | 'no-guard' | 'gone'): void {
    for (const pending of this._pending.values()) {
      pending.reject(new Error('the kernel went away before it answered'));
    }
    this._pending.clear();
    this._comm = null;
    this._live = new Set();
    if (state === 'closed') {
      this._askedFor.clear(); // a restarted kernel is asked afresh
    }
    this._state = state;
    this._changed.emit();
  }

  private _comm: Kernel.IComm | null = null;
  private _state: 'closed' | 'opening' | 'open' | 'no-guard' | 'gone' = 'closed';
  private _live = new Set<string>();
  private _askedFor = new Set<string>();
  /** The actions sent and not yet answered, by their request id. */
  private _pending = new Map<
    string,
    { resolve: (r: IActionResult) => void; reject: (e: Error) => void }
  >();
  private _changed = new Signal<this, void>(this);
  private _lastState: IKernelState | null = null;
  private _liveState: IKernelState | null = null;
  private _reported = new Signal<this, void>(this);
}

/** One channel per kernel connection, made on first use. */
export class ActionsChannels {
  /** Take the comm a notebook's kernel opens when the guard loads, in every kernel it gets. */
  watch(context: ISessionContext): void {
    const register = (kernel: Kernel.IKernelConnection | null | undefined) => {
      if (kernel && !this._registered.has(kernel)) {
        this._registered.add(kernel);
        kernel.registerCommTarget(ACTIONS_TARGET, comm => this.get(kernel).adopt(comm));
      }
    };
    register(context.session?.kernel);
    context.kernelChanged.connect((_, change) => register(change.newValue));
  }

  get(kernel: Kernel.IKernelConnection): ActionsChannel {
    let channel = this._channels.get(kernel);
    if (!channel) {
      channel = new ActionsChannel(kernel);
      channel.reported.connect(() => this._reported.emit(kernel));
      this._channels.set(kernel, channel);
    }
    return channel;
  }

  /** A kernel reported its state. */
  get reported(): ISignal<this, Kernel.IKernelConnection> {
    return this._reported;
  }

  private _channels = new WeakMap<Kernel.IKernelConnection, ActionsChannel>();
  private _reported = new Signal<this, Kernel.IKernelConnection>(this);
  private _registered = new WeakSet<Kernel.IKernelConnection>();
}
