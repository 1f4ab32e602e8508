// Samples of a Prometheus text exposition (GET /metrics), read exactly: a sample's name, its whole label set and its
// value as a number, so a check for 3 never passes on 30 the way a substring match of `} 3` does. Test process
// only; imports nothing from src/.

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const sampleLine = /^([A-Za-z_:][\w:]*)(?:\{(.*)\})? (\S+)(?: \d+)?$/;
const labelPair = /([A-Za-z_]\w*)="((?:[^"\\]|\\.)*)"/g;

/** Every sample of series `name` (comment lines and other series left out). */
export function metricSamples(text: string, name: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    const match = sampleLine.exec(line);
    if (match === null || match[1] !== name) continue;
    const labels: Record<string, string> = {};
    for (const [, label, value] of (match[2] ?? '').matchAll(labelPair)) {
      labels[label!] = value!.replace(/\\n/g, '\n').replace(/\\(["\\])/g, '$1');
    }
    samples.push({ name, labels, value: Number(match[3]) });
  }
  return samples;
}

/** The value of the one sample of `name` whose labels are exactly `labels` (in any order); undefined when none is. */
export function metricSample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const wanted = Object.entries(labels);
  const found = metricSamples(text, name).find((sample) => {
    const keys = Object.keys(sample.labels);
    return keys.length === wanted.length && wanted.every(([key, value]) => sample.labels[key] === value);
  });
  return found?.value;
}

/** svc_consumer_lag_messages of topic by partition, over the scrapes of several nodes (each owner exports its own
 *  partitions): messages committed and not yet acked, as each owner counts them. */
export function consumerLag(scrapes: readonly string[], topic: string): Map<number, number> {
  const lag = new Map<number, number>();
  for (const text of scrapes) {
    for (const { labels, value } of metricSamples(text, 'svc_consumer_lag_messages')) {
      if (labels['topic'] === topic) lag.set(Number(labels['partition']), Math.max(value, lag.get(Number(labels['partition'])) ?? 0));
    }
  }
  return lag;
}
