// This node's part in partition moves (issue 41), as the front starts and stops it: the runner of the moves it is
// the destination of and the listing of its set-aside copies, which together answer the member report's move
// fields (services.ts MoveReports). Front thread; front_start.ts opens it once the write path is open.
import type { DestinationMoveView } from '../../protocol/data_messages.js';
import type { MoveReports } from '../services.js';
import { MoveRunner, type MoveRunnerParts } from './move_runner.js';
import { SetAsideCopies, type SetAsideListing } from './set_aside_copies.js';

export class NodeMoves implements MoveReports {
  private readonly runner: MoveRunner;
  private readonly copies: SetAsideCopies;

  constructor(parts: MoveRunnerParts, dataDir: string) {
    this.runner = new MoveRunner(parts);
    this.copies = new SetAsideCopies(dataDir, parts.config['cluster.set_aside_retention_ms'], () => parts.replica.state, parts.log);
  }

  start(): void {
    this.runner.start();
    this.copies.start();
  }

  close(): void {
    this.runner.close();
    this.copies.close();
  }

  movesAsDestination(): DestinationMoveView[] {
    return this.runner.report();
  }

  setAside(): SetAsideListing {
    return this.copies.current();
  }
}
