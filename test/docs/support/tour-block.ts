/**
 * The README's API tour as steps to run: the first shell block after `## A tour of the API`,
 * each command (a `\` continuation joined) with the result its `# →` comment promises, written
 * on the command's own line or on the lines right after it. Other comments are prose.
 */
import { readFileSync } from 'node:fs';

export interface TourStep {
  /** The command as the README shows it, continuations joined with a newline. */
  command: string;
  /** What its `# →` comment says it prints; '' when it says nothing. */
  expected: string;
}

export interface Tour {
  /** The opening line that sets the shell variables (`CA=...; API=...; AUTH=...`). */
  setup: string;
  steps: TourStep[];
}

const ARROW = /\s*# → ?/;

export function readTour(readmePath: string): Tour {
  const readme = readFileSync(readmePath, 'utf8');
  const section = readme.indexOf('\n## A tour of the API');
  const block = /```sh\n([\s\S]*?)\n```/.exec(readme.slice(section));
  if (section < 0 || block?.[1] === undefined) throw new Error('README: no tour block found');
  const lines = block[1].split('\n');
  const setup = lines.shift() ?? '';
  if (!/^CA=.*API=.*AUTH=/.test(setup)) throw new Error(`README tour opens with: ${setup}`);
  return { setup, steps: stepsOf(lines) };
}

function stepsOf(lines: string[]): TourStep[] {
  const steps: TourStep[] = [];
  let open: TourStep | undefined;
  let continued = false;
  for (const line of lines) {
    if (continued && open !== undefined) {
      open.command += `\n${line}`;
      continued = line.endsWith('\\');
      continue;
    }
    if (line.trim() === '') continue;
    if (line.startsWith('#')) {
      // A `# →` line belongs to the command above it; any other comment is prose.
      if (line.startsWith('# →') && open !== undefined) open.expected = joinExpected(open, line);
      continue;
    }
    const [command = '', expected = ''] = line.split(ARROW);
    open = { command: command.trimEnd(), expected: expected.trim() };
    steps.push(open);
    continued = line.endsWith('\\');
  }
  return steps;
}

const joinExpected = (step: TourStep, line: string): string =>
  [step.expected, line.replace(ARROW, '').trim()].filter((part) => part !== '').join(', ');
