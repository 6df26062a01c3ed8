// The held-out file's checks apart from the page: what is refused (naming the file) and what a run gets.
import { describe, expect, it } from 'vitest';
import { importBenchmark } from '../../agent/benchmark-import';
import { HeldOutChoice, heldOutProblem } from './held-out-choice';

const training = importBenchmark(JSON.stringify([{ question: 'How many legs has a spider?', answer: '8' }]), 'legs.json');
const host = { requestUpdate: () => undefined, addController: () => undefined, removeController: () => undefined, updateComplete: Promise.resolve(true) };

describe('held-out file checks', () => {
  it('accepts a file whose good lines are new questions, skipping its bad lines, scored like the training benchmark', () => {
    const choice = new HeldOutChoice(host);
    choice.importText(['{"question": "How many legs has an ant?", "answer": "6"}', 'not json', '{"question": "How many legs has a bird?"}'].join('\n'), 'more.jsonl');
    expect(choice.state(training)).toEqual({ fileName: 'more.jsonl', items: 1, skipped: 1, problem: null });
    expect(choice.heldOut({ ...training, kind: 'numeric' }, () => 4)).toEqual({
      benchmark: { name: 'more', kind: 'numeric', items: [{ pid: '0', query: 'How many legs has an ant?', answer: '6' }, { pid: '2', query: 'How many legs has a bird?', answer: undefined }] },
      every: 4,
    });
  });

  it('counts a question differing only in case and white space as shared, and reads no interval without a file', () => {
    const held = importBenchmark(JSON.stringify([{ question: '  how many legs  has a SPIDER? ', answer: '8' }]), 'h.json');
    expect(heldOutProblem(held, 'h.json', training)).toMatch(/^The held-out file “h\.json” shares 1 question with the training benchmark “legs”/);
    const choice = new HeldOutChoice(host);
    expect(choice.heldOut(training, () => { throw new Error('read'); })).toBeUndefined();
    choice.importText('', 'empty.json');
    expect(() => choice.heldOut(training, () => 1)).toThrow('The held-out file “empty.json” could not be read: empty.json is empty.');
  });
});
