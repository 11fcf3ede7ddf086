// The Kubernetes manifests (deploy/, deploy/README.md) against the code, without a cluster: every
// overlay rendered with `kubectl kustomize` (offline), each object checked against its schema
// (kubernetes-models, @kubernetes-models/keda: types, required fields, enums; and, from their
// TypeScript types, no field they do not know), KServe's two objects by hand; then what the
// manifests say against what the service does: probe paths are GET routes it registers, every
// CATCOMFORT_* value loads with its own loadConfig, container ports are the ports those settings
// open, the grace period covers the drain, the startup probe covers the measured start-up (and the
// provider probe on a GPU), the GPU overlay asks for a GPU, referenced secrets exist or are
// documented, KEDA's query and metrics name what the migrations and the metrics registry hold.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { before, test } from 'node:test';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { Container } from 'kubernetes-models/v1/Container';
import { PodSpec } from 'kubernetes-models/v1/PodSpec';
import { Secret } from 'kubernetes-models/v1/Secret';
import { Service } from 'kubernetes-models/v1/Service';
import { ScaledObject } from '@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject';
import { TriggerAuthentication } from '@kubernetes-models/keda/keda.sh/v1alpha1/TriggerAuthentication';
import ts from 'typescript';
import { parseAllDocuments } from 'yaml';
import { KNOWN_VARIABLES, loadConfig, type Config } from '../src/config';
import { errorResponse } from '../src/http/error-answers';
import { KeyRing } from '../src/keys/key-ring';
import { Router } from '../src/http/router';
import { registerOipHealth } from '../src/oip/rest';
import { metrics } from '../src/ops/metrics';
import { Readiness } from '../src/ops/readiness';
import { registerOps } from '../src/ops/routes';
import { postgresMigrations } from '../src/store/migrations';
import { repoRoot } from './helpers/paths';

const OVERLAYS = ['cpu', 'gpu', 'kserve'] as const;
type OverlayName = (typeof OVERLAYS)[number];

/**
 * Start-up to the first GET /readyz 200 on the 2-core measurement VM (2026-12-01, both packs, CPU):
 * 3.1-3.9 s over five runs of `npm start`, 2.8-5.9 s over three of `node dist/src/main.js` (the slower
 * two beside a TypeScript build), each with
 *   CATCOMFORT_API_KEYS=some-key-0123456789abcdef CATCOMFORT_PORT=18080 CATCOMFORT_HOST=127.0.0.1
 * (deploy/README.md "Probes"). A startup probe must allow twice the slowest.
 */
const MEASURED_CPU_START_S = 5.9;
const CPU_START_FACTOR = 2;
/** A GPU pod's own load and warm-up after the provider probe: 14 s on an H200 (../shared/gpu/README.md, 2026-11-28). */
const MEASURED_GPU_READY_S = 14;
/** What the grace period keeps beyond drain delay + longest request + one webhook attempt. */
const GRACE_MARGIN_S = 10;
/** The Dockerfile's user (`useradd --uid`), checked below against both Dockerfiles. */
const IMAGE_UID = 10001;

type Obj = Record<string, any>;

interface Workload {
  overlay: OverlayName;
  kind: 'Deployment' | 'KServe';
  /** The object that holds the pod: `Deployment/catcomfort`, or KServe's runtime + InferenceService. */
  where: string;
  pod: Obj;
  container: Obj;
}

const kubectl = (() => {
  for (const candidate of ['kubectl', '/usr/bin/kubectl']) {
    try {
      execFileSync(candidate, ['version', '--client'], { stdio: 'ignore' });
      return candidate;
    } catch {
      // next
    }
  }
  return null;
})();
const skip = kubectl === null && 'kubectl is not installed (it renders the kustomize overlays offline; Debian: kubectl, or the upstream binary in /usr/bin)';

const rendered = new Map<OverlayName, Obj[]>();

before(() => {
  if (!kubectl) return;
  for (const overlay of OVERLAYS) {
    const text = execFileSync(kubectl, ['kustomize', path.join(repoRoot, 'deploy/overlays', overlay)], { encoding: 'utf8' });
    const docs = parseAllDocuments(text);
    const objects = docs.map((doc) => {
      assert.deepEqual(doc.errors, [], `deploy/overlays/${overlay}: YAML errors`);
      return doc.toJS() as Obj;
    });
    rendered.set(overlay, objects.filter((o) => o !== null));
  }
});

function objects(overlay: OverlayName): Obj[] {
  return rendered.get(overlay)!;
}

