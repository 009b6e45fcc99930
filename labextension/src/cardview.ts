import { chartLegend, memoryChart } from './chart';
import { ICard, ICardWords, IRetryState } from './protocol';

/** A card written before the kernel worded everything (the renderer shows its HTML instead). */
const NO_WORDS: ICardWords = { reclaim: '', offer: [], attempts: [], verdict: [], edit: '' };

/** A button as the card shows it: enabled, or disabled with the reason as its tooltip. */
export interface IButtonState {
  action: string;
  label: string;
  enabled: boolean;
  reason: string;
}

/** What goes on with the card in this frontend: a running action, its last word. */
export interface ICardActivity {
  running?: string;
  message?: string;
  ok?: boolean;
}

/** Longer than this, the output an action left is folded (its summary says how long it is). */
export const FOLD_LINES = 20;

/** The output of the card's last action that printed, which the renderer puts in its slot. */
export interface IOutputFold {
  /** Its number of lines once the action has ended; `null` while it runs (shown unfolded). */
  lines: number | null;
}

/**
 * The whole card as DOM: title and summary, its buttons, what the last action said, the retry's
 * attempts and what they printed, the facts, the memory chart, the remedies (folded) and the
 * evidence. Text from the error is set as text, never as HTML.
 */
export function cardView(
  card: ICard,
  buttons: IButtonState[],
  activity: ICardActivity,
  click: (action: string) => void,
  output: IOutputFold | null = null
): HTMLElement {
  const words = card.words ?? NO_WORDS;
  const root = el('div', `jp-GpuGuard-cardBody jp-GpuGuard-kind-${card.kind}`);
  const header = el('div', 'jp-GpuGuard-header');
  header.append(
    el('div', 'jp-GpuGuard-title', card.title),
    el('div', 'jp-GpuGuard-summary', card.summary)
  );
  root.append(header);

  if (buttons.length) {
    const row = el('div', 'jp-GpuGuard-actions');
    for (const state of buttons) {
      const button = el(
        'button',
        'jp-Button jp-mod-styled jp-GpuGuard-action',
        state.label
      ) as HTMLButtonElement;
      button.dataset.action = state.action;
      button.disabled = !state.enabled || !!activity.running;
      button.title = state.enabled ? state.label : state.reason;
      button.addEventListener('click', () => click(state.action));
      row.append(button);
    }
    root.append(row);
    // Why buttons are disabled, each reason once (each button's tooltip has its own).
    const reasons = new Set(buttons.filter(b => !b.enabled && b.reason).map(b => b.reason));
    for (const reason of reasons) {
      root.append(el('div', 'jp-GpuGuard-reason', reason));
    }
  }
  const said = activity.running ?? activity.message;
  if (said) {
    const status = el('div', 'jp-GpuGuard-status', said);
    status.classList.toggle('jp-GpuGuard-running', !!activity.running);
    status.classList.toggle('jp-GpuGuard-failed', activity.ok === false);
    root.append(status);
  }
  if (card.retry) {
    root.append(retryView(card.retry, words));
  }
  if (output) {
    root.append(outputView(output));
  }
  if (words.reclaim) {
    root.append(el('div', 'jp-GpuGuard-line', words.reclaim));
  }
  if (card.facts.length) {
    const facts = el('dl', 'jp-GpuGuard-facts');
    for (const fact of card.facts) {
      facts.append(el('dt', '', fact.label), el('dd', '', fact.text));
    }
    root.append(facts);
  }
  for (const series of card.chart) {
    const figure = el('figure', 'jp-GpuGuard-figure');
    const simulated = series.simulated && !/simulated/i.test(series.name) ? ' (simulated)' : '';
    const caption = `${series.name}${simulated}: memory during the run`;
    figure.append(el('figcaption', '', caption), memoryChart(series), chartLegend(series));
    root.append(figure);
  }
  for (const note of card.notes) {
    root.append(el('div', 'jp-GpuGuard-note', note));
  }
  if (card.remedies.length) {
    const remedies = el('div', 'jp-GpuGuard-remedies');
    remedies.append(el('div', 'jp-GpuGuard-heading', 'What to do'));
    card.remedies.forEach((remedy, index) => {
      const details = fold('jp-GpuGuard-remedy', `remedy-${index}`);
      details.open = index === 0;
      details.append(el('summary', '', remedy.title), el('div', 'jp-GpuGuard-why', remedy.why));
      if (remedy.steps.length) {
        const steps = el('ol', '');
        remedy.steps.forEach(step => steps.append(el('li', '', step)));
        details.append(steps);
      }
      if (remedy.note) {
        details.append(el('div', 'jp-GpuGuard-note', remedy.note));
      }
      for (const link of remedy.links) {
        const anchor = el('a', 'jp-GpuGuard-link', link.label) as HTMLAnchorElement;
        anchor.href = link.url;
        anchor.target = '_blank';
        anchor.rel = 'noopener noreferrer';
        details.append(anchor);
      }
      remedies.append(details);
    });
    root.append(remedies);
  }
  if (card.evidence.length) {
    const evidence = fold('jp-GpuGuard-evidence', 'evidence');
    evidence.append(
      el('summary', '', `Evidence (${card.rule_id})`),
      el('pre', '', card.evidence.join('\n'))
    );
    root.append(evidence);
  }
  return root;
}

