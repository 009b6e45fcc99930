/**
 * The kernel's and the server's JSON, as `ipy_gpuguard/protocol/schema.json` describes it
 * (a test keeps every interface's fields equal to its definition's). Sizes are bytes, times seconds, text positions Unicode code points.
 */

/** The version of the protocol this extension reads; a card of another falls back to its HTML. */
export const SCHEMA_VERSION = 3;

/** The MIME type of a card's JSON in a display bundle. */
export const CARD_MIME = 'application/vnd.ipy-gpuguard.card+json';
/** The display of a card's widget buttons: this extension's card has its own, so it shows none. */
export const CONTROLS_MIME = 'application/vnd.ipy-gpuguard.controls+json';
/** The comm the cards' actions travel on. */
export const ACTIONS_TARGET = 'ipy_gpuguard.actions';

/** The actions the frontend carries out itself; the others (retry, find_max, free_memory) go to
 * the kernel as they are. */
export const APPLY_TO_CELL = 'apply_to_cell';
export const RESTART_AND_RUN_TO_HERE = 'restart_and_run_to_here';
export const FRONTEND_ACTIONS = new Set([APPLY_TO_CELL, RESTART_AND_RUN_TO_HERE]);

/** What a card's buttons and `%gpuguard retry` ask for (the schema's `actionId`). */
export type ActionId =
  'retry' | 'find_max' | 'free_memory' | 'apply_to_cell' | 'restart_and_run_to_here';

/** What went wrong, as a card's `kind` says (`search`: a card of the guard's own). */
export type CardKind =
  'oom' | 'hang' | 'fault' | 'mismatch' | 'no_gpu' | 'data' | 'unknown' | 'search';

export interface IFact {
  name: string;
  label: string;
  value: string | number | number[];
  unit: 'bytes' | 'fraction' | null;
  text: string;
}

export interface ILink {
  label: string;
  url: string;
}

export interface ICardRemedy {
  id: string;
  title: string;
  why: string;
  steps: string[];
  action: ActionId | null;
  note: string;
  links: ILink[];
}

export interface IDeviceSeries {
  index: number;
  name: string;
  total_bytes: number | null;
  simulated: boolean;
  framework: string | null;
  elapsed_s: number[];
  device_used_bytes: (number | null)[];
  allocator_bytes: (number | null)[];
}

export interface IReclaim {
  pending: boolean;
  freed_bytes: number | null;
  held_bytes: number | null;
  frames_cleared: number;
}

export interface ITextEdit {
  line: number;
  column: number;
  start: number;
  end: number;
  old_text: string;
  new_text: string;
  line_text: string;
}

export interface IBatchEdit {
  cell_id: string | null;
  source_sha256: string;
  batch_size: number;
  edits: ITextEdit[];
}

export interface IAttemptRecord {
  batch_size: number;
  result: 'fits' | 'out_of_memory' | 'failed' | 'stopped';
  peak_bytes: number | null;
  error: string | null;
  probe?: boolean;
}

export interface IRetryVerdict {
  state: 'fixed' | 'next' | 'memory_held' | 'gave_up' | 'other_error' | 'stopped';
  batch_size: number | null;
  held_bytes: number | null;
  searched: boolean;
  remembered: boolean;
  notes?: string[];
}

export interface IRetryTarget {
  variable: string | null;
  use: string;
  line: number | null;
  line_text: string | null;
  in_namespace: boolean;
}

export interface IRetryOffer {
  batch_size: number | null;
  current_batch_size: number | null;
  target: IRetryTarget | null;
  reason: string;
  choices: string[];
  notes: string[];
  reruns: string[];
}

export interface IRetryState {
  offer: IRetryOffer;
  attempts: IAttemptRecord[];
  verdict: IRetryVerdict | null;
  capacity_bytes: number | null;
  running: boolean;
}

export interface IActionOffer {
  action: ActionId;
  label: string;
  batch_size: number | null;
  enabled: boolean;
  reason: string;
}

/** One attempt as the card's table shows it, worded by the kernel. */
export interface IAttemptWords {
  batch_size: number;
  result: string;
  peak: string;
  line: string;
}

/** Every sentence of the card beyond the diagnosis' own text: the renderer words nothing. */
export interface ICardWords {
  reclaim: string;
  offer: string[];
  attempts: IAttemptWords[];
  verdict: string[];
  edit: string;
}

export interface ICard {
  version: number;
  id: string;
  kind: CardKind;
  rule_id: string;
  title: string;
  summary: string;
  error_type: string;
  matched: string;
  facts: IFact[];
  evidence: string[];
  remedies: ICardRemedy[];
  notes: string[];
  chart: IDeviceSeries[];
  reclaimed: IReclaim | null;
  retry: IRetryState | null;
  batch_edit: IBatchEdit | null;
  actions: IActionOffer[];
  cell_id: string | null;
  execution_count: number | null;
  words?: ICardWords;
}

export interface IActionArgs {
  batch_size?: number | null;
}

export interface IAction {
  action: ActionId;
  card: string;
  args?: IActionArgs;
  request?: string | null;
}

export interface IActionResult {
  version: number;
  action: string;
  ok: boolean;
  message: string;
  card?: ICard | null;
  html?: string | null;
  text?: string | null;
  request?: string | null;
}

/** The kernel's message on the comm: the cards that can still act. */
export interface ILiveCards {
  version: number;
  cards: string[];
}

/** The mark of a live panel in its display's metadata (key: LIVE_PANEL_METADATA). */
export interface ILivePanel {
  version: number;
  stopped_text: string;
  restarted_text?: string;
}

export const LIVE_PANEL_METADATA = 'ipy_gpuguard_live_panel';

export interface IMeterDevice {
  index: number;
  name: string;
  simulated: boolean;
  used_bytes: number | null;
  total_bytes: number | null;
  utilization_percent: number | null;
  temperature_c: number | null;
  problem: string | null;
  uuid?: string | null;
}

export interface IKernelShare {
  kernel_id: string;
  pids: number[];
  used_bytes: number;
}

export interface IMeterReading {
  version: number;
  source: 'nvml' | 'simulated' | 'none';
  reason: string | null;
  updated_at: number;
  devices: IMeterDevice[];
  kernels: IKernelShare[];
  attribution: string | null;
  local_kernels?: string[];
}

export interface IDeviceState {
  index: number;
  name: string;
  simulated: boolean;
  used_bytes: number | null;
  total_bytes: number | null;
  allocator_bytes: number | null;
  utilization_percent: number | null;
  temperature_c: number | null;
  uuid?: string | null;
}

export interface IRunningCell {
  cell_id: string | null;
  execution_count: number | null;
  first_line: string;
}

export interface IKernelState {
  version: number;
  pid: number;
  kernel_id: string | null;
  updated_at: number;
  running: boolean;
  cell: IRunningCell | null;
  phase: string | null;
  step: number;
  last_step_at: number | null;
  devices: IDeviceState[];
  last_rule_id: string | null;
  outcome: 'ok' | 'error' | 'fixed' | null;
  host_available_bytes?: number | null;
  host_total_bytes?: number | null;
  platform?: string | null;
  host?: string | null;
}

/** The kernel's state record on the comm, to a frontend whose handshake asked for it. */
export interface IStateReport {
  version: number;
  state: IKernelState;
}

export interface IPostMortem {
  version: number;
  state: IKernelState;
  cause: 'host_memory' | 'gpu_timeout' | 'gpu_fault' | 'unknown';
  title: string;
  why: string;
  remedies: string[];
}