function named(o: Obj): string {
  return `${o.kind}/${o.metadata?.name}`;
}

function find(overlay: OverlayName, kind: string, name?: string): Obj[] {
  return objects(overlay).filter((o) => o.kind === kind && (name === undefined || o.metadata?.name === name));
}

function one(overlay: OverlayName, kind: string, name?: string): Obj {
  const found = find(overlay, kind, name);
  assert.equal(found.length, 1, `deploy/overlays/${overlay}: one ${kind}${name ? `/${name}` : ''}`);
  return found[0]!;
}

/** Fields of a KServe predictor that are not PodSpec fields. */
const KSERVE_PREDICTOR_FIELDS = new Set(['model', 'minReplicas', 'maxReplicas', 'scaleTarget', 'scaleMetric', 'scaleMetricType', 'containerConcurrency', 'timeout', 'canaryTrafficPercent', 'logger', 'batcher', 'labels', 'annotations', 'deploymentStrategy', 'autoScaling', 'workerSpec']);

/** The service's pod in each overlay: a Deployment's template, or KServe's runtime container in the InferenceService's pod fields. */
function workloads(overlay: OverlayName): Workload[] {
  const found: Workload[] = find(overlay, 'Deployment').map((d) => {
    const pod = d.spec.template.spec;
    return { overlay, kind: 'Deployment' as const, where: `deploy/overlays/${overlay}: ${named(d)}`, pod, container: pod.containers.find((c: Obj) => c.name === 'catcomfort') };
  });
  for (const isvc of find(overlay, 'InferenceService')) {
    const predictor = isvc.spec.predictor;
    const runtime = one(overlay, 'ServingRuntime', predictor.model.runtime);
    const container = runtime.spec.containers[0];
    const pod = { ...Object.fromEntries(Object.entries(predictor).filter(([k]) => !KSERVE_PREDICTOR_FIELDS.has(k))), containers: [container] };
    found.push({ overlay, kind: 'KServe', where: `deploy/overlays/${overlay}: ${named(runtime)} + ${named(isvc)}`, pod, container });
  }
  assert.ok(found.length > 0, `deploy/overlays/${overlay} runs the service`);
  for (const w of found) assert.ok(w.container, `${w.where}: a container`);
  return found;
}

function allWorkloads(): Workload[] {
  return OVERLAYS.flatMap(workloads);
}

/** Literal env values of the container, and the secret each valueFrom names. */
function envOf(container: Obj): { values: Record<string, string>; secrets: Record<string, { name: string; key: string }> } {
  const values: Record<string, string> = {};
  const secrets: Record<string, { name: string; key: string }> = {};
  for (const e of container.env ?? []) {
    if (e.valueFrom?.secretKeyRef) secrets[e.name] = e.valueFrom.secretKeyRef;
    else {
      assert.equal(typeof e.value, 'string', `${e.name}: a literal value or a secretKeyRef`);
      values[e.name] = e.value;
    }
  }
  return { values, secrets };
}

/** Stand-ins for the secrets' values, valid for loadConfig (never used anywhere else). */
const SECRET_STAND_INS: Record<string, string> = {
  CATCOMFORT_API_KEYS: 'stand-in-api-key-0123456789',
  CATCOMFORT_ADMIN_KEYS: 'stand-in-admin-key-0123456789',
  CATCOMFORT_DATABASE_URL: 'postgres://catcomfort:stand-in@postgres:5432/catcomfort',
};

/** The workload's settings read by the service's own loader: set values, else its defaults. */
function configOf(w: Workload): Config {
  const { values, secrets } = envOf(w.container);
  const env: Record<string, string> = { ...values };
  for (const name of Object.keys(secrets)) {
    assert.ok(SECRET_STAND_INS[name], `${w.where}: ${name} from a secret has a stand-in here`);
    env[name] = SECRET_STAND_INS[name]!;
  }
  return loadConfig(env);
}

function isGpu(w: Workload): boolean {
  return configOf(w).providers.some((p) => p !== 'cpu');
}

function probeBudgetS(probe: Obj): number {
  return (probe.initialDelaySeconds ?? 0) + (probe.failureThreshold ?? 3) * (probe.periodSeconds ?? 10);
}

// --- Field names from the models' TypeScript types (validate() checks types and required fields only) ---