/**
 * The retry's part: the verdict (its first line the headline), the offer before any attempt,
 * the attempts' table and the proposed edit, all in the kernel's words.
 */
function retryView(retry: IRetryState, words: ICardWords): HTMLElement {
  const section = el('div', 'jp-GpuGuard-retry');
  const [headline, ...details] = words.verdict;
  if (headline) {
    section.append(
      el('div', `jp-GpuGuard-verdict jp-GpuGuard-verdict-${retry.verdict?.state}`, headline)
    );
    details.forEach(line => section.append(el('div', 'jp-GpuGuard-line', line)));
  } else {
    words.offer.forEach(line => section.append(el('div', 'jp-GpuGuard-line', line)));
  }
  if (words.attempts.length) {
    const table = el('table', 'jp-GpuGuard-attempts');
    const head = el('tr', '');
    ['batch size', 'result', 'peak memory'].forEach(name => head.append(el('th', '', name)));
    table.append(head);
    retry.attempts.forEach((attempt, index) => {
      const said = words.attempts[index];
      const row = el('tr', `jp-GpuGuard-attempt-${attempt.result}`);
      row.append(
        el('td', '', String(said.batch_size)),
        el('td', '', said.result),
        el('td', '', said.peak)
      );
      table.append(row);
    });
    section.append(table);
  }
  if (words.edit) {
    section.append(el('div', 'jp-GpuGuard-line jp-GpuGuard-edit', words.edit));
  }
  return section;
}

/**
 * What the action printed, in a slot for JupyterLab's output area: open while it runs, folded
 * once it has ended when it is long. A fold of its own while it runs, so that the fold the person
 * sees when it ends is the one its length asks for.
 */
function outputView(output: IOutputFold): HTMLElement {
  const running = output.lines === null;
  const details = fold('jp-GpuGuard-output', running ? 'output-running' : 'output');
  details.open = running || (output.lines ?? 0) <= FOLD_LINES;
  details.append(el('summary', '', outputSummary(output)), el('div', 'jp-GpuGuard-outputSlot'));
  return details;
}

/** The summary of the output's fold: how long it is, once the action has ended. */
export function outputSummary(output: IOutputFold): string {
  if (output.lines === null) {
    return 'Output';
  }
  return `Output (${output.lines === 1 ? '1 line' : `${output.lines} lines`})`;
}

/** A section the person folds; `key` names it across redraws (sections come and go). */
function fold(className: string, key: string): HTMLDetailsElement {
  const details = el('details', className) as HTMLDetailsElement;
  details.dataset.fold = key;
  return details;
}

/**
 * Carry into a card drawn anew what the person has in hand in the old one: each section folded
 * open or closed as it was, and each button as the same element, brought up to date. A live
 * hang card is drawn anew four times a second; a new button under the pointer between its press
 * and its release would lose the click.
 */
export function carryOver(previous: Element, next: Element): void {
  const folds = new Map(
    Array.from(previous.querySelectorAll<HTMLDetailsElement>('details[data-fold]'), details => [
      details.dataset.fold,
      details.open
    ])
  );
  next.querySelectorAll<HTMLDetailsElement>('details[data-fold]').forEach(details => {
    details.open = folds.get(details.dataset.fold) ?? details.open;
  });
  const buttons = new Map(
    Array.from(previous.querySelectorAll<HTMLButtonElement>('button[data-action]'), button => [
      button.dataset.action,
      button
    ])
  );
  next.querySelectorAll<HTMLButtonElement>('button[data-action]').forEach(drawn => {
    const kept = buttons.get(drawn.dataset.action);
    if (kept) {
      kept.textContent = drawn.textContent;
      kept.disabled = drawn.disabled;
      kept.title = drawn.title;
      drawn.replaceWith(kept);
    }
  });
}

function el(tag: string, className: string, text?: string): HTMLElement {
  const node = document.createElement(tag);
  if (className) {
    node.className = className;
  }
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}
