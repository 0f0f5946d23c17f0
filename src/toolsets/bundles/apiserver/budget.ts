/**
 * What the parsed bundle models may hold on the main thread. The per-file bound (loader.ts
 * MAX_RESOURCE_FILE_BYTES) does not bound a bundle: every parsed object is kept for the bundle's
 * lifetime, so a bundle of three 237 MB event files (2 million tiny events each) took the server
 * past the V8 heap limit through kubectl or bundle_summary (attack 18r L1). Each file's objects
 * are charged here as they arrive, to their bundle's budget and to the server's; a file past
 * either is left out (loader.ts, a Status naming the bound and the file).
 */

/** A bound on a parsed model: v8-serialized bytes of its objects (about their JSON size) and how many objects. */
export interface ModelBounds {
  bytes: number;
  objects: number;
}

/**
 * One bundle's bound. Measured on the main thread: a deserialized object takes about 2.7 times its
 * serialized bytes of heap (tiny events: 108 bytes serialized, 297 of heap; pods: 716 and 1,840),
 * and a served bundle holds more than its objects (its listings, a request's sort and answer), so a
 * bundle at 512 MB costs about 1.5-2 GB of RSS. Tiny objects reach the object bound first: 2 million
 * events of 110 bytes are 220 MB of JSON and about 1 GB of RSS once listed.
 */
export const BUNDLE_MODEL_BOUNDS: ModelBounds = { bytes: 512 * 1024 * 1024, objects: 1_500_000 };

/** All bundles open on this server together: with the V8 heap at about 4 GB, what is left serves requests and the other toolsets. */
export const SERVER_MODEL_BOUNDS: ModelBounds = { bytes: 768 * 1024 * 1024, objects: 3_000_000 };

/** How much a budget holds and may hold; `parent` is charged too (a bundle's budget within the server's). */
export class ModelBudget {
  bytes = 0;
  objects = 0;

  constructor(
    readonly bounds: ModelBounds,
    /** What the budget is for, in messages: "this support bundle", "all bundles open on this server". */
    readonly what: string,
    private readonly parent?: ModelBudget,
  ) {}

  /** Charges `bytes` and `objects` here and to the parent, or charges nothing and returns the budget they would exceed. */
  charge(bytes: number, objects: number): ModelBudget | undefined {
    if (this.bytes + bytes > this.bounds.bytes || this.objects + objects > this.bounds.objects) return this;
    const refused = this.parent?.charge(bytes, objects);
    if (refused) return refused;
    this.bytes += bytes;
    this.objects += objects;
    return undefined;
  }

  /** This budget or its parent when already at its bound (nothing more fits), else undefined. */
  full(): ModelBudget | undefined {
    return this.bytes >= this.bounds.bytes || this.objects >= this.bounds.objects ? this : this.parent?.full();
  }

  /** Gives back what charge() took, here and to the parent. */
  release(bytes: number, objects: number): void {
    this.bytes = Math.max(0, this.bytes - bytes);
    this.objects = Math.max(0, this.objects - objects);
    this.parent?.release(bytes, objects);
  }

  /** "512 MB or 2000000 objects": the bound as messages name it. */
  describe(): string {
    return `${Math.round(this.bounds.bytes / (1024 * 1024))} MB or ${this.bounds.objects} objects`;
  }
}

/** The server's budget, shared by every bundle opened in this process. */
export const serverModel = new ModelBudget(SERVER_MODEL_BOUNDS, 'all support bundles open on this server');

/**
 * A bundle's budget hands its charge back to the server's when the bundle's model is collected: the
 * memory is held until then, and a closed bundle's server (server.ts) keeps no reference to it.
 */
const released = new FinalizationRegistry<ModelBudget>((budget) => budget.release(budget.bytes, budget.objects));

/** A fresh budget for one bundle, within `server`, given back when `owner` (its file cache) is collected. */
export function bundleBudget(owner: object, bounds: ModelBounds = BUNDLE_MODEL_BOUNDS, server: ModelBudget = serverModel): ModelBudget {
  const budget = new ModelBudget(bounds, 'this support bundle', server);
  released.register(owner, budget);
  return budget;
}