const TYPED_ROOTS = {
  Deployment: ['kubernetes-models/apps/v1/Deployment', 'IDeployment'],
  Service: ['kubernetes-models/v1/Service', 'IService'],
  Secret: ['kubernetes-models/v1/Secret', 'ISecret'],
  PodDisruptionBudget: ['kubernetes-models/policy/v1/PodDisruptionBudget', 'IPodDisruptionBudget'],
  ScaledObject: ['@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject', 'IScaledObject'],
  TriggerAuthentication: ['@kubernetes-models/keda/keda.sh/v1alpha1/TriggerAuthentication', 'ITriggerAuthentication'],
  Container: ['kubernetes-models/v1/Container', 'IContainer'],
  PodSpec: ['kubernetes-models/v1/PodSpec', 'IPodSpec'],
} as const;
type TypedRoot = keyof typeof TYPED_ROOTS;

let fieldChecker: ((root: TypedRoot, value: unknown) => string[]) | undefined;

/** Paths in `value` that its model's type does not declare (a misspelt field that validate() lets through). */
function unknownFields(root: TypedRoot, value: unknown): string[] {
  fieldChecker ??= makeFieldChecker();
  return fieldChecker(root, value);
}

function makeFieldChecker(): (root: TypedRoot, value: unknown) => string[] {
  const file = path.join(repoRoot, 'test/__deploy_field_types__.ts');
  const source = [
    ...Object.entries(TYPED_ROOTS).map(([, [module, name]]) => `import type { ${name} } from '${module}';`),
    `export interface Roots { ${Object.entries(TYPED_ROOTS).map(([root, [, name]]) => `${root}: ${name};`).join(' ')} }`,
  ].join('\n');
  const options: ts.CompilerOptions = { module: ts.ModuleKind.Node16, moduleResolution: ts.ModuleResolutionKind.Node16, target: ts.ScriptTarget.ES2022, strict: true, noEmit: true, skipLibCheck: true, types: [] };
  const host = ts.createCompilerHost(options);
  const { getSourceFile, fileExists, readFile } = host;
  host.getSourceFile = (name, language, ...rest) => (name === file ? ts.createSourceFile(name, source, language) : getSourceFile.call(host, name, language, ...rest));
  host.fileExists = (name) => name === file || fileExists.call(host, name);
  host.readFile = (name) => (name === file ? source : readFile.call(host, name));
  const program = ts.createProgram([file], options, host);
  const sourceFile = program.getSourceFile(file)!;
  const problems = ts.getPreEmitDiagnostics(program, sourceFile).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
  assert.deepEqual(problems, [], 'the models\' types resolve');
  const checker = program.getTypeChecker();
  const roots = checker.getTypeAtLocation(sourceFile.statements.find(ts.isInterfaceDeclaration)!);

  const walk = (type: ts.Type, value: unknown, at: string, out: string[]): void => {
    if (value === null || typeof value !== 'object') return;
    let t = checker.getNonNullableType(type);
    if (t.flags & (ts.TypeFlags.Any | ts.TypeFlags.Unknown)) return;
    if (t.isUnion()) {
      const shapes = t.types.filter((m) => m.flags & ts.TypeFlags.Object);
      if (shapes.length !== 1) return;
      t = shapes[0]!;
    }
    if (Array.isArray(value)) {
      if (checker.isArrayType(t)) {
        const element = checker.getTypeArguments(t as ts.TypeReference)[0]!;
        value.forEach((v, i) => walk(element, v, `${at}[${i}]`, out));
      }
      return;
    }
    const index = checker.getIndexInfosOfType(t)[0];
    for (const [key, v] of Object.entries(value)) {
      const prop = checker.getPropertyOfType(t, key);
      if (prop) walk(checker.getTypeOfSymbol(prop), v, `${at}.${key}`, out);
      else if (index) walk(index.type, v, `${at}.${key}`, out);
      else if (checker.getPropertiesOfType(t).length > 0) out.push(`${at}.${key}`);
    }
  };
  return (root, value) => {
    const out: string[] = [];
    walk(checker.getTypeOfSymbol(checker.getPropertyOfType(roots, root)!), value, root, out);
    return out;
  };
}

/** The model of each kind rendered, with the root type its unknown fields are checked against. */
const MODELS: Record<string, { make: (o: any) => { validate(): void }; root: TypedRoot }> = {
  'apps/v1 Deployment': { make: (o) => new Deployment(o), root: 'Deployment' },
  'v1 Service': { make: (o) => new Service(o), root: 'Service' },
  'v1 Secret': { make: (o) => new Secret(o), root: 'Secret' },
  'policy/v1 PodDisruptionBudget': { make: (o) => new PodDisruptionBudget(o), root: 'PodDisruptionBudget' },
  'keda.sh/v1alpha1 ScaledObject': { make: (o) => new ScaledObject(o), root: 'ScaledObject' },
  'keda.sh/v1alpha1 TriggerAuthentication': { make: (o) => new TriggerAuthentication(o), root: 'TriggerAuthentication' },
};
/** KServe's CRDs have no model: checked by hand below. */
const BY_HAND = new Set(['serving.kserve.io/v1alpha1 ServingRuntime', 'serving.kserve.io/v1beta1 InferenceService']);

