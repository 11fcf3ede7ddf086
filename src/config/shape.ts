// How the settings table (settings.ts) becomes the service's Config, as TypeBox derives a type from
// a schema: the table is a tree of settings and groups, `Values` is its type with each setting
// replaced by what its read returns, and `readValues` reads it so. Settings only tools, the CLI or
// the tests read are marked `toolOnly` and left out of both.
import type { Env, Setting } from './parse';

/** A setting the service itself never reads (tools, CLI, install, tests): not part of Config. */
export interface ToolSetting<T> extends Setting<T> {
  readonly toolOnly: true;
}

/** A group of settings, nested as the Config reads them. */
export interface SettingsTree {
  readonly [key: string]: Setting<unknown> | SettingsTree;
}

/** The values of a tree of settings: each setting as it reads, each group as an object, tool-only settings left out. */
export type Values<T> = {
  -readonly [K in keyof T as T[K] extends ToolSetting<unknown> ? never : K]: T[K] extends Setting<infer V> ? V : Values<T[K]>;
};

export function toolOnly<T>(setting: Setting<T>): ToolSetting<T> {
  return { ...setting, toolOnly: true };
}

/** The same variable, its value converted (a unit: MiB to bytes, hours to ms). */
export function converted<T, U>(setting: Setting<T>, convert: (value: T) => U): Setting<U> {
  return { ...setting, read: (env) => convert(setting.read(env)) };
}

const isSetting = (node: Setting<unknown> | SettingsTree): node is Setting<unknown> => typeof node.read === 'function';

/** Every setting of `tree`, groups flattened, in the table's order (tool-only ones included). */
export function settingsOf(tree: SettingsTree): Array<Setting<unknown>> {
  return Object.values(tree).flatMap((node) => (isSetting(node) ? [node] : settingsOf(node)));
}

/** Reads every setting of `tree` from `env`, in the table's order; the first invalid value throws its ConfigError. */
export function readValues<T extends SettingsTree>(tree: T, env: Env): Values<T> {
  const values: Record<string, unknown> = {};
  for (const [key, node] of Object.entries(tree)) {
    if (!isSetting(node)) values[key] = readValues(node, env);
    else if (!('toolOnly' in node)) values[key] = node.read(env);
  }
  return values as Values<T>;
}
