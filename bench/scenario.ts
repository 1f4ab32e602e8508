// One scenario of `npm run bench` behind one shape, for bench/run.ts and bench/all.ts: run it, then print its
// tables, write its JSON and give its headline rows for all's summary. Bench process main thread.
import type { Headline } from './common.js';
import { consumeHeadlines, printConsumeTable, runConsume } from './consume.js';
import { flowHeadlines, printFlowTable, runFlow } from './end_to_end.js';
import { fanoutHeadlines, printFanout, runFanout } from './fanout.js';
import { footprintHeadlines, printFootprint, runFootprint } from './footprint.js';
import { forwardHopHeadlines, printForwardHop, runForwardHop } from './forward_hop.js';
import { forwardedHeadlines, printForwarded, runForwarded } from './forwarded.js';
import type { BenchOptions } from './options.js';
import { printProduceTable, produceHeadlines, runProduce } from './produce.js';

export interface ScenarioRun {
  report: { scenario: string; startedAt: string; failures: string[] };
  print(): void;
  headlines(): Headline[];
}

export async function runScenario(options: BenchOptions): Promise<ScenarioRun> {
  switch (options.scenario) {
    case 'produce':
    case 'produce-single':
    case 'produce-batch': {
      const report = await runProduce(options);
      return { report, print: () => printProduceTable(report), headlines: () => produceHeadlines(report) };
    }
    case 'consume':
    case 'consume-single':
    case 'consume-batch':
    case 'wake-up': {
      const report = await runConsume(options);
      return { report, print: () => printConsumeTable(report), headlines: () => consumeHeadlines(report) };
    }
    case 'end-to-end':
    case 'soak': {
      const report = await runFlow(options);
      return { report, print: () => printFlowTable(report), headlines: () => flowHeadlines(report) };
    }
    case 'footprint': {
      const report = await runFootprint(options);
      return { report, print: () => printFootprint(report), headlines: () => footprintHeadlines(report) };
    }
    case 'forward-hop': {
      const report = await runForwardHop(options);
      return { report, print: () => printForwardHop(report), headlines: () => forwardHopHeadlines(report) };
    }
    case 'fanout': {
      const report = await runFanout(options);
      return { report, print: () => printFanout(report), headlines: () => fanoutHeadlines(report) };
    }
    case 'produce-forwarded':
    case 'consume-forwarded': {
      const report = await runForwarded(options);
      return { report, print: () => printForwarded(report), headlines: () => forwardedHeadlines(report) };
    }
    case 'all':
      throw new Error('all runs the other scenarios (bench/all.ts)');
  }
}