/** Checks a rendered object against its model; returns what is wrong, or [] when it passes. */
function schemaProblems(o: Obj): string[] {
  const kind = `${o.apiVersion} ${o.kind}`;
  if (BY_HAND.has(kind)) return [];
  const model = MODELS[kind];
  if (!model) return [`no check for ${kind}`];
  try {
    model.make(o).validate();
  } catch (error) {
    return [(error as Error).message];
  }
  return unknownFields(model.root, o).map((p) => `unknown field ${p}`);
}

test('every overlay renders, and every object passes its schema with no unknown field', { skip }, () => {
  for (const overlay of OVERLAYS) {
    assert.ok(objects(overlay).length > 0, overlay);
    for (const o of objects(overlay)) assert.deepEqual(schemaProblems(o), [], `deploy/overlays/${overlay}: ${named(o)}`);
    // KServe's pod parts are Kubernetes types: the runtime's container, the predictor's pod fields.
    for (const w of workloads(overlay).filter((x) => x.kind === 'KServe')) {
      for (const [root, value] of [['Container', w.container], ['PodSpec', w.pod]] as const) {
        const model = root === 'Container' ? new Container(value as any) : new PodSpec(value as any);
        assert.doesNotThrow(() => model.validate(), `${w.where}: ${root}`);
        assert.deepEqual(unknownFields(root, value), [], `${w.where}: ${root}`);
      }
    }
  }
  // The checks above catch a misspelt field (validate() alone lets one through).
  const deployment = one('cpu', 'Deployment');
  const misspelt = structuredClone(deployment);
  misspelt.spec.template.spec.containers[0].startupProbe.failureTreshold = 30;
  assert.deepEqual(schemaProblems(misspelt), ['unknown field Deployment.spec.template.spec.containers[0].startupProbe.failureTreshold']);
});

test('probes ask GET routes the service registers on its public port: startup and readiness /readyz, liveness /healthz', { skip }, () => {
  // The public port's router as start.ts fills it before the packs load (no server started).
  const router = new Router(errorResponse);
  registerOps(router, { readiness: new Readiness(), keys: new KeyRing([SECRET_STAND_INS.CATCOMFORT_API_KEYS!]), access: 'key' });
  registerOipHealth(router, new Readiness());
  for (const w of allWorkloads()) {
    const { port } = configOf(w);
    const publicPort = (w.container.ports ?? []).find((p: Obj) => p.containerPort === port);
    for (const kind of ['startupProbe', 'readinessProbe', 'livenessProbe'] as const) {
      const probe = w.container[kind];
      assert.ok(probe?.httpGet, `${w.where}: ${kind} is an HTTP GET`);
      const { path: probePath, port: probePort } = probe.httpGet;
      assert.equal(router.match('GET', probePath).kind, 'found', `${w.where}: ${kind} GET ${probePath} is a route of the service`);
      assert.ok(probePort === port || probePort === publicPort?.name, `${w.where}: ${kind} asks the public port (${port}), not ${probePort}`);
      assert.ok(!probe.httpGet.scheme || probe.httpGet.scheme === 'HTTP', `${w.where}: ${kind} over plain HTTP`);
    }
    // Ready means warmed up and not draining; alive must not depend on either, or a draining or
    // warming pod would be killed.
    assert.ok(['/readyz', '/v2/health/ready'].includes(w.container.startupProbe.httpGet.path), `${w.where}: started = ready`);
    assert.ok(['/readyz', '/v2/health/ready'].includes(w.container.readinessProbe.httpGet.path), `${w.where}: readiness`);
    assert.ok(['/healthz', '/v2/health/live'].includes(w.container.livenessProbe.httpGet.path), `${w.where}: liveness`);
  }
});

