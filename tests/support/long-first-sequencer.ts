// Vitest's sequencer orders a project's files by the durations it cached on earlier runs; CI runs a clean clone,
// with no cache, so files start in glob order and the tool-choice learning test (then ~190 s, the longest unit
// file) began three minutes in and ran alone at the end. This starts the files known to be long first, so on 2
// workers they overlap the many short ones. Other files keep Vitest's order.
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** Unit files that take 30 s or more beside another worker on a 2-core machine (2026-11-28). */
export const LONG_FILES = [
  'src/tasks/tool-task-learning.test.ts',
  'src/cli/train.test.ts',
  'src/tools/python-node.test.ts',
  'src/cli/train-tool-task.test.ts',
];

export class LongFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    // The base sort keeps each project's files together and the projects in their run order; reorder within one.
    const block = new Map<string, number>();
    const rank = (f: TestSpecification) => {
      const i = LONG_FILES.findIndex((p) => f.moduleId.endsWith(`/${p}`));
      return i < 0 ? LONG_FILES.length : i;
    };
    const keyed = sorted.map((f, index) => {
      if (!block.has(f.project.name)) block.set(f.project.name, block.size);
      return { f, index, block: block.get(f.project.name)!, rank: rank(f) };
    });
    keyed.sort((a, b) => a.block - b.block || a.rank - b.rank || a.index - b.index);
    return keyed.map((k) => k.f);
  }
}
