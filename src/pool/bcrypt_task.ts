// A piscina task: bcrypt verification and hashing, off the front thread (spec §5.2: 4 verification slots).
// Runs on a pool thread; each call is independent and holds no state.
import bcrypt from 'bcryptjs';

export type BcryptTask =
  | { op: 'compare'; password: string; hash: string }
  | { op: 'hash'; password: string; cost: number };

export default function runBcryptTask(task: BcryptTask): boolean | string {
  if (task.op === 'compare') return bcrypt.compareSync(task.password, task.hash);
  return bcrypt.hashSync(task.password, task.cost);
}