test('every CATCOMFORT_ variable is a setting the service reads, loads as the service loads it, and drain delay and pool are set', { skip }, () => {
  const known = new Set(KNOWN_VARIABLES);
  for (const w of allWorkloads()) {
    const { values, secrets } = envOf(w.container);
    for (const name of [...Object.keys(values), ...Object.keys(secrets)]) {
      assert.ok(name.startsWith('CATCOMFORT_'), `${w.where}: ${name} is not a setting of the service`);
      assert.ok(known.has(name), `${w.where}: ${name} is a known setting (src/config/settings.ts)`);
    }
    assert.doesNotThrow(() => configOf(w), `${w.where}: the settings load`);
    for (const name of ['CATCOMFORT_DRAIN_DELAY_MS', 'CATCOMFORT_DATABASE_POOL', 'CATCOMFORT_PORT', 'CATCOMFORT_DATA_DIR']) assert.ok(values[name], `${w.where}: ${name} set explicitly`);
    for (const name of ['CATCOMFORT_API_KEYS', 'CATCOMFORT_ADMIN_KEYS', 'CATCOMFORT_DATABASE_URL']) assert.ok(secrets[name], `${w.where}: ${name} from a Secret, never a literal`);
    const config = configOf(w);
    assert.equal(config.host, '0.0.0.0', `${w.where}: listens on the pod's addresses`);
    if (config.admin.port !== null) assert.match(config.admin.host, /^(127\.0\.0\.1|::1|localhost)$/, `${w.where}: the admin listener stays on loopback`);
  }
});

test('container ports are the ports the settings open; Services and the budget select the pods and name their ports', { skip }, () => {
  for (const w of allWorkloads()) {
    const config = configOf(w);
    const opened: Record<string, number | null> = { http: config.port, grpc: config.grpcPort, metrics: config.metrics.port };
    const ports: Obj[] = w.container.ports ?? [];
    for (const [what, number] of Object.entries(opened)) {
      const declared = ports.filter((p) => p.containerPort === number);
      if (number === null) continue;
      assert.ok(number !== 0, `${w.where}: ${what} on a fixed port (not 0)`);
      assert.equal(declared.length, 1, `${w.where}: the ${what} port ${number} (from its CATCOMFORT_ setting) is a container port`);
    }
    for (const p of ports) assert.ok(Object.values(opened).includes(p.containerPort), `${w.where}: container port ${p.containerPort} is opened by a setting`);
    assert.ok(config.admin.port === null || !ports.some((p) => p.containerPort === config.admin.port), `${w.where}: the admin port is not published`);
    assert.equal(ports[0]?.containerPort, config.port, `${w.where}: the first port is the public HTTP port (KServe publishes it as 80)`);
    if (config.grpcPort !== null) assert.equal(ports.find((p) => p.containerPort === config.grpcPort)?.name, 'grpc');
  }
  for (const overlay of OVERLAYS) {
    for (const d of find(overlay, 'Deployment')) {
      const labels = d.spec.template.metadata.labels as Record<string, string>;
      const selects = (selector: Record<string, string>) => Object.keys(selector).length > 0 && Object.entries(selector).every(([k, v]) => labels[k] === v);
      assert.ok(selects(d.spec.selector.matchLabels), `${overlay}: ${named(d)} selects its own pods`);
      const names = new Set((d.spec.template.spec.containers as Obj[]).flatMap((c) => (c.ports ?? []).map((p: Obj) => p.name)));
      const services = find(overlay, 'Service').filter((s) => selects(s.spec.selector ?? {}));
      assert.equal(services.length, 1, `${overlay}: one Service selects ${named(d)}'s pods`);
      for (const s of services) {
        assert.equal(s.spec.type ?? 'ClusterIP', 'ClusterIP');
        for (const p of s.spec.ports) assert.ok(names.has(p.targetPort), `${overlay}: ${named(s)} port ${p.port} -> ${p.targetPort}, a named container port`);
        assert.equal(s.spec.ports.find((p: Obj) => p.port === 80)?.targetPort, 'http', `${overlay}: ${named(s)} port 80 -> http`);
      }
      const budgets = find(overlay, 'PodDisruptionBudget').filter((b) => selects(b.spec.selector.matchLabels ?? {}));
      assert.equal(budgets.length, 1, `${overlay}: one PodDisruptionBudget covers ${named(d)}`);
    }
  }
});

test('the grace period covers the drain delay, the longest request and one webhook attempt, with margin', { skip }, () => {
  for (const w of allWorkloads()) {
    const config = configOf(w);
    const needed = (config.drainDelayMs + config.requestTimeoutMs + config.scan.webhooks.timeoutMs) / 1000 + GRACE_MARGIN_S;
    const grace = w.pod.terminationGracePeriodSeconds ?? 30;
    assert.ok(grace >= needed, `${w.where}: terminationGracePeriodSeconds ${grace} < drain ${config.drainDelayMs} ms + request ${config.requestTimeoutMs} ms + webhook ${config.scan.webhooks.timeoutMs} ms + ${GRACE_MARGIN_S} s`);
    assert.ok(config.drainDelayMs > 0, `${w.where}: a drain delay, so endpoints drop the pod before it stops accepting`);
  }
});

test('the startup probe allows the measured start-up on CPU, and the provider probe and a start on a GPU', { skip }, () => {
  for (const w of allWorkloads()) {
    const budget = probeBudgetS(w.container.startupProbe);
    const config = configOf(w);
    const needed = isGpu(w) ? config.providerProbeTimeoutMs / 1000 + MEASURED_GPU_READY_S : MEASURED_CPU_START_S * CPU_START_FACTOR;
    assert.ok(budget >= needed, `${w.where}: startup probe allows ${budget} s, needs ${needed} s`);
    // Once started, a stuck pod is noticed within a minute.
    assert.ok(probeBudgetS(w.container.livenessProbe) <= 60, `${w.where}: liveness`);
  }
});

test('the GPU overlay runs the CUDA image with one GPU and tolerates the GPU taint; the others ask for none', { skip }, () => {
  for (const w of allWorkloads()) {
    const limits = w.container.resources?.limits ?? {};
    const tolerations: Obj[] = w.pod.tolerations ?? [];
    const image = String(w.container.image).replace(/:[^/:]+$/, '');
    if (w.overlay === 'gpu') {
      assert.ok(isGpu(w), `${w.where}: CATCOMFORT_EXECUTION_PROVIDERS names a GPU provider`);
      assert.deepEqual(configOf(w).providers, ['cuda', 'cpu'], 'docs/gpu.md: cuda, then cpu');
      assert.equal(String(limits['nvidia.com/gpu']), '1', `${w.where}: limits nvidia.com/gpu: 1`);
      assert.ok(
        tolerations.some((t) => t.key === 'nvidia.com/gpu' && (t.operator === 'Exists' || t.operator === undefined) && (t.effect === 'NoSchedule' || t.effect === undefined)),
        `${w.where}: tolerates nvidia.com/gpu:NoSchedule`,
      );
      assert.equal(image, 'catcomfort-gpu', `${w.where}: the CUDA image (Dockerfile.gpu)`);
    } else {
      assert.ok(!isGpu(w), `${w.where}: CPU only`);
      assert.equal(limits['nvidia.com/gpu'], undefined, `${w.where}: no GPU`);
      assert.equal(image, 'catcomfort', `${w.where}: the CPU image (Dockerfile)`);
    }
  }
});

test('the pods run as the image user on a read-only root, with the data folder and /tmp mounted; on a GPU the data folder is the node\'s', { skip }, () => {
  for (const file of ['Dockerfile', 'Dockerfile.gpu']) {
    assert.match(readFileSync(path.join(repoRoot, file), 'utf8'), new RegExp(`useradd [^\\n]*--uid ${IMAGE_UID} `), `${file} creates uid ${IMAGE_UID}`);
  }
  for (const w of allWorkloads()) {
    const pod = w.pod.securityContext ?? {};
    const own = w.container.securityContext ?? {};
    assert.equal(own.runAsUser ?? pod.runAsUser, IMAGE_UID, `${w.where}: runs as the image's user`);
    assert.equal(own.runAsNonRoot ?? pod.runAsNonRoot, true, `${w.where}: runAsNonRoot`);
    assert.equal(own.readOnlyRootFilesystem, true, `${w.where}: read-only root`);
    assert.equal(own.allowPrivilegeEscalation, false, `${w.where}: no privilege escalation`);
    const volumes = new Map<string, Obj>((w.pod.volumes ?? []).map((v: Obj) => [v.name, v]));
    for (const [name, v] of volumes) assert.equal(Object.keys(v).filter((k) => k !== 'name').length, 1, `${w.where}: volume ${name} has one source`);
    const mountOf = (dir: string): Obj | undefined =>
      (w.container.volumeMounts ?? []).find((m: Obj) => dir === m.mountPath || dir.startsWith(`${m.mountPath}/`));
    const config = configOf(w);
    const data = mountOf(config.scan.dataDir);
    assert.ok(data && volumes.has(data.name), `${w.where}: CATCOMFORT_DATA_DIR ${config.scan.dataDir} is a mounted volume`);
    assert.ok(volumes.get(mountOf('/tmp')?.name)?.emptyDir, `${w.where}: /tmp is an emptyDir`);
    if (isGpu(w)) {
      assert.ok(volumes.get(data.name)!.hostPath, `${w.where}: provider verdicts kept in a folder of the node`);
      assert.equal(mountOf(config.trtCacheDir)?.name, data.name, `${w.where}: the TensorRT cache beside the verdicts`);
      // The node's folder belongs to root until the init container hands it over.
      const owner = (w.pod.initContainers ?? []).find((c: Obj) => (c.volumeMounts ?? []).some((m: Obj) => m.name === data.name));
      assert.ok(owner && owner.command.join(' ') === `chown ${IMAGE_UID}:${IMAGE_UID} ${data.mountPath}`, `${w.where}: the data folder is handed to uid ${IMAGE_UID}`);
    }
  }
});

test('secrets referenced by name exist in the overlay or deploy/README.md says how to create them, with every key', { skip }, () => {
  const readme = readFileSync(path.join(repoRoot, 'deploy/README.md'), 'utf8');
  const refs: Array<{ where: string; name: string; key: string }> = [];
  for (const w of allWorkloads()) for (const [env, ref] of Object.entries(envOf(w.container).secrets)) refs.push({ where: `${w.where} ${env}`, ...ref });
  for (const overlay of OVERLAYS) {
    for (const auth of find(overlay, 'TriggerAuthentication')) for (const ref of auth.spec.secretTargetRef ?? []) refs.push({ where: named(auth), name: ref.name, key: ref.key });
  }
  assert.ok(refs.length > 0);
  for (const { where, name, key } of refs) {
    const made = OVERLAYS.flatMap((o) => find(o, 'Secret', name));
    if (made.length > 0) {
      for (const s of made) assert.ok(key in { ...s.data, ...s.stringData }, `${where}: Secret/${name} has key ${key}`);
      continue;
    }
    // `kubectl [-n NS] create secret generic NAME`, with its continuation lines.
    const commands = [...readme.matchAll(new RegExp(`kubectl (?:-n \\S+ )?create secret generic ${name}\\b((?:.*\\\\\\n)*.*)`, 'g'))].map((m) => m[1]!);
    assert.ok(commands.length > 0, `${where}: Secret/${name} is neither made by an overlay nor created in deploy/README.md`);
    assert.ok(
      commands.some((c) => new RegExp(`--from-(literal|file)=${key}=`).test(c)),
      `${where}: deploy/README.md's kubectl create secret generic ${name} gives it the key ${key}`,
    );
  }
});

test('KEDA scales the Deployment on pending scans in the store and on metrics the service exports', { skip }, async () => {
  const scansTable = /CREATE TABLE scans \(([\s\S]*?)\n\);/.exec(postgresMigrations.map((m) => m.sql).join('\n'))?.[1];
  assert.ok(scansTable, 'the migrations create table scans');
  const statuses = /status text NOT NULL CHECK \(status IN \(([^)]*)\)\)/.exec(scansTable)![1]!.split(',').map((s) => s.trim().replace(/^'|'$/g, ''));
  const exported = (await metrics.scrape([])).body;
  for (const overlay of ['cpu', 'gpu'] as const) {
    const scaled = one(overlay, 'ScaledObject');
    const target = scaled.spec.scaleTargetRef;
    assert.equal(target.kind ?? 'Deployment', 'Deployment');
    one(overlay, 'Deployment', target.name);
    assert.equal(one(overlay, 'Deployment').spec.replicas, undefined, `${overlay}: the Deployment leaves the replica count to KEDA`);
    assert.ok(scaled.spec.minReplicaCount >= 2, `${overlay}: two pods at least, so the budget allows a disruption`);
    const triggers: Obj[] = scaled.spec.triggers;
    const postgres = triggers.filter((t) => t.type === 'postgresql');
    assert.equal(postgres.length, 1, `${overlay}: a postgresql trigger`);
    const query = postgres[0]!.metadata.query as string;
    const parsed = /^SELECT count\(\*\) FROM (\w+) WHERE status IN \(([^)]*)\)$/i.exec(query);
    assert.ok(parsed, `${overlay}: the query counts scans by status: ${query}`);
    assert.equal(parsed[1], 'scans', `${overlay}: table ${parsed[1]} is the scans table of src/store/migrations.ts`);
    const asked = parsed[2]!.split(',').map((s) => s.trim().replace(/^'|'$/g, ''));
    assert.deepEqual(asked, ['PENDING', 'PROCESSING'], `${overlay}: waiting and running scans`);
    for (const s of asked) assert.ok(statuses.includes(s), `${overlay}: status ${s} is one the migrations allow (${statuses.join(', ')})`);
    one(overlay, 'TriggerAuthentication', postgres[0]!.authenticationRef.name);
    assert.ok(Number(postgres[0]!.metadata.targetQueryValue) > 0);
    const prometheus = triggers.filter((t) => t.type === 'prometheus');
    const metricNames = prometheus.flatMap((t) => (t.metadata.query as string).match(/catcomfort_\w+/g) ?? []);
    assert.ok(metricNames.includes('catcomfort_queue_depth'), `${overlay}: a trigger on the queue depth`);
    for (const metric of metricNames) assert.match(exported, new RegExp(`^# HELP ${metric} `, 'm'), `${overlay}: ${metric} is a metric of src/ops/metrics.ts`);
    for (const t of prometheus) assert.ok(Number(t.metadata.threshold) > 0 && /^https?:\/\//.test(t.metadata.serverAddress));
  }
});

/** PostgreSQL's default max_connections, less its superuser_reserved_connections (3). */
const POSTGRES_CONNECTIONS = 100 - 3;
/** Connections beside the pods' pools: KEDA's scaler (1), the catcomfort CLI (2), an operator's psql (2). */
const TOOL_CONNECTIONS = 5;

test('at most replicas x CATCOMFORT_DATABASE_POOL + the tools\' connections stay below PostgreSQL\'s default max_connections', { skip }, () => {
  for (const w of allWorkloads()) {
    const deployment = w.kind === 'Deployment' ? one(w.overlay, 'Deployment') : null;
    const scaled = deployment ? find(w.overlay, 'ScaledObject').find((s) => s.spec.scaleTargetRef.name === deployment.metadata.name) : null;
    const replicas: number = deployment ? (scaled?.spec.maxReplicaCount ?? deployment.spec.replicas ?? 1) : one(w.overlay, 'InferenceService').spec.predictor.maxReplicas;
    const pool = configOf(w).scan.databasePool;
    const used = replicas * pool + TOOL_CONNECTIONS;
    assert.ok(used < POSTGRES_CONNECTIONS, `${w.where}: ${replicas} replicas x pool ${pool} + ${TOOL_CONNECTIONS} = ${used}, not below ${POSTGRES_CONNECTIONS} (deploy/README.md "The database budget")`);
  }
});

test('KServe: a ServingRuntime for the v2 protocol over REST and gRPC, and an InferenceService on it in raw deployment mode', { skip }, () => {
  const runtime = one('kserve', 'ServingRuntime');
  const isvc = one('kserve', 'InferenceService');
  assert.equal(runtime.apiVersion, 'serving.kserve.io/v1alpha1');
  assert.equal(isvc.apiVersion, 'serving.kserve.io/v1beta1');
  assert.ok(runtime.metadata.name && isvc.metadata.name);
  const formats: Obj[] = runtime.spec.supportedModelFormats;
  assert.ok(formats.length > 0 && formats.every((f) => typeof f.name === 'string'));
  assert.deepEqual([...runtime.spec.protocolVersions].sort(), ['grpc-v2', 'v2']);
  assert.equal(runtime.spec.containers.length, 1);
  assert.equal(runtime.spec.containers[0].name, 'kserve-container', 'the container name KServe looks for');
  assert.equal(isvc.metadata.annotations['serving.kserve.io/deploymentMode'], 'RawDeployment');
  const predictor = isvc.spec.predictor;
  assert.deepEqual(Object.keys(predictor.model).sort(), ['modelFormat', 'protocolVersion', 'runtime']);
  assert.equal(predictor.model.runtime, runtime.metadata.name);
  assert.ok(formats.some((f) => f.name === predictor.model.modelFormat.name), 'the model format is one the runtime supports');
  assert.equal(predictor.model.protocolVersion, 'v2');
  assert.equal(predictor.model.storageUri, undefined, 'the packs are in the image');
  assert.ok(predictor.minReplicas >= 1 && predictor.maxReplicas >= predictor.minReplicas);
  const config = configOf(workloads('kserve')[0]!);
  assert.equal(config.port, 8080, "the OIP REST on 8080, KServe's default");
  assert.ok(config.grpcPort, 'gRPC on, as protocolVersions says');
});

test('docs/oip.md points to the rendered KServe overlay instead of an untested snippet', () => {
  const oip = readFileSync(path.join(repoRoot, 'docs/oip.md'), 'utf8');
  assert.match(oip, /\]\(\.\.\/deploy\/overlays\/kserve\/?\)/);
  assert.doesNotMatch(oip, /kind: ServingRuntime/);
});
